package main

import (
	"log/slog"
	"net"
	"strconv"

	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/cmd/heureka/node"
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

	r := &nc.Registry
	r.EvictionInterval = c.EvictionInterval
	r.SelfPreservation = c.SelfPreservation
	r.RenewalPercentThreshold = c.RenewalPercentThreshold
	r.RenewalThresholdUpdateInterval = c.RenewalThresholdUpdateInterval
	r.ExpectedClientRenewalInterval = c.ExpectedClientRenewalInterval
	r.RenewalWindow = c.RenewalWindow
	r.ExpectedInitialRenewers = c.ExpectedInitialRenewers
	r.LeaseDurationDoubling = c.LeaseDurationDoubling

	v := &nc.View
	v.DeltaRetention = c.DeltaRetention
	v.DeltaRetentionInterval = c.DeltaRetentionInterval
	v.CacheUpdateInterval = c.ResponseCacheUpdateInterval

	cc := cluster.DefaultConfig()
	host, port, err := splitAddr(c.GossipAddr)
	if err != nil {
		return nc, err
	}
	cc.BindAddr, cc.BindPort = host, port
	if c.AdvertiseAddr != "" {
		if cc.AdvertiseAddr, cc.AdvertisePort, err = splitAddr(c.AdvertiseAddr); err != nil {
			return nc, err
		}
	}
	cc.Join = c.Join
	if cc.GossipKey, err = decodeGossipKey(c.GossipKey); err != nil {
		return nc, err
	}
	nc.Cluster = &cc

	rp := cluster.DefaultReplicatorConfig()
	rp.ReadyTimeout = c.ReadyTimeout
	rp.TakeoverGrace = c.TakeoverGrace
	rp.RenewFlushInterval = c.RenewForwardInterval
	rp.AntiEntropyInterval = c.AntiEntropyInterval
	nc.Replication = rp
	return nc, nil
}

// splitAddr splits "host:port"; an empty host means all interfaces.
func splitAddr(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, err
	}
	if host == "" {
		host = "0.0.0.0"
	}
	return host, port, nil
}
