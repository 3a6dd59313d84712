package cluster

// Renewal reports
//
// Self-preservation weighs the renewals of the whole cluster (see
// actors.selfPreservation): each client renewal is counted by the node it
// arrived at, and every LoadInterval each node sends every other member a
// wire.Load with its count over the last window (which slides every quarter
// window) and its decision. PeerRenewals sums the latest report of every
// alive member, ignoring reports older than three LoadIntervals: a member
// on the other side of a partition stops counting within a fraction of a
// window, long before memberlist declares it dead. Reports cost N−1 small
// messages per node per LoadInterval, whatever the number of renewals.

import (
	"context"
	"slices"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/wire"
)

// peerLoad is a member's latest renewal report and when it arrived.
type peerLoad struct {
	msg *wire.Load
	at  time.Time
}

// fresh reports whether the report still counts at now, given how often
// reports come.
func (p peerLoad) fresh(now time.Time, every time.Duration) bool {
	return now.Sub(p.at) <= 3*every
}

func (r *Replicator) loadLoop(ctx context.Context) {
	t := time.NewTicker(r.cfg.LoadInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			r.sendLoad()
		}
	}
}

// sendLoad queues this node's renewal report for every member.
func (r *Replicator) sendLoad() {
	if r.store == nil {
		return
	}
	st := r.store.SelfPreservation()
	m := &wire.Load{Node: r.localName(), WindowMillis: st.Window.Milliseconds(), Renewals: st.LocalRenewals,
		Expected: int64(st.Expected), Engaged: st.Engaged, Reason: st.Reason}
	if m.WindowMillis <= 0 {
		return
	}
	r.eachLink(func(l *peerLink) { l.pushControl(m) })
}

// onLoad records a member's report. A report from a member that stayed
// in this node's membership after its reports had gone stale (it was cut
// off from this node, one way or both, or stalled) ends a gap in which it
// may have taken renewals that never reached this node: it forwarded them
// to the owner of its own, narrower view, or held them until they were too
// old to send. The eviction grace restarts from now (see
// evictionGraceFrom). A member that failed and came back is not such a
// gap: its links and reports are dropped when it fails (see
// forgetLoad), its clients failed over to the others meanwhile, and the
// applications it takes back get the takeover grace.
func (r *Replicator) onLoad(m *wire.Load) {
	if m.Node == "" || m.WindowMillis <= 0 || m.Node == r.localName() {
		return
	}
	now := time.Now()
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if prev, ok := r.loads[m.Node]; ok && !prev.fresh(now, r.cfg.LoadInterval) &&
		(!sabotage.On(sabotage.NoGraceAfterMemberGap) || r.deafLocked(m.Node, now)) {
		r.resumed = r.cfg.Clock.Now()
	}
	r.loads[m.Node] = peerLoad{msg: m, at: now}
}

// deafLocked reports whether no alive member but except had a fresh
// report: the rule before the asymmetric-partition fix, which restarted
// the grace only when this node had heard from nobody (kept for the
// no-grace-after-member-gap sabotage switch).
func (r *Replicator) deafLocked(except string, now time.Time) bool {
	o := r.own.Load()
	for _, name := range o.members {
		if p, ok := r.loads[name]; ok && name != o.self && name != except && p.fresh(now, r.cfg.LoadInterval) {
			return false
		}
	}
	return true
}

// forgetLoad drops the report of a member that is no longer alive here.
func (r *Replicator) forgetLoad(name string) {
	r.loadMu.Lock()
	delete(r.loads, name)
	r.loadMu.Unlock()
}

// evictionGraceFrom is the earliest moment from which an owner may count
// a lease's silence: renewals reach an owner forwarded by the members its
// clients talk to, so while this node is not hearing from an alive member
// that used to report (it is cut off from it, or it was stalled itself),
// it may be missing renewals, and it evicts nothing (the result is now);
// after such a gap, silence counts only from when the reports resumed.
// Likewise while a node that is not alive in this node's view reports
// fresh figures: the views disagree (an asymmetric partition), so this
// node may own applications by its view that another member owns by the
// cluster's, whose renewals go there. "Doubt yourself before you evict
// others."
func (r *Replicator) evictionGraceFrom() time.Time {
	o := r.own.Load()
	now := time.Now()
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	for _, m := range o.members {
		if p, ok := r.loads[m]; ok && m != o.self && !p.fresh(now, r.cfg.LoadInterval) {
			return r.cfg.Clock.Now()
		}
	}
	if !sabotage.On(sabotage.NoGraceAfterMemberGap) {
		for m, p := range r.loads {
			if p.fresh(now, r.cfg.LoadInterval) && !slices.Contains(o.members, m) {
				return r.cfg.Clock.Now()
			}
		}
	}
	return r.resumed
}

// PeerRenewals implements actors.RenewalPeers: the sum of the fresh reports
// of the alive members other than this node, each scaled to window.
func (r *Replicator) PeerRenewals(window time.Duration) (int64, int) {
	o := r.own.Load()
	now := time.Now()
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	var sum float64
	n := 0
	for _, m := range o.members {
		if m == o.self {
			continue
		}
		p, ok := r.loads[m]
		if !ok || !p.fresh(now, r.cfg.LoadInterval) {
			continue
		}
		sum += float64(p.msg.Renewals) * float64(window.Milliseconds()) / float64(p.msg.WindowMillis)
		n++
	}
	return int64(sum + 0.5), n
}

// MemberLoad is a member's latest renewal report, for operators.
type MemberLoad struct {
	// Renewals is what clients renewed on the member in its last window.
	Renewals int64
	// Engaged and Reason are the member's self-preservation decision.
	Engaged bool
	Reason  string
	// Age is how old the report is.
	Age time.Duration
}

// MemberLoads returns the latest report of every member that sent one.
func (r *Replicator) MemberLoads() map[string]MemberLoad {
	now := time.Now()
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	out := make(map[string]MemberLoad, len(r.loads))
	for name, p := range r.loads {
		out[name] = MemberLoad{Renewals: p.msg.Renewals, Engaged: p.msg.Engaged, Reason: p.msg.Reason, Age: now.Sub(p.at)}
	}
	return out
}
