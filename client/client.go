package client

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Client registers one instance and watches applications. Its methods
// are safe for concurrent use.
type Client struct {
	cfg     Config
	servers *servers
	log     *slog.Logger
	running atomic.Bool

	mu    sync.Mutex
	inst  Instance // cfg.Instance, with the status SetStatus set
	dirty int64    // lastDirtyTimestamp: epoch ms of the last local change
}

// New validates cfg and returns a client; it sends nothing.
func New(cfg Config) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	inst := cfg.Instance
	inst.Metadata = make(map[string]string, len(cfg.Instance.Metadata))
	for k, v := range cfg.Instance.Metadata {
		inst.Metadata[k] = v
	}
	return &Client{
		cfg:     cfg,
		servers: newServers(&cfg),
		log:     log.With("component", "client", "app", inst.App, "instance", inst.InstanceID),
		inst:    inst,
		dirty:   time.Now().UnixMilli(),
	}, nil
}

// instancePath is the path of the registered instance.
func (c *Client) instancePath() string {
	return "/apps/" + url.PathEscape(strings.ToUpper(c.cfg.Instance.App)) + "/" + url.PathEscape(c.cfg.Instance.InstanceID)
}

// Register registers the instance (POST /apps/{app}); registering again
// replaces the registration and starts a new lease.
func (c *Client) Register(ctx context.Context) error {
	c.mu.Lock()
	renew := int64((c.cfg.RenewalInterval + time.Second - 1) / time.Second)
	body, err := encodeRegistration(&c.inst, renew, int64(c.cfg.LeaseDuration/time.Second), c.dirty)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	res, err := c.servers.do(ctx, &request{
		method: http.MethodPost,
		path:   "/apps/" + url.PathEscape(strings.ToUpper(c.cfg.Instance.App)),
		header: http.Header{"Content-Type": {"application/json"}, "Accept": {"application/json"}},
		body:   body,
	})
	if err != nil {
		return err
	}
	if res.code != http.StatusNoContent && res.code != http.StatusOK {
		return &StatusError{Method: http.MethodPost, URL: res.server + "/apps/" + strings.ToUpper(c.cfg.Instance.App), Code: res.code, Body: string(res.body)}
	}
	return nil
}

// Renew renews the lease (PUT /apps/{app}/{id}). It returns
// ErrNotRegistered when the server does not know the instance, or knows an
// older version of it than this client (after SetStatus): register again.
func (c *Client) Renew(ctx context.Context) error {
	c.mu.Lock()
	q := url.Values{"status": {string(c.inst.Status)}, "lastDirtyTimestamp": {strconv.FormatInt(c.dirty, 10)}}
	c.mu.Unlock()
	return c.instanceCall(ctx, http.MethodPut, c.instancePath(), q)
}

// Cancel removes the instance from the registry (DELETE
// /apps/{app}/{id}); ErrNotRegistered if it was not there.
func (c *Client) Cancel(ctx context.Context) error {
	return c.instanceCall(ctx, http.MethodDelete, c.instancePath(), nil)
}

// SetStatus changes the instance's status and registers it again, as the
// Java client does when its status changes; while Run runs, a failed
// registration here is repaired by the next renewal (the server answers it
// 404, its lastDirtyTimestamp being older).
//
// Eureka's rules decide the status the registry shows: DOWN, STARTING and
// UNKNOWN are taken as sent, but a registration with UP or OUT_OF_SERVICE
// keeps the status of the lease it replaces when that is UP or
// OUT_OF_SERVICE, and an operator's status override (PUT …/status)
// outranks them all. So SetStatus(StatusDown) then SetStatus(StatusUp)
// works; taking an instance out of service is the override's job.
func (c *Client) SetStatus(ctx context.Context, st Status) error {
	if !st.valid() {
		return errors.New("client: SetStatus: status " + strconv.Quote(string(st)) + " must be UP, DOWN, STARTING, OUT_OF_SERVICE or UNKNOWN")
	}
	c.mu.Lock()
	c.inst.Status = st
	c.mu.Unlock()
	c.touch()
	return c.Register(ctx)
}

// touch marks the instance changed: a new lastDirtyTimestamp, later than
// the last one.
func (c *Client) touch() {
	c.mu.Lock()
	c.dirty = max(time.Now().UnixMilli(), c.dirty+1)
	c.mu.Unlock()
}

// instanceCall sends a request about the instance that answers 200 or 404.
func (c *Client) instanceCall(ctx context.Context, method, path string, q url.Values) error {
	res, err := c.servers.do(ctx, &request{method: method, path: path, query: q})
	if err != nil {
		return err
	}
	switch res.code {
	case http.StatusOK, http.StatusNoContent:
		return nil
	case http.StatusNotFound:
		return ErrNotRegistered
	}
	return &StatusError{Method: method, URL: res.server + path, Code: res.code, Body: string(res.body)}
}

// Run registers the instance, retrying with backoff until it succeeds,
// then renews its lease every RenewalInterval and registers it again when
// a renewal is answered 404 (the server evicted or forgot it, or holds an
// older version). When ctx ends it cancels the registration, within
// ShutdownTimeout, and returns the cancellation's error (nil when it
// worked or the server did not know the instance). A failed renewal is
// logged and retried at the next interval. Only one Run may run at a time.
func (c *Client) Run(ctx context.Context) error {
	if !c.running.CompareAndSwap(false, true) {
		return ErrRunning
	}
	defer c.running.Store(false)
	b := c.backoff()
	for {
		err := c.Register(ctx)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return c.shutdown()
		}
		c.log.Warn("registration failed; retrying", "err", err)
		if !sleep(ctx, b.next()) {
			return c.shutdown()
		}
	}
	c.log.Info("registered")
	t := time.NewTicker(c.cfg.RenewalInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return c.shutdown()
		case <-t.C:
		}
		err := c.Renew(ctx)
		if errors.Is(err, ErrNotRegistered) {
			// A new lastDirtyTimestamp, as the Java client stamps one: a
			// registration that repeats the one an operator's cancel
			// removed would be taken for a late copy of it and dropped.
			c.log.Info("renewal answered 404; registering again")
			c.touch()
			err = c.Register(ctx)
		}
		if err != nil && ctx.Err() == nil {
			c.log.Warn("renewal failed; retrying at the next interval", "err", err)
		}
	}
}

// shutdown cancels the registration when Run's context ends.
func (c *Client) shutdown() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.ShutdownTimeout)
	defer cancel()
	err := c.Cancel(ctx)
	if errors.Is(err, ErrNotRegistered) {
		err = nil
	}
	if err != nil {
		c.log.Warn("cancellation failed", "err", err)
	} else {
		c.log.Info("cancelled")
	}
	return err
}

// backoff is an exponential backoff with jitter.
type backoff struct {
	cur, initial, max time.Duration
}

func (c *Client) backoff() *backoff {
	return &backoff{initial: c.cfg.RetryInitial, max: c.cfg.RetryMax}
}

// next returns the next delay: between half and all of the current step,
// which doubles up to max.
func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.initial
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur/2 + rand.N(b.cur/2+1)
}

// reset starts the backoff over after a success.
func (b *backoff) reset() { b.cur = 0 }

// sleep waits d or until ctx ends; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
