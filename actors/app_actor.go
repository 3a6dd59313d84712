package actors

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// appCommand is a message the front routes to an application actor.
type appCommand interface {
	appName() string
	setReply(chan reply)
	respond(reply)
}

// appCmd is embedded in every application command.
type appCmd struct {
	app string
	ch  chan reply
}

func (c *appCmd) appName() string        { return c.app }
func (c *appCmd) setReply(ch chan reply) { c.ch = ch }
func (c *appCmd) respond(rep reply) {
	if c.ch != nil {
		c.ch <- rep
	}
}

// The application commands.
type (
	registerCmd struct {
		appCmd
		inst       *Instance
		replicated bool
	}
	renewCmd struct {
		appCmd
		req RenewRequest
	}
	renewBatchCmd struct {
		appCmd
		ids []string
	}
	cancelCmd struct {
		appCmd
		id         string
		replicated bool
	}
	statusCmd struct {
		appCmd
		id         string
		status     Status
		lastDirty  *int64
		replicated bool
		delete     bool
	}
	metadataCmd struct {
		appCmd
		id         string
		kv         map[string]string
		replicated bool
	}
	getCmd struct {
		appCmd
		id string
	}
	applyCmd struct {
		appCmd
		recs []Record
	}
	recordsCmd struct {
		appCmd
	}
	evictCmd struct {
		appCmd
		ids   []string
		extra time.Duration
	}
)

// Messages between the front, the application actors and the evictor.
type (
	// sweepCmd asks the front to collect expired leases from every
	// application for the evictor.
	sweepCmd struct {
		sweep   uint64
		extra   time.Duration
		replyTo *actor.PID
		policy  Ownership
		now     time.Time
		// tombstonesOnly asks only for tombstone collection (eviction is
		// blocked by self-preservation).
		tombstonesOnly bool
	}
	// collectExpired asks one application for its expired leases.
	collectExpired struct {
		sweep   uint64
		extra   time.Duration
		replyTo *actor.PID
	}
	// collectTombstones asks an application this node may not evict now to
	// forget its expired tombstones all the same.
	collectTombstones struct{}
	// appIdle tells the front that an application actor has processed
	// processed messages and holds nothing.
	appIdle struct {
		app       string
		processed uint64
	}
)

// appEntry is the record of one application actor, shared by the front and
// the Registry facade (through Registry.apps).
//
// routed counts the messages sent to the actor, by the front or directly by
// the facade; it is -1 once the front has decided to stop the actor. A
// sender claims a message slot with tryRoute before sending, and the front
// stops an idle actor only by swapping routed from the count the actor
// reports as processed to -1. So the stop succeeds only when no message is
// in flight or about to be sent, and a sender that finds the entry stopping
// goes through the front, which spawns a fresh actor: no command is ever
// lost to a stopping actor, and the hot path (renew) skips the front's hop.
type appEntry struct {
	pid    *actor.PID
	routed atomic.Int64
}

// tryRoute claims the right to send one message to the actor; it fails once
// the actor is stopping.
func (e *appEntry) tryRoute() bool {
	for {
		n := e.routed.Load()
		if n < 0 {
			return false
		}
		if e.routed.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// frontActor spawns application actors on first use, routes the commands the
// facade could not send directly, fans sweeps out, and stops actors that are
// idle and empty (see appEntry).
type frontActor struct {
	r    *Registry
	apps map[string]*appEntry
}

// send routes msg to e, which must not be stopping (only the front stops
// entries, and it removes them from its map when it does).
func (f *frontActor) send(ctx actor.Context, e *appEntry, msg any) {
	e.routed.Add(1)
	ctx.Send(e.pid, msg)
}

func (f *frontActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case appCommand:
		f.route(ctx, m.appName(), m)
	case *sweepCmd:
		n := 0
		for name, e := range f.apps {
			if m.tombstonesOnly || (m.policy != nil && !m.policy.MayEvict(name, m.now)) {
				f.send(ctx, e, &collectTombstones{})
				continue
			}
			f.send(ctx, e, &collectExpired{sweep: m.sweep, extra: m.extra, replyTo: m.replyTo})
			n++
		}
		ctx.Send(m.replyTo, &sweepStarted{sweep: m.sweep, apps: n})
	case *appIdle:
		if e := f.apps[m.app]; e != nil && e.routed.CompareAndSwap(int64(m.processed), -1) {
			delete(f.apps, m.app)
			f.r.apps.Delete(m.app)
			ctx.Poison(e.pid)
		}
	}
}

func (f *frontActor) route(ctx actor.Context, app string, msg any) {
	e := f.apps[app]
	if e == nil {
		if _, ok := msg.(*registerCmd); !ok {
			if _, ok := msg.(*applyCmd); !ok {
				// Nothing to do for an application that does not exist:
				// answer here instead of spawning an actor.
				f.answerMissing(msg)
				return
			}
		}
		props := actor.PropsFromProducer(func() actor.Actor {
			return &appActor{r: f.r, state: newAppState(app, f.r.opts)}
		})
		pid, err := ctx.SpawnNamed(props, "app-"+app)
		if err != nil {
			// The name is still held by a stopping actor; spawn unnamed.
			pid = ctx.Spawn(props)
		}
		e = &appEntry{pid: pid}
		f.apps[app] = e
		f.r.apps.Store(app, e)
	}
	f.send(ctx, e, msg)
}

// answerMissing replies to a command for an unknown application.
func (f *frontActor) answerMissing(msg any) {
	switch c := msg.(type) {
	case *renewCmd:
		c.respond(reply{renew: RenewResult{Outcome: RenewNotFound}})
	case appCommand:
		c.respond(reply{})
	}
}

// appActor is one application's actor, the only writer of its leases. It is
// a thin shell over appState: it decodes a command, calls the state, sends
// the events to the sinks and answers.
type appActor struct {
	r         *Registry
	state     *appState
	processed uint64
	counted   int // len(state.leases) as last added to r.count
}

func (a *appActor) Receive(ctx actor.Context) {
	msg := ctx.Message()
	switch msg.(type) {
	case *actor.Started, *actor.Stopping, *actor.Stopped, *actor.Restarting:
		return
	}
	a.processed++
	defer func() {
		if p := recover(); p != nil {
			a.r.log.Error("application actor failed", "app", a.state.name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			if c, ok := msg.(appCommand); ok {
				c.respond(reply{err: ErrInternal})
			}
		}
		a.syncCount()
		if a.state.empty() {
			ctx.Send(ctx.Parent(), &appIdle{app: a.state.name, processed: a.processed})
		}
	}()
	a.handle(ctx, msg)
}

// syncCount adds the change in this application's lease count to the
// registry's total. emit calls it before any answer goes out, so a caller
// that got its answer finds its change in Count().
func (a *appActor) syncCount() {
	n := len(a.state.leases)
	a.r.count.Add(int64(n - a.counted))
	a.counted = n
}

func (a *appActor) emit(evs ...Event) {
	a.syncCount()
	for _, s := range a.r.sinks {
		if b, ok := s.(BatchSink); ok && len(evs) > 1 {
			b.ApplyBatch(evs)
			continue
		}
		for i := range evs {
			s.Apply(&evs[i])
		}
	}
}

func (a *appActor) handle(ctx actor.Context, msg any) {
	s := a.state
	switch m := msg.(type) {
	case *registerCmd:
		a.emit(s.register(m.inst, m.replicated))
		m.respond(reply{ok: true})
	case *renewCmd:
		res, evs, renewed := s.renew(m.req)
		if renewed {
			a.r.countRenewal(s.name)
			if !m.req.Replicated && a.r.cfg.OnRenew != nil {
				a.r.cfg.OnRenew(s.name, m.req.ID)
			}
		}
		a.emit(evs...)
		m.respond(reply{ok: true, renew: res})
	case *renewBatchCmd:
		for _, id := range m.ids {
			_, evs, renewed := s.renew(RenewRequest{App: s.name, ID: id, Replicated: true})
			if renewed {
				a.r.countRenewal(s.name)
			}
			a.emit(evs...)
		}
	case *cancelCmd:
		ev, ok := s.remove(m.id, CauseCancel, m.replicated)
		if ok {
			a.emit(ev)
		}
		m.respond(reply{ok: ok})
	case *statusCmd:
		var (
			ev          Event
			changed, ok bool
		)
		if m.delete {
			ev, changed, ok = s.deleteOverride(m.id, m.status, m.lastDirty, m.replicated)
		} else {
			ev, changed, ok = s.setStatus(m.id, m.status, m.lastDirty, m.replicated)
		}
		if changed {
			a.emit(ev)
		}
		m.respond(reply{ok: ok})
	case *metadataCmd:
		ev, ok := s.updateMetadata(m.id, m.kv, m.replicated)
		if ok {
			a.emit(ev)
		}
		m.respond(reply{ok: ok})
	case *getCmd:
		inst, expired, ok := s.get(m.id)
		m.respond(reply{ok: ok, inst: inst, expired: expired})
	case *applyCmd:
		var applied []Record
		var evs []Event
		for _, rec := range m.recs {
			if ev, ok := s.applyRecord(rec); ok {
				evs = append(evs, ev)
				applied = append(applied, rec)
			}
		}
		a.emit(evs...)
		m.respond(reply{ok: true, records: applied})
	case *recordsCmd:
		m.respond(reply{ok: true, records: s.records()})
	case *collectTombstones:
		s.collectTombstones()
	case *collectExpired:
		s.collectTombstones()
		ctx.Send(m.replyTo, &expiredReport{sweep: m.sweep, app: s.name, ids: s.expiredIDs(m.extra)})
	case *evictCmd:
		for _, id := range m.ids {
			if ev, ok := s.evict(id, m.extra); ok {
				a.r.log.Info("evicted", "app", s.name, "id", id)
				a.emit(ev)
			}
		}
	}
}
