package simulations

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// errUnreachable is what a client gets for a node it cannot reach in the
// simulated topology (or that is not running).
var errUnreachable = errors.New("simulations: node unreachable")

// ClientStats counts what the simulated clients did.
type ClientStats struct {
	Registrations   uint64 // successful registrations, re-registrations included
	ReRegistrations uint64 // registrations after a renewal answered 404
	Renewals        uint64 // successful renewals
	RenewFailures   uint64 // renewals no node accepted
	Failovers       uint64 // switches to another node after an error
	Cancels         uint64 // successful cancels
	CancelNotFound  uint64 // cancels answered 404 by the node asked
	CancelFailures  uint64 // cancels no node answered
}

type clientCounters struct {
	registrations, reRegistrations, renewals, renewFailures, failovers atomic.Uint64
	cancels, cancelNotFound, cancelFailures                            atomic.Uint64
}

func (c *clientCounters) snapshot() ClientStats {
	return ClientStats{
		Registrations: c.registrations.Load(), ReRegistrations: c.reRegistrations.Load(),
		Renewals: c.renewals.Load(), RenewFailures: c.renewFailures.Load(), Failovers: c.failovers.Load(),
		Cancels: c.cancels.Load(), CancelNotFound: c.cancelNotFound.Load(), CancelFailures: c.cancelFailures.Load(),
	}
}

// Client is a simulated Eureka client: it registers one instance, renews it
// every RenewInterval against the node it currently uses, moves to the next
// node of its list when a request fails (as the Java client walks its
// service URLs), registers again when a renewal answers 404, and cancels
// when stopped gracefully.
type Client struct {
	sim      *Sim
	App, ID  string
	Location string   // the node the client lives next to
	order    []string // node preference: Location first
	phase    time.Duration

	mu        sync.Mutex
	cur       int // index into order of the node in use
	lastDirty int64
	cancel    context.CancelFunc
	done      chan struct{}
	life      int
	graceful  bool // stop cancels the instance
	// leaseSecs, when positive, is the lease the client asks for instead
	// of the timers' (set before the client starts; see newClientWithLease).
	leaseSecs int
}

// registerBody is a Eureka JSON registration of the client's instance.
func (c *Client) registerBody() string {
	lease := int(c.sim.cfg.Timers.LeaseDuration / time.Second)
	if c.leaseSecs > 0 {
		lease = c.leaseSecs
	}
	renew := max(1, int(c.sim.cfg.Timers.RenewInterval/time.Second))
	host := strings.ToLower(c.ID) + ".sim"
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":%q,"app":%q,"ipAddr":"10.9.0.1",`+
		`"status":"UP","port":{"$":8080,"@enabled":"true"},"vipAddress":%q,"lastDirtyTimestamp":"%d",`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
		`"leaseInfo":{"renewalIntervalInSecs":%d,"durationInSecs":%d}}}`,
		c.ID, host, c.App, strings.ToLower(c.App), c.lastDirty, renew, lease)
}

// start runs the client until stop.
func (c *Client) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.cancel = cancel
	c.done = make(chan struct{})
	c.lastDirty = time.Now().UnixMilli()
	c.cur = 0
	c.life = c.sim.rec.lifeStarted(c.App, c.ID, c.Location, time.Now())
	done := c.done
	c.mu.Unlock()
	go func() {
		defer close(done)
		c.run(ctx)
	}()
}

// stop stops the client; graceful cancels its instance first, otherwise
// the client just goes silent (a crash). It waits for the client to end.
func (c *Client) stop(graceful bool) {
	c.mu.Lock()
	cancel, done := c.cancel, c.done
	c.graceful = graceful
	c.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	<-done
}

// running reports whether the client was started and not stopped.
func (c *Client) running() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done == nil {
		return false
	}
	select {
	case <-c.done:
		return false
	default:
		return true
	}
}

func (c *Client) run(ctx context.Context) {
	st := &c.sim.stats
	// Register until it works: the Java client retries on its next
	// heartbeat; here the retry is faster so that the scenario's clients
	// exist before its faults start.
	for !c.register(ctx) {
		if !sleepCtx(ctx, 200*time.Millisecond) {
			c.finish(ctx)
			return
		}
	}
	if !sleepCtx(ctx, c.phase) {
		c.finish(ctx)
		return
	}
	tick := time.NewTicker(c.sim.cfg.Timers.RenewInterval)
	defer tick.Stop()
	for {
		code, at, err := c.request(ctx, http.MethodPut, fmt.Sprintf("/apps/%s/%s?status=UP&lastDirtyTimestamp=%d", c.App, c.ID, c.dirty()), "")
		switch {
		case ctx.Err() != nil:
		case err != nil:
			st.renewFailures.Add(1)
		case code == http.StatusOK:
			st.renewals.Add(1)
			now := time.Now()
			c.sim.rec.renewed(c.ID, c.life, at, now)
			if owner := c.sim.ownerSeenBy(at, c.App); owner != "" && owner != at {
				c.sim.rec.forwarded(c.ID, c.life, owner, now)
			}
		case code == http.StatusNotFound:
			// The server lost the lease (evicted, or a node that never
			// had it): register again, as the Java client does.
			if c.register(ctx) {
				st.reRegistrations.Add(1)
			}
		default:
			st.renewFailures.Add(1)
		}
		select {
		case <-ctx.Done():
			c.finish(ctx)
			return
		case <-tick.C:
		}
	}
}

// cancelTimeout bounds a client's cancel, fail-overs included.
const cancelTimeout = 5 * time.Second

// finish records the end of the life, cancelling first when graceful.
func (c *Client) finish(_ context.Context) {
	c.mu.Lock()
	graceful := c.graceful
	c.mu.Unlock()
	ok, by := false, ""
	if graceful {
		ctx, cancel := context.WithTimeout(context.Background(), cancelTimeout)
		code, node, err := c.request(ctx, http.MethodDelete, fmt.Sprintf("/apps/%s/%s", c.App, c.ID), "")
		cancel()
		// Only a 200 counts as a cancel. A 404 means the node the client
		// asked did not hold the instance; like the Java client, this one
		// then gives up, and the checkers treat the instance as one whose
		// client died (other nodes may hold it until it is evicted).
		ok = err == nil && code == http.StatusOK
		switch {
		case ok:
			c.sim.stats.cancels.Add(1)
			by = node
		case err == nil && code == http.StatusNotFound:
			c.sim.stats.cancelNotFound.Add(1)
		default:
			c.sim.stats.cancelFailures.Add(1)
		}
	}
	c.sim.rec.lifeEnded(c.ID, c.life, time.Now(), by)
}

func (c *Client) dirty() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lastDirty
}

// register registers the instance; it reports success.
func (c *Client) register(ctx context.Context) bool {
	sent := time.Now()
	code, at, err := c.request(ctx, http.MethodPost, "/apps/"+c.App, c.registerBody())
	if err != nil || code != http.StatusNoContent {
		return false
	}
	c.sim.stats.registrations.Add(1)
	now := time.Now()
	c.sim.rec.acked(c.ID, c.life, at, sent, now)
	c.sim.rec.renewed(c.ID, c.life, at, now)
	return true
}

// request sends one request to the node in use, failing over along the
// client's list on a transport error or a 5xx until one node answers. It
// returns the status of the answer.
func (c *Client) request(ctx context.Context, method, path, body string) (int, string, error) {
	c.mu.Lock()
	start := c.cur
	c.mu.Unlock()
	var lastErr error
	for i := 0; i < len(c.order); i++ {
		idx := (start + i) % len(c.order)
		if i > 0 {
			c.sim.stats.failovers.Add(1)
		}
		code, err := c.send(ctx, c.order[idx], method, path, body)
		if ctx.Err() != nil {
			return 0, "", ctx.Err()
		}
		if err == nil && code < 500 {
			c.mu.Lock()
			c.cur = idx
			c.mu.Unlock()
			return code, c.order[idx], nil
		}
		if err == nil {
			err = fmt.Errorf("status %d", code)
		}
		lastErr = err
	}
	return 0, "", fmt.Errorf("simulations: %s %s: every node failed, last: %w", method, path, lastErr)
}

// send sends one request to the named node, if the client can reach it.
func (c *Client) send(ctx context.Context, nodeName, method, path, body string) (int, error) {
	if !c.sim.c.Topology().Reachable(c.Location, nodeName) {
		return 0, errUnreachable
	}
	base := c.sim.c.URL(nodeName)
	if base == "" {
		return 0, errUnreachable
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.sim.http.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// ownerSeenBy returns the owner of app as the running node name sees it
// (where it forwards the renewals it receives), or "".
func (s *Sim) ownerSeenBy(name, app string) string {
	nd := s.c.Node(name)
	if nd == nil || nd.Replicator() == nil {
		return ""
	}
	return nd.Replicator().OwnerOf(app)
}

// sleepCtx sleeps for d; it reports false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
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
