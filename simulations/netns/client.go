//go:build linux

package netns

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/heureka/heureka/internal/simclient"
	"github.com/heureka/heureka/simulations"
)

// Client is a Eureka client in the client namespace, run by
// internal/simclient like the in-process simulations' clients: it registers one instance (JSON,
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

	cl simclient.Client
}

// RequestTimeout bounds one request of a client or of the observer to one
// node. One second: a client whose node stopped answering moves on well
// within its 3 s lease.
const RequestTimeout = time.Second

// errOtherSide is a client's refusal to use a node across the partition.
var errOtherSide = errors.New("node on the other side of the partition")

// start starts the client's life; it runs until stop. The first renewal
// comes one renewal interval after the registration.
func (c *Client) start() {
	lastDirty := time.Now().UnixMilli()
	life := c.r.rec.LifeStarted(c.App, c.ID, c.Location, time.Now())
	rec := c.r.rec
	c.cl.Start(simclient.Config{
		App: c.App, ID: c.ID, Order: c.order, LastDirty: lastDirty,
		Body: simclient.RegisterBody(simclient.Instance{
			App: c.App, ID: c.ID, HostName: strings.ToLower(c.ID) + ".netns", IP: clientIP,
			LastDirty: lastDirty, RenewSecs: max(1, int(timers.RenewInterval/time.Second)), LeaseSecs: int(timers.LeaseDuration / time.Second),
		}),
		Phase: timers.RenewInterval, RenewInterval: timers.RenewInterval,
		Send: c.send,
		Events: simclient.Events{
			Registered: func(node string, sent, at time.Time, _ bool) {
				rec.Acked(c.ID, life, node, sent, at)
				rec.Renewed(c.ID, life, node, at)
			},
			Renewed: func(node string, at time.Time) { rec.Renewed(c.ID, life, node, at) },
			Ended:   func(at time.Time, _ simclient.Ending, by string) { rec.LifeEnded(c.ID, life, at, by) },
		},
	})
}

// stop stops the client, cancelling its instance first when graceful, and
// waits for it.
func (c *Client) stop(graceful bool) { c.cl.Stop(graceful) }

func (c *Client) running() bool { return c.cl.Running() }

// send sends one request to node, unless it is across the partition.
func (c *Client) send(ctx context.Context, node, method, path, body string) (int, error) {
	if t := c.r.Topology(); t != nil && t.Groups != nil &&
		!(&simulations.Topology{Groups: t.Groups}).Reachable(c.Location, node) {
		return 0, errOtherSide
	}
	return simclient.Send(ctx, c.r.http, RequestTimeout, method, c.r.BaseURL(node)+path, body)
}

// sleepCtx sleeps for d; it reports false if ctx ended first.
var sleepCtx = simclient.Sleep
