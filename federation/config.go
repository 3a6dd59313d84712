package federation

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DefaultRegion is the region a cluster is in when none is configured:
// Eureka's own default (eureka.client.region and the server's region both
// default to "us-east-1").
const DefaultRegion = "us-east-1"

// Remote is one remote region: its name, as clients ask for it in
// ?regions=, and the Eureka service URL of its registry.
type Remote struct {
	// Name is the region's name, lower case (Eureka lower-cases the
	// regions a client asks for before matching them).
	Name string
	// URL is the remote registry's Eureka base URL, e.g.
	// "http://eureka.dc2.example:8761/eureka/"; "apps/" and "apps/delta"
	// are resolved against it. A missing trailing slash is added.
	URL string
	// Apps, when not empty, are the only applications served from the
	// region (upper case), like Eureka's remote-region-app-whitelist: the
	// others are still pulled (the hashcode check needs the whole
	// registry) but never served. Empty: every application.
	Apps []string
}

// Config configures federation: this cluster's region, the remote regions
// it follows and how many of its nodes hold each WAN link.
type Config struct {
	// Region is this cluster's region name. It marks nothing local (local
	// instances are served as they registered) but a pulled instance that
	// carries it as its region marker is an echo of this region's own data
	// and is dropped. Default DefaultRegion.
	Region string
	// Remotes are the regions to pull, each at most once, none named like
	// Region. Empty: federation is off and no read changes.
	Remotes []Remote
	// PullInterval is the time between two pulls of one region, in
	// wall-clock time. Default 5s. Eureka pulls every 30 s
	// (remoteRegionRegistryFetchInterval); a delta of an unchanged Heureka
	// registry is a few hundred bytes, so pulling six times as often costs
	// little. Raise it for a slow WAN link or a huge, busy remote registry.
	PullInterval time.Duration
	// RequestTimeout bounds one pull's HTTP exchange. Default 10s; must not
	// exceed StaleAfter, so that a hung pull cannot hide a dead link for
	// longer than the stale bound.
	RequestTimeout time.Duration
	// StaleAfter is how long a region may go without a successful pull
	// before it is marked stale: still served (clients prefer an old
	// address list to none), but shown as stale on /admin/regions and by
	// heureka_region_stale. Default 1m (two missed Eureka fetch intervals).
	// A followed stream asks its remote for a keep-alive every third of it;
	// a remote of the previous release sends one every 15 s whatever it is
	// asked, so against such a remote keep StaleAfter above 15 s, or a
	// quiet region looks stale between two keep-alives.
	StaleAfter time.Duration
	// DropAfter is how long a region may go without a successful pull
	// before its instances are dropped from every read (a region that went
	// dark is not served forever, as Eureka does). Default 10m; must exceed
	// StaleAfter. The first successful pull afterwards loads the region
	// again in full.
	DropAfter time.Duration
	// DeltaRetention is how long a remote change stays in the region part
	// of ?regions= deltas, like the local delta's retention (Eureka: 180 s).
	// Default 3m.
	DeltaRetention time.Duration
	// Stream, when true, follows a remote that serves Heureka's change
	// stream (GET {url}stream, docs/push.md) instead of polling it: changes
	// cross as they happen (the remote coalesces for 25 ms), and polling
	// resumes while the stream is down. A remote without a stream (a Java
	// Eureka server) is polled. Default true.
	Stream bool
	// StreamIdleTimeout cuts and reconnects a stream that delivered nothing,
	// not even a keep-alive, for this long (a half-open connection). Default
	// 45s: three of Heureka's 15 s keep-alives. Must exceed the remote's
	// keep-alive interval.
	StreamIdleTimeout time.Duration
	// TransparentFallback, when true, makes reads without ?regions= (full
	// registry, delta and VIPs) carry every remote region, as Eureka does by
	// default (disableTransparentFallbackToOtherRegion=false). Default
	// false: a plain read stays local, so that its apps__hashcode is the
	// local registry's and nothing changes for clients that never asked for
	// regions. A pull by another region's server is always answered with
	// local data only, whatever this switch says.
	TransparentFallback bool
	// Links is how many nodes of the local cluster hold the WAN link to
	// each remote region (links.go): the Links live members that rank
	// highest for the region by rendezvous hashing, computed alike by every
	// node from its membership. The others follow the region through one
	// of them over the local network (a relay, relay.go), and fall back to
	// the WAN while no relay answers. Default 2 (one link may fail without
	// a gap); must be at least 1. Used with Members only.
	Links int
	// Members is the local cluster as federation sees it; nil (a single
	// node): this node follows every region over the WAN. node fills it in.
	Members Members
	// RelayKeys are the cluster's shared secret, with which a node signs
	// its requests to a relay and checks the other nodes' (relayauth.go):
	// node fills in the gossip keyring (cluster.Config.GossipKeys, or
	// GossipKey), the first key signing, every key checking. Empty:
	// relay requests are not signed.
	RelayKeys [][]byte
	// RelayNeedsAuth says that the relay route asks for credentials (HTTP
	// basic auth is on; node's Members supply it). With RelayKeys, relay requests
	// pass it by their signature; without, no node can pass it, so every
	// node follows every region over the WAN, warns at start and says why
	// in Status (ViaReason).
	RelayNeedsAuth bool
	// MemberURL, if set, replaces Members.MemberURL: where a member's HTTP
	// API is ("http://host:port"). For harnesses whose gossip addresses are
	// not network addresses (memnet).
	MemberURL func(member string) string
	// HTTPClient sends the pulls. Default: a client with RequestTimeout.
	HTTPClient *http.Client
	// Logger receives pull errors and state changes. Default: discard.
	Logger *slog.Logger
	// Metrics, if set, gets the heureka_region_* metrics.
	Metrics prometheus.Registerer
	// Now is the clock staleness is judged by. Default time.Now.
	Now func() time.Time
}

// DefaultConfig returns production defaults with no remote region.
func DefaultConfig() Config {
	return Config{
		Region:            DefaultRegion,
		PullInterval:      5 * time.Second,
		RequestTimeout:    10 * time.Second,
		StaleAfter:        time.Minute,
		DropAfter:         10 * time.Minute,
		DeltaRetention:    3 * time.Minute,
		Stream:            true,
		StreamIdleTimeout: 45 * time.Second,
		Links:             2,
	}
}

// DefaultLocalConfig returns DefaultConfig with every timer scaled down
// together for tests on loopback: a pull every 20 ms, stale after 300 ms,
// dropped after 900 ms, a stream silent for 1 s reconnected.
func DefaultLocalConfig() Config {
	c := DefaultConfig()
	c.PullInterval = 20 * time.Millisecond
	c.RequestTimeout = 200 * time.Millisecond
	c.StaleAfter = 300 * time.Millisecond
	c.DropAfter = 900 * time.Millisecond
	c.DeltaRetention = 2 * time.Second
	c.StreamIdleTimeout = time.Second // remotes' StreamKeepAlive must be shorter in tests
	return c
}

// regionName is what a region name may hold: Eureka region names are
// lower-case words such as "us-east-1"; ',' separates them in ?regions=.
var regionName = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]*$`)

// Errors returned by Validate and ParseRemote.
var (
	// ErrConfig is wrapped by every configuration error.
	ErrConfig = errors.New("federation: invalid config")
)

// Validate checks c and says precisely what is wrong.
func (c Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrConfig}, args...)...)
	}
	if !regionName.MatchString(c.Region) {
		return bad("region %q must be a lower-case name of letters, digits, '.', '_' or '-'", c.Region)
	}
	seen := map[string]bool{}
	for _, r := range c.Remotes {
		if !regionName.MatchString(r.Name) {
			return bad("remote region %q must be a lower-case name of letters, digits, '.', '_' or '-'", r.Name)
		}
		if r.Name == c.Region {
			return bad("remote region %q is this cluster's own region", r.Name)
		}
		if seen[r.Name] {
			return bad("remote region %q is configured twice", r.Name)
		}
		seen[r.Name] = true
		u, err := url.Parse(r.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("remote region %q: URL %q must be an absolute http or https URL such as http://eureka.dc2:8761/eureka/", r.Name, r.URL)
		}
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"PullInterval", c.PullInterval}, {"RequestTimeout", c.RequestTimeout}, {"StaleAfter", c.StaleAfter},
		{"DropAfter", c.DropAfter}, {"DeltaRetention", c.DeltaRetention}, {"StreamIdleTimeout", c.StreamIdleTimeout}} {
		if d.v <= 0 {
			return bad("%s %v must be positive", d.name, d.v)
		}
	}
	if c.RequestTimeout > c.StaleAfter {
		return bad("RequestTimeout %v must not exceed StaleAfter %v", c.RequestTimeout, c.StaleAfter)
	}
	if c.PullInterval >= c.StaleAfter {
		return bad("PullInterval %v must be shorter than StaleAfter %v, or a healthy region would look stale between pulls", c.PullInterval, c.StaleAfter)
	}
	if c.Links < 1 {
		return bad("Links %d must be at least 1: some node must hold each region's WAN link", c.Links)
	}
	if c.DropAfter <= c.StaleAfter {
		return bad("DropAfter %v must exceed StaleAfter %v", c.DropAfter, c.StaleAfter)
	}
	return nil
}

// ParseRemote parses a "name=url" flag value.
func ParseRemote(s string) (Remote, error) {
	name, u, ok := strings.Cut(s, "=")
	if !ok || strings.TrimSpace(name) == "" || strings.TrimSpace(u) == "" {
		return Remote{}, fmt.Errorf("%w: remote region %q must be name=url, e.g. dc2=http://eureka.dc2:8761/eureka/", ErrConfig, s)
	}
	return Remote{Name: strings.ToLower(strings.TrimSpace(name)), URL: strings.TrimSpace(u)}, nil
}

// baseURL returns u with a trailing slash, so that "apps/" resolves under
// it.
func baseURL(u string) string {
	if !strings.HasSuffix(u, "/") {
		return u + "/"
	}
	return u
}
