package main

// The security options of the serve command: HTTP basic auth, TLS, the
// request header limit, Eureka's fetch rate limit and the gossip keyring.
// They are options like the others (config.go): a flag, a HEUREKA_*
// variable and a YAML key each, checked as they are read; Eureka's
// eureka.server.rate-limiter-* properties map onto the rate-limit ones
// (springconfig.go). wiring.go turns them into the node's configuration, and
// serve reloads the TLS files on SIGHUP.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// Security holds the security options; Config embeds it.
type Security struct {
	// AuthUsers turns HTTP basic auth on: each "name:bcrypthash:roles", roles
	// read, write or read,write (read,write when absent). A hash contains
	// '$': quote it in a shell, and write '$$' in a systemd unit, or use
	// AuthFile. --auth-users (comma-separated, may be repeated),
	// HEUREKA_AUTH_USERS, default none.
	AuthUsers []string
	// AuthFile names a file of users, one "name:bcrypthash:roles" per line
	// (an htpasswd -B file works: its users get read,write); '#' starts a
	// comment. Its users add to AuthUsers. --auth-file, HEUREKA_AUTH_FILE,
	// default "".
	AuthFile string
	// AuthPublicMetrics serves /metrics without credentials while auth is
	// on, for scrapers that cannot send any. --auth-public-metrics,
	// HEUREKA_AUTH_PUBLIC_METRICS, default false (/metrics needs the read
	// role).
	AuthPublicMetrics bool
	// TLSCert and TLSKey are the PEM certificate (chain) and key files the
	// node serves HTTPS with; both or neither. They are read again on
	// SIGHUP. --tls-cert, --tls-key, HEUREKA_TLS_CERT, HEUREKA_TLS_KEY,
	// default "" (plain HTTP).
	TLSCert, TLSKey string
	// MaxHeaderBytes caps the request line and headers of a request (431
	// beyond). --max-header-bytes, HEUREKA_MAX_HEADER_BYTES, default 65536
	// (64 KiB); accepts a unit like --max-body-bytes.
	MaxHeaderBytes int64
	// RateLimit turns on Eureka's RateLimitingFilter: registry fetches
	// beyond the token buckets below get 503. --rate-limit,
	// HEUREKA_RATE_LIMIT, default false. Spring:
	// eureka.server.rate-limiter-enabled.
	RateLimit bool
	// RateLimitBurst is the burst of both buckets. --rate-limit-burst,
	// HEUREKA_RATE_LIMIT_BURST, default 10. Spring:
	// eureka.server.rate-limiter-burst-size.
	RateLimitBurst int
	// RateLimitFetchRate is the average rate, per second, of all fetches
	// (full, delta, one application). --rate-limit-fetch-rate,
	// HEUREKA_RATE_LIMIT_FETCH_RATE, default 500. Spring:
	// eureka.server.rate-limiter-registry-fetch-average-rate.
	RateLimitFetchRate float64
	// RateLimitFullFetchRate is the average rate, per second, of full
	// fetches. --rate-limit-full-fetch-rate,
	// HEUREKA_RATE_LIMIT_FULL_FETCH_RATE, default 100. Spring:
	// eureka.server.rate-limiter-full-fetch-average-rate.
	RateLimitFullFetchRate float64
	// RateLimitThrottleStandardClients limits the Java client and Eureka
	// peers (DiscoveryIdentity-Name DefaultClient, DefaultServer) too.
	// --rate-limit-throttle-standard-clients,
	// HEUREKA_RATE_LIMIT_THROTTLE_STANDARD_CLIENTS, default false. Spring:
	// eureka.server.rate-limiter-throttle-standard-clients.
	RateLimitThrottleStandardClients bool
	// RateLimitPrivilegedClients are more DiscoveryIdentity-Name values
	// never limited. --rate-limit-privileged-clients (comma-separated, may
	// be repeated), HEUREKA_RATE_LIMIT_PRIVILEGED_CLIENTS, default none.
	// Spring: eureka.server.rate-limiter-privileged-clients.
	RateLimitPrivilegedClients []string
	// GossipKeys is the gossip keyring, base64 keys of 16, 24 or 32 bytes:
	// the first encrypts, all decrypt. It replaces --gossip-key (set one or
	// the other) to rotate a key without downtime; the procedure is on
	// cluster.Config.GossipKeys. --gossip-keys (comma-separated, may be
	// repeated), HEUREKA_GOSSIP_KEYS, default none.
	GossipKeys []string
}

// DefaultSecurity returns the defaults: auth, TLS and the rate limit off,
// headers up to 64 KiB, Eureka's rate-limit figures ready for --rate-limit.
func DefaultSecurity() Security {
	rl := httpapi.DefaultRateLimitConfig()
	return Security{
		MaxHeaderBytes:         64 << 10,
		RateLimitBurst:         rl.BurstSize,
		RateLimitFetchRate:     rl.FetchAverageRate,
		RateLimitFullFetchRate: rl.FullFetchAverageRate,
	}
}

// securityOptions are the options of Security, in the order Usage shows
// them (after the others).
var securityOptions = []option{
	{
		name: "auth-users", arg: "users", list: true, secret: true,
		usage: "turn on HTTP basic auth: name:bcrypthash:roles (roles read, write or read,write); comma-separated, may be repeated",
		set: func(c *Config, v string) error {
			users, err := splitUsers(v)
			if err != nil {
				return err
			}
			for _, u := range users {
				if _, err := httpapi.ParseUser(u); err != nil {
					return plainError(err)
				}
			}
			c.AuthUsers = users
			return nil
		},
		get: func(c Config) string { return strings.Join(c.AuthUsers, ",") },
	},
	{
		name: "auth-file", arg: "file", quote: true,
		usage: "turn on HTTP basic auth with the users of a file: name:bcrypthash:roles per line (an htpasswd -B file works)",
		set: func(c *Config, v string) error {
			v = strings.TrimSpace(v)
			if v != "" {
				if _, err := readAuthFile(v); err != nil {
					return err
				}
			}
			c.AuthFile = v
			return nil
		},
		get: func(c Config) string { return c.AuthFile },
	},
	boolOpt("auth-public-metrics", "serve /metrics without credentials when auth is on (otherwise it needs the read role)",
		func(c *Config) *bool { return &c.AuthPublicMetrics }),
	fileOpt("tls-cert", "PEM certificate (chain) file: serve HTTPS (with --tls-key; reloaded on SIGHUP)", func(c *Config) *string { return &c.TLSCert }),
	fileOpt("tls-key", "PEM private key file of --tls-cert", func(c *Config) *string { return &c.TLSKey }),
	{
		name: "max-header-bytes", arg: "bytes",
		usage: "largest request line and headers accepted (431 beyond): a byte count, or with a unit (64KiB)",
		set: func(c *Config, v string) error {
			n, err := parseSize(v)
			if err == nil && n > 1<<30 {
				err = errors.New("must be at most 1GiB")
			}
			c.MaxHeaderBytes = n
			return err
		},
		get: func(c Config) string { return strconv.FormatInt(c.MaxHeaderBytes, 10) },
	},
	boolOpt("rate-limit", "limit registry fetches as Eureka's RateLimitingFilter does (503 beyond the rates below)",
		func(c *Config) *bool { return &c.RateLimit }),
	{
		name: "rate-limit-burst", arg: "n",
		usage: "fetches let through at once, by each bucket of --rate-limit",
		set: func(c *Config, v string) error {
			n, err := parseInt(v, 0)
			if err == nil && n < 1 {
				err = errors.New("must be at least 1")
			}
			c.RateLimitBurst = int(n)
			return err
		},
		get: func(c Config) string { return strconv.Itoa(c.RateLimitBurst) },
	},
	rateOpt("rate-limit-fetch-rate", "average registry fetches (full, delta, one app) per second, all clients together, with --rate-limit",
		func(c *Config) *float64 { return &c.RateLimitFetchRate }),
	rateOpt("rate-limit-full-fetch-rate", "average full registry fetches per second, all clients together, with --rate-limit",
		func(c *Config) *float64 { return &c.RateLimitFullFetchRate }),
	boolOpt("rate-limit-throttle-standard-clients", "with --rate-limit, limit the Java client and Eureka peers too (DiscoveryIdentity-Name DefaultClient, DefaultServer)",
		func(c *Config) *bool { return &c.RateLimitThrottleStandardClients }),
	{
		name: "rate-limit-privileged-clients", arg: "names", list: true,
		usage: "DiscoveryIdentity-Name values --rate-limit never limits, besides DefaultClient and DefaultServer; comma-separated, may be repeated",
		set: func(c *Config, v string) error {
			c.RateLimitPrivilegedClients = splitList(v)
			return nil
		},
		get: func(c Config) string { return strings.Join(c.RateLimitPrivilegedClients, ",") },
	},
	{
		name: "gossip-keys", arg: "base64s", list: true, secret: true,
		usage: "gossip keyring for key rotation: base64 keys, the first encrypts, all decrypt; replaces --gossip-key; comma-separated, may be repeated",
		set: func(c *Config, v string) error {
			keys := splitList(v)
			if _, err := decodeGossipKeys(keys); err != nil {
				return err
			}
			c.GossipKeys = keys
			return nil
		},
		get: func(c Config) string { return strings.Join(c.GossipKeys, ",") },
	},
}

// fileOpt is a file name option; the file is read when the node starts.
func fileOpt(name, usage string, field func(*Config) *string) option {
	o := stringOpt(name, "file", usage, field)
	o.set = func(c *Config, v string) error {
		v = strings.TrimSpace(v)
		if v != "" {
			if _, err := os.Stat(v); err != nil {
				return fmt.Errorf("cannot read the file: %v", errors.Unwrap(err))
			}
		}
		*field(c) = v
		return nil
	}
	return o
}

// springOption reads a Spring property with the option's own parser, as the
// option's value (a YAML list is taken as a comma-separated one).
func springOption(name string) func(l *fileLoader, at keyRef, v *yaml.Node) {
	o, _ := optionByName(name)
	native := nativeHandler(o)
	return func(l *fileLoader, at keyRef, v *yaml.Node) {
		n := len(l.assigns)
		native(l, at, v)
		for i := n; i < len(l.assigns); i++ {
			l.assigns[i].native = false // a Spring key loses to heureka's own
		}
	}
}

// rateOpt is a positive rate per second.
func rateOpt(name, usage string, field func(*Config) *float64) option {
	return option{
		name: name, arg: "per-second", usage: usage,
		set: func(c *Config, v string) error {
			f, err := parseFloat(v)
			if err == nil && !(f > 0) {
				err = errors.New("must be positive")
			}
			*field(c) = f
			return err
		},
		get: func(c Config) string { return strconv.FormatFloat(*field(&c), 'g', -1, 64) },
	}
}

// splitUsers splits a list of users. Their roles are comma-separated too
// ("a:h:read,write,b:h:read"), so an element without ':' is a role of the
// user before it.
func splitUsers(v string) ([]string, error) {
	var users []string
	for _, e := range splitList(v) {
		if !strings.Contains(e, ":") {
			if len(users) == 0 {
				return nil, errors.New("want name:bcrypthash:roles")
			}
			users[len(users)-1] += "," + e
			continue
		}
		users = append(users, e)
	}
	return users, nil
}

// readAuthFile reads the users of an auth file. Errors name the line, never
// a hash.
func readAuthFile(path string) ([]httpapi.User, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the file: %v", errors.Unwrap(err))
	}
	users, err := httpapi.ParseUsers(data)
	if err != nil {
		return nil, plainError(err)
	}
	if len(users) == 0 {
		return nil, errors.New("the file lists no user")
	}
	return users, nil
}

// plainError is err without the package prefixes of its message: the
// command's errors name the flag instead.
func plainError(err error) error {
	return errors.New(strings.ReplaceAll(err.Error(), "httpapi: ", ""))
}

// decodeGossipKeys decodes --gossip-keys values. Errors never contain a key.
func decodeGossipKeys(keys []string) ([][]byte, error) {
	out := make([][]byte, 0, len(keys))
	for i, s := range keys {
		k, err := decodeGossipKey(s)
		if err != nil {
			if len(keys) > 1 {
				err = fmt.Errorf("key %d: %w", i+1, err)
			}
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// validate reports every invalid security field, each naming its flag, for
// Config.Validate; gossipKey is --gossip-key, which --gossip-keys replaces.
func (s Security) validate(gossipKey string) []error {
	var errs []error
	bad := func(flagName string, format string, args ...any) {
		errs = append(errs, fmt.Errorf("--%s: invalid value: %s", flagName, fmt.Sprintf(format, args...)))
	}
	if gossipKey != "" && len(s.GossipKeys) > 0 {
		bad("gossip-keys", "--gossip-key and --gossip-keys are both set; put the key first in --gossip-keys")
	}
	if _, err := s.authConfig(); err != nil {
		bad("auth-users", "%v", err)
	}
	if (s.TLSCert == "") != (s.TLSKey == "") {
		bad("tls-cert", "--tls-cert and --tls-key go together")
	}
	if s.MaxHeaderBytes <= 0 {
		bad("max-header-bytes", "must be positive")
	}
	if err := s.rateLimitConfig(true).Validate(); err != nil {
		bad("rate-limit", "%v", plainError(err))
	}
	if _, err := decodeGossipKeys(s.GossipKeys); err != nil {
		bad("gossip-keys", "%v", err)
	}
	return errs
}

// authConfig is the node's auth configuration: nil when no user is
// configured (auth off).
func (s Security) authConfig() (*httpapi.AuthConfig, error) {
	var users []httpapi.User
	for _, u := range s.AuthUsers {
		user, err := httpapi.ParseUser(u)
		if err != nil {
			return nil, plainError(err)
		}
		users = append(users, user)
	}
	if s.AuthFile != "" {
		more, err := readAuthFile(s.AuthFile)
		if err != nil {
			return nil, fmt.Errorf("--auth-file %s: %w", s.AuthFile, err)
		}
		users = append(users, more...)
	}
	if len(users) == 0 {
		return nil, nil
	}
	c := &httpapi.AuthConfig{Users: users, MetricsPublic: s.AuthPublicMetrics}
	if err := c.Validate(); err != nil {
		return nil, plainError(err)
	}
	return c, nil
}

// rateLimitConfig is the node's rate limit: nil when off, unless always.
func (s Security) rateLimitConfig(always bool) *httpapi.RateLimitConfig {
	if !s.RateLimit && !always {
		return nil
	}
	return &httpapi.RateLimitConfig{
		BurstSize:               s.RateLimitBurst,
		FetchAverageRate:        s.RateLimitFetchRate,
		FullFetchAverageRate:    s.RateLimitFullFetchRate,
		ThrottleStandardClients: s.RateLimitThrottleStandardClients,
		PrivilegedClients:       s.RateLimitPrivilegedClients,
	}
}

// applySecurity puts the security options into the node configuration nc
// (whose Cluster is set).
func applySecurity(s Security, nc *node.Config) error {
	auth, err := s.authConfig()
	if err != nil {
		return err
	}
	nc.Auth = auth
	nc.RateLimit = s.rateLimitConfig(false)
	nc.TLSCertFile, nc.TLSKeyFile = s.TLSCert, s.TLSKey
	nc.MaxHeaderBytes = int(s.MaxHeaderBytes)
	if len(s.GossipKeys) > 0 {
		if nc.Cluster.GossipKeys, err = decodeGossipKeys(s.GossipKeys); err != nil {
			return fmt.Errorf("--gossip-keys: %w", err)
		}
	}
	return nil
}

// reloadOnHangup reloads the node's TLS files each time hup delivers (SIGHUP),
// until ctx is done. A failed reload is logged by the node, which keeps its
// certificate.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, n *node.Node, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if n.Scheme() != "https" {
				log.Info("SIGHUP: nothing to reload (no TLS)")
				continue
			}
			log.Info("SIGHUP: reloading the TLS certificate")
			_ = n.ReloadTLS() // the node logs the outcome
		}
	}
}
