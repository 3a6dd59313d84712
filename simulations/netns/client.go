//go:build linux

package netns

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/heureka/heureka/simulations"
)

// Client is a Eureka client in the client namespace, as
// simulations/client.go is in process: it registers one instance (JSON,
// lease 3 s, renewals every second) on the node it lives next to, renews
// with PUT …?status=UP&lastDirtyTimestamp=, moves to the next node of its
// list on a transport error or a 5xx (as the Java client walks its service
// URLs), registers again when a renewal answers 404, and cancels when
// stopped gracefully (only a 200 counts as cancelled).
//
// During a partition a client keeps to the nodes of its location's side
// (Topology.Groups), as one really on that side could not do otherwise.
// Crashed, paused and cut-off nodes it finds out about itself: a refused
// connection or a timeout (RequestTimeout) sends it to the next node.
type Client struct {
	r        *Run
	App, ID  string
	Location string
	order    []string

	mu        sync.Mutex
	cur       int
	lastDirty int64
	life      int
	graceful  bool
	cancel    context.CancelFunc
	done      chan struct{}
}

// RequestTimeout bounds one request of a client or of the observer to one
// node. One second: a client whose node stopped answering moves on well
// within its 3 s lease.
const RequestTimeout = time.Second

// errOtherSide is a client's refusal to use a node across the partition.
var errOtherSide = errors.New("node on the other side of the partition")

func (c *Client) registerBody() string {
	return fmt.Sprintf(`{"instance":{"instanceId":%q,"hostName":%q,"app":%q,"ipAddr":%q,`+
		`"status":"UP","port":{"$":8080,"@enabled":"true"},"vipAddress":%q,"lastDirtyTimestamp":"%d",`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
		`"leaseInfo":{"renewalIntervalInSecs":1,"durationInSecs":%d}}}`,
		c.ID, strings.ToLower(c.ID)+".netns", c.App, clientIP, strings.ToLower(c.App), c.lastDirty,
		int(LeaseDuration/time.Second))
}

func (c *Client) start() {
	ctx, cancel := context.WithCancel(context.Background())
	c.mu.Lock()
	c.cancel = cancel
	c.done = make(chan struct{})
	c.lastDirty = time.Now().UnixMilli()
	c.cur = 0
	c.life = c.r.rec.lifeStarted(c.App, c.ID, c.Location, time.Now())
	done := c.done
	c.mu.Unlock()
	go func() {
		defer close(done)
		c.run(ctx)
	}()
}

// stop stops the client, cancelling its instance first when graceful, and
// waits for it.
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
	for !c.register(ctx) {
		if !sleepCtx(ctx, 200*time.Millisecond) {
			c.finish()
			return
		}
	}
	tick := time.NewTicker(RenewInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			c.finish()
			return
		case <-tick.C:
		}
		code, at, err := c.request(ctx, http.MethodPut, fmt.Sprintf("/apps/%s/%s?status=UP&lastDirtyTimestamp=%d", c.App, c.ID, c.lastDirty), "")
		switch {
		case ctx.Err() != nil, err != nil:
		case code == http.StatusOK:
			c.r.rec.renewed(c.ID, c.life, at, time.Now())
		case code == http.StatusNotFound:
			c.register(ctx) // the lease was lost: register again, as the Java client does
		}
	}
}

func (c *Client) finish() {
	c.mu.Lock()
	graceful := c.graceful
	c.mu.Unlock()
	by := ""
	if graceful {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		code, node, err := c.request(ctx, http.MethodDelete, fmt.Sprintf("/apps/%s/%s", c.App, c.ID), "")
		cancel()
		if err == nil && code == http.StatusOK {
			by = node
		}
	}
	c.r.rec.lifeEnded(c.ID, c.life, time.Now(), by)
}

func (c *Client) register(ctx context.Context) bool {
	sent := time.Now()
	code, at, err := c.request(ctx, http.MethodPost, "/apps/"+c.App, c.registerBody())
	if err != nil || code != http.StatusNoContent {
		return false
	}
	now := time.Now()
	c.r.rec.acked(c.ID, c.life, at, sent, now)
	c.r.rec.renewed(c.ID, c.life, at, now)
	return true
}

// request sends one request, failing over along the client's list on a
// transport error or a 5xx until a node answers.
func (c *Client) request(ctx context.Context, method, path, body string) (int, string, error) {
	c.mu.Lock()
	start := c.cur
	c.mu.Unlock()
	var lastErr error
	for i := range c.order {
		idx := (start + i) % len(c.order)
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
	return 0, "", fmt.Errorf("%s %s: every node failed, last: %w", method, path, lastErr)
}

func (c *Client) send(ctx context.Context, node, method, path, body string) (int, error) {
	if t := c.r.Topology(); t != nil && t.Groups != nil &&
		!(&simulations.Topology{Groups: t.Groups}).Reachable(c.Location, node) {
		return 0, errOtherSide
	}
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, c.r.BaseURL(node)+path, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", "application/json")
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.r.http.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

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
