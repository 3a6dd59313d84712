package main

import (
	"log/slog"

	"github.com/heureka/heureka/cmd/heureka/node"
)

// nodeConfig turns the command's configuration into a node configuration.
func nodeConfig(c Config, log *slog.Logger) node.Config {
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
	return nc
}
