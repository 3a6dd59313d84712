package main

// The table of options, one per Config field: its flag, environment
// variable and YAML key derive from its name, and its kind parses and checks
// the text of whichever layer won.

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/heureka/heureka/eurekapeer"
)

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
}, append(regionOptions, securityOptions...)...)

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
