package main

// The configuration of the serve command: the Config type, its defaults, the
// table of options (one per Config field: flag, environment variable and
// YAML key all derive from its name) and the layering that builds a Config.
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
	"math"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"
	"github.com/knadh/koanf/providers/confmap"
	"github.com/knadh/koanf/providers/env/v2"
	"github.com/knadh/koanf/providers/posflag"
	"github.com/knadh/koanf/v2"
	"github.com/spf13/pflag"

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
	}
}

// option describes one setting: its flag, environment variable and native
// YAML key all derive from name.
type option struct {
	name    string // flag name, e.g. "http-addr"
	arg     string // placeholder shown in Usage; "" for booleans
	usage   string // one line for Usage
	defText string // default shown in Usage when not derived from DefaultConfig
	boolean bool   // the flag may be given without a value
	secret  bool   // never echo the value in errors or logs
	list    bool   // YAML may give a sequence; repeated flags accumulate
	quote   bool   // Usage quotes the default
	// set parses v, checks it and stores it in c. Its error says what is
	// wrong with the value, not where it came from (loadConfig adds that).
	set func(c *Config, v string) error
	get func(c Config) string
}

// env is the option's environment variable.
func (o option) env() string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(o.name, "-", "_"))
}

// masked reports whether the option's value must never be shown: options
// marked secret, and any whose name says it holds a password, secret or
// token, so that a credential option added later is masked without anyone
// remembering to mark it.
func (o option) masked() bool {
	if o.secret {
		return true
	}
	for _, w := range []string{"password", "passwd", "secret", "token", "credential"} {
		if strings.Contains(o.name, w) {
			return true
		}
	}
	return false
}

// options lists every setting, in the order Usage shows them; the security
// options come last.
var options = append([]option{
	addrOpt("http-addr", "listen address of the Eureka REST API", func(c *Config) *string { return &c.HTTPAddr }),
	addrOpt("gossip-addr", "listen address of cluster gossip (TCP and UDP)", func(c *Config) *string { return &c.GossipAddr }),
	// Checked once the layers are merged: a bare host takes the gossip
	// port (normalizeAdvertise).
	stringOpt("advertise-addr", "host[:port]", "address other nodes use to reach this node's gossip; derived when empty", func(c *Config) *string { return &c.AdvertiseAddr }),
	{
		name: "join", arg: "seeds", list: true,
		usage: "comma-separated host:port pairs or DNS names of nodes to join; may be repeated",
		set: func(c *Config, v string) error {
			seeds := splitList(v)
			for _, s := range seeds {
				if err := checkSeed(s); err != nil {
					if len(seeds) > 1 {
						err = fmt.Errorf("%q: %w", s, err)
					}
					return err
				}
			}
			c.Join = seeds
			return nil
		},
		get: func(c Config) string { return strings.Join(c.Join, ",") },
	},
	{
		name: "gossip-key", arg: "base64", secret: true,
		usage: "base64 of a 16, 24 or 32 byte key encrypting gossip; empty disables encryption",
		set: func(c *Config, v string) error {
			v = strings.TrimSpace(v)
			if _, err := decodeGossipKey(v); err != nil {
				return err
			}
			c.GossipKey = v
			return nil
		},
		get: func(c Config) string { return c.GossipKey },
	},
	func() option {
		o := stringOpt("node-name", "name", "unique name of this node in the cluster", func(c *Config) *string { return &c.NodeName })
		o.defText = "the host name"
		o.set = func(c *Config, v string) error {
			if strings.TrimSpace(v) == "" {
				return errors.New("must not be empty")
			}
			c.NodeName = strings.TrimSpace(v)
			return nil
		}
		return o
	}(),
	durationOpt("eviction-interval", "how often expired leases are evicted", func(c *Config) *time.Duration { return &c.EvictionInterval }),
	boolOpt("self-preservation", "stop evicting when fewer renewals arrive than expected", func(c *Config) *bool { return &c.SelfPreservation }),
	{
		name: "renewal-percent-threshold", arg: "fraction",
		usage: "fraction of expected renewals, in (0,1], below which self-preservation engages",
		set: func(c *Config, v string) error {
			f, err := parseThreshold(v)
			c.RenewalPercentThreshold = f
			return err
		},
		get: func(c Config) string { return strconv.FormatFloat(c.RenewalPercentThreshold, 'g', -1, 64) },
	},
	durationOpt("renewal-threshold-update-interval", "how often the expected number of renewals is recomputed", func(c *Config) *time.Duration { return &c.RenewalThresholdUpdateInterval }),
	durationOpt("expected-client-renewal-interval", "renewal interval assumed for every client", func(c *Config) *time.Duration { return &c.ExpectedClientRenewalInterval }),
	durationOpt("renewal-window", "window over which renewals are counted for self-preservation", func(c *Config) *time.Duration { return &c.RenewalWindow }),
	{
		name: "expected-initial-renewers", arg: "n",
		usage: "clients assumed to renew before any has registered",
		set: func(c *Config, v string) error {
			n, err := parseRenewers(v)
			c.ExpectedInitialRenewers = n
			return err
		},
		get: func(c Config) string { return strconv.Itoa(c.ExpectedInitialRenewers) },
	},
	durationOpt("delta-retention", "how long a change stays in the delta served by /eureka/apps/delta", func(c *Config) *time.Duration { return &c.DeltaRetention }),
	durationOpt("delta-retention-interval", "how often expired deltas are dropped", func(c *Config) *time.Duration { return &c.DeltaRetentionInterval }),
	sizeOpt("delta-max-bytes", "memory the delta may hold beyond the registry before its oldest changes leave early; 0 for no bound (units as --max-body-bytes)", func(c *Config) *int64 { return &c.DeltaMaxBytes }, zeroAllowed),
	boolOpt("lease-duration-doubling", "reproduce Java Eureka's bug that a renewed lease expires after twice its duration", func(c *Config) *bool { return &c.LeaseDurationDoubling }),
	durationOpt("response-cache-update-interval", "when > 0, emulate Eureka's read-only response cache: reads refresh at most this often", func(c *Config) *time.Duration { return &c.ResponseCacheUpdateInterval }, zeroAllowed),
	sizeOpt("max-body-bytes", "largest request body accepted: a byte count, or with a unit (512KiB, 2MiB; kB and MB are powers of 1000)", func(c *Config) *int64 { return &c.MaxBodyBytes }),
	durationOpt("renew-forward-interval", "how often coalesced renewals are forwarded to each application's owner", func(c *Config) *time.Duration { return &c.RenewForwardInterval }),
	durationOpt("anti-entropy-interval", "how often this node compares registry digests with a random peer", func(c *Config) *time.Duration { return &c.AntiEntropyInterval }),
	durationOpt("ready-timeout", "longest wait for the initial cluster sync before the node reports ready anyway; 0 does not wait", func(c *Config) *time.Duration { return &c.ReadyTimeout }, zeroAllowed),
	durationOpt("stream-timeout", "longest time one reliable send to a peer may take (a peer that stops reading holds up only its own link)", func(c *Config) *time.Duration { return &c.StreamTimeout }),
	durationOpt("tombstone-ttl", "how long a cancelled or evicted instance's tombstone is kept against stale replicas", func(c *Config) *time.Duration { return &c.TombstoneTTL }),
	durationOpt("http-write-timeout", "longest time to write one HTTP response", func(c *Config) *time.Duration { return &c.HTTPWriteTimeout }),
	{
		name: "eureka-peers", arg: "urls", list: true,
		usage: "comma-separated service URLs of legacy Eureka servers to replicate this node's client changes into (migration); may be repeated",
		set: func(c *Config, v string) error {
			peers := splitList(v)
			for _, p := range peers {
				if _, err := eurekapeer.ParsePeerURL(p); err != nil {
					return errors.New(strings.TrimPrefix(err.Error(), "eurekapeer: "))
				}
			}
			c.EurekaPeers = peers
			return nil
		},
		get: func(c Config) string {
			shown := make([]string, len(c.EurekaPeers))
			for i, p := range c.EurekaPeers {
				shown[i] = p
				if u, err := url.Parse(p); err == nil {
					shown[i] = u.Redacted() // no password in logs
				}
			}
			return strings.Join(shown, ",")
		},
	},
	{
		name: "log-level", arg: "level", quote: true,
		usage: "debug, info, warn or error",
		set: func(c *Config, v string) error {
			if _, err := parseLogLevel(v); err != nil {
				return errors.New("want debug, info, warn or error")
			}
			c.LogLevel = strings.ToLower(strings.TrimSpace(v))
			return nil
		},
		get: func(c Config) string { return c.LogLevel },
	},
	{
		name: "log-format", arg: "format", quote: true,
		usage: "text or json",
		set: func(c *Config, v string) error {
			if err := checkLogFormat(v); err != nil {
				return errors.New("want text or json")
			}
			c.LogFormat = strings.ToLower(strings.TrimSpace(v))
			return nil
		},
		get: func(c Config) string { return c.LogFormat },
	},
	stringOpt("config", "file", "YAML configuration file (heureka keys and Spring Cloud Eureka properties)", func(c *Config) *string { return &c.ConfigFile }),
}, securityOptions...)

// optionByName finds an option by flag name.
func optionByName(name string) (option, bool) {
	for _, o := range options {
		if o.name == name {
			return o, true
		}
	}
	return option{}, false
}

func stringOpt(name, arg, usage string, field func(*Config) *string) option {
	return option{
		name: name, arg: arg, usage: usage, quote: true,
		set: func(c *Config, v string) error { *field(c) = strings.TrimSpace(v); return nil },
		get: func(c Config) string { return *field(&c) },
	}
}

// addrOpt is a listen address: host:port with a numeric port, the host
// possibly empty (every interface).
func addrOpt(name, usage string, field func(*Config) *string) option {
	o := stringOpt(name, "host:port", usage, field)
	o.set = func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if err := checkHostPort(v, false); err != nil {
			return err
		}
		*field(c) = v
		return nil
	}
	return o
}

// zeroAllowed marks a duration or size option that may be 0 (what 0 means
// is in its usage); they are otherwise positive, and never negative.
const zeroAllowed = true

// durationOpt is a duration option that must be positive, or not negative
// when zeroOK (zeroAllowed) is given. The bound is checked as the value is
// read, so that the error names the flag, environment variable or file key
// the value came from; Validate checks the same bounds on the final Config.
func durationOpt(name, usage string, field func(*Config) *time.Duration, zeroOK ...bool) option {
	allowZero := len(zeroOK) > 0 && zeroOK[0]
	return option{
		name: name, arg: "duration", usage: usage,
		set: func(c *Config, v string) error {
			d, err := parseDuration(v)
			if err == nil {
				err = checkDuration(d, allowZero)
			}
			*field(c) = d
			return err
		},
		get: func(c Config) string { return formatDuration(*field(&c)) },
	}
}

// checkDuration rejects a negative duration, and 0 unless allowZero.
func checkDuration(d time.Duration, allowZero bool) error {
	switch {
	case allowZero && d < 0:
		return errors.New("must not be negative")
	case !allowZero && d <= 0:
		return errors.New("must be positive")
	}
	return nil
}

// sizeOpt is a byte count option (a number, or with a unit: 512KiB, 2MiB)
// that must be positive, or not negative when zeroOK (zeroAllowed) is
// given.
func sizeOpt(name, usage string, field func(*Config) *int64, zeroOK ...bool) option {
	parse := parseSize
	if len(zeroOK) > 0 && zeroOK[0] {
		parse = parseSizeOrZero
	}
	return option{
		name: name, arg: "bytes", usage: usage,
		set: func(c *Config, v string) error {
			n, err := parse(v)
			*field(c) = n
			return err
		},
		get: func(c Config) string { return strconv.FormatInt(*field(&c), 10) },
	}
}

func boolOpt(name, usage string, field func(*Config) *bool) option {
	return option{
		name: name, usage: usage, boolean: true,
		set: func(c *Config, v string) error {
			b, err := parseBool(v)
			*field(c) = b
			return err
		},
		get: func(c Config) string { return strconv.FormatBool(*field(&c)) },
	}
}

// parseDuration reads a Go duration such as "90s" or "15m" (time.ParseDuration,
// with a message that says what to write instead). A bare 0 is a duration.
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, errors.New("not a duration (use Go syntax such as 90s, 15m or 1h30m)")
	}
	return d, nil
}

// parseBool reads true, false, 1 or 0 (any case). strconv.ParseBool would
// also take t, f, T and F, which a configuration file should not depend on.
func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "true", "1":
		return true, nil
	case "false", "0":
		return false, nil
	}
	return false, errors.New("not a boolean (use true, false, 1 or 0)")
}

// parseInt reads a decimal integer of at most bits bits (0: int).
func parseInt(s string, bits int) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
	if err != nil {
		if errors.Is(err, strconv.ErrRange) {
			return 0, errors.New("integer out of range")
		}
		return 0, errors.New("not an integer")
	}
	return n, nil
}

// parseFloat reads a decimal number.
func parseFloat(s string) (float64, error) {
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, errors.New("not a number")
	}
	return f, nil
}

// parseThreshold reads a renewal percent threshold, a fraction in (0,1].
func parseThreshold(s string) (float64, error) {
	f, err := parseFloat(s)
	if err == nil && !(f > 0 && f <= 1) {
		err = errors.New("must be greater than 0 and at most 1")
	}
	return f, err
}

// parseRenewers reads a count of expected renewing clients, 0 or more.
func parseRenewers(s string) (int, error) {
	n, err := parseInt(s, 0)
	if err == nil && n < 0 {
		err = errors.New("must not be negative")
	}
	return int(n), err
}

// parseSize reads a positive byte count, with or without a unit, with
// go-humanize: IEC units (KiB, MiB, GiB) are powers of 1024, SI units (kB,
// MB, GB) powers of 1000; a bare number is bytes.
func parseSize(s string) (int64, error) {
	n, err := humanize.ParseBytes(strings.TrimSpace(s))
	switch {
	case err != nil || n > math.MaxInt64:
		return 0, errors.New("not a byte count (a number of bytes, or with a unit: 512KiB, 2MiB, 1GiB)")
	case n == 0:
		return 0, errors.New("must be positive")
	}
	return int64(n), nil
}

// parseSizeOrZero is parseSize that also accepts 0 (with or without a
// unit).
func parseSizeOrZero(s string) (int64, error) {
	if n, err := humanize.ParseBytes(strings.TrimSpace(s)); err == nil && n == 0 {
		return 0, nil
	}
	return parseSize(s)
}

// splitList splits a comma-separated list, trimming blanks and dropping empty
// elements.
func splitList(s string) []string {
	var out []string
	for e := range strings.SplitSeq(s, ",") {
		if e = strings.TrimSpace(e); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// formatDuration prints d the shortest way Go can parse back ("15m", not
// "15m0s").
func formatDuration(d time.Duration) string {
	switch {
	case d == 0:
		return "0s"
	case d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Minute == 0:
		return strconv.FormatInt(int64(d/time.Minute), 10) + "m"
	}
	return d.String()
}

// invalidValue formats a parse failure: where the value came from, the value
// (unless secret) and why it is wrong.
func invalidValue(source, value string, secret bool, reason error) error {
	if secret {
		return fmt.Errorf("%s: invalid value: %v", source, reason)
	}
	return fmt.Errorf("%s: invalid value %q: %v", source, value, reason)
}

// ---- command-line flags ----

// textValue is the pflag.Value of every serve flag: it keeps the text given,
// which loadConfig parses once the layers are merged (so that a flag's value
// is read by the same code, with the same messages, as the environment's
// and the file's). A repeated list flag (--join) accumulates.
type textValue struct {
	text    string
	list    bool
	typ     string // shown by cobra's generated help
	boolean bool
}

func (v *textValue) String() string { return v.text }

func (v *textValue) Set(s string) error {
	if v.list && v.text != "" {
		v.text += "," + s
	} else {
		v.text = s
	}
	return nil
}

func (v *textValue) Type() string { return v.typ }

// IsBoolFlag lets a boolean flag be given without a value.
func (v *textValue) IsBoolFlag() bool { return v.boolean }

// serveFlags returns the flag set of the serve command: one flag per option.
// A boolean flag takes its value only after '=' (--self-preservation=false):
// "--self-preservation false" sets it to true and leaves "false" as an
// argument, which the command rejects with a hint.
func serveFlags() *pflag.FlagSet {
	fs := pflag.NewFlagSet("heureka", pflag.ContinueOnError)
	fs.SortFlags = false
	fs.Usage = func() {}
	def := DefaultConfig()
	for _, o := range options {
		typ := o.arg
		if o.boolean {
			typ = "bool"
		}
		f := fs.VarPF(&textValue{list: o.list, typ: typ, boolean: o.boolean}, o.name, "", o.usage)
		f.DefValue = o.get(def)
		if o.boolean {
			f.NoOptDefVal = "true"
		}
	}
	return fs
}

// ErrHelp is what LoadConfig returns for -h or --help: the caller should
// print Usage.
var ErrHelp = pflag.ErrHelp

// LoadConfig builds a Config from, in increasing precedence: defaults, the
// YAML file named by --config (or HEUREKA_CONFIG), HEUREKA_* environment
// variables, command-line flags. args excludes the program name and the
// subcommand. It returns warnings (e.g. unknown YAML keys, listed by full
// dotted path) and an error for invalid values, each naming the flag,
// variable or file:line key and the bad value.
//
// getenv is normally os.Getenv (nil means os.Getenv); an empty variable counts
// as unset. Flags may be spelled --name or, as Go's flag package had it,
// -name; a repeated --join adds to the list, other repeated flags keep the
// last value. For -h or --help the error is ErrHelp (test with errors.Is) and
// the caller should print Usage. The returned Config has passed Validate.
func LoadConfig(args []string, getenv func(string) string) (Config, []string, error) {
	fs := serveFlags()
	known := map[string]bool{"help": true}
	fs.VisitAll(func(f *pflag.Flag) { known[f.Name] = true })
	if err := fs.Parse(goStyleFlags(args, known)); err != nil {
		if errors.Is(err, pflag.ErrHelp) {
			return Config{}, nil, ErrHelp
		}
		return Config{}, nil, flagError(err)
	}
	if err := noArguments(fs.Args()); err != nil {
		return Config{}, nil, err
	}
	return loadConfig(fs, getenv)
}

// flagError adds the way to the list of flags to a flag parse error.
func flagError(err error) error {
	return fmt.Errorf("%w (run 'heureka help' for the list of flags)", err)
}

// noArguments rejects positional arguments of the serve command; a boolean
// given as a separate argument gets a hint.
func noArguments(args []string) error {
	if len(args) == 0 {
		return nil
	}
	if _, err := parseBool(args[0]); err == nil {
		return fmt.Errorf("unexpected argument %q (give a boolean flag its value as --flag=%s)", args[0], args[0])
	}
	return fmt.Errorf("unexpected argument %q (run 'heureka help' for usage)", args[0])
}

// goStyleFlags rewrites the Go-style long flags that earlier releases
// accepted (-name, -name=value) into pflag's --name form. Only names of long
// flags in known are rewritten, so shorthands such as -h stay what they are;
// nothing after "--" is touched.
func goStyleFlags(args []string, known map[string]bool) []string {
	out := make([]string, len(args))
	copy(out, args)
	for i, a := range out {
		if a == "--" {
			break
		}
		if len(a) < 3 || a[0] != '-' || a[1] == '-' {
			continue
		}
		name, _, _ := strings.Cut(a[1:], "=")
		if known[name] {
			out[i] = "-" + a
		}
	}
	return out
}

// sources says, for each option, where its winning value came from: "" for
// the default, otherwise the text error messages start with.
type sources map[string]string

// loadConfig merges the layers for the parsed serve flags fs (see
// LoadConfig).
func loadConfig(fs *pflag.FlagSet, getenv func(string) string) (Config, []string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := DefaultConfig()
	k := koanf.New(".")
	from := sources{}
	// merge adds one layer, noting where each of its keys came from.
	merge := func(p koanf.Provider, source func(key string) string) error {
		layer := koanf.New(".")
		if err := layer.Load(p, nil); err != nil {
			return err
		}
		for _, key := range layer.Keys() {
			from[key] = source(key)
		}
		return k.Merge(layer)
	}

	defaults := make(map[string]any, len(options))
	for _, o := range options {
		defaults[o.name] = o.get(cfg)
	}
	if err := merge(confmap.Provider(defaults, "."), func(string) string { return "" }); err != nil {
		return Config{}, nil, err
	}

	// The file named by the flag, else by the environment.
	cfgOpt, _ := optionByName("config")
	path := strings.TrimSpace(getenv(cfgOpt.env()))
	if f := fs.Lookup("config"); f != nil && f.Changed {
		path = strings.TrimSpace(f.Value.String())
	}
	var warnings []string
	if path != "" {
		values, w, err := loadFile(path)
		warnings = append(warnings, w...)
		if err != nil {
			return Config{}, warnings, err
		}
		layer := make(map[string]any, len(values))
		for key, v := range values {
			layer[key] = v.text
		}
		if err := merge(confmap.Provider(layer, "."), func(key string) string { return values[key].source }); err != nil {
			return Config{}, warnings, err
		}
	}

	envNames := make(map[string]string, len(options))
	for _, o := range options {
		if o.name != "config" {
			envNames[o.env()] = o.name
		}
	}
	environ := func() []string {
		var out []string
		for name := range envNames {
			if v := getenv(name); v != "" {
				out = append(out, name+"="+v)
			}
		}
		return out
	}
	byEnv := map[string]string{}
	err := merge(env.Provider(".", env.Opt{
		Prefix:      envPrefix,
		EnvironFunc: environ,
		TransformFunc: func(name, v string) (string, any) {
			byEnv[envNames[name]] = name
			return envNames[name], v
		},
	}), func(key string) string { return "environment variable " + byEnv[key] })
	if err != nil {
		return Config{}, warnings, err
	}

	// Only flags given on the command line (ko nil: unchanged flags are
	// skipped), as the text they were given.
	flags := posflag.ProviderWithValue(fs, ".", nil, func(key, v string) (string, any) {
		if key == "config" {
			return "", nil
		}
		return key, v
	})
	if err := merge(flags, func(key string) string { return "--" + key }); err != nil {
		return Config{}, warnings, err
	}

	var errs []error
	for _, o := range options {
		src := from[o.name]
		if o.name == "config" || src == "" {
			continue // the default is already in cfg
		}
		v := k.String(o.name)
		if err := o.set(&cfg, v); err != nil {
			errs = append(errs, invalidValue(src, v, o.masked(), err))
		}
	}
	if len(errs) > 0 {
		return Config{}, warnings, errors.Join(errs...)
	}
	cfg.ConfigFile = path
	cfg.AdvertiseAddr = normalizeAdvertise(cfg.AdvertiseAddr, cfg.GossipAddr)
	if cfg.AdvertiseAddr != "" {
		if err := checkHostPort(cfg.AdvertiseAddr, true); err != nil {
			src := from["advertise-addr"]
			return Config{}, warnings, invalidValue(src, k.String("advertise-addr"), false, err)
		}
	}
	if err := cfg.Validate(); err != nil {
		return Config{}, warnings, err
	}
	return cfg, warnings, nil
}

// normalizeAdvertise turns a bare advertise host into host:<gossip port>.
func normalizeAdvertise(adv, gossip string) string {
	if adv == "" {
		return ""
	}
	if _, _, err := net.SplitHostPort(adv); err == nil {
		return adv
	}
	host := strings.TrimSuffix(strings.TrimPrefix(adv, "["), "]")
	if strings.Contains(host, ":") && net.ParseIP(host) == nil {
		return adv // not a bare host; let the check complain
	}
	_, port, err := net.SplitHostPort(gossip)
	if err != nil {
		return adv
	}
	return net.JoinHostPort(host, port)
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
