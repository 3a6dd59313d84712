package actors

import (
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// SelfPreservationStatus is a published reading of the self-preservation
// state (spec §4.10). It is immutable.
//
// In a cluster the figures are cluster-wide: Expected counts every instance
// of the registry (every node holds all of them), and RenewsLastWindow sums
// the client renewals counted by this node and by every other member it can
// reach, each renewal counted once, by the node the client sent it to.
type SelfPreservationStatus struct {
	// Enabled is the switch: --self-preservation at start, changed at run
	// time by Registry.SetSelfPreservation.
	Enabled bool
	// Expected is the number of clients expected to send renewals.
	Expected int
	// Threshold is the minimum renewals per window for leases to expire.
	Threshold int
	// RenewsLastWindow is the number of renewals counted in the last
	// complete window (Eureka's "renews last minute"): LocalRenewals plus
	// PeerRenewals.
	RenewsLastWindow int64
	// LocalRenewals is what clients renewed (or registered) on this node in
	// its last complete window.
	LocalRenewals int64
	// PeerRenewals is the sum of the other reachable members' last complete
	// windows, scaled to this node's window.
	PeerRenewals int64
	// Members is how many members' counts went into RenewsLastWindow, this
	// node included (1 for a single node).
	Members int
	// ExpirationEnabled reports whether eviction may run: self-preservation
	// is off, or renewals are above the threshold.
	ExpirationEnabled bool
	// Engaged reports whether self-preservation is holding expired leases
	// now: Enabled, renewals are expected and they are at or below the
	// threshold.
	Engaged bool
	// EngagedSince is when the current engagement began (zero when not
	// engaged).
	EngagedSince time.Time
	// Reason says in plain words why expiration is enabled or not.
	Reason string
	// Window is the length of the renewal counting window.
	Window time.Duration
}

// selfPreservation is the plain core of the self-preservation actor:
// Eureka's expected-renewals arithmetic.
type selfPreservation struct {
	enabled          bool
	percent          float64
	expectedInterval time.Duration
	window           time.Duration
	expected         int
	renewsLastWindow int64
}

// threshold is int(expected × (window / expectedInterval) × percent),
// computed left to right in float64 and truncated, as Eureka does.
func (s *selfPreservation) threshold() int {
	return int(float64(s.expected) * (s.window.Seconds() / s.expectedInterval.Seconds()) * s.percent)
}

func (s *selfPreservation) expirationEnabled() bool {
	if !s.enabled {
		return true
	}
	t := s.threshold()
	return t > 0 && s.renewsLastWindow > int64(t)
}

// onEvent adjusts the expected count: +1 for a new lease, −1 (not below 0)
// for a cancel or eviction. Unlike Eureka, a new lease counts even when the
// expected count is 0, so a registry that was emptied still protects (and
// expires) the instances that register again.
func (s *selfPreservation) onEvent(ev *Event) {
	switch {
	case ev.NewLease:
		s.expected++
	case ev.Action == ActionDeleted && s.expected > 0:
		s.expected--
	}
}

// recount adopts count as the expected number of renewers if it is above
// percent × expected or self-preservation is off (Eureka's 15-minute update:
// it only lets the expectation fall gradually).
func (s *selfPreservation) recount(count int) {
	if !s.enabled || float64(count) > s.percent*float64(s.expected) {
		s.expected = count
	}
}

func (s *selfPreservation) status() *SelfPreservationStatus {
	return &SelfPreservationStatus{
		Enabled:           s.enabled,
		Expected:          s.expected,
		Threshold:         s.threshold(),
		RenewsLastWindow:  s.renewsLastWindow,
		ExpirationEnabled: s.expirationEnabled(),
		Window:            s.window,
	}
}

// Messages of the self-preservation actor.
type (
	spWindowTick  struct{}
	spRecountTick struct{ force bool }
	spEvent       struct{ ev *Event }
	spSetEnabled  struct{ enabled bool }
)

// selfPreservationActor owns the selfPreservation state: it counts new and
// removed leases from events, closes a renewal window on every window tick
// and recounts the registry on every recount tick. It publishes its state
// through the registry so that the evictor and the HTTP layer read it
// without a round trip.
type selfPreservationActor struct {
	r      *Registry
	sp     selfPreservation
	timers []*ticker
}

func (a *selfPreservationActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.timers = append(a.timers,
			startTicker(ctx, a.r.cfg.RenewalWindow, &spWindowTick{}),
			startTicker(ctx, a.r.cfg.RenewalThresholdUpdateInterval, &spRecountTick{}))
		a.publish()
	case *actor.Stopping:
		for _, t := range a.timers {
			t.stop()
		}
	case *spEvent:
		a.sp.onEvent(m.ev)
		a.publish()
	case *spWindowTick:
		a.sp.renewsLastWindow = a.r.renewals.Swap(0)
		a.publish()
	case *spSetEnabled:
		a.sp.enabled = m.enabled
		a.publish()
		ctx.Respond(a.r.sp.Load())
	case *spRecountTick:
		if m.force {
			a.sp.expected = a.r.ownedCount()
		} else {
			a.sp.recount(a.r.ownedCount())
		}
		a.publish()
	}
}

func (a *selfPreservationActor) publish() { a.r.sp.Store(a.sp.status()) }

// spSink forwards events to the self-preservation actor without blocking.
type spSink struct{ r *Registry }

func (s spSink) Apply(ev *Event) {
	if (ev.NewLease || ev.Action == ActionDeleted) && s.r.owns(ev.Instance.App) {
		s.r.root.Send(s.r.spPID, &spEvent{ev: ev})
	}
}
