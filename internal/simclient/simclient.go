// Package simclient is the simulated Eureka client both simulation
// harnesses run: the in-process one (package simulations, nodes in this
// process) and the network-namespace one (simulations/netns, real heureka
// processes).
//
// It owns one client life: register one instance (retried until a node
// accepts it), renew it every RenewInterval against the node in use, move
// to the next node of the client's list on a transport error or a 5xx (as
// the Java client walks its service URLs), register again when a renewal
// answers 404, and on a graceful stop cancel the instance (only a 200
// counts as cancelled). RegisterBody is the registration document both
// send.
//
// Data enters through Config: the node list, the document, and Send, which
// delivers one request to one node; the harness decides there what the
// client can reach (its side of a partition, a running node) and how
// (base URL, HTTP client, timeout). Data leaves through Events, which the
// harness records as the client's life. A started Client runs in a goroutine
// of its own. Start (when the client is not running), Stop and Running may
// be called from any goroutine; the Events are called from the client's
// goroutine only.
//
// It deliberately does not know about lives, recorders, statistics or
// topologies: those differ between the harnesses and stay with them.
package simclient

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

const (
	// RegisterRetry is the pause between two failed registrations. The
	// Java client retries on its next heartbeat; here the retry is faster
	// so that a scenario's clients exist before its faults start.
	RegisterRetry = 200 * time.Millisecond
	// CancelTimeout bounds a graceful stop's cancel, fail-overs included.
	CancelTimeout = 5 * time.Second
)

// Config is one client life.
type Config struct {
	// App and ID name the instance.
	App, ID string
	// Order is the client's node list, the node it lives next to first.
	// The client starts with Order[0].
	Order []string
	// Body is the registration document (RegisterBody).
	Body string
	// LastDirty is the document's lastDirtyTimestamp, sent with every
	// renewal.
	LastDirty int64
	// Phase is the wait between the registration and the first renewal;
	// the renewals then follow every RenewInterval.
	Phase, RenewInterval time.Duration
	// Send sends one request (path is under the Eureka API, such as
	// /apps/ORDERS) to node and returns the status of the answer. An error
	// (a transport error, or a node the client cannot reach) makes the
	// client fail over, as a 5xx does.
	Send func(ctx context.Context, node, method, path, body string) (int, error)
	// Events receives what the client does.
	Events Events
}

// Events are the client's reports; a nil one is not called. Times are
// taken when the answer arrived.
type Events struct {
	// Registered: node accepted a registration sent at sent. again is
	// true for a registration after a renewal answered 404.
	Registered func(node string, sent, at time.Time, again bool)
	// Renewed: node accepted a renewal.
	Renewed func(node string, at time.Time)
	// RenewFailed: no node accepted a renewal, or one answered neither
	// 200 nor 404.
	RenewFailed func()
	// FailedOver: the client moved on to the next node of its list.
	FailedOver func()
	// Ended: the life ended, at at, in the way how; by is the node that
	// answered the cancel with 200 (how == Cancelled), otherwise "".
	Ended func(at time.Time, how Ending, by string)
}

// Ending is how a life ended.
type Ending int

const (
	// Silent: stopped without cancelling (a crash).
	Silent Ending = iota
	// Cancelled: a node answered the cancel with 200.
	Cancelled
	// CancelNotFound: the node asked answered the cancel with 404 (it did
	// not hold the instance). Like the Java client, this one then gives
	// up: other nodes may hold the instance until it is evicted.
	CancelNotFound
	// CancelFailed: no node answered the cancel, or one answered another
	// status.
	CancelFailed
)

// Client is a simulated Eureka client; the zero value is ready to Start.
// A harness may start it again after Stop: each Start is a new life, from
// the first node of its list.
type Client struct {
	mu  sync.Mutex
	cur *life // nil before the first Start
}

// life is one run of the client, from Start to Stop.
type life struct {
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	cur      int  // index into cfg.Order of the node in use
	graceful bool // the stop cancels the instance
}

// Start starts a new life of the client; it runs until Stop.
func (cl *Client) Start(cfg Config) {
	ctx, cancel := context.WithCancel(context.Background())
	c := &life{cfg: cfg, cancel: cancel, done: make(chan struct{})}
	cl.mu.Lock()
	cl.cur = c
	cl.mu.Unlock()
	go func() {
		defer close(c.done)
		c.run(ctx)
	}()
}

// Stop stops the client; graceful cancels its instance first, otherwise
// the client just goes silent (a crash). It waits for the client to end.
// A client never started has nothing to stop.
func (cl *Client) Stop(graceful bool) {
	cl.mu.Lock()
	c := cl.cur
	cl.mu.Unlock()
	if c == nil {
		return
	}
	c.mu.Lock()
	c.graceful = graceful
	c.mu.Unlock()
	c.cancel()
	<-c.done
}

// Running reports whether the client was started and has not ended.
func (cl *Client) Running() bool {
	cl.mu.Lock()
	c := cl.cur
	cl.mu.Unlock()
	if c == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

func (c *life) run(ctx context.Context) {
	ev := c.cfg.Events
	for !c.register(ctx, false) {
		if !Sleep(ctx, RegisterRetry) {
			c.finish()
			return
		}
	}
	if !Sleep(ctx, c.cfg.Phase) {
		c.finish()
		return
	}
	tick := time.NewTicker(c.cfg.RenewInterval)
	defer tick.Stop()
	renew := fmt.Sprintf("/apps/%s/%s?status=UP&lastDirtyTimestamp=%d", c.cfg.App, c.cfg.ID, c.cfg.LastDirty)
	for {
		code, node, err := c.request(ctx, http.MethodPut, renew, "")
		switch {
		case ctx.Err() != nil:
		case err != nil:
			call(ev.RenewFailed)
		case code == http.StatusOK:
			if ev.Renewed != nil {
				ev.Renewed(node, time.Now())
			}
		case code == http.StatusNotFound:
			// The server lost the lease (evicted, or a node that never
			// had it): register again, as the Java client does.
			c.register(ctx, true)
		default:
			call(ev.RenewFailed)
		}
		select {
		case <-ctx.Done():
			c.finish()
			return
		case <-tick.C:
		}
	}
}

// finish ends the life, cancelling the instance first when graceful.
func (c *life) finish() {
	c.mu.Lock()
	graceful := c.graceful
	c.mu.Unlock()
	how, by := Silent, ""
	if graceful {
		ctx, cancel := context.WithTimeout(context.Background(), CancelTimeout)
		code, node, err := c.request(ctx, http.MethodDelete, fmt.Sprintf("/apps/%s/%s", c.cfg.App, c.cfg.ID), "")
		cancel()
		switch {
		case err == nil && code == http.StatusOK:
			how, by = Cancelled, node
		case err == nil && code == http.StatusNotFound:
			how = CancelNotFound
		default:
			how = CancelFailed
		}
	}
	if c.cfg.Events.Ended != nil {
		c.cfg.Events.Ended(time.Now(), how, by)
	}
}

// register registers the instance; it reports success.
func (c *life) register(ctx context.Context, again bool) bool {
	sent := time.Now()
	code, node, err := c.request(ctx, http.MethodPost, "/apps/"+c.cfg.App, c.cfg.Body)
	if err != nil || code != http.StatusNoContent {
		return false
	}
	if c.cfg.Events.Registered != nil {
		c.cfg.Events.Registered(node, sent, time.Now(), again)
	}
	return true
}

// request sends one request to the node in use, failing over along the
// client's list on an error or a 5xx until one node answers. It returns
// the status of the answer and the node that gave it.
func (c *life) request(ctx context.Context, method, path, body string) (int, string, error) {
	c.mu.Lock()
	start := c.cur
	c.mu.Unlock()
	order := c.cfg.Order
	var lastErr error
	for i := range order {
		idx := (start + i) % len(order)
		if i > 0 {
			call(c.cfg.Events.FailedOver)
		}
		code, err := c.cfg.Send(ctx, order[idx], method, path, body)
		if ctx.Err() != nil {
			return 0, "", ctx.Err()
		}
		if err == nil && code < 500 {
			c.mu.Lock()
			c.cur = idx
			c.mu.Unlock()
			return code, order[idx], nil
		}
		if err == nil {
			err = fmt.Errorf("status %d", code)
		}
		lastErr = err
	}
	return 0, "", fmt.Errorf("simclient: %s %s: every node failed, last: %w", method, path, lastErr)
}

func call(fn func()) {
	if fn != nil {
		fn()
	}
}

// Send sends one request to url with hc, within timeout, and returns the
// status of the answer (its body is read and discarded). A body, if any,
// is JSON.
func Send(ctx context.Context, hc *http.Client, timeout time.Duration, method, url, body string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// Instance is what a client registers.
type Instance struct {
	App, ID      string
	HostName, IP string
	LastDirty    int64 // lastDirtyTimestamp, Unix milliseconds
	RenewSecs    int   // renewalIntervalInSecs
	LeaseSecs    int   // durationInSecs
}

// RegisterBody is a Eureka JSON registration of in: status UP, port 8080,
// the lowercased app as VIP address, a MyOwn data centre.
func RegisterBody(in Instance) string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":%q,"app":%q,"ipAddr":%q,`+
		`"status":"UP","port":{"$":8080,"@enabled":"true"},"vipAddress":%q,"lastDirtyTimestamp":"%d",`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
		`"leaseInfo":{"renewalIntervalInSecs":%d,"durationInSecs":%d}}}`,
		in.ID, in.HostName, in.App, in.IP, strings.ToLower(in.App), in.LastDirty, in.RenewSecs, in.LeaseSecs)
}

// Sleep sleeps for d; it reports false if ctx ended first. For a d of
// zero or less it only checks ctx.
func Sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
