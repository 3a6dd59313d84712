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
//
// Holds. While an alive member's reports are stale, an owner may be missing
// the renewals it forwards, so it evicts nothing (evictionGraceFrom). That
// hold is bounded: a member silent for longer than SilentMemberBound since
// its last report and since it last answered a pull of this node's (one
// that this node can dial and that answers is reachable one way, and its
// forwards come with its answers) counts as failed for ownership
// (silentMembers): its
// applications get a live owner, which gives their leases a lease of
// grace, and eviction resumes everywhere else. A dead client is therefore
// gone within its own bound plus the silent-member bound, however long the
// fault lasts. EvictionHolds says which holds are on, why and until when.
//
// Leaves. A member that leaves gracefully stops taking renewals; its
// clients send their next ones to other members, which count them from
// then on. Dropping its last report at once would dip the cluster's count
// by its share for a whole window, and a rolling restart is one such dip
// per node, enough to engage self-preservation through most of the roll.
// So a graceful leave keeps the member's last report: it counts in full
// for two LoadIntervals (the report is up to one old, and the reports that
// should hold the moved renewals lag by up to one more), then less and less
// as the other members' windows fill with the moved renewals, down to
// nothing one window later. A member that fails (kill -9, power loss) is
// judged as a failure: its report counts only while it is fresh (three
// LoadIntervals from its arrival, as any member's that goes quiet), and
// its silence until it is declared dead holds eviction as any silent
// member's does. The report is not dropped the moment the member is
// declared dead: a death declared by a member that was cut off itself
// (its probes lost) and spread when its traffic flows again is refuted a
// moment later, and dropping the report of a member that never stopped
// would dip the count by its share and engage self-preservation for
// nothing (the silent-member simulation at its unblock). A real failure
// or partition is cut from the count as soon as before: its reports stop,
// so the last one goes stale within three LoadIntervals.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
	"github.com/heureka/heureka/wire"
)

// peerLoad is a member's latest renewal report and when it arrived.
type peerLoad struct {
	msg *wire.Load
	at  time.Time
	// left is when the member was seen leaving gracefully (zero while it
	// is a member): the report then counts less and less (leftShare).
	left time.Time
	// failed is when the member was declared dead (zero while it is a
	// member or if it left): the report then counts only while fresh.
	failed time.Time
	// gone is the report of the member's previous process, if it left
	// gracefully and came back (a restart) before that report faded out:
	// it keeps fading, for the renewals its clients moved elsewhere are
	// not yet in the others' windows, and the new process has none of them.
	gone *peerLoad
}

// leftShare is how much of a departed member's report still counts at now:
// all of it for two LoadIntervals after the leave, then linearly less, down
// to nothing one of its windows later, as the renewals its clients moved
// fill the other members' windows. Two, not one: the departed report is
// up to one LoadInterval old when the member leaves, and the other
// members' reports that should hold the moved renewals are up to one
// LoadInterval old when they are summed, so their windows lag the leave by
// that much more (a rolling restart engaged self-preservation for a moment
// at one).
func (p peerLoad) leftShare(now time.Time, every time.Duration) float64 {
	d := now.Sub(p.left) - 2*every
	if d <= 0 {
		return 1
	}
	w := time.Duration(p.msg.WindowMillis) * time.Millisecond
	if d >= w {
		return 0
	}
	return 1 - float64(d)/float64(w)
}

// leftTeller is what a Peers may also tell: whether a member that is no
// longer alive left gracefully (Membership: StateLeft) rather than failed.
// Without it every departure counts as a failure.
type leftTeller interface {
	Left(name string) bool
}

// DefaultSilentMemberFactor is SilentMemberBound's default in
// LoadIntervals: 8, two renewal windows (2 minutes with the production
// LoadInterval of 15s; 4s in the simulations).
const DefaultSilentMemberFactor = 8

// silentBound is how long after its last report an alive member still
// holds eviction (ReplicatorConfig.SilentMemberBound or its default).
func (r *Replicator) silentBound() time.Duration {
	if r.cfg.SilentMemberBound > 0 {
		return r.cfg.SilentMemberBound
	}
	return DefaultSilentMemberFactor * r.cfg.LoadInterval
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
			r.checkSilent()
			r.checkDisagreement()
		case <-r.loadKick:
			r.checkSilent()
		}
	}
}

// checkSilent updates the set of alive members silent for longer than
// their bound, and recomputes ownership when it changed: a member in it
// owns nothing (silentMembers). A report from one of them takes it out
// again (onLoad kicks this).
func (r *Replicator) checkSilent() {
	p := r.getPeers()
	if p == nil {
		return
	}
	alive := p.AliveMembers()
	self := p.LocalName()
	now := time.Now()
	bound := r.silentBound()
	r.loadMu.Lock()
	next := map[string]time.Time{}
	if !sabotage.On(sabotage.SilentMemberHoldsForever) {
		for _, m := range alive {
			if ld, ok := r.loads[m]; ok && m != self && ld.left.IsZero() && now.Sub(ld.at) > bound &&
				now.Sub(r.answered[m]) > bound {
				next[m] = ld.at
			}
		}
	}
	changed := len(next) != len(r.silent)
	for m := range next {
		if _, ok := r.silent[m]; !ok {
			changed = true
		}
	}
	if changed {
		for m, at := range next {
			if _, ok := r.silent[m]; !ok {
				r.log.Warn("member silent for longer than its bound: it counts as failed for ownership until it reports again",
					"member", m, "silentFor", now.Sub(at).Round(time.Millisecond), "bound", bound)
			}
		}
		r.silent = next
	}
	r.loadMu.Unlock()
	if changed {
		r.MembersChanged()
	}
}

// pulled notes that peer answered a pull: its replicator works and this
// node takes what it forwards on its own stream (an asymmetric
// partition), so it is not silent, whatever its reports.
func (r *Replicator) pulled(peer string) {
	r.loadMu.Lock()
	r.answered[peer] = time.Now()
	_, silent := r.silent[peer]
	r.loadMu.Unlock()
	if silent {
		select {
		case r.loadKick <- struct{}{}:
		default:
		}
	}
}

// silentMembers returns the members silent for longer than their bound
// (nil if none).
func (r *Replicator) silentMembers() map[string]time.Time {
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if len(r.silent) == 0 {
		return nil
	}
	out := make(map[string]time.Time, len(r.silent))
	for m, at := range r.silent {
		out[m] = at
	}
	return out
}

// sendLoad queues this node's renewal report for every member.
func (r *Replicator) sendLoad() {
	if r.store == nil || r.leaving.Load() {
		// Leaving: the members keep the last report fading (markLeaving).
		return
	}
	st := r.store.SelfPreservation()
	m := &wire.Load{Node: r.localName(), WindowMillis: st.Window.Milliseconds(), Renewals: st.LocalRenewals,
		Expected: int64(st.Expected), Engaged: st.Engaged, Reason: st.Reason,
		Alive: slices.Clone(r.own.Load().members)}
	if m.Alive == nil {
		m.Alive = []string{} // known and empty (leaving alone), not unknown
	}
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
	if prev, ok := r.loads[m.Node]; ok && prev.left.IsZero() && !prev.fresh(now, r.cfg.LoadInterval) &&
		(!sabotage.On(sabotage.NoGraceAfterMemberGap) || r.deafLocked(m.Node, now)) {
		r.resumed = r.cfg.Clock.Now()
	}
	next := peerLoad{msg: m, at: now}
	if prev, ok := r.loads[m.Node]; ok {
		if !prev.left.IsZero() {
			prev.gone = nil
			next.gone = &prev
		} else {
			next.gone = prev.gone
		}
	}
	r.loads[m.Node] = next
	if _, ok := r.silent[m.Node]; ok {
		select {
		case r.loadKick <- struct{}{}:
		default:
		}
	}
}

// deafLocked reports whether no alive member but except had a fresh
// report: the rule before the asymmetric-partition fix, which restarted
// the grace only when this node had heard from nobody (kept for the
// no-grace-after-member-gap sabotage switch).
func (r *Replicator) deafLocked(except string, now time.Time) bool {
	o := r.own.Load()
	for _, name := range o.members {
		if p, ok := r.loads[name]; ok && name != o.self && name != except && p.left.IsZero() && p.fresh(now, r.cfg.LoadInterval) {
			return false
		}
	}
	return true
}

// markLeaving keeps name's report as a departed member's from now (it said
// it leaves gracefully, load.go's Leaves): it fades out with leftShare, and
// a report from its next process keeps it fading (onLoad), whether or not
// this node sees the member leave before it is back.
func (r *Replicator) markLeaving(name string) {
	if sabotage.On(sabotage.LeftReportDropped) || name == r.localName() {
		return
	}
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	if p, ok := r.loads[name]; ok && p.left.IsZero() {
		p.left = time.Now()
		r.loads[name] = p
	}
}

// forgetLoad drops the report of a member that is no longer alive here,
// unless it left gracefully: then the report stays, counting less and less
// for one more window (leftShare); or unless it is still fresh: then it
// counts until it goes stale, as if the member had just gone quiet (see
// the file comment).
func (r *Replicator) forgetLoad(name string) {
	left := false
	if lt, ok := r.getPeers().(leftTeller); ok && !sabotage.On(sabotage.LeftReportDropped) {
		left = lt.Left(name)
	}
	now := time.Now()
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	delete(r.silent, name)
	delete(r.answered, name)
	p, ok := r.loads[name]
	switch {
	case ok && (left || !p.left.IsZero()):
		if p.left.IsZero() {
			p.left = now
			r.loads[name] = p
		}
	case ok && p.fresh(now, r.cfg.LoadInterval) && !sabotage.On(sabotage.FailedReportDropped) &&
		!sabotage.On(sabotage.LeftReportDropped):
		if p.failed.IsZero() {
			p.failed = now
			r.loads[name] = p
		}
	default:
		delete(r.loads, name)
	}
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
// cluster's, whose renewals go there; for SilentMemberBound at most (see
// disagree.go). "Doubt yourself before you evict others."
func (r *Replicator) evictionGraceFrom() time.Time {
	o := r.own.Load()
	now := time.Now()
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	bound := r.silentBound()
	for _, m := range o.members {
		if p, ok := r.loads[m]; ok && m != o.self && p.left.IsZero() && !p.fresh(now, r.cfg.LoadInterval) &&
			(now.Sub(p.at) <= bound || sabotage.On(sabotage.SilentMemberHoldsForever)) {
			return r.cfg.Clock.Now()
		}
	}
	if !sabotage.On(sabotage.NoGraceAfterMemberGap) {
		if _, held := r.disagreeHoldLocked(o, now); held {
			return r.cfg.Clock.Now()
		}
	}
	return r.resumed
}

// PeerRenewals implements actors.RenewalPeers: the sum of the fresh reports
// of the other members, each scaled to window: the alive ones, those
// declared dead while their report is fresh, and those that report while
// not alive in this node's view (a false death spreads, and its refutation
// comes a moment later); plus the fading reports of those that left.
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
		if !ok || !p.left.IsZero() || !p.failed.IsZero() || !p.fresh(now, r.cfg.LoadInterval) {
			continue
		}
		sum += float64(p.msg.Renewals) * float64(window.Milliseconds()) / float64(p.msg.WindowMillis)
		n++
	}
	for name, p := range r.loads {
		if !p.failed.IsZero() {
			// Declared dead, and counted while its report is fresh.
			if !p.fresh(now, r.cfg.LoadInterval) {
				delete(r.loads, name)
				continue
			}
			sum += float64(p.msg.Renewals) * float64(window.Milliseconds()) / float64(p.msg.WindowMillis)
			n++
			continue
		}
		if g := p.gone; g != nil {
			if share := g.leftShare(now, r.cfg.LoadInterval); share > 0 {
				sum += share * float64(g.msg.Renewals) * float64(window.Milliseconds()) / float64(g.msg.WindowMillis)
			} else {
				p.gone = nil
				r.loads[name] = p
			}
		}
		if p.left.IsZero() {
			if name != o.self && p.fresh(now, r.cfg.LoadInterval) && !slices.Contains(o.members, name) &&
				!sabotage.On(sabotage.StrangerReportIgnored) {
				// Reporting although not alive in this node's view (a
				// death it heard of and that is refuted, an asymmetric
				// link): its clients' renewals are real, so they count.
				sum += float64(p.msg.Renewals) * float64(window.Milliseconds()) / float64(p.msg.WindowMillis)
				n++
			}
			continue
		}
		share := p.leftShare(now, r.cfg.LoadInterval)
		if share <= 0 {
			delete(r.loads, name)
			continue
		}
		sum += share * float64(p.msg.Renewals) * float64(window.Milliseconds()) / float64(p.msg.WindowMillis)
	}
	return int64(sum + 0.5), n
}

// UnheardMembers implements actors.UnheardPeers: how many members alive in
// memberlist's view, this node aside, send it no fresh report now (cut off
// from it one way or both, or stalled), whether or not they are past the
// silent-member bound. A member that left is not unheard; one declared
// dead is not alive.
func (r *Replicator) UnheardMembers() int {
	peers := r.getPeers()
	if peers == nil {
		return 0
	}
	self := peers.LocalName()
	alive := peers.AliveMembers()
	now := time.Now()
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	n := 0
	for _, m := range alive {
		if m == self {
			continue
		}
		p, ok := r.loads[m]
		if ok && !p.left.IsZero() {
			continue
		}
		if !ok || !p.fresh(now, r.cfg.LoadInterval) {
			n++
		}
	}
	return n
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

// The reasons of EvictionHold.
const (
	// HoldSilentMember: an alive member's reports stopped reaching this
	// node; it may be forwarding renewals that do not arrive.
	HoldSilentMember = "silent-member"
	// HoldDeaf: this node hears no other member at all (every report is
	// stale): it is cut off, or it was stalled itself.
	HoldDeaf = "deaf"
	// HoldViewsDisagree: a node this node does not count as alive still
	// reports: the views disagree and another member may own what this
	// node thinks it owns. It lasts SilentMemberBound at most; then this
	// node evicts only what its view and every reported view say it owns
	// (disagree.go), except while a member of the previous release, which
	// sends no view, reports.
	HoldViewsDisagree = "views-disagree"
)

// EvictionHold is one reason this node evicts nothing now, as the cluster
// layer sees it (self-preservation and the per-lease grace are the
// registry's).
type EvictionHold struct {
	// Reason is one of the Hold constants.
	Reason string
	// Members are the members it is about.
	Members []string
	// Since is when it began: the last report of the member silent the
	// longest.
	Since time.Time
	// Until is when it ends at the latest (zero only while a member of the
	// previous release takes part in a views-disagree hold, and under the
	// views-disagree-holds-forever sabotage switch).
	Until time.Time
	// Detail says it in plain words.
	Detail string
}

// EvictionHolds returns the holds on this node's eviction now (nil if
// none). Each is bounded: a silent member's hold ends SilentMemberBound
// after its last report, when it counts as failed for ownership.
func (r *Replicator) EvictionHolds() []EvictionHold {
	o := r.own.Load()
	now := time.Now()
	bound := r.silentBound()
	forever := sabotage.On(sabotage.SilentMemberHoldsForever)
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	var silent []string
	var oldest time.Time
	others := 0
	for _, m := range o.members {
		if m == o.self {
			continue
		}
		others++
		p, ok := r.loads[m]
		if !ok || !p.left.IsZero() || p.fresh(now, r.cfg.LoadInterval) || (!forever && now.Sub(p.at) > bound) {
			continue
		}
		silent = append(silent, m)
		if oldest.IsZero() || p.at.Before(oldest) {
			oldest = p.at
		}
	}
	var out []EvictionHold
	if len(silent) > 0 {
		slices.Sort(silent)
		h := EvictionHold{Reason: HoldSilentMember, Members: silent, Since: oldest}
		if !forever {
			h.Until = oldest.Add(bound)
		}
		if len(silent) == others {
			h.Reason = HoldDeaf
			h.Detail = fmt.Sprintf("eviction held: no report from any other member for %v (this node may be cut off and missing the renewals they forward); "+
				"held at most until %v after the last one, then the silent members count as failed",
				now.Sub(oldest).Round(time.Millisecond), bound)
		} else {
			h.Detail = fmt.Sprintf("eviction held: no report from %s for %v (renewals it forwards may be lost on the way); "+
				"held at most until %v after its last report, then it counts as failed and its applications get a live owner",
				strings.Join(silent, ", "), now.Sub(oldest).Round(time.Millisecond), bound)
		}
		out = append(out, h)
	}
	if !sabotage.On(sabotage.NoGraceAfterMemberGap) {
		if h, held := r.disagreeHoldLocked(o, now); held {
			out = append(out, h)
		}
	}
	return out
}
