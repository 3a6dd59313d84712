package main

import (
	"bytes"
	"encoding/base64"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
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
	// accepts a KiB, MiB or GiB suffix.
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
	// LogLevel is debug, info, warn or error.
	// --log-level, HEUREKA_LOG_LEVEL, default "info".
	LogLevel string
	// LogFormat is text or json.
	// --log-format, HEUREKA_LOG_FORMAT, default "text".
	LogFormat string
	// ConfigFile is the YAML file that was loaded, "" for none.
	// --config, HEUREKA_CONFIG, default "".
	ConfigFile string
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
		MaxBodyBytes:                   1 << 20,
		ReadyTimeout:                   30 * time.Second,
		StreamTimeout:                  10 * time.Second,
		TombstoneTTL:                   10 * time.Minute,
		HTTPWriteTimeout:               2 * time.Minute,
		RenewForwardInterval:           time.Second,
		AntiEntropyInterval:            5 * time.Second,
		LogLevel:                       "info",
		LogFormat:                      "text",
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
	secret  bool   // never echo the value in errors
	list    bool   // YAML may give a sequence; repeated flags accumulate
	quote   bool   // Usage quotes the default
	set     func(c *Config, v string) error
	get     func(c Config) string
}

// env is the option's environment variable.
func (o option) env() string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(o.name, "-", "_"))
}

// options lists every setting, in the order Usage shows them.
var options = []option{
	stringOpt("http-addr", "host:port", "listen address of the Eureka REST API", func(c *Config) *string { return &c.HTTPAddr }),
	stringOpt("gossip-addr", "host:port", "listen address of cluster gossip (TCP and UDP)", func(c *Config) *string { return &c.GossipAddr }),
	stringOpt("advertise-addr", "host[:port]", "address other nodes use to reach this node's gossip; derived when empty", func(c *Config) *string { return &c.AdvertiseAddr }),
	{
		name: "join", arg: "seeds", list: true,
		usage: "comma-separated host:port pairs or DNS names of nodes to join; may be repeated",
		set: func(c *Config, v string) error {
			c.Join = splitList(v)
			return nil
		},
		get: func(c Config) string { return strings.Join(c.Join, ",") },
	},
	{
		name: "gossip-key", arg: "base64", secret: true,
		usage: "base64 of a 16, 24 or 32 byte key encrypting gossip; empty disables encryption",
		set:   func(c *Config, v string) error { c.GossipKey = strings.TrimSpace(v); return nil },
		get:   func(c Config) string { return c.GossipKey },
	},
	func() option {
		o := stringOpt("node-name", "name", "unique name of this node in the cluster", func(c *Config) *string { return &c.NodeName })
		o.defText = "the host name"
		return o
	}(),
	durationOpt("eviction-interval", "how often expired leases are evicted", func(c *Config) *time.Duration { return &c.EvictionInterval }),
	boolOpt("self-preservation", "stop evicting when fewer renewals arrive than expected", func(c *Config) *bool { return &c.SelfPreservation }),
	{
		name: "renewal-percent-threshold", arg: "fraction",
		usage: "fraction of expected renewals, in (0,1], below which self-preservation engages",
		set: func(c *Config, v string) error {
			f, err := parseFloat(v)
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
			n, err := parseInt(v, 0)
			c.ExpectedInitialRenewers = int(n)
			return err
		},
		get: func(c Config) string { return strconv.Itoa(c.ExpectedInitialRenewers) },
	},
	durationOpt("delta-retention", "how long a change stays in the delta served by /eureka/apps/delta", func(c *Config) *time.Duration { return &c.DeltaRetention }),
	durationOpt("delta-retention-interval", "how often expired deltas are dropped", func(c *Config) *time.Duration { return &c.DeltaRetentionInterval }),
	boolOpt("lease-duration-doubling", "reproduce Java Eureka's bug that a renewed lease expires after twice its duration", func(c *Config) *bool { return &c.LeaseDurationDoubling }),
	durationOpt("response-cache-update-interval", "when > 0, emulate Eureka's read-only response cache: reads refresh at most this often", func(c *Config) *time.Duration { return &c.ResponseCacheUpdateInterval }, zeroAllowed),
	{
		name: "max-body-bytes", arg: "bytes",
		usage: "largest request body accepted; a KiB, MiB or GiB suffix is allowed",
		set: func(c *Config, v string) error {
			n, err := parseSize(v)
			c.MaxBodyBytes = n
			return err
		},
		get: func(c Config) string { return strconv.FormatInt(c.MaxBodyBytes, 10) },
	},
	durationOpt("renew-forward-interval", "how often coalesced renewals are forwarded to each application's owner", func(c *Config) *time.Duration { return &c.RenewForwardInterval }),
	durationOpt("anti-entropy-interval", "how often this node compares registry digests with a random peer", func(c *Config) *time.Duration { return &c.AntiEntropyInterval }),
	durationOpt("ready-timeout", "longest wait for the initial cluster sync before the node reports ready anyway; 0 does not wait", func(c *Config) *time.Duration { return &c.ReadyTimeout }, zeroAllowed),
	durationOpt("stream-timeout", "longest time one reliable send to a peer may take (a peer that stops reading holds up only its own link)", func(c *Config) *time.Duration { return &c.StreamTimeout }),
	durationOpt("tombstone-ttl", "how long a cancelled or evicted instance's tombstone is kept against stale replicas", func(c *Config) *time.Duration { return &c.TombstoneTTL }),
	durationOpt("http-write-timeout", "longest time to write one HTTP response", func(c *Config) *time.Duration { return &c.HTTPWriteTimeout }),
	{
		name: "log-level", arg: "level", quote: true,
		usage: "debug, info, warn or error",
		set:   func(c *Config, v string) error { c.LogLevel = strings.ToLower(strings.TrimSpace(v)); return nil },
		get:   func(c Config) string { return c.LogLevel },
	},
	{
		name: "log-format", arg: "format", quote: true,
		usage: "text or json",
		set:   func(c *Config, v string) error { c.LogFormat = strings.ToLower(strings.TrimSpace(v)); return nil },
		get:   func(c Config) string { return c.LogFormat },
	},
	stringOpt("config", "file", "YAML configuration file (heureka keys and Spring Cloud Eureka properties)", func(c *Config) *string { return &c.ConfigFile }),
}

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

// zeroAllowed marks a duration option that may be 0 (what 0 means is in its
// usage); durations are otherwise positive, and never negative.
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

// parseDuration reads a Go duration such as "90s" or "15m".
func parseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, errors.New("not a duration (use Go syntax such as 90s, 15m or 1h30m)")
	}
	return d, nil
}

// parseBool reads true, false, 1 or 0 (any case).
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

// parseSize reads a byte count, optionally suffixed with KiB, MiB or GiB.
func parseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range []struct {
		suffix string
		mult   int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"B", 1}} {
		if len(s) > len(u.suffix) && strings.EqualFold(s[len(s)-len(u.suffix):], u.suffix) {
			s, mult = strings.TrimSpace(s[:len(s)-len(u.suffix)]), u.mult
			break
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n > math.MaxInt64/mult {
		return 0, errors.New("not a byte count (an integer, optionally with a KiB, MiB or GiB suffix)")
	}
	return n * mult, nil
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

// rawFlag records the text given to a flag; values are parsed later so that
// the flag layer can be applied after the file and environment layers.
type rawFlag struct {
	vals    *[]string
	boolean bool
}

func (r rawFlag) String() string {
	if r.vals == nil || len(*r.vals) == 0 {
		return ""
	}
	return (*r.vals)[len(*r.vals)-1]
}

func (r rawFlag) Set(s string) error {
	*r.vals = append(*r.vals, s)
	return nil
}

// IsBoolFlag lets a boolean flag be given without a value.
func (r rawFlag) IsBoolFlag() bool { return r.boolean }

// parseFlags parses args into the raw values given to each flag.
func parseFlags(args []string) (map[string][]string, error) {
	var out bytes.Buffer
	fs := flag.NewFlagSet("heureka", flag.ContinueOnError)
	fs.SetOutput(&out)
	fs.Usage = func() {}
	vals := make(map[string]*[]string, len(options))
	for _, o := range options {
		v := new([]string)
		vals[o.name] = v
		fs.Var(rawFlag{vals: v, boolean: o.boolean}, o.name, o.usage)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, flag.ErrHelp
		}
		return nil, fmt.Errorf("%w (run with --help for the list of flags)", err)
	}
	if fs.NArg() > 0 {
		arg := fs.Arg(0)
		if _, err := parseBool(arg); err == nil {
			return nil, fmt.Errorf("unexpected argument %q (give a boolean flag its value as --flag=%s)", arg, arg)
		}
		return nil, fmt.Errorf("unexpected argument %q (flags must come before it; run with --help for usage)", arg)
	}
	got := make(map[string][]string)
	for name, v := range vals {
		if len(*v) > 0 {
			got[name] = *v
		}
	}
	return got, nil
}

// LoadConfig builds a Config from, in increasing precedence: defaults, the
// YAML file named by --config (or HEUREKA_CONFIG), HEUREKA_* environment
// variables, command-line flags. args excludes the program name and the
// subcommand. It returns warnings (e.g. unknown YAML keys, listed by full
// dotted path) and an error for invalid values, with messages naming the
// flag/key and the bad value.
//
// getenv is normally os.Getenv (nil means os.Getenv); an empty variable counts
// as unset. Flags may be spelled -name or --name; a repeated --join adds to the
// list, other repeated flags keep the last value. For -h or --help the error is
// flag.ErrHelp (test with errors.Is) and the caller should print Usage. The
// returned Config has passed Validate.
func LoadConfig(args []string, getenv func(string) string) (Config, []string, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	flags, err := parseFlags(args)
	if err != nil {
		return Config{}, nil, err
	}
	cfg := DefaultConfig()
	var warnings []string

	cfgOpt, _ := optionByName("config")
	path := strings.TrimSpace(getenv(cfgOpt.env()))
	if v := flags["config"]; len(v) > 0 {
		path = strings.TrimSpace(v[len(v)-1])
	}
	if path != "" {
		w, err := loadFile(&cfg, path)
		warnings = append(warnings, w...)
		if err != nil {
			return Config{}, warnings, err
		}
	}
	cfg.ConfigFile = path

	var errs []error
	for _, o := range options {
		if o.name == "config" {
			continue
		}
		v := getenv(o.env())
		if v == "" {
			continue
		}
		if err := o.set(&cfg, v); err != nil {
			errs = append(errs, invalidValue("environment variable "+o.env(), v, o.secret, err))
		}
	}
	for _, o := range options {
		vs, ok := flags[o.name]
		if !ok || o.name == "config" {
			continue
		}
		v := vs[len(vs)-1]
		if o.list {
			v = strings.Join(vs, ",")
		}
		if err := o.set(&cfg, v); err != nil {
			errs = append(errs, invalidValue("--"+o.name, v, o.secret, err))
		}
	}
	if len(errs) > 0 {
		return Config{}, warnings, errors.Join(errs...)
	}
	cfg.AdvertiseAddr = normalizeAdvertise(cfg.AdvertiseAddr, cfg.GossipAddr)
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
		return adv // not a bare host; let Validate complain
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
	if _, err := decodeGossipKey(c.GossipKey); err != nil {
		errs = append(errs, fmt.Errorf("--gossip-key: %v", err))
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
	if c.MaxBodyBytes <= 0 {
		bad("max-body-bytes", c.MaxBodyBytes, "must be positive")
	}
	if _, err := parseLogLevel(c.LogLevel); err != nil {
		bad("log-level", c.LogLevel, "want debug, info, warn or error")
	}
	if err := checkLogFormat(c.LogFormat); err != nil {
		bad("log-format", c.LogFormat, "want text or json")
	}
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
		return nil, errors.New("invalid value: not valid standard base64 (generate one with: head -c 32 /dev/urandom | base64)")
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, fmt.Errorf("invalid value: decodes to %d bytes; want 16, 24 or 32 (AES-128, -192 or -256)", len(key))
}

// ---- YAML configuration file ----

// fileKey is a key the configuration file understands.
type fileKey struct {
	name   string // spelling shown in suggestions
	native bool   // a heureka key (wins over Spring keys setting the same field)
	handle func(l *fileLoader, at keyRef, v *yaml.Node)
}

// keyRef locates a key in the file.
type keyRef struct {
	path string // full dotted path as written
	line int
}

// assignment is one setting taken from the file, applied once the whole file
// has been read.
type assignment struct {
	field  string // flag name of the Config field
	at     keyRef
	native bool
	apply  func(*Config)
}

// pendingValue is a Spring value combined with others after reading the file.
type pendingValue[T any] struct {
	at  keyRef
	val T
	set bool
}

// fileLoader accumulates what one configuration file says.
type fileLoader struct {
	file     string
	warnings []string
	errs     []error
	assigns  []assignment

	readOnlyCache pendingValue[bool]
	cacheInterval pendingValue[time.Duration]
	serverPort    pendingValue[int]
	serverAddress pendingValue[string]
}

func (l *fileLoader) warnf(at keyRef, format string, args ...any) {
	l.warnings = append(l.warnings, fmt.Sprintf("%s:%d: ", l.file, at.line)+fmt.Sprintf(format, args...))
}

func (l *fileLoader) errorf(at keyRef, format string, args ...any) {
	l.errs = append(l.errs, fmt.Errorf("%s:%d: %s: %s", l.file, at.line, at.path, fmt.Sprintf(format, args...)))
}

// canonicalKey reduces a dotted key to the form Spring's relaxed binding
// compares: each segment lower-cased without '-' or '_', so
// enable-self-preservation, enableSelfPreservation and
// enable_self_preservation are one key.
func canonicalKey(path string) string {
	segs := strings.Split(path, ".")
	for i, s := range segs {
		segs[i] = canonicalSegment(s)
	}
	return strings.Join(segs, ".")
}

func canonicalSegment(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r == '-' || r == '_' {
			continue
		}
		b.WriteString(strings.ToLower(string(r)))
	}
	return b.String()
}

// fileKeys maps canonical keys to their handlers.
var fileKeys = buildFileKeys()

// ignoredKeys are Spring Cloud / Netflix Eureka keys that are recognised but
// mean nothing to heureka (canonical form).
var ignoredKeys = buildIgnoredKeys()

// keyPrefixes classifies keys not listed exactly: under an "ignore" prefix a
// key is a known Spring setting heureka does not use; under a "strict" prefix
// it is unknown. The longest matching prefix decides.
var keyPrefixes = map[string]bool{ // canonical prefix -> ignored
	"eureka.server":            false,
	"eureka.instance.registry": false,
	"heureka":                  false,
	"eureka.client":            true,
	"eureka.instance":          true,
	"eureka.dashboard":         true,
	"eureka.environment":       true,
	"eureka.datacenter":        true,
	"spring":                   true,
	"server":                   true,
	"management":               true,
	"logging":                  true,
}

// springServerIgnored are eureka.server properties (Spring kebab-case; the
// Netflix eureka.<camelCase> spellings match too) with no meaning here.
var springServerIgnored = []string{
	"a-s-g-cache-expiry-timeout-ms", "a-s-g-query-timeout-ms", "a-s-g-update-interval-ms",
	"aws-access-id", "aws-secret-key", "batch-replication", "binding-strategy",
	"disable-delta", "disable-delta-for-remote-regions", "disable-transparent-fallback-to-other-region",
	"e-i-p-bind-rebind-retries", "e-i-p-binding-retry-interval-ms", "e-i-p-binding-retry-interval-ms-when-unbound",
	"enable-replicated-request-compression", "experimental", "g-zip-content-from-remote-region",
	"initial-capacity-of-response-cache", "json-codec-name", "list-auto-scaling-groups-role-name",
	"log-identity-headers", "max-elements-in-peer-replication-pool", "max-elements-in-status-replication-pool",
	"max-idle-thread-age-in-minutes-for-peer-replication", "max-idle-thread-in-minutes-age-for-status-replication",
	"max-threads-for-peer-replication", "max-threads-for-status-replication", "max-time-for-replication",
	"metrics", "min-available-instances-for-peer-replication", "min-threads-for-peer-replication",
	"min-threads-for-status-replication", "number-of-replication-retries", "number-registry-sync-retries",
	"peer-eureka-nodes-update-interval-ms", "peer-eureka-status-refresh-time-interval-ms",
	"peer-node-connect-timeout-ms", "peer-node-connection-idle-timeout-seconds", "peer-node-read-timeout-ms",
	"peer-node-total-connections", "peer-node-total-connections-per-host", "prime-aws-replica-connections",
	"property-resolver", "rate-limiter-burst-size", "rate-limiter-enabled", "rate-limiter-full-fetch-average-rate",
	"rate-limiter-privileged-clients", "rate-limiter-registry-fetch-average-rate",
	"rate-limiter-throttle-standard-clients", "registry-sync-retry-wait-ms", "remote-region-app-whitelist",
	"remote-region-connect-timeout-ms", "remote-region-connection-idle-timeout-seconds",
	"remote-region-fetch-thread-pool-size", "remote-region-read-timeout-ms", "remote-region-registry-fetch-interval",
	"remote-region-total-connections", "remote-region-total-connections-per-host", "remote-region-trust-store",
	"remote-region-trust-store-password", "remote-region-urls", "remote-region-urls-with-name",
	"response-cache-auto-expiration-in-seconds", "route53-bind-rebind-retries", "route53-binding-retry-interval-ms",
	"route53-domain-t-t-l", "sync-when-timestamp-differs", "wait-time-in-ms-when-sync-empty", "xml-codec-name",
}

func buildIgnoredKeys() map[string]bool {
	m := map[string]bool{
		canonicalKey("eureka.instance.registry.default-open-for-traffic-count"): true,
	}
	for _, k := range springServerIgnored {
		m[canonicalKey("eureka.server."+k)] = true
		m[canonicalKey("eureka."+k)] = true
	}
	return m
}

func buildFileKeys() map[string]fileKey {
	m := make(map[string]fileKey)
	add := func(path string, native bool, h func(l *fileLoader, at keyRef, v *yaml.Node)) {
		m[canonicalKey(path)] = fileKey{name: path, native: native, handle: h}
	}
	// heureka's own keys, top level or under "heureka:".
	for _, o := range options {
		if o.name == "config" {
			continue
		}
		h := nativeHandler(o)
		add(o.name, true, h)
		add("heureka."+o.name, true, h)
	}
	// Spring Cloud (eureka.server.<kebab>) and Netflix (eureka.<camel>)
	// spellings: canonicalisation makes both prefixes match either case.
	server := func(name string, h func(l *fileLoader, at keyRef, v *yaml.Node)) {
		add("eureka.server."+name, false, h)
		add("eureka."+name, false, h)
	}
	server("enable-self-preservation", springBool("self-preservation", func(c *Config, b bool) { c.SelfPreservation = b }))
	server("eviction-interval-timer-in-ms", springDuration("eviction-interval", time.Millisecond, func(c *Config, d time.Duration) { c.EvictionInterval = d }))
	server("renewal-percent-threshold", springThreshold)
	server("renewal-threshold-update-interval-ms", springDuration("renewal-threshold-update-interval", time.Millisecond, func(c *Config, d time.Duration) { c.RenewalThresholdUpdateInterval = d }))
	server("expected-client-renewal-interval-seconds", springDuration("expected-client-renewal-interval", time.Second, func(c *Config, d time.Duration) { c.ExpectedClientRenewalInterval = d }))
	server("retention-time-in-m-s-in-delta-queue", springDuration("delta-retention", time.Millisecond, func(c *Config, d time.Duration) { c.DeltaRetention = d }))
	server("delta-retention-timer-interval-in-ms", springDuration("delta-retention-interval", time.Millisecond, func(c *Config, d time.Duration) { c.DeltaRetentionInterval = d }))
	server("use-read-only-response-cache", springReadOnlyCache)
	server("should-use-read-only-response-cache", springReadOnlyCache)
	server("response-cache-update-interval-ms", springCacheInterval)
	add("eureka.instance.registry.expected-number-of-clients-sending-renews", false, springExpectedRenewers)
	add("server.port", false, springServerPort)
	add("server.address", false, springServerAddress)
	return m
}

// scalar returns the text of a scalar value node; ok is false (after
// recording an error) for any other kind, and for null.
func (l *fileLoader) scalar(at keyRef, v *yaml.Node) (string, bool) {
	switch v.Kind {
	case yaml.ScalarNode:
		if v.ShortTag() == "!!null" {
			return "", false
		}
		return v.Value, true
	case yaml.MappingNode:
		l.errorf(at, "wrong type: want a single value, got a mapping")
	case yaml.SequenceNode:
		l.errorf(at, "wrong type: want a single value, got a list")
	default:
		l.errorf(at, "wrong type: want a single value")
	}
	return "", false
}

// nativeHandler reads a heureka key with the option's own parser.
func nativeHandler(o option) func(l *fileLoader, at keyRef, v *yaml.Node) {
	return func(l *fileLoader, at keyRef, v *yaml.Node) {
		var text string
		if o.list && v.Kind == yaml.SequenceNode {
			parts := make([]string, 0, len(v.Content))
			for _, e := range v.Content {
				e = deref(e)
				if e.Kind != yaml.ScalarNode {
					l.errorf(at, "wrong type: want a list of strings")
					return
				}
				parts = append(parts, e.Value)
			}
			text = strings.Join(parts, ",")
		} else {
			s, ok := l.scalar(at, v)
			if !ok {
				return
			}
			text = s
		}
		var scratch Config
		if err := o.set(&scratch, text); err != nil {
			l.errs = append(l.errs, invalidValue(fmt.Sprintf("%s:%d: %s", l.file, at.line, at.path), text, o.secret, err))
			return
		}
		l.assigns = append(l.assigns, assignment{field: o.name, at: at, native: true, apply: func(c *Config) { _ = o.set(c, text) }})
	}
}

// springValue parses a scalar with parse, recording a type error naming the
// key on failure.
func springValue[T any](l *fileLoader, at keyRef, v *yaml.Node, parse func(string) (T, error)) (T, bool) {
	var zero T
	s, ok := l.scalar(at, v)
	if !ok {
		return zero, false
	}
	val, err := parse(s)
	if err != nil {
		l.errs = append(l.errs, invalidValue(fmt.Sprintf("%s:%d: %s", l.file, at.line, at.path), s, false, err))
		return zero, false
	}
	return val, true
}

func springBool(field string, set func(*Config, bool)) func(l *fileLoader, at keyRef, v *yaml.Node) {
	return func(l *fileLoader, at keyRef, v *yaml.Node) {
		if b, ok := springValue(l, at, v, parseBool); ok {
			l.assigns = append(l.assigns, assignment{field: field, at: at, apply: func(c *Config) { set(c, b) }})
		}
	}
}

// parseCount returns a parser of positive integer counts of unit.
func parseCount(unit time.Duration) func(string) (time.Duration, error) {
	name := map[time.Duration]string{time.Millisecond: "milliseconds", time.Second: "seconds"}[unit]
	return func(s string) (time.Duration, error) {
		n, err := parseInt(s, 64)
		if err != nil {
			return 0, fmt.Errorf("%v (want a whole number of %s)", err, name)
		}
		if n <= 0 || n > math.MaxInt64/int64(unit) {
			return 0, fmt.Errorf("want a positive number of %s", name)
		}
		return time.Duration(n) * unit, nil
	}
}

func springDuration(field string, unit time.Duration, set func(*Config, time.Duration)) func(l *fileLoader, at keyRef, v *yaml.Node) {
	return func(l *fileLoader, at keyRef, v *yaml.Node) {
		if d, ok := springValue(l, at, v, parseCount(unit)); ok {
			l.assigns = append(l.assigns, assignment{field: field, at: at, apply: func(c *Config) { set(c, d) }})
		}
	}
}

func springThreshold(l *fileLoader, at keyRef, v *yaml.Node) {
	f, ok := springValue(l, at, v, func(s string) (float64, error) {
		f, err := parseFloat(s)
		if err == nil && !(f > 0 && f <= 1) {
			err = errors.New("must be greater than 0 and at most 1")
		}
		return f, err
	})
	if ok {
		l.assigns = append(l.assigns, assignment{field: "renewal-percent-threshold", at: at, apply: func(c *Config) { c.RenewalPercentThreshold = f }})
	}
}

func springExpectedRenewers(l *fileLoader, at keyRef, v *yaml.Node) {
	n, ok := springValue(l, at, v, func(s string) (int, error) {
		n, err := parseInt(s, 0)
		if err == nil && n < 0 {
			err = errors.New("must not be negative")
		}
		return int(n), err
	})
	if ok {
		l.assigns = append(l.assigns, assignment{field: "expected-initial-renewers", at: at, apply: func(c *Config) { c.ExpectedInitialRenewers = n }})
	}
}

// setPending records a value combined later, warning when the key was
// already given.
func setPending[T any](l *fileLoader, p *pendingValue[T], at keyRef, val T) {
	if p.set {
		l.warnf(at, "%s overrides %s (line %d), which sets the same property", at.path, p.at.path, p.at.line)
	}
	*p = pendingValue[T]{at: at, val: val, set: true}
}

func springReadOnlyCache(l *fileLoader, at keyRef, v *yaml.Node) {
	if b, ok := springValue(l, at, v, parseBool); ok {
		setPending(l, &l.readOnlyCache, at, b)
	}
}

func springCacheInterval(l *fileLoader, at keyRef, v *yaml.Node) {
	if d, ok := springValue(l, at, v, parseCount(time.Millisecond)); ok {
		setPending(l, &l.cacheInterval, at, d)
	}
}

func springServerPort(l *fileLoader, at keyRef, v *yaml.Node) {
	p, ok := springValue(l, at, v, func(s string) (int, error) {
		n, err := strconv.ParseUint(strings.TrimSpace(s), 10, 16)
		if err != nil {
			return 0, errors.New("want a port number from 0 to 65535")
		}
		return int(n), nil
	})
	if ok {
		setPending(l, &l.serverPort, at, p)
	}
}

func springServerAddress(l *fileLoader, at keyRef, v *yaml.Node) {
	a, ok := springValue(l, at, v, func(s string) (string, error) {
		s = strings.TrimSpace(s)
		if s == "" || strings.ContainsAny(s, " \t/") {
			return "", errors.New("want an IP address or host name")
		}
		return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), nil
	})
	if ok {
		setPending(l, &l.serverAddress, at, a)
	}
}

// resolvePending turns the combined Spring settings into assignments.
func (l *fileLoader) resolvePending() {
	if l.readOnlyCache.set || l.cacheInterval.set {
		use := !l.readOnlyCache.set || l.readOnlyCache.val // Spring's default is true
		interval := 30 * time.Second                       // Eureka's responseCacheUpdateIntervalMs
		if l.cacheInterval.set {
			interval = l.cacheInterval.val
		}
		var d time.Duration
		if use {
			d = interval
		}
		at := l.readOnlyCache.at
		if !l.readOnlyCache.set {
			at = l.cacheInterval.at
		}
		l.assigns = append(l.assigns, assignment{field: "response-cache-update-interval", at: at, apply: func(c *Config) { c.ResponseCacheUpdateInterval = d }})
	}
	if l.serverPort.set || l.serverAddress.set {
		port, addr := l.serverPort, l.serverAddress
		at := port.at
		if !port.set {
			at = addr.at
		}
		l.assigns = append(l.assigns, assignment{field: "http-addr", at: at, apply: func(c *Config) {
			host, p := "", ""
			if h, pp, err := net.SplitHostPort(c.HTTPAddr); err == nil {
				host, p = h, pp
			}
			if port.set {
				p = strconv.Itoa(port.val)
			}
			if addr.set {
				host = addr.val
			}
			c.HTTPAddr = net.JoinHostPort(host, p)
		}})
	}
}

// apply applies the file's assignments to c. When several keys set one field,
// a heureka key beats a Spring key, otherwise the later key wins; either way a
// warning names both.
func (l *fileLoader) apply(c *Config) {
	chosen := make(map[string]int)
	var order []string
	for i, a := range l.assigns {
		j, seen := chosen[a.field]
		if !seen {
			chosen[a.field] = i
			order = append(order, a.field)
			continue
		}
		win, lose := i, j
		if l.assigns[j].native && !a.native {
			win, lose = j, i
		}
		w, ls := l.assigns[win], l.assigns[lose]
		l.warnf(ls.at, "%s is overridden by %s (line %d); both set --%s", ls.at.path, w.at.path, w.at.line, a.field)
		chosen[a.field] = win
	}
	for _, f := range order {
		l.assigns[chosen[f]].apply(c)
	}
}

// deref follows YAML aliases.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// walk visits the entries of mapping m found under the key path raw.
func (l *fileLoader) walk(m *yaml.Node, raw []string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := deref(m.Content[i]), deref(m.Content[i+1])
		if k.Kind != yaml.ScalarNode {
			l.errs = append(l.errs, fmt.Errorf("%s:%d: %s: wrong type: keys must be strings", l.file, k.Line, strings.Join(raw, ".")))
			continue
		}
		if k.Value == "<<" && k.ShortTag() == "!!merge" {
			l.merge(k, v, raw)
			continue
		}
		path := append(slices.Clip(raw), strings.Split(k.Value, ".")...)
		l.visit(keyRef{path: strings.Join(path, "."), line: k.Line}, v, path)
	}
}

// merge handles a YAML merge key ("<<: *anchor").
func (l *fileLoader) merge(k, v *yaml.Node, raw []string) {
	switch v.Kind {
	case yaml.MappingNode:
		l.walk(v, raw)
	case yaml.SequenceNode:
		for _, e := range v.Content {
			if e = deref(e); e.Kind == yaml.MappingNode {
				l.walk(e, raw)
			}
		}
	default:
		l.errs = append(l.errs, fmt.Errorf("%s:%d: merge key <<: wrong type: want a mapping", l.file, k.Line))
	}
}

// visit handles the value v of the key at path.
func (l *fileLoader) visit(at keyRef, v *yaml.Node, path []string) {
	canon := canonicalKey(at.path)
	if fk, ok := fileKeys[canon]; ok {
		fk.handle(l, at, v)
		return
	}
	if canon == "config" {
		l.warnf(at, "ignored: config (a configuration file cannot name another one)")
		return
	}
	if v.Kind == yaml.MappingNode {
		l.walk(v, path)
		return
	}
	for known := range fileKeys {
		if strings.HasPrefix(known, canon+".") {
			l.errorf(at, "wrong type: want a mapping (for example %s)", fileKeys[known].name)
			return
		}
	}
	if ignoredKeys[canon] {
		l.warnf(at, "ignored: %s (not used by heureka)", at.path)
		return
	}
	best, ignored := -1, false
	for p, ign := range keyPrefixes {
		if (canon == p || strings.HasPrefix(canon, p+".")) && len(p) > best {
			best, ignored = len(p), ign
		}
	}
	if ignored {
		l.warnf(at, "ignored: %s (not used by heureka)", at.path)
		return
	}
	msg := fmt.Sprintf("unknown configuration key %q", at.path)
	if s := suggestKey(canon); s != "" {
		msg += fmt.Sprintf(" (did you mean %q?)", s)
	}
	l.warnf(at, "%s", msg)
}

// suggestKey returns the known key closest to canon, or "" when none is close.
func suggestKey(canon string) string {
	best, bestDist := "", 3
	for c, fk := range fileKeys {
		if d := editDistance(canon, c); d < bestDist || (d == bestDist && best != "" && fk.name < best) {
			best, bestDist = fk.name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// loadFile applies the YAML configuration file at path to cfg.
func loadFile(cfg *Config, path string) ([]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil // empty file
		}
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	l := &fileLoader{file: path}
	var extra yaml.Node
	if err := dec.Decode(&extra); err == nil {
		l.warnings = append(l.warnings, fmt.Sprintf("%s:%d: only the first YAML document is used; the rest is ignored", path, extra.Line))
	} else if !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("config file %s: %w", path, err)
	}
	var root *yaml.Node
	if len(doc.Content) > 0 {
		root = deref(doc.Content[0])
	}
	switch {
	case root == nil || (root.Kind == yaml.ScalarNode && root.ShortTag() == "!!null"):
		return l.warnings, nil
	case root.Kind != yaml.MappingNode:
		return l.warnings, fmt.Errorf("config file %s:%d: wrong type: the top level must be a mapping of keys to values", path, root.Line)
	}
	l.walk(root, nil)
	l.resolvePending()
	if len(l.errs) > 0 {
		return l.warnings, errors.Join(l.errs...)
	}
	l.apply(cfg)
	return l.warnings, nil
}

// Usage writes the command's help (subcommands serve (default) and version;
// every flag with default and env var).
func Usage(w io.Writer) {
	var b strings.Builder
	b.WriteString(`heureka is a Eureka-compatible service registry.

Usage:
  heureka [serve] [flags]   run the registry (the default subcommand)
  heureka version           print the version and exit
  heureka help              print this help and exit

Flags may be written -name or --name, with the value after '=' or as the next
argument (booleans take theirs only after '=': --self-preservation=false).
Every flag can also be set with the environment variable shown, or with the same
name as a key in the YAML file given by --config, which also understands the
Spring Cloud Netflix properties (eureka.server.enable-self-preservation,
eureka.server.eviction-interval-timer-in-ms, server.port, ...).
Precedence: flags, then environment, then the file, then the defaults.
Durations use Go syntax (90s, 15m, 1h30m); booleans are true, false, 1 or 0.

Flags:
`)
	def := DefaultConfig()
	for _, o := range options {
		b.WriteString("  --" + o.name)
		if o.arg != "" {
			b.WriteString(" " + o.arg)
		}
		b.WriteString("\n        " + o.usage + "\n        (default ")
		switch {
		case o.defText != "":
			b.WriteString(o.defText)
		case o.get(def) == "":
			b.WriteString("none")
		case o.quote:
			b.WriteString(strconv.Quote(o.get(def)))
		default:
			b.WriteString(o.get(def))
		}
		b.WriteString("; env " + o.env() + ")\n")
	}
	b.WriteString("  -h, --help\n        show this help\n")
	_, _ = io.WriteString(w, b.String())
}
