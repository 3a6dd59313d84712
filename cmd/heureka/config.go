package main

// The configuration of the serve command: the Config type, its defaults and
// its validation here; the table of options (one per Config field: flag,
// environment variable and YAML key all derive from its name) in options.go;
// the layering that builds a Config in layers.go.
//
// Layering is koanf's: four layers of text, lowest first — the defaults, the
// YAML file (springconfig.go turns it, Spring property names included, into
// heureka keys), the HEUREKA_* environment and the command-line flags (pflag,
// through cobra). Every value stays text until the layers are merged, and is
// then parsed and checked once, by its option, so that an error names the
// layer the winning value came from: the flag, the environment variable, or
// the file, line and key.

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eurekapeer"
)

// Config is everything the heureka command can be told. Every field documents
// its command-line flag, its environment variable and its default; the YAML
// file named by --config accepts the flag names as keys, as well as the
// Spring Cloud Netflix property names mapped in buildFileKeys.
//
// LoadConfig builds one; DefaultConfig gives the defaults.
type Config struct {
	// HTTPAddr is the host:port the Eureka REST API listens on.
	// --http-addr, HEUREKA_HTTP_ADDR, default ":8761". Spring: server.port
	// (and server.address).
	HTTPAddr string
	// GossipAddr is the host:port the cluster gossip (memberlist) listens on.
	// --gossip-addr, HEUREKA_GOSSIP_ADDR, default ":7946".
	GossipAddr string
	// AdvertiseAddr is the host:port other nodes use to reach this node's
	// gossip listener. --advertise-addr, HEUREKA_ADVERTISE_ADDR, default ""
	// (derived from the interfaces by the cluster layer). LoadConfig turns a
	// bare host into host:<gossip port>.
	AdvertiseAddr string
	// Join lists the seeds to join at start: host:port pairs or DNS names.
	// --join (comma-separated, may be repeated), HEUREKA_JOIN
	// (comma-separated), default none (a cluster of one).
	Join []string
	// GossipKey is the base64 of a 16, 24 or 32 byte AES key encrypting
	// gossip; empty disables encryption. --gossip-key, HEUREKA_GOSSIP_KEY,
	// default "".
	GossipKey string
	// NodeName is this node's unique name in the cluster.
	// --node-name, HEUREKA_NODE_NAME, default os.Hostname().
	NodeName string
	// EvictionInterval is how often expired leases are evicted.
	// --eviction-interval, HEUREKA_EVICTION_INTERVAL, default 60s.
	// Spring: eureka.server.eviction-interval-timer-in-ms.
	EvictionInterval time.Duration
	// SelfPreservation stops eviction when too few renewals arrive.
	// --self-preservation, HEUREKA_SELF_PRESERVATION, default true.
	// Spring: eureka.server.enable-self-preservation.
	SelfPreservation bool
	// RenewalPercentThreshold is the fraction of expected renewals below
	// which self-preservation engages; in (0,1].
	// --renewal-percent-threshold, HEUREKA_RENEWAL_PERCENT_THRESHOLD,
	// default 0.85. Spring: eureka.server.renewal-percent-threshold.
	RenewalPercentThreshold float64
	// RenewalThresholdUpdateInterval is how often the expected renewal count
	// is recomputed from the registry.
	// --renewal-threshold-update-interval,
	// HEUREKA_RENEWAL_THRESHOLD_UPDATE_INTERVAL, default 15m.
	// Spring: eureka.server.renewal-threshold-update-interval-ms.
	RenewalThresholdUpdateInterval time.Duration
	// ExpectedClientRenewalInterval is the renewal period assumed for every
	// client when computing the expected renewals.
	// --expected-client-renewal-interval,
	// HEUREKA_EXPECTED_CLIENT_RENEWAL_INTERVAL, default 30s.
	// Spring: eureka.server.expected-client-renewal-interval-seconds.
	ExpectedClientRenewalInterval time.Duration
	// RenewalWindow is the bucket over which renewals are counted for
	// self-preservation (Eureka: one minute); tests shrink it.
	// --renewal-window, HEUREKA_RENEWAL_WINDOW, default 1m.
	RenewalWindow time.Duration
	// ExpectedInitialRenewers is the number of clients assumed to renew
	// before any has registered.
	// --expected-initial-renewers, HEUREKA_EXPECTED_INITIAL_RENEWERS,
	// default 1. Spring:
	// eureka.instance.registry.expected-number-of-clients-sending-renews.
	ExpectedInitialRenewers int
	// DeltaRetention is how long a change stays in the delta queue served by
	// /eureka/apps/delta.
	// --delta-retention, HEUREKA_DELTA_RETENTION, default 3m.
	// Spring: eureka.server.retention-time-in-m-s-in-delta-queue.
	DeltaRetention time.Duration
	// DeltaRetentionInterval is how often expired deltas are dropped.
	// --delta-retention-interval, HEUREKA_DELTA_RETENTION_INTERVAL,
	// default 30s. Spring: eureka.server.delta-retention-timer-interval-in-ms.
	DeltaRetentionInterval time.Duration
	// DeltaMaxBytes bounds the memory the delta holds beyond the registry
	// (cancelled and evicted instances in their packed form): past it the
	// oldest changes leave the delta before DeltaRetention. 0: no bound.
	// --delta-max-bytes, HEUREKA_DELTA_MAX_BYTES, default 128MiB.
	DeltaMaxBytes int64
	// LeaseDurationDoubling reproduces Java Eureka's bug that a renewed lease
	// expires only after 2×durationInSecs.
	// --lease-duration-doubling, HEUREKA_LEASE_DURATION_DOUBLING,
	// default false.
	LeaseDurationDoubling bool
	// ResponseCacheUpdateInterval, when positive, emulates Eureka's read-only
	// response cache: reads are refreshed at most this often; 0 serves every
	// read from the live registry.
	// --response-cache-update-interval, HEUREKA_RESPONSE_CACHE_UPDATE_INTERVAL,
	// default 0. Spring: eureka.server.use-read-only-response-cache together
	// with eureka.server.response-cache-update-interval-ms.
	ResponseCacheUpdateInterval time.Duration
	// MaxBodyBytes caps the size of a request body.
	// --max-body-bytes, HEUREKA_MAX_BODY_BYTES, default 1048576 (1 MiB);
	// accepts a unit: KiB, MiB, GiB (powers of 1024) or kB, MB, GB (powers
	// of 1000), with or without a space.
	MaxBodyBytes int64
	// RenewForwardInterval is how often renewals of applications owned by
	// another node are forwarded to it, coalesced.
	// --renew-forward-interval, HEUREKA_RENEW_FORWARD_INTERVAL, default 1s.
	RenewForwardInterval time.Duration
	// AntiEntropyInterval is how often this node exchanges registry digests
	// with a random peer. --anti-entropy-interval,
	// HEUREKA_ANTI_ENTROPY_INTERVAL, default 5s.
	AntiEntropyInterval time.Duration
	// ReadyTimeout is the longest a node waits for its initial cluster sync
	// before it reports ready anyway (/readyz 200, registry reads served
	// instead of 403). 0 does not wait: the node is ready at once, which
	// suits a first node or a test; negative is rejected.
	// --ready-timeout, HEUREKA_READY_TIMEOUT, default 30s.
	ReadyTimeout time.Duration
	// StreamTimeout bounds one reliable send to a peer (a replication
	// batch, a transfer, forwarded renewals): a peer that stops reading
	// holds up only its own link, and for at most this long per message.
	// Must be positive. --stream-timeout, HEUREKA_STREAM_TIMEOUT, default 10s.
	StreamTimeout time.Duration
	// TombstoneTTL is how long a cancelled or evicted instance's tombstone
	// is kept, so that a stale copy replicated late cannot bring the
	// instance back. Raise it when partitions may last longer; must be
	// positive. --tombstone-ttl, HEUREKA_TOMBSTONE_TTL, default 10m.
	TombstoneTTL time.Duration
	// HTTPWriteTimeout bounds the writing of one HTTP response, so that a
	// client that stops reading cannot hold a connection forever. Raise it
	// for very large registries on slow links (a full fetch of 1M instances
	// is ~1 GB of JSON); must be positive.
	// --http-write-timeout, HEUREKA_HTTP_WRITE_TIMEOUT, default 2m.
	HTTPWriteTimeout time.Duration
	// EurekaPeers are the service URLs of legacy Eureka servers this node
	// replicates its own clients' changes into, as a Java peer does
	// (eurekapeer), while a team migrates; give every node the same
	// list. http or https URLs with a host, user:password allowed.
	// --eureka-peers (comma-separated, may be repeated), HEUREKA_EUREKA_PEERS
	// (comma-separated), default none.
	EurekaPeers []string
	// LogLevel is debug, info, warn or error.
	// --log-level, HEUREKA_LOG_LEVEL, default "info".
	LogLevel string
	// LogFormat is text or json.
	// --log-format, HEUREKA_LOG_FORMAT, default "text".
	LogFormat string
	// ConfigFile is the YAML file that was loaded, "" for none.
	// --config, HEUREKA_CONFIG, default "".
	ConfigFile string
	// Security holds the auth, TLS, header limit, rate limit and gossip
	// keyring options (security.go).
	Security
	// Regions holds the federation options (regions.go).
	Regions
}

// envPrefix starts the name of every environment variable heureka reads.
const envPrefix = "HEUREKA_"

// DefaultConfig returns the configuration used when nothing is set: Eureka's
// server defaults (§8 of the protocol notes), heureka's listen addresses, and
// the host name (or "heureka" when it cannot be had) as the node name.
func DefaultConfig() Config {
	node, err := os.Hostname()
	if err != nil || node == "" {
		node = "heureka"
	}
	return Config{
		HTTPAddr:                       ":8761",
		GossipAddr:                     ":7946",
		NodeName:                       node,
		EvictionInterval:               60 * time.Second,
		SelfPreservation:               true,
		RenewalPercentThreshold:        0.85,
		RenewalThresholdUpdateInterval: 15 * time.Minute,
		ExpectedClientRenewalInterval:  30 * time.Second,
		RenewalWindow:                  time.Minute,
		ExpectedInitialRenewers:        1,
		DeltaRetention:                 3 * time.Minute,
		DeltaRetentionInterval:         30 * time.Second,
		DeltaMaxBytes:                  view.DefaultDeltaMaxBytes,
		MaxBodyBytes:                   1 << 20,
		ReadyTimeout:                   30 * time.Second,
		StreamTimeout:                  10 * time.Second,
		TombstoneTTL:                   10 * time.Minute,
		HTTPWriteTimeout:               2 * time.Minute,
		RenewForwardInterval:           time.Second,
		AntiEntropyInterval:            5 * time.Second,
		LogLevel:                       "info",
		LogFormat:                      "text",
		Security:                       DefaultSecurity(),
		Regions:                        DefaultRegions(),
	}
}

// Validate reports every invalid field, each naming its flag and the bad
// value: addresses must be host:port, durations positive (ready-timeout and
// response-cache-update-interval may be 0), the renewal threshold in (0,1],
// the gossip key base64 of 16, 24 or 32 bytes, the log level and format known.
// LoadConfig checks each value as it reads it, naming where it came from;
// Validate is for a Config built in code, and a last check of LoadConfig's.
func (c Config) Validate() error {
	var errs []error
	bad := func(flagName string, value any, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: invalid value %s: %s", flagName, quoteValue(value), fmt.Sprintf(format, args...)))
	}

	if err := checkHostPort(c.HTTPAddr, false); err != nil {
		bad("http-addr", c.HTTPAddr, "%v", err)
	}
	if err := checkHostPort(c.GossipAddr, false); err != nil {
		bad("gossip-addr", c.GossipAddr, "%v", err)
	}
	if c.AdvertiseAddr != "" {
		if err := checkHostPort(c.AdvertiseAddr, true); err != nil {
			bad("advertise-addr", c.AdvertiseAddr, "%v", err)
		}
	}
	for _, j := range c.Join {
		if err := checkSeed(j); err != nil {
			bad("join", j, "%v", err)
		}
	}
	for _, p := range c.EurekaPeers {
		if _, err := eurekapeer.ParsePeerURL(p); err != nil {
			bad("eureka-peers", p, "%s", strings.TrimPrefix(err.Error(), "eurekapeer: "))
		}
	}
	if _, err := decodeGossipKey(c.GossipKey); err != nil {
		errs = append(errs, fmt.Errorf("--gossip-key: invalid value: %v", err))
	}
	if strings.TrimSpace(c.NodeName) == "" {
		bad("node-name", c.NodeName, "must not be empty")
	}

	positive := []struct {
		name string
		d    time.Duration
	}{
		{"eviction-interval", c.EvictionInterval},
		{"renewal-threshold-update-interval", c.RenewalThresholdUpdateInterval},
		{"expected-client-renewal-interval", c.ExpectedClientRenewalInterval},
		{"renewal-window", c.RenewalWindow},
		{"delta-retention", c.DeltaRetention},
		{"delta-retention-interval", c.DeltaRetentionInterval},
		{"renew-forward-interval", c.RenewForwardInterval},
		{"anti-entropy-interval", c.AntiEntropyInterval},
		{"tombstone-ttl", c.TombstoneTTL},
		{"stream-timeout", c.StreamTimeout},
		{"http-write-timeout", c.HTTPWriteTimeout},
	}
	for _, p := range positive {
		if err := checkDuration(p.d, false); err != nil {
			bad(p.name, formatDuration(p.d), "%v", err)
		}
	}
	if c.ResponseCacheUpdateInterval < 0 {
		bad("response-cache-update-interval", formatDuration(c.ResponseCacheUpdateInterval), "must not be negative (0 disables the response cache)")
	}
	if c.ReadyTimeout < 0 {
		bad("ready-timeout", formatDuration(c.ReadyTimeout), "must not be negative (0 does not wait for the initial sync)")
	}
	if !(c.RenewalPercentThreshold > 0 && c.RenewalPercentThreshold <= 1) {
		bad("renewal-percent-threshold", c.RenewalPercentThreshold, "must be greater than 0 and at most 1")
	}
	if c.ExpectedInitialRenewers < 0 {
		bad("expected-initial-renewers", c.ExpectedInitialRenewers, "must not be negative")
	}
	if c.DeltaMaxBytes < 0 {
		bad("delta-max-bytes", c.DeltaMaxBytes, "must not be negative (0 for no bound)")
	}
	if c.MaxBodyBytes <= 0 {
		bad("max-body-bytes", c.MaxBodyBytes, "must be positive")
	}
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		bad("log-level", c.LogLevel, "want debug, info, warn or error")
	}
	if err := checkLogFormat(c.LogFormat); err != nil {
		bad("log-format", c.LogFormat, "want text or json")
	}
	errs = append(errs, c.Security.validate(c.GossipKey)...)
	errs = append(errs, c.Regions.validate(c.DeltaRetention)...)
	return errors.Join(errs...)
}

// quoteValue quotes strings and prints other values plainly.
func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return strconv.Quote(s)
	}
	return fmt.Sprint(v)
}

// checkHostPort checks that s is host:port with a numeric port; requireHost
// also rejects an empty host.
func checkHostPort(s string, requireHost bool) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return errors.New("want host:port, e.g. :8761 or 10.0.0.1:8761 ([::1]:8761 for IPv6)")
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return errors.New("port must be a number from 0 to 65535")
	}
	if requireHost && host == "" {
		return errors.New("host must not be empty")
	}
	if strings.ContainsAny(host, " \t/") {
		return errors.New("host contains a space or slash")
	}
	return nil
}

// checkSeed checks one --join element: host:port, or a host / DNS name without
// port.
func checkSeed(s string) error {
	if s == "" || strings.ContainsAny(s, " \t/") {
		return errors.New("want host:port or a DNS name")
	}
	if !strings.Contains(s, ":") || net.ParseIP(s) != nil {
		return nil
	}
	if strings.HasPrefix(s, "[") && strings.HasSuffix(s, "]") {
		return nil
	}
	return checkHostPort(s, true)
}

// decodeGossipKey decodes a --gossip-key value: nil for "", otherwise the
// 16, 24 or 32 bytes of an AES key. Errors never contain the key.
func decodeGossipKey(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, errors.New("not valid standard base64 (generate one with: head -c 32 /dev/urandom | base64)")
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("decodes to %d bytes; want 16, 24 or 32 (AES-128, -192 or -256)", len(key))
}
