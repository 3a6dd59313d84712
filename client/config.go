package client

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Status is an instance's Eureka status.
type Status string

// The statuses Eureka knows.
const (
	StatusUp           Status = "UP"
	StatusDown         Status = "DOWN"
	StatusStarting     Status = "STARTING"
	StatusOutOfService Status = "OUT_OF_SERVICE"
	StatusUnknown      Status = "UNKNOWN"
)

// valid reports whether s is one of the five statuses, spelled exactly.
func (s Status) valid() bool {
	switch s {
	case StatusUp, StatusDown, StatusStarting, StatusOutOfService, StatusUnknown:
		return true
	}
	return false
}

// Instance is one instance of an application: what Register sends, and
// what Watch delivers for each instance it reads.
type Instance struct {
	// App is the application's name. Eureka upper-cases it; the client
	// sends it upper-cased. Required; must not contain '/'.
	App string
	// InstanceID identifies the instance within its application, e.g.
	// "host:app:port" as Spring Cloud makes it. Required; must not contain
	// '/'.
	InstanceID string
	// HostName and IPAddr are where other services reach the instance.
	// Both required.
	HostName string
	IPAddr   string
	// Port is the plain port, 1 to 65535. Required.
	Port int
	// SecurePort is the TLS port, 0 for none (sent disabled), else at most
	// 65535.
	SecurePort int
	// VIPAddress and SecureVIPAddress are the virtual addresses the instance
	// is found under by VIP reads (WatchVIP); empty: none.
	VIPAddress       string
	SecureVIPAddress string
	// Status is the status registered; DefaultConfig sets StatusUp. Change
	// it at run time with Client.SetStatus.
	Status Status
	// Metadata is free-form key/value data; keys must not be empty.
	Metadata map[string]string
	// HomePageURL, StatusPageURL and HealthCheckURL are optional links
	// that dashboards and Eureka-aware tools show or probe.
	HomePageURL    string
	StatusPageURL  string
	HealthCheckURL string
}

// Config configures a Client. Start from DefaultConfig, fill in ServerURLs
// and the Instance, and change the timers only when you have a reason.
// Validate rejects every value it cannot honour; nothing is silently
// replaced by a default.
type Config struct {
	// ServerURLs are the base URLs of the registry's servers, up to the
	// Eureka context, e.g. "http://heureka-1:8761/eureka/" (a trailing
	// slash is optional). At least one. Requests go to the first server
	// that works, in this order: on a connection error or a 5xx answer
	// (and on a 403 to a read, a server that is not ready yet) the client
	// moves on to the next one, and stays with the one that answered, as
	// the Java client does. Credentials in a URL (http://user:pass@host/…)
	// are sent as basic auth to that server.
	ServerURLs []string
	// Instance is the instance Register registers. Its App, InstanceID,
	// HostName, IPAddr and Port are required.
	Instance Instance
	// RenewalInterval is how often Run renews the lease. Default 30s (the
	// Java client's); must be positive and below LeaseDuration. It is sent
	// as renewalIntervalInSecs, rounded up to a whole second.
	RenewalInterval time.Duration
	// LeaseDuration is how long the server keeps the instance without a
	// renewal (durationInSecs). Default 90s; must be a whole number of
	// seconds, from 1s to 24h. Keep it at least three renewal intervals,
	// so that one or two lost renewals do not get the instance evicted.
	LeaseDuration time.Duration
	// HTTPClient sends every request. nil: a client of its own on
	// http.DefaultTransport. Its Timeout, if set, must exceed
	// WatchWait+RequestTimeout, or it would cut blocking reads short;
	// prefer RequestTimeout, which the client applies per request.
	HTTPClient *http.Client
	// RequestTimeout bounds one request to one server (a blocking read:
	// its wait plus this). Default 10s; must be positive.
	RequestTimeout time.Duration
	// ShutdownTimeout bounds the cancellation Run sends when its context
	// ends. Default 5s; must be positive.
	ShutdownTimeout time.Duration
	// Username and Password, when Username is set, are sent as basic auth
	// to the servers whose URL has no credentials of its own. A Password
	// without a Username is an error.
	Username string
	Password string
	// WatchWait is the wait a watch asks a server to hold each blocking
	// read for (the wait parameter). Default 30s; must be from 1s to 10m.
	// Heureka caps it at its MaxWait (60s by default).
	WatchWait time.Duration
	// PollInterval is how often a watch reads again when it cannot block:
	// the server sent no ETag (it does not support blocking reads), it
	// answered 304 at once, or the application does not exist yet (404).
	// Default 30s (the Java client's registry fetch interval); must be
	// positive.
	PollInterval time.Duration
	// RetryInitial and RetryMax bound the backoff after failures (of every
	// server): Run's registration and a watch's reads wait RetryInitial,
	// then twice as long each time up to RetryMax, with jitter. Defaults 1s
	// and 30s; RetryInitial must be positive and RetryMax at least
	// RetryInitial.
	RetryInitial time.Duration
	RetryMax     time.Duration
	// Logger receives the client's logs (failed renewals, failovers).
	// nil: discard.
	Logger *slog.Logger
}

// DefaultConfig returns the Java client's timers and an UP instance; the
// caller fills in ServerURLs and the rest of the Instance.
func DefaultConfig() Config {
	return Config{
		Instance:        Instance{Status: StatusUp},
		RenewalInterval: 30 * time.Second,
		LeaseDuration:   90 * time.Second,
		RequestTimeout:  10 * time.Second,
		ShutdownTimeout: 5 * time.Second,
		WatchWait:       30 * time.Second,
		PollInterval:    30 * time.Second,
		RetryInitial:    time.Second,
		RetryMax:        30 * time.Second,
	}
}

// maxLease is the longest lease Heureka accepts (one day).
const maxLease = 24 * time.Hour

// maxWatchWait is the longest WatchWait Validate accepts, Heureka's own
// upper bound on MaxWait.
const maxWatchWait = 10 * time.Minute

// Validate reports the first problem with c, or nil.
func (c *Config) Validate() error {
	if len(c.ServerURLs) == 0 {
		return fmt.Errorf("client: ServerURLs is empty: give at least one base URL such as http://heureka:8761/eureka/")
	}
	for _, s := range c.ServerURLs {
		if _, err := parseServerURL(s); err != nil {
			return err
		}
	}
	if err := c.Instance.validate(); err != nil {
		return err
	}
	switch {
	case c.LeaseDuration < time.Second || c.LeaseDuration > maxLease || c.LeaseDuration%time.Second != 0:
		return fmt.Errorf("client: LeaseDuration %v must be a whole number of seconds from 1s to %v", c.LeaseDuration, maxLease)
	case c.RenewalInterval <= 0 || c.RenewalInterval >= c.LeaseDuration:
		return fmt.Errorf("client: RenewalInterval %v must be positive and below LeaseDuration %v", c.RenewalInterval, c.LeaseDuration)
	case c.RequestTimeout <= 0:
		return fmt.Errorf("client: RequestTimeout %v must be positive", c.RequestTimeout)
	case c.ShutdownTimeout <= 0:
		return fmt.Errorf("client: ShutdownTimeout %v must be positive", c.ShutdownTimeout)
	case c.WatchWait < time.Second || c.WatchWait > maxWatchWait:
		return fmt.Errorf("client: WatchWait %v must be from 1s to %v", c.WatchWait, maxWatchWait)
	case c.PollInterval <= 0:
		return fmt.Errorf("client: PollInterval %v must be positive", c.PollInterval)
	case c.RetryInitial <= 0:
		return fmt.Errorf("client: RetryInitial %v must be positive", c.RetryInitial)
	case c.RetryMax < c.RetryInitial:
		return fmt.Errorf("client: RetryMax %v must be at least RetryInitial %v", c.RetryMax, c.RetryInitial)
	case c.Password != "" && c.Username == "":
		return fmt.Errorf("client: Password is set without a Username")
	case c.HTTPClient != nil && c.HTTPClient.Timeout > 0 && c.HTTPClient.Timeout <= c.WatchWait+c.RequestTimeout:
		return fmt.Errorf("client: HTTPClient.Timeout %v must exceed WatchWait+RequestTimeout (%v) or be 0; use RequestTimeout instead",
			c.HTTPClient.Timeout, c.WatchWait+c.RequestTimeout)
	}
	return nil
}

// validate reports the first problem with the instance to register.
func (in *Instance) validate() error {
	switch {
	case strings.TrimSpace(in.App) == "" || strings.Contains(in.App, "/"):
		return fmt.Errorf("client: Instance.App %q must be non-empty and must not contain '/'", in.App)
	case strings.TrimSpace(in.InstanceID) == "" || strings.Contains(in.InstanceID, "/"):
		return fmt.Errorf("client: Instance.InstanceID %q must be non-empty and must not contain '/'", in.InstanceID)
	case strings.TrimSpace(in.HostName) == "":
		return fmt.Errorf("client: Instance.HostName is empty")
	case strings.TrimSpace(in.IPAddr) == "":
		return fmt.Errorf("client: Instance.IPAddr is empty")
	case in.Port < 1 || in.Port > 65535:
		return fmt.Errorf("client: Instance.Port %d must be from 1 to 65535", in.Port)
	case in.SecurePort < 0 || in.SecurePort > 65535:
		return fmt.Errorf("client: Instance.SecurePort %d must be from 0 (none) to 65535", in.SecurePort)
	case !in.Status.valid():
		return fmt.Errorf("client: Instance.Status %q must be UP, DOWN, STARTING, OUT_OF_SERVICE or UNKNOWN", in.Status)
	}
	for k := range in.Metadata {
		if k == "" {
			return fmt.Errorf("client: Instance.Metadata has an empty key")
		}
	}
	return nil
}

// parseServerURL parses one of ServerURLs: an absolute http or https URL
// with a host and no query or fragment.
func parseServerURL(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, fmt.Errorf("client: server URL %q: %w", s, err)
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("client: server URL %q must start with http:// or https://", s)
	case u.Host == "":
		return nil, fmt.Errorf("client: server URL %q has no host", s)
	case u.RawQuery != "" || u.Fragment != "":
		return nil, fmt.Errorf("client: server URL %q must not have a query or a fragment", s)
	}
	return u, nil
}
