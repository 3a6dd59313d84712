package simulations

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/heureka/heureka/node"
)

// Timers are the shortened Eureka and cluster timers of a simulated
// cluster: seconds instead of Eureka's minutes, so that a scenario with
// leases expiring, ownership moving and self-preservation engaging fits in
// half a minute. The Eureka timers shrink together, by 30× (lease 90s →
// 3s, renewals 30s → 1s, recount 15min → 30s, tombstones 10min → 20s), so
// that their ratios, which the protocol's guarantees rest on, stay
// Eureka's; the exceptions (eviction timer, renewal window) are explained
// on their fields and in simulations/README.md.
type Timers struct {
	// LeaseDuration is the leaseInfo.durationInSecs clients register with;
	// whole seconds. Default 3s.
	LeaseDuration time.Duration
	// RenewInterval is how often a client renews, and the servers'
	// ExpectedClientRenewalInterval. Default 1s.
	RenewInterval time.Duration
	// EvictionInterval is the servers' eviction timer. Default 250ms.
	EvictionInterval time.Duration
	// RenewalWindow is the window over which the servers count renewals
	// for self-preservation. Default 2s: two renewals per client per
	// window. A window of half the renewal interval (500ms) would catch
	// each client in only every other window, so the count would swing
	// around the threshold and self-preservation would flap in a healthy
	// cluster.
	RenewalWindow time.Duration
	// RenewForwardInterval is how often renewals are forwarded to owners.
	// Default 100ms.
	RenewForwardInterval time.Duration
	// AntiEntropyInterval is how often a node exchanges digests with a
	// random peer. Default 500ms.
	AntiEntropyInterval time.Duration
	// LoadInterval is how often a node reports its renewal count to the
	// other members, for cluster-wide self-preservation
	// (cluster.ReplicatorConfig.LoadInterval). Default 500ms: the server's
	// 15s shrunk 30×, a quarter of the renewal window, so that every member
	// hears every window (a report counts for two of the sender's windows).
	LoadInterval time.Duration
	// ReadyTimeout bounds a joining node's initial sync. Default 10s.
	ReadyTimeout time.Duration
	// TombstoneTTL is how long the nodes keep a cancelled or evicted
	// instance's tombstone (actors.Config.TombstoneTTL). Default 20s: the
	// server's 10 minutes shrunk 30×, like the lease (90s → 3s). It must
	// exceed a lease plus two renewal windows plus an eviction run: a stale
	// copy of a deleted instance (held by a node that missed the delete)
	// expires one lease after its last renewal, self-preservation may take
	// up to two windows to engage, and an eviction run to act; a tombstone
	// must outlive that. Partitions longer than the TTL are what the
	// long-partition scenario is about.
	TombstoneTTL time.Duration
	// RecountInterval is how often the nodes recompute the expected number
	// of renewing clients (actors.Config.RenewalThresholdUpdateInterval);
	// self-preservation releases by itself one RecountInterval after it
	// engaged, adopting the measured rate. Default 30s: Eureka's 15 minutes
	// shrunk 30×. It must exceed two renewal windows (engaging takes up to
	// two). Scenarios that must see a release within their run shorten it
	// (scale-down: 8s).
	RecountInterval time.Duration
	// SampleInterval is how often the sampler reads every application from
	// every node over HTTP. Default 200ms.
	SampleInterval time.Duration
	// ProbeInterval is how often the prober reads fingerprints, members and
	// self-preservation in process. Default 100ms.
	ProbeInterval time.Duration
	// RegionPullInterval, RegionStaleAfter and RegionDropAfter are the
	// federation timers of the datacenters scenario (federation.Config's
	// PullInterval, StaleAfter and DropAfter), shrunk 30× like the Eureka
	// timers: 5s → 200ms (rounded), 1m → 2s, 10m → 20s (the drop time
	// equals the tombstone TTL, as in production). The other federation
	// timers keep their production ratios to the stale time
	// (datacenterFederation): request timeout 1/6, delta retention 3×,
	// stream idle timeout 3/4, the remotes' stream keep-alive 1/4. Zero
	// takes the default; when set, pull < stale < drop.
	RegionPullInterval, RegionStaleAfter, RegionDropAfter time.Duration
}

// DefaultTimers returns the timers documented on Timers.
func DefaultTimers() Timers {
	return Timers{
		LeaseDuration:        3 * time.Second,
		RenewInterval:        time.Second,
		EvictionInterval:     250 * time.Millisecond,
		RenewalWindow:        2 * time.Second,
		RenewForwardInterval: 100 * time.Millisecond,
		AntiEntropyInterval:  500 * time.Millisecond,
		LoadInterval:         500 * time.Millisecond,
		ReadyTimeout:         10 * time.Second,
		TombstoneTTL:         20 * time.Second,
		RecountInterval:      30 * time.Second,
		SampleInterval:       200 * time.Millisecond,
		ProbeInterval:        100 * time.Millisecond,
		RegionPullInterval:   200 * time.Millisecond,
		RegionStaleAfter:     2 * time.Second,
		RegionDropAfter:      20 * time.Second,
	}
}

// ApplyTo sets the node timers of t in cfg: the registry's eviction
// interval, renewal window, expected client renewal interval, tombstone TTL
// and recount interval, and the replicator's forward, anti-entropy, load and
// ready timers. The other fields are the clients' (LeaseDuration, and
// RenewInterval as the clients' period) and the observer's (SampleInterval,
// ProbeInterval).
func (t Timers) ApplyTo(cfg *node.Config) {
	cfg.Registry.EvictionInterval = t.EvictionInterval
	cfg.Registry.RenewalWindow = t.RenewalWindow
	cfg.Registry.ExpectedClientRenewalInterval = t.RenewInterval
	cfg.Registry.TombstoneTTL = t.TombstoneTTL
	cfg.Registry.RenewalThresholdUpdateInterval = t.RecountInterval
	cfg.Replication.RenewFlushInterval = t.RenewForwardInterval
	cfg.Replication.AntiEntropyInterval = t.AntiEntropyInterval
	cfg.Replication.LoadInterval = t.LoadInterval
	cfg.Replication.ReadyTimeout = t.ReadyTimeout
}

// Flags renders the node timers of t as the heureka command's flags, for
// clusters of real processes (simulations/netns): the timers ApplyTo sets,
// but LoadInterval, which the command has no flag for: its node takes a
// quarter of the renewal window, which is what DefaultTimers says too.
func (t Timers) Flags() []string {
	return []string{
		"--eviction-interval", t.EvictionInterval.String(),
		"--renewal-window", t.RenewalWindow.String(),
		"--expected-client-renewal-interval", t.RenewInterval.String(),
		"--tombstone-ttl", t.TombstoneTTL.String(),
		"--renewal-threshold-update-interval", t.RecountInterval.String(),
		"--renew-forward-interval", t.RenewForwardInterval.String(),
		"--anti-entropy-interval", t.AntiEntropyInterval.String(),
		"--ready-timeout", t.ReadyTimeout.String(),
	}
}

// Thresholds are the bounds the checkers hold the observations to. Each is
// stated in the report next to what was measured.
type Thresholds struct {
	// MaxMissing bounds how long an instance whose client keeps renewing
	// may be missing from a node the client can reach (invariant 1).
	// Default 3s: one lease duration, the time after which a client that
	// really stopped renewing would be expired.
	MaxMissing time.Duration
	// Convergence bounds the time from the end of the faults until every
	// live node holds the same registry (invariant 2). Default 10s.
	Convergence time.Duration
	// Membership bounds the time from the end of the faults until every live
	// node sees every other live node (invariant 4). Default 10s.
	Membership time.Duration
	// SPEngage bounds the time from a collapse of renewals until every node
	// that owns affected instances has self-preservation engaged
	// (invariant 5). Default two renewal windows plus one second.
	SPEngage time.Duration
	// SPRelease bounds the time from the recovery of renewals until those
	// nodes have released self-preservation. Default three renewal windows
	// plus one second.
	SPRelease time.Duration
	// SPMinSurvivors is the least share of the silently failed clients'
	// instances that must still be registered when the clients come back:
	// self-preservation exists to prevent mass eviction. Default 0.5.
	// Leases that expire before the first low-count renewal window closes
	// may be evicted, as in Eureka, within its cap of 15% of the registry
	// per eviction run; but with a 250ms eviction timer and a 2s window
	// there are several runs in that gap (Eureka: one), and every owner
	// applies the cap to the whole registry, so more than 15% can go. The
	// checker separately requires that nothing is evicted once
	// self-preservation has engaged.
	SPMinSurvivors float64
	// SPRecountSlack is how much later than one RecountInterval after it
	// engaged a node may release self-preservation by itself when the
	// fleet shrank (invariant sp-recount-release). Default one renewal
	// window (the first window counted against the new expectation) plus
	// half a second for the probes.
	SPRecountSlack time.Duration
	// EvictAfterRelease bounds the time from the last node's release of
	// self-preservation until the silently dead instances are gone from
	// every node (invariant sp-recount-release). Default 2s: a few eviction
	// runs under the 15% cap, replication and a sampling round.
	EvictAfterRelease time.Duration
	// SPMaxEngagedShare is the largest share of probes (on nodes that
	// expect renewals, after the warm-up) in which self-preservation may be
	// engaged in a cluster without faults (invariant sp-quiet). Default
	// 0.01.
	SPMaxEngagedShare float64
	// EvictionLatency bounds the 99th percentile of the time from a
	// silently dead client's last renewal until a node's first sample
	// without its instance (invariant eviction-latency). Default a lease
	// plus an eviction interval plus 1s (forwarding the last renewal to the
	// owner, replication, sampling).
	EvictionLatency time.Duration
	// EvictionAfterHeal bounds the same 99th percentile counted from the
	// moment the members see each other again after a heal (invariant
	// eviction-after-heal). Default EvictionLatency plus three report
	// intervals: a disagreement of the members' views outlives its last
	// sign by three LoadIntervals (cluster/disagree.go), and an owner
	// that takes an application back then grants its leases one lease of
	// grace, so after a one-way block the dead go that much later.
	EvictionAfterHeal time.Duration
	// TombstoneSlack is how much older than the tombstone TTL a tombstone a
	// node still serves may be (invariant tombstone-ttl). Default 1s: the
	// collection runs with the eviction timer, the census once a second.
	TombstoneSlack time.Duration
	// Visibility bounds the 99th percentile of the time from a
	// registration's acknowledgement until a probe of another node lists
	// the instance (invariant visibility). Default 1s.
	Visibility time.Duration
}

// DefaultThresholds returns the thresholds documented on Thresholds for t.
func DefaultThresholds(t Timers) Thresholds {
	return Thresholds{
		MaxMissing:     t.LeaseDuration,
		Convergence:    10 * time.Second,
		Membership:     10 * time.Second,
		SPEngage:       2*t.RenewalWindow + time.Second,
		SPRelease:      3*t.RenewalWindow + time.Second,
		SPMinSurvivors: 0.5,

		SPRecountSlack:    t.RenewalWindow + 500*time.Millisecond,
		EvictAfterRelease: 2 * time.Second,
		SPMaxEngagedShare: 0.01,
		EvictionLatency:   t.LeaseDuration + t.EvictionInterval + time.Second,
		EvictionAfterHeal: t.LeaseDuration + t.EvictionInterval + time.Second + 3*t.LoadInterval,
		Visibility:        time.Second,
		TombstoneSlack:    time.Second,
	}
}

// Config configures one scenario run.
type Config struct {
	// Seed seeds every choice of the harness, memnet's faults and
	// the nodes' random sources. Default 1.
	Seed int64
	// Nodes is the cluster size. Default 5; at least 3 (the partition
	// scenario splits 2|3 at five nodes, and smaller clusters in
	// proportion).
	Nodes int
	// Duration is the length of a scenario's main (fault) phase; the
	// warm-up, the quiet phase after the faults and the teardown come on
	// top. Zero picks the scenario's default.
	Duration time.Duration
	// Timers are the cluster's timers. Default DefaultTimers().
	Timers Timers
	// Thresholds are the checkers' bounds. Default DefaultThresholds(Timers).
	Thresholds Thresholds
	// SettleTail is how long the harness keeps observing after the cluster
	// settled (converged, membership complete) and before the teardown, so
	// that late misses and resurrections show. Default 3s (one lease);
	// the tests shorten it.
	SettleTail time.Duration
	// Logger receives the nodes' logs. Default: discard.
	Logger *slog.Logger
	// Progress, if set, receives one line per timeline event as it happens.
	Progress func(scenario string, ev Event)
}

// DefaultConfig returns a complete configuration: seed 1, five nodes, the
// scenario's default duration, DefaultTimers and DefaultThresholds.
func DefaultConfig() Config {
	t := DefaultTimers()
	return Config{
		Seed:       1,
		Nodes:      5,
		Timers:     t,
		Thresholds: DefaultThresholds(t),
		SettleTail: t.LeaseDuration,
		Logger:     slog.New(slog.DiscardHandler),
	}
}

// ShortConfig is the configuration of the short runs of sc that the tests
// and the sabotage harness use: DefaultConfig with seed, the scenario's
// ShortDuration and ShortTimers, and a one-second settle tail.
func ShortConfig(sc Scenario, seed int64) Config {
	cfg := DefaultConfig()
	cfg.Seed = seed
	cfg.Duration = sc.ShortDuration
	cfg.SettleTail = time.Second
	if sc.ShortTimers != nil {
		sc.ShortTimers(&cfg.Timers)
	}
	return cfg
}

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("simulations: invalid config")

// Validate reports the first problem with c.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	t := c.Timers
	switch {
	case c.Nodes < 3:
		return bad("Nodes %d: need at least 3", c.Nodes)
	case c.Nodes > 50:
		return bad("Nodes %d: at most 50 in one process", c.Nodes)
	case c.Duration < 0:
		return bad("Duration %v is negative", c.Duration)
	case c.SettleTail < 0:
		return bad("SettleTail %v is negative", c.SettleTail)
	case t.LeaseDuration < time.Second || t.LeaseDuration%time.Second != 0:
		return bad("Timers.LeaseDuration %v must be whole seconds, at least 1s", t.LeaseDuration)
	case t.RenewInterval <= 0 || t.RenewInterval >= t.LeaseDuration:
		return bad("Timers.RenewInterval %v must be positive and below the lease duration", t.RenewInterval)
	case t.EvictionInterval <= 0, t.RenewalWindow <= 0, t.LoadInterval <= 0, t.RenewForwardInterval <= 0,
		t.AntiEntropyInterval <= 0, t.ReadyTimeout <= 0, t.SampleInterval <= 0, t.ProbeInterval <= 0,
		t.TombstoneTTL <= 0, t.RecountInterval <= 0:
		return bad("every timer must be positive: %+v", t)
	case t.RenewalWindow < t.RenewInterval:
		return bad("Timers.RenewalWindow %v must be at least the renewal interval %v (every client in every window)", t.RenewalWindow, t.RenewInterval)
	case t.LoadInterval > t.RenewalWindow/4:
		return bad("Timers.LoadInterval %v must be at most a quarter of the renewal window %v", t.LoadInterval, t.RenewalWindow)
	case t.TombstoneTTL <= t.LeaseDuration+2*t.RenewalWindow+t.EvictionInterval:
		return bad("Timers.TombstoneTTL %v must exceed a lease, two renewal windows and an eviction run (%v)",
			t.TombstoneTTL, t.LeaseDuration+2*t.RenewalWindow+t.EvictionInterval)
	case t.RecountInterval <= 2*t.RenewalWindow:
		return bad("Timers.RecountInterval %v must exceed two renewal windows (%v)", t.RecountInterval, 2*t.RenewalWindow)
	case t.RegionPullInterval < 0 || t.RegionStaleAfter < 0 || t.RegionDropAfter < 0:
		return bad("the region timers may not be negative: %+v", t)
	case t.RegionPullInterval > 0 && t.RegionStaleAfter > 0 && t.RegionPullInterval >= t.RegionStaleAfter,
		t.RegionStaleAfter > 0 && t.RegionDropAfter > 0 && t.RegionStaleAfter >= t.RegionDropAfter:
		return bad("Timers: RegionPullInterval %v < RegionStaleAfter %v < RegionDropAfter %v is required",
			t.RegionPullInterval, t.RegionStaleAfter, t.RegionDropAfter)
	case c.Thresholds.MaxMissing <= 0 || c.Thresholds.Convergence <= 0 || c.Thresholds.Membership <= 0 ||
		c.Thresholds.SPEngage <= 0 || c.Thresholds.SPRelease <= 0:
		return bad("every threshold must be positive: %+v", c.Thresholds)
	case c.Thresholds.SPMinSurvivors < 0 || c.Thresholds.SPMinSurvivors > 1:
		return bad("Thresholds.SPMinSurvivors %v must be in [0, 1]", c.Thresholds.SPMinSurvivors)
	case c.Thresholds.SPMaxEngagedShare < 0 || c.Thresholds.SPMaxEngagedShare > 1:
		return bad("Thresholds.SPMaxEngagedShare %v must be in [0, 1]", c.Thresholds.SPMaxEngagedShare)
	case c.Thresholds.SPRecountSlack <= 0 || c.Thresholds.EvictAfterRelease <= 0 || c.Thresholds.EvictionLatency <= 0 || c.Thresholds.EvictionAfterHeal <= 0 ||
		c.Thresholds.Visibility <= 0 || c.Thresholds.TombstoneSlack <= 0:
		return bad("every threshold must be positive: %+v", c.Thresholds)
	}
	return nil
}
