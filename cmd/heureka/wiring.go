package main

import (
	"log/slog"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/eurekapeer"
	"github.com/heureka/heureka/node"
)

// nodeConfig turns the command's configuration into a node configuration.
// Every node runs membership: a node started alone is a cluster of one that
// others can join.
func nodeConfig(c Config, log *slog.Logger) (node.Config, error) {
	nc := node.DefaultConfig(c.NodeName)
	nc.HTTPAddr = c.HTTPAddr
	nc.Logger = log
	nc.Version = version
	nc.MaxBodyBytes = c.MaxBodyBytes
	nc.WriteTimeout = c.HTTPWriteTimeout

	r := &nc.Registry
	r.EvictionInterval = c.EvictionInterval
	r.SelfPreservation = c.SelfPreservation
	r.RenewalPercentThreshold = c.RenewalPercentThreshold
	r.RenewalThresholdUpdateInterval = c.RenewalThresholdUpdateInterval
	r.ExpectedClientRenewalInterval = c.ExpectedClientRenewalInterval
	r.RenewalWindow = c.RenewalWindow
	r.ExpectedInitialRenewers = c.ExpectedInitialRenewers
	r.LeaseDurationDoubling = c.LeaseDurationDoubling
	r.TombstoneTTL = c.TombstoneTTL

	v := &nc.View
	v.DeltaRetention = c.DeltaRetention
	v.DeltaRetentionInterval = c.DeltaRetentionInterval
	v.DeltaMaxBytes = c.DeltaMaxBytes
	v.CacheUpdateInterval = c.ResponseCacheUpdateInterval

	cc := cluster.DefaultConfig()
	var err error
	if cc.BindAddr, cc.BindPort, err = cluster.ParseGossipAddr(c.GossipAddr); err != nil {
		return nc, err
	}
	if c.AdvertiseAddr != "" {
		if cc.AdvertiseAddr, cc.AdvertisePort, err = cluster.ParseGossipAddr(c.AdvertiseAddr); err != nil {
			return nc, err
		}
	} else {
		// Advertise the address that matches how this node joins, not
		// memberlist's first "private" one (advertise.go); the port is
		// the bind port.
		cc.AdvertiseAddr = chooseAdvertise(cc.BindAddr, c.Join)
	}
	cc.Join = c.Join
	if cc.GossipKey, err = decodeGossipKey(c.GossipKey); err != nil {
		return nc, err
	}
	cc.StreamTimeout = c.StreamTimeout
	nc.Cluster = &cc
	if err := applySecurity(c.Security, &nc); err != nil {
		return nc, err
	}

	rp := cluster.DefaultReplicatorConfig()
	// 0 passes through: the replicator is ready at once (LoadConfig has
	// rejected negative values).
	rp.ReadyTimeout = c.ReadyTimeout
	rp.RenewFlushInterval = c.RenewForwardInterval
	rp.AntiEntropyInterval = c.AntiEntropyInterval
	// LoadInterval stays 0: the node sets it to a quarter of the renewal
	// window.
	nc.Replication = rp
	if fc, ok, err := c.Regions.federationConfig(c.DeltaRetention); err != nil {
		return nc, err
	} else if ok {
		nc.Federation = &fc
	}
	if len(c.EurekaPeers) > 0 {
		ep := eurekapeer.DefaultConfig(c.EurekaPeers...)
		nc.EurekaPeers = &ep
	}
	return nc, nil
}
