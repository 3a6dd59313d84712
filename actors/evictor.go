package actors

import (
	"math/rand"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Ownership is how the cluster layer tells the registry which applications
// this node owns. Only the owner of an application evicts its expired leases,
// and self-preservation weighs only the renewals and instances of owned
// applications, so a node cut off from most clients does not evict what
// others still see renewed. A nil Ownership owns everything (one node).
type Ownership interface {
	// Owns reports whether this node owns app now. It is called on every
	// renewal and must be cheap.
	Owns(app string) bool
	// MayEvict reports whether this node may evict expired leases of app
	// now: it owns app and has owned it long enough to have seen its
	// renewals.
	MayEvict(app string, now time.Time) bool
	// OwnedCount returns the number of instances of owned applications.
	OwnedCount() int
}

// evictionLimit is Eureka's cap on one eviction run: size − int(size ×
// percent), so that at most 15% (by default) of the registry goes at once.
func evictionLimit(size int, percent float64) int {
	return size - int(float64(size)*percent)
}

// chooseEvictions picks up to limit of the expired keys at random with a
// partial Fisher–Yates shuffle, as Eureka does. It reorders keys.
func chooseEvictions(keys []Key, limit int, rnd *rand.Rand) []Key {
	if limit >= len(keys) {
		return keys
	}
	if limit <= 0 {
		return nil
	}
	for i := 0; i < limit; i++ {
		j := i + rnd.Intn(len(keys)-i)
		keys[i], keys[j] = keys[j], keys[i]
	}
	return keys[:limit]
}

// Messages of the eviction actor.
type (
	evictTick    struct{}
	sweepStarted struct {
		sweep uint64
		apps  int
	}
	expiredReport struct {
		sweep uint64
		app   string
		ids   []string
	}
)

// evictorActor runs Eureka's eviction (spec §4.10) every EvictionInterval:
// unless self-preservation disables expiration, it asks every application
// actor for its expired leases, caps the number by evictionLimit and evicts a
// random choice. The application actors re-check each lease, so a renewal
// that races with the sweep wins.
type evictorActor struct {
	r       *Registry
	rnd     *rand.Rand
	tick    *ticker
	lastRun time.Time
	sweep   uint64
	extra   time.Duration
	waiting int // reports still expected for the current sweep
	expired []Key
}

func (a *evictorActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		a.lastRun = a.r.cfg.Clock.Now()
		a.tick = startTicker(ctx, a.r.cfg.EvictionInterval, &evictTick{})
	case *actor.Stopping:
		a.tick.stop()
	case *evictTick:
		a.onTick(ctx)
	case *sweepStarted:
		if m.sweep == a.sweep {
			a.waiting += m.apps
			a.maybeFinish(ctx)
		}
	case *expiredReport:
		if m.sweep == a.sweep {
			for _, id := range m.ids {
				a.expired = append(a.expired, Key{App: m.app, ID: id})
			}
			a.waiting--
			a.maybeFinish(ctx)
		}
	}
}

func (a *evictorActor) onTick(ctx actor.Context) {
	now := a.r.cfg.Clock.Now()
	a.extra = max(0, now.Sub(a.lastRun)-a.r.cfg.EvictionInterval)
	a.lastRun = now
	a.sweep++
	a.expired = a.expired[:0]
	// waiting goes negative until sweepStarted says how many reports come.
	a.waiting = 0
	if st := a.r.SelfPreservation(); !st.ExpirationEnabled {
		a.r.log.Debug("eviction skipped: self-preservation", "renews", st.RenewsLastWindow, "threshold", st.Threshold)
		// Expired tombstones are forgotten all the same.
		ctx.Send(a.r.front, &sweepCmd{sweep: a.sweep, replyTo: ctx.Self(), tombstonesOnly: true})
		return
	}
	ctx.Send(a.r.front, &sweepCmd{sweep: a.sweep, extra: a.extra, replyTo: ctx.Self(), policy: a.r.cfg.Ownership, now: now})
}

func (a *evictorActor) maybeFinish(ctx actor.Context) {
	if a.waiting != 0 || a.sweep == 0 {
		return
	}
	if len(a.expired) == 0 {
		return
	}
	limit := evictionLimit(a.r.ownedCount(), a.r.cfg.RenewalPercentThreshold)
	chosen := chooseEvictions(a.expired, limit, a.rnd)
	a.r.log.Info("evicting expired leases", "expired", len(a.expired), "limit", limit, "evicting", len(chosen))
	byApp := map[string][]string{}
	for _, k := range chosen {
		byApp[k.App] = append(byApp[k.App], k.ID)
	}
	for app, ids := range byApp {
		ctx.Send(a.r.front, &evictCmd{appCmd: appCmd{app: app}, ids: ids, extra: a.extra})
	}
	a.expired = nil
	a.sweep++ // late reports of this sweep are ignored
}
