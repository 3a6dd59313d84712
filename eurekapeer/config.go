package eurekapeer

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heureka/heureka/actors"
)

// Registry is what the Sender reads the instances it sends from, and where
// it installs a Eureka peer's newer copy (a 409 reply). actors.Registry
// implements it.
type Registry interface {
	// Get returns the stored instance.
	Get(ctx context.Context, app, id string) (inst *actors.Instance, expired, ok bool, err error)
	// Register installs an instance; replicated marks it as a peer's.
	Register(ctx context.Context, inst *actors.Instance, replicated bool) error
}

// Config configures a Sender. DefaultConfig gives the defaults; Validate
// rejects bad values instead of replacing them.
type Config struct {
	// Peers are the Eureka service URLs of the legacy servers, as a Java
	// server's defaultZone lists them ("http://old:8761/eureka/"). Each must
	// be http or https with a host; user:password in the URL is sent as
	// basic auth. At least one. A trailing slash is added when missing.
	Peers []string
	// Registry is where the batches' instances are read from. Required.
	Registry Registry
	// BatchSize is the largest number of items in one request, and the
	// number of pending instances that triggers a send before
	// FlushInterval. Default 250 (Java's batch size).
	BatchSize int
	// FlushInterval is the longest a change waits before it is sent, and
	// the window in which renewals of one instance coalesce. Default 500ms
	// (Java's maxBatchingDelay).
	FlushInterval time.Duration
	// MaxPending bounds each peer's queue, in instances; changes to further
	// instances are dropped and counted. Default 10000 (Java's
	// maxElementsInPeerReplicationPool).
	MaxPending int
	// Timeout bounds one batch request. Default 5s.
	Timeout time.Duration
	// MaxBackoff is the longest wait before retrying a peer whose requests
	// fail; the wait doubles from FlushInterval up to it. Default 30s; at
	// least FlushInterval.
	MaxBackoff time.Duration
	// Client sends the requests. Default: an http.Client of its own with
	// Timeout. Tests inject a transport that fails.
	Client *http.Client
	// Logger receives the sender's logs. Default: discard.
	Logger *slog.Logger
	// Metrics, if set, gets the sender's collector (see metrics.go).
	Metrics prometheus.Registerer
}

// DefaultConfig returns the defaults for peers; Registry is still to be set.
func DefaultConfig(peers ...string) Config {
	return Config{
		Peers:         peers,
		BatchSize:     250,
		FlushInterval: 500 * time.Millisecond,
		MaxPending:    10000,
		Timeout:       5 * time.Second,
		MaxBackoff:    30 * time.Second,
	}
}

// Validate reports every invalid setting.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Peers) == 0 {
		errs = append(errs, errors.New("eurekapeer: Peers is empty"))
	}
	for _, p := range c.Peers {
		if _, err := ParsePeerURL(p); err != nil {
			errs = append(errs, err)
		}
	}
	if c.Registry == nil {
		errs = append(errs, errors.New("eurekapeer: Registry is nil"))
	}
	if c.BatchSize <= 0 {
		errs = append(errs, fmt.Errorf("eurekapeer: BatchSize %d must be positive", c.BatchSize))
	}
	if c.FlushInterval <= 0 {
		errs = append(errs, fmt.Errorf("eurekapeer: FlushInterval %v must be positive", c.FlushInterval))
	}
	if c.MaxPending < c.BatchSize || c.MaxPending <= 0 {
		errs = append(errs, fmt.Errorf("eurekapeer: MaxPending %d must be at least BatchSize %d", c.MaxPending, c.BatchSize))
	}
	if c.Timeout <= 0 {
		errs = append(errs, fmt.Errorf("eurekapeer: Timeout %v must be positive", c.Timeout))
	}
	if c.MaxBackoff < c.FlushInterval {
		errs = append(errs, fmt.Errorf("eurekapeer: MaxBackoff %v must be at least FlushInterval %v", c.MaxBackoff, c.FlushInterval))
	}
	return errors.Join(errs...)
}

// ParsePeerURL checks a Eureka peer service URL and returns it with a
// trailing slash, as Java's defaultZone entries are written.
func ParsePeerURL(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil {
		return nil, errors.New("eurekapeer: peer URL is not a URL") // the error would repeat a password
	}
	shown := u.Redacted() // never a password in a message
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("eurekapeer: peer URL %q: want http:// or https://", shown)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("eurekapeer: peer URL %q has no host", shown)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("eurekapeer: peer URL %q must not have a query or fragment", shown)
	}
	if !strings.HasSuffix(u.Path, "/") {
		u.Path += "/"
	}
	return u, nil
}
