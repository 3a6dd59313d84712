package simulations

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/internal/simclient"
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

// Client is a simulated Eureka client (simclient: register, renew every
// RenewInterval, fail over along its node list, register again after a
// 404, cancel when stopped gracefully), recorded as lives of its instance
// and counted in the Sim's ClientStats.
type Client struct {
	sim      *Sim
	App, ID  string
	Location string   // the node the client lives next to
	order    []string // node preference: Location first
	phase    time.Duration

	mu        sync.Mutex // guards lastDirty
	lastDirty int64      // the current life's lastDirtyTimestamp
	cl        simclient.Client
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
	return simclient.RegisterBody(simclient.Instance{
		App: c.App, ID: c.ID, HostName: strings.ToLower(c.ID) + ".sim", IP: "10.9.0.1",
		LastDirty: c.lastDirty, RenewSecs: max(1, int(c.sim.cfg.Timers.RenewInterval/time.Second)), LeaseSecs: lease,
	})
}

// start starts a new life of the client (the first, or one after stop);
// it runs until stop.
func (c *Client) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lastDirty = time.Now().UnixMilli()
	life := c.sim.rec.LifeStarted(c.App, c.ID, c.Location, time.Now())
	c.cl.Start(simclient.Config{
		App: c.App, ID: c.ID, Order: c.order, Body: c.registerBody(), LastDirty: c.lastDirty,
		Phase: c.phase, RenewInterval: c.sim.cfg.Timers.RenewInterval,
		Send: c.send, Events: c.events(life),
	})
}

// events records life's registrations, renewals and end, and counts them
// in the Sim's ClientStats.
func (c *Client) events(life int) simclient.Events {
	st, rec := &c.sim.stats, c.sim.rec
	return simclient.Events{
		Registered: func(node string, sent, at time.Time, again bool) {
			st.registrations.Add(1)
			if again {
				st.reRegistrations.Add(1)
			}
			rec.Acked(c.ID, life, node, sent, at)
			rec.Renewed(c.ID, life, node, at)
		},
		Renewed: func(node string, at time.Time) {
			st.renewals.Add(1)
			rec.Renewed(c.ID, life, node, at)
			if owner := c.sim.ownerSeenBy(node, c.App); owner != "" && owner != node {
				rec.Forwarded(c.ID, life, owner, at)
			}
		},
		RenewFailed: func() { st.renewFailures.Add(1) },
		FailedOver:  func() { st.failovers.Add(1) },
		Ended: func(at time.Time, how simclient.Ending, by string) {
			switch how {
			case simclient.Cancelled:
				st.cancels.Add(1)
			case simclient.CancelNotFound:
				// The checkers treat the instance as one whose client
				// died (other nodes may hold it until it is evicted).
				st.cancelNotFound.Add(1)
			case simclient.CancelFailed:
				st.cancelFailures.Add(1)
			}
			rec.LifeEnded(c.ID, life, at, by)
		},
	}
}

// stop stops the client; graceful cancels its instance first, otherwise
// the client just goes silent (a crash). It waits for the client to end.
func (c *Client) stop(graceful bool) { c.cl.Stop(graceful) }

// running reports whether the client was started and not stopped.
func (c *Client) running() bool { return c.cl.Running() }

// cancelTimeout bounds a client's cancel, fail-overs included.
const cancelTimeout = simclient.CancelTimeout

// send sends one request to the named node, if the client can reach it.
func (c *Client) send(ctx context.Context, nodeName, method, path, body string) (int, error) {
	if !c.sim.c.Topology().Reachable(c.Location, nodeName) {
		return 0, errUnreachable
	}
	base := c.sim.c.URL(nodeName)
	if base == "" {
		return 0, errUnreachable
	}
	return simclient.Send(ctx, c.sim.http, 2*time.Second, method, base+path, body)
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
var sleepCtx = simclient.Sleep
