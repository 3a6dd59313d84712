package actors

import (
	"math/rand"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Ownership is how the cluster layer tells the registry which applications
// this node owns. Only the owner of an application evicts its expired
// leases, so two nodes never race to evict and a node that misses renewals
// does not evict what the owner sees renewed. A nil Ownership owns
// everything (one node).
type Ownership interface {
	// Owns reports whether this node owns app now. It must be cheap.
	Owns(app string) bool
	// OwnedSince reports whether this node owns app and since when (its
	// start or the membership change that gave it app). A lease of app is
	// evicted only once it has been silent for its whole duration after
	// that moment: a new owner gives the renewals now forwarded to it one
	// lease to arrive.
	OwnedSince(app string) (time.Time, bool)
	// OwnedCount returns the number of instances of owned applications
	// (the base of this node's eviction cap).
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
		since int64 // the grace base the application was swept with
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
	since   map[string]int64 // per application of the current sweep
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
			if len(m.ids) > 0 {
				a.since[m.app] = m.since
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
	a.since = map[string]int64{}
	// waiting goes negative until sweepStarted says how many reports come.
	a.waiting = 0
	if st := a.r.SelfPreservation(); !st.ExpirationEnabled {
		a.r.log.Debug("eviction skipped: self-preservation", "renews", st.RenewsLastWindow, "threshold", st.Threshold)
		// Expired tombstones are forgotten all the same.
		ctx.Send(a.r.front, &sweepCmd{sweep: a.sweep, replyTo: ctx.Self(), tombstonesOnly: true})
		return
	}
	ctx.Send(a.r.front, &sweepCmd{sweep: a.sweep, extra: a.extra, replyTo: ctx.Self()})
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
	byApp := map[string][]string{}
	for _, k := range chosen {
		byApp[k.App] = append(byApp[k.App], k.ID)
	}
	// One line per run, not per instance: a mass expiry at 100k instances
	// would otherwise write thousands of lines.
	a.r.log.Info("evicting expired leases", "expired", len(a.expired), "limit", limit, "evicting", len(chosen),
		"apps", len(byApp), "sample", sampleKeys(chosen, 5))
	for app, ids := range byApp {
		ctx.Send(a.r.front, &evictCmd{appCmd: appCmd{app: app}, ids: ids, extra: a.extra, since: a.since[app]})
	}
	a.expired = nil
	a.sweep++ // late reports of this sweep are ignored
}

// sampleKeys names at most n of keys ("APP/id"), for a log line.
func sampleKeys(keys []Key, n int) []string {
	out := make([]string, 0, min(n, len(keys)))
	for _, k := range keys[:min(n, len(keys))] {
		out = append(out, k.App+"/"+k.ID)
	}
	return out
}
