package actors

import (
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heureka/heureka/internal/sabotage"
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
		owned      bool // inst is the registry's alone (RegisterOwned)
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
		id    string
		since int64 // owned since (epoch ms), for expiry
	}
	applyCmd struct {
		appCmd
		recs    []Record
		initial bool // part of this node's initial sync
	}
	recordsCmd struct {
		appCmd
		// theirs, when not nil, asks only for the records newer than
		// these versions (or missing from them).
		theirs []RecordVersion
	}
	versionsCmd struct {
		appCmd
	}
	evictCmd struct {
		appCmd
		ids   []string
		extra time.Duration
		since int64
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
		// tombstonesOnly asks only for tombstone collection (eviction is
		// blocked by self-preservation).
		tombstonesOnly bool
	}
	// collectExpired asks one application for its expired leases.
	collectExpired struct {
		sweep   uint64
		extra   time.Duration
		since   int64 // owned since (epoch ms): the per-lease grace
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
	// fast is the renewal fast path's way to the actor's leases, and its
	// queue of renewals for the actor (fastrenew.go).
	fast fastTable
	// due says when the actor next has something to sweep, so that a sweep
	// skips the applications with nothing to do (at 1M instances in 50,000
	// applications, most of them).
	due sweepDue
}

// sweepDue is when an application next needs a sweep: leases is an instant
// (lease clock, ms) up to which none of its leases can run out, tombstones
// one (wall clock, ms) up to which none of its tombstones expires. The
// actor sets both after a sweep and zeroes them (sweep me) before any
// command that may add a lease, shorten one or add a tombstone; renewals
// only push expiries later, so they leave them. A sweep that reads a value
// a moment before a command zeroes it misses at most that one sweep.
type sweepDue struct {
	leases     atomic.Int64
	tombstones atomic.Int64
}

// needsSweep reports whether a sweep at leaseNow/wallNow may find an
// expired lease (or, with tombstonesOnly, an expired tombstone).
func (d *sweepDue) needsSweep(leaseNow, wallNow int64, tombstonesOnly bool) bool {
	if wallNow > d.tombstones.Load() {
		return true
	}
	return !tombstonesOnly && leaseNow > d.leases.Load()
}

// changes reports whether the actor's handling of msg may add a lease,
// shorten one or add a tombstone, and so must zero its sweepDue. Only
// commands known to do none of these are listed; anything else counts.
func changes(msg any) bool {
	switch msg.(type) {
	case *renewCmd, *renewBatchCmd, *getCmd, *recordsCmd, *versionsCmd, *leaseAgesCmd, *collectTombstones, *collectExpired:
		return false
	}
	return !sabotage.On(sabotage.SweepSkipsChangedApps)
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
		leaseNow, wallNow := f.r.leaseClock.now(), f.r.cfg.Clock.Now().UnixMilli()
		for name, e := range f.apps {
			// The due times first: asking the ownership costs a hash of
			// the name, and most applications have nothing due.
			if !e.due.needsSweep(leaseNow, wallNow, m.tombstonesOnly) {
				continue
			}
			since, ok := f.r.ownedSince(name)
			if !m.tombstonesOnly && !ok && !e.due.needsSweep(leaseNow, wallNow, true) {
				continue
			}
			if m.tombstonesOnly || !ok {
				f.send(ctx, e, &collectTombstones{})
				continue
			}
			f.send(ctx, e, &collectExpired{sweep: m.sweep, extra: m.extra, since: since, replyTo: m.replyTo})
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
		switch msg.(type) {
		case *registerCmd, *applyCmd, *adoptAgesCmd:
			// A handoff may come before the records (handoff.go).
		default:
			// Nothing to do for an application that does not exist:
			// answer here instead of spawning an actor.
			f.answerMissing(msg)
			return
		}
		e = &appEntry{}
		e.fast.state = newAppState(app, f.r.opts)
		props := actor.PropsFromProducer(func() actor.Actor {
			return &appActor{r: f.r, state: e.fast.state, entry: e}
		}, actor.WithDispatcher(f.r.disp))
		pid, err := ctx.SpawnNamed(props, "app-"+app)
		if err != nil {
			// The name is still held by a stopping actor; spawn unnamed.
			pid = ctx.Spawn(props)
		}
		e.pid = pid
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
	entry     *appEntry // its record: the fast path's queue and the sweep's due times
	processed uint64
	counted   int      // len(state.leases) as last added to r.count
	pending   []*lease // applyFastRenewals' buffer
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
	// Renewals answered by the fast path first: every command below reads
	// lease times as of now.
	a.applyFastRenewals()
	if a.entry != nil && changes(msg) {
		a.entry.due.leases.Store(0)
		a.entry.due.tombstones.Store(0)
	}
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
	// The fast path's table follows the sinks: a lease becomes renewable
	// there once its change is published.
	defer func() {
		for i := range evs {
			if evs[i].Instance != nil {
				a.refreshFast(evs[i].Instance.ID())
			}
		}
	}()
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

// applyOne applies one peer record, or skips it (ok false) when it is
// invalid (ValidateRecord) or applying it fails: the records of the batch
// before and after it still reach the sinks, so the view, the fan-out and
// self-preservation never miss what the registry holds.
func (a *appActor) applyOne(rec Record, initial bool) (ev Event, res ApplyResult, ok bool) {
	s := a.state
	if err := ValidateRecord(rec); err != nil {
		a.r.log.Warn("skipped an invalid replicated record", "app", s.name, "id", rec.ID, "from", rec.Version.Node, "err", err)
		return Event{}, ApplyIgnored, false
	}
	if sabotage.On(sabotage.EmptyRecordApplied) {
		ev, res = s.applyRecord(rec, initial) // a panic loses the whole batch
		return ev, res, true
	}
	defer func() {
		if p := recover(); p != nil {
			a.r.log.Error("applying a replicated record failed; skipped it", "app", s.name, "id", rec.ID,
				"from", rec.Version.Node, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			ev, res, ok = Event{}, ApplyIgnored, false
		}
	}()
	ev, res = s.applyRecord(rec, initial)
	return ev, res, true
}

func (a *appActor) handle(ctx actor.Context, msg any) {
	s := a.state
	switch m := msg.(type) {
	case *registerCmd:
		if ev, ok := s.tryRegisterOwned(m.inst, m.replicated, m.owned); ok {
			a.emit(ev)
			// A registration is a client's proof of life, as a renewal
			// is: it counts for self-preservation (Eureka counts only
			// renewals, so a fast-churning fleet looks less alive than
			// it is).
			a.r.countRenewal(s.name)
		} else {
			a.r.log.Info("refused a registration sent before the instance's cancel (lastDirtyTimestamp no newer than the cancelled record's)",
				"app", s.name, "id", m.inst.ID(), "lastDirtyTimestamp", m.inst.LastDirtyTimestamp)
		}
		m.respond(reply{ok: true})
	case *renewCmd:
		res, evs, renewed := s.renew(m.req)
		if renewed {
			a.r.countRenewal(s.name)
			// A Eureka peer's relayed heartbeat reaches the owner too.
			if a.r.cfg.OnRenew != nil {
				a.r.cfg.OnRenew(s.name, m.req.ID)
			}
		}
		a.emit(evs...)
		m.respond(reply{ok: true, renew: res})
	case *renewBatchCmd:
		for _, id := range m.ids {
			_, evs, renewed := s.renew(RenewRequest{App: s.name, ID: id, Replicated: true})
			if renewed {
				a.r.countForwarded(s.name)
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
		inst, expired, ok := s.get(m.id, m.since)
		m.respond(reply{ok: ok, inst: inst, expired: expired})
	case *applyCmd:
		var evs []Event
		refused, late := 0, 0
		for _, rec := range m.recs {
			ev, res, ok := a.applyOne(rec, m.initial)
			if !ok {
				continue
			}
			switch res {
			case ApplyInstalled:
				evs = append(evs, ev)
			case ApplyRefused:
				evs = append(evs, ev)
				refused++
			case ApplyRefusedLate:
				evs = append(evs, ev)
				late++
				a.r.log.Info("refused a copy of a registration sent before the instance's cancel; cancelling it everywhere",
					"app", s.name, "id", rec.ID, "from", rec.Version.Node)
			}
		}
		if refused > 0 {
			a.r.log.Info("refused stale copies older than the tombstone TTL whose leases had run out; evicting them everywhere",
				"app", s.name, "count", refused)
		}
		a.emit(evs...)
		m.respond(reply{ok: true, applied: len(evs) - refused - late, refused: refused})
	case *recordsCmd:
		if m.theirs != nil {
			m.respond(reply{ok: true, records: s.recordsNewerThan(m.theirs)})
		} else {
			m.respond(reply{ok: true, records: s.records()})
		}
	case *versionsCmd:
		m.respond(reply{ok: true, versions: s.versions()})
	case *leaseAgesCmd:
		m.respond(reply{ok: true, ages: s.leaseAges()})
	case *adoptAgesCmd:
		s.adoptAges(m.ages)
	case *collectTombstones:
		due := s.collectTombstones()
		if a.entry != nil {
			a.entry.due.tombstones.Store(due)
		}
	case *collectExpired:
		due := s.collectTombstones()
		if a.entry != nil {
			a.entry.due.tombstones.Store(due)
			a.entry.due.leases.Store(s.leasesDue())
		}
		ctx.Send(m.replyTo, &expiredReport{sweep: m.sweep, app: s.name, ids: s.expiredIDs(m.extra, m.since), since: m.since})
	case *evictCmd:
		for _, id := range m.ids {
			if ev, ok := s.evict(id, m.extra, m.since); ok {
				a.r.log.Debug("evicted", "app", s.name, "id", id)
				a.emit(ev)
			}
		}
	}
}
