package actors

import (
	"fmt"
	"math"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/heureka/heureka/internal/sabotage"
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
	// window (Eureka's "renews last minute"; the window slides every
	// quarter): LocalRenewals plus PeerRenewals.
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
	// Protected is, while engaged, the fleet the engagement protects: the
	// clients expected when it began, less the silent leases of a release
	// not evicted yet, and no more than renewed in the last window before
	// it (0 when not engaged).
	Protected int
	// RecoveryThreshold is, while engaged, the renewals per window above
	// which the protected fleet counts as back (RenewalPercentThreshold of
	// what Protected sends): two closes above it release self-preservation
	// whatever the clients that registered and died while it was engaged.
	RecoveryThreshold int
}

// RenewalPeers is how the cluster layer gives self-preservation the renewals
// counted by the other members this node can reach. A nil RenewalPeers
// means a single node.
type RenewalPeers interface {
	// PeerRenewals returns the sum of the client renewals that every other
	// reachable member counted in its last complete window, each scaled to
	// a window of length window, and how many members contributed. It is
	// called once per window and must not block.
	PeerRenewals(window time.Duration) (renewals int64, members int)
}

// UnheardPeers is what a RenewalPeers may also tell: how many members alive
// in this node's view send it no renewal report now. While one does, the
// fault that engaged self-preservation is not over, whatever the count
// says (its clients' renewals are missing from it), and recovery waits.
type UnheardPeers interface {
	UnheardMembers() int
}

// selfPreservation is the plain core of the self-preservation actor:
// Eureka's expected-renewals arithmetic (spec §4.10), on cluster-wide
// figures, plus a release rule Eureka lacks.
//
// Why cluster-wide: every node holds the whole registry, so each can count
// every instance as expected; and every client renewal is counted exactly
// once, by the node the client sent it to, and the members report their
// counts to each other. Counting only the applications a node owns (as the
// first cluster did) makes each node a tiny registry in which one silent
// death crosses the 85% line.
//
// Why a release rule: Eureka recounts the expectation from the registry
// size, which still holds the instances self-preservation keeps, so after a
// real scale-down it never lets go (Eureka #1267). Here, once
// self-preservation has been engaged for releaseAfter (the recount
// interval, 15 minutes by default), the measured rate becomes the
// expectation: protection lasts at most one recount interval, the expected
// transient (a network fault) is over by then, and what is still silent is
// gone and may be evicted. The interval is the one knob for how long
// protection lasts: a mass failure longer than it (70% of the clients
// silent for three leases, say) is released at it and the silent are
// evicted, a stated price (package doc). Two exceptions: a collapsed rate
// (see collapsed) is never adopted, since no fleet shrinks by nine tenths
// at once; and the evictions of the leases a release gave up on come out
// of silent, not out of the expectation it measured.
//
// Why a second way out, recovery: while engaged nothing is evicted, so the
// clients that register during the fault and then die silently stay in the
// expectation, each new registration adds one, and under steady churn the
// live share never climbs back over the threshold after the fault ends:
// Eureka (and the first release rule alone) stayed engaged until the
// recount, evicting nothing for minutes after a heal. So an engagement
// remembers the fleet it protects (protected: the expectation when it
// began), and once two closes in a row count more renewals than percent of
// what that fleet sends, the fault is over: the renewals are back at the
// level of the fleet that fell silent, whoever sends them. Self-preservation then
// releases as the release rule does (the lowest of those closes becomes
// the expectation, the leases it no longer expects are evicted as they
// expire). A fault that still silences more than 15% of the protected
// fleet keeps it engaged; new clients that register and keep renewing
// during the fault count for the fleet (a replaced instance is as good as
// the one that went silent). Cancels during the fault do not lower the
// protected fleet: under churn the new clients replace the ones that
// cancel, and a fleet that shrinks by cancels lowers the expectation
// itself, which releases the usual way.
//
// Why hysteresis after a release: the cluster-wide count is noisy (every
// member's window closes out of step with the others', so a window's sum
// swings by a quarter with a few clients), and a release that takes one
// high reading as the expectation re-engages on the next, lower one (seen
// in the scale-down simulation: released on 20 renewals, engaged again on
// 15 half a second later). So the release takes the lowest count of the
// closes within the last window, the rate the live fleet reliably
// reaches; and for one recount interval after a release (while the
// expectation comes from a measurement, not from the registry)
// self-preservation engages again only once every close for a whole
// window has been at or below the threshold. A real new fault still
// engages it, one window later than otherwise. The same noise makes the
// count cross the threshold more than once as it falls after deaths (17,
// 18, 15 against 17): once engaged, self-preservation lets go only after
// two closes in a row above the threshold (a quarter window later than
// Eureka), so one high close neither flaps it nor restarts the release
// rule's clock. Otherwise the rule is Eureka's.
type selfPreservation struct {
	enabled          bool
	percent          float64
	expectedInterval time.Duration
	window           time.Duration
	releaseAfter     time.Duration
	expected         int
	renewsLastWindow int64
	local, peers     int64
	members          int
	engagedSince     time.Time
	released         time.Time // when the release rule last fired
	// recent holds the closes of the last window (oldest first): the
	// release takes the lowest count among them.
	recent []spClose
	// lowSince is the first close of the current run of closes at or
	// below the threshold (zero when the last close was above it).
	lowSince time.Time
	// holding is true when the count is at or below the threshold but
	// the hysteresis after a release keeps self-preservation off.
	holding bool
	// high counts the closes in a row above the threshold; sticking is
	// true when the count is above the threshold but self-preservation
	// was engaged and stays so until a second such close.
	high     int
	sticking bool
	// held is how many leases the registry held at the last close (the
	// actor sets it before each close); silent is how many of them the
	// last release gave up on (held − the new expectation). Their
	// evictions come out of silent, not out of the expectation, which
	// counts the live fleet only: otherwise evicting the silent after a
	// mass failure drove the expectation to 0 and stopped eviction.
	held, silent int
	// unheard is how many alive members sent no fresh report at the last
	// close (the actor sets it, see UnheardPeers): recovery waits for
	// them. Under churn the registrations on the members still heard can
	// lift the count over the protected fleet's threshold while the
	// clients of a member cut off one way (asymmetric-partition-long seed
	// 11: 4 of 22) renew where no renewal reaches this node; recovering
	// then let their owners evict them.
	unheard int
	// warming is set while a node of a cluster has not yet closed one
	// whole window since it started (warmUntil): its own count covers part
	// of a window and its peers' reports have not all come, so the sum says
	// nothing about the fleet. It judges nothing then: not engaged (the
	// leases it copied have a lease of grace from the eviction anyway).
	warming   bool
	warmUntil time.Time
	// protected is the fleet the current engagement protects (see
	// recovery in the type comment); recovering counts the closes in a
	// row above its threshold, recoveredLow and recoveredHigh are the
	// lowest and highest of them, and
	// recoveredFrom is the protected fleet of the last recovery release
	// (0 when the last release, if any, was the release rule's).
	protected     int
	recovering    int
	recoveredLow  int64
	recoveredHigh int64
	recoveredFrom int
	// firstClose is the first window close: recovery waits a window past
	// it.
	firstClose time.Time
}

// disengageCloses is how many closes in a row above the threshold release
// an engaged self-preservation.
const disengageCloses = 2

// spClose is one window close: when, and the cluster-wide count.
type spClose struct {
	at     time.Time
	renews int64
}

// perClient is how many renewals one client sends in a window.
func (s *selfPreservation) perClient() float64 {
	return s.window.Seconds() / s.expectedInterval.Seconds()
}

// clientsSending is how many clients send renewals in a window (rounded
// up).
func (s *selfPreservation) clientsSending(renewals int64) int {
	return int(math.Ceil(float64(renewals) / s.perClient()))
}

// threshold is int(expected × (window / expectedInterval) × percent),
// computed left to right in float64 and truncated, as Eureka does.
func (s *selfPreservation) threshold() int {
	return int(float64(s.expected) * (s.window.Seconds() / s.expectedInterval.Seconds()) * s.percent)
}

func (s *selfPreservation) expirationEnabled() bool {
	if !s.enabled || s.warming {
		return true
	}
	return (!s.low() || s.holding) && !s.sticking
}

// low reports whether the renewals are at or below the threshold (or none
// are expected): Eureka's condition for keeping expired leases.
func (s *selfPreservation) low() bool {
	t := s.threshold()
	return !(t > 0 && s.renewsLastWindow > int64(t))
}

// settling reports whether now is within one recount interval of a
// release, when re-engaging needs a whole window of low closes.
func (s *selfPreservation) settling(now time.Time) bool {
	return !s.released.IsZero() && s.releaseAfter > 0 && now.Sub(s.released) < s.releaseAfter
}

// protectedThreshold is the renewals per window above which the fleet the
// engagement protects counts as back: threshold() for protected clients.
func (s *selfPreservation) protectedThreshold() int {
	return int(float64(s.protected) * (s.window.Seconds() / s.expectedInterval.Seconds()) * s.percent)
}

// highestRecent is the highest count among the closes of the last window.
func (s *selfPreservation) highestRecent() int64 {
	high := s.renewsLastWindow
	for _, c := range s.recent {
		high = max(high, c.renews)
	}
	return high
}

// lowestRecent is the lowest count among the closes of the last window.
func (s *selfPreservation) lowestRecent() int64 {
	low := s.renewsLastWindow
	for _, c := range s.recent {
		low = min(low, c.renews)
	}
	return low
}

// engaged reports whether self-preservation holds leases now: it is on,
// renewals are expected and they are not above the threshold.
func (s *selfPreservation) engaged() bool {
	return s.enabled && s.expected > 0 && !s.expirationEnabled()
}

// onEvent adjusts the expected count: +1 for a new lease, −1 (not below 0)
// for a cancel or eviction. Unlike Eureka, a new lease counts even when the
// expected count is 0, so a registry that was emptied still protects (and
// expires) the instances that register again.
func (s *selfPreservation) onEvent(ev *Event) {
	switch {
	case ev.NewLease:
		s.onCounts(1, 0, 0)
	case ev.Action == ActionDeleted && ev.Cause == CauseEvict:
		s.onCounts(0, 1, 1)
	case ev.Action == ActionDeleted:
		s.onCounts(0, 1, 0)
	default:
		s.expectationChanged()
	}
}

// onCounts is onEvent for added new leases and removed deletions at once
// (spSink coalesces them), evicted of the removed ones by eviction: the
// additions first, then the removals, never below 0. Only evictions come
// out of silent (the leases a release gave up on are evicted, not
// cancelled); had cancels drained it too, a churning fleet's cancels
// would have used it up within a second of the release and the evictions
// of the silent leases then lowered the expectation below the live fleet,
// or, as it happened, silent ran out while they were still listed and the
// expectation counted them again.
func (s *selfPreservation) onCounts(added, removed, evicted int64) {
	s.onCountsSilent(added, 0, removed, evicted)
}

// onCountsSilent is onCounts with silentAdded new leases that are silent
// from the start (see measuredLease): they join silent, not the
// expectation.
func (s *selfPreservation) onCountsSilent(added, silentAdded, removed, evicted int64) {
	s.silent += int(silentAdded)
	s.expected += int(added)
	if sabotage.On(sabotage.SilentDrainedByCancels) {
		evicted = removed
	}
	if !sabotage.On(sabotage.ReleaseEvictionsLowerExpectation) {
		taken := min(int64(s.silent), evicted, removed)
		s.silent -= int(taken)
		removed -= taken
	}
	s.expected = max(0, s.expected-int(removed))
	s.expectationChanged()
}

// engage starts an engagement at now: it protects the clients expected
// now, less the leases a release gave up on that are not evicted yet
// (silent): they were no part of the fleet when the fault came. Counting
// them kept a small churning fleet engaged for good: each engagement
// soon after a release protected the dead of the last one too, so the
// live clients never renewed 85% of it (asymmetric-partition-long seed 6).
func (s *selfPreservation) engage(now time.Time) {
	s.engagedSince = now
	s.protected = max(0, s.expected-s.silent)
	if high := s.highestRecent(); high > int64(s.threshold()) && !sabotage.On(sabotage.ProtectedByExpectation) {
		// Within the last window the clients renewed above the threshold:
		// that close measured the fleet the fault silenced, and the
		// expectation may count more (the leases of clients that died
		// while it was engaged before, or under churn, and wait for
		// eviction: 15% and more of it after a partition under churn, so
		// that the live fleet never renewed 85% of it and only the
		// recount released).
		s.protected = min(s.protected, s.clientsSending(high))
	}
	s.recovering = 0
}

// expectationChanged ends the engagement when a new expectation (an event,
// a recount) lowered the threshold below the count between two closes, so
// that the next close does not take it for one that is still engaged.
func (s *selfPreservation) expectationChanged() {
	if !s.engagedSince.IsZero() && !s.engaged() {
		s.engagedSince = time.Time{}
		s.protected, s.recovering = 0, 0
	}
}

// closeWindow records the renewals of the window that just ended: local
// ones and the peers' sum over members members (this node excluded). It
// applies the release rule at now.
func (s *selfPreservation) closeWindow(now time.Time, local, peers int64, members int) {
	if s.firstClose.IsZero() {
		s.firstClose = now
	}
	s.local, s.peers, s.members = local, peers, members+1
	s.renewsLastWindow = local + peers
	s.warming = s.warming && now.Before(s.warmUntil) && !sabotage.On(sabotage.SPNoWarmUp)
	s.remember(now)
	s.hold(now, !s.engagedSince.IsZero())
	if !s.engaged() {
		s.engagedSince = time.Time{}
		s.protected, s.recovering = 0, 0
		return
	}
	if s.engagedSince.IsZero() {
		s.engage(now)
		return
	}
	if s.recovered(now) {
		// The protected fleet's renewals are back: the fault is over.
		// Expect as many clients as renew now.
		s.recoveredFrom = s.protected
		s.adopt(now, s.recoveredLow, s.recoveredHigh)
		return
	}
	if s.releaseAfter > 0 && now.Sub(s.engagedSince) >= s.releaseAfter {
		// The low rate has lasted a whole recount interval: it is the new
		// normal. Expect as many clients as renew now.
		measured := s.renewsLastWindow
		if !sabotage.On(sabotage.ReleaseWithoutHysteresis) {
			measured = s.lowestRecent()
		}
		if s.collapsed(measured) && !sabotage.On(sabotage.ReleaseOnCollapse) {
			// A total collapse is a network fault, never a scale-down:
			// keep protecting until renewals come back (see collapsed).
			return
		}
		s.recoveredFrom = 0
		s.adopt(now, measured, s.highestRecent())
	}
}

// recovered counts the closes in a row, while engaged, above the protected
// fleet's threshold, and reports whether there have been disengageCloses
// of them (see recovery in the type comment). An engagement that protects
// too few clients for a threshold of 1 has no recovery.
func (s *selfPreservation) recovered(now time.Time) bool {
	t := s.protectedThreshold()
	if t <= 0 || s.renewsLastWindow <= int64(t) || sabotage.On(sabotage.SPNoRecovery) ||
		now.Sub(s.firstClose) < s.window || (s.unheard > 0 && !sabotage.On(sabotage.RecoveryWhileMembersUnheard)) {
		// Within the first window since counting began the count covers
		// part of a window: a rate still climbing is no fleet to adopt.
		s.recovering = 0
		return false
	}
	if s.recovering == 0 || s.renewsLastWindow < s.recoveredLow {
		s.recoveredLow = s.renewsLastWindow
	}
	if s.recovering == 0 || s.renewsLastWindow > s.recoveredHigh {
		s.recoveredHigh = s.renewsLastWindow
	}
	s.recovering++
	return s.recovering >= disengageCloses
}

// adopt releases self-preservation at now with low renewals per window as
// the new normal: it expects as many clients as send them, and the leases
// it held beyond what high renewals come from are silent (their evictions
// come out of silent, not out of the expectation). The expectation takes
// the lowest of the recent closes, so that the next noisy close does not
// engage again; silent takes the highest, for a silent count too high
// outlives the leases it stands for (live clients the noise hid are never
// evicted) and the later deaths would drain it instead of the
// expectation, which then grew with every registration until it engaged
// again (asymmetric-partition-long seed 6: 24 clients renewing against 34
// expected, engaged until the teardown). Too low a count costs at most the
// noise off the expectation.
func (s *selfPreservation) adopt(now time.Time, low, high int64) {
	s.expected = s.clientsSending(low)
	s.silent = max(0, s.held-max(s.expected, s.clientsSending(high)))
	s.engagedSince = time.Time{}
	s.protected, s.recovering = 0, 0
	s.released = now
	s.lowSince = time.Time{}
	s.hold(now, false)
	if s.engaged() {
		s.engage(now)
	}
}

// collapseShare is the share of the expected clients below which a
// measured renewal rate is a collapse: fewer than one expected client in
// ten renewing. No fleet scales down by nine tenths at once; what makes
// the renewals vanish is a fault between the clients and the registry.
const collapseShare = 0.1

// collapsed reports whether a window of renewals measured is a collapse:
// fewer renewals than collapseShare of the expected clients send in a
// window (zero included). The release rule never adopts such a rate: with
// an expectation of 0 (or a handful) the threshold would keep expiration
// off whatever the renewals that come back, or let every kept lease go
// at once, while the fault is still on.
func (s *selfPreservation) collapsed(measured int64) bool {
	return float64(measured) < math.Max(1, collapseShare*float64(s.expected))*s.perClient()
}

// recountIfNone adopts count (the registry's instances) as the
// expectation at once when nothing is expected but leases exist: an
// expectation of 0 makes the threshold 0, which keeps expiration off
// whatever the renewals (Eureka's rule) and reads "nothing to protect"
// while there is. It does nothing while self-preservation is off.
func (s *selfPreservation) recountIfNone(count int) {
	if !s.enabled || s.expected > 0 || count <= 0 || sabotage.On(sabotage.ReleaseOnCollapse) {
		return
	}
	s.expected = count
	s.expectationChanged()
}

// remember adds the close at now to recent and forgets the closes older
// than one window.
func (s *selfPreservation) remember(now time.Time) {
	s.recent = append(s.recent, spClose{at: now, renews: s.renewsLastWindow})
	drop := 0
	for drop < len(s.recent) && !s.recent[drop].at.After(now.Add(-s.window)) {
		drop++
	}
	s.recent = append(s.recent[:0], s.recent[drop:]...)
}

// hold updates the runs of low and high closes and the hysteresis (see
// selfPreservation): while settling after a release, a low count holds
// self-preservation off until the closes have been low for a whole
// window; and if it was engaged (wasEngaged) a single high close keeps it
// engaged.
func (s *selfPreservation) hold(now time.Time, wasEngaged bool) {
	s.holding, s.sticking = false, false
	if !s.enabled || s.expected == 0 || !s.low() {
		s.lowSince = time.Time{}
		s.high++
		if wasEngaged && s.enabled && s.expected > 0 && s.high < disengageCloses &&
			!sabotage.On(sabotage.ReleaseWithoutHysteresis) {
			s.sticking = true
		}
		return
	}
	s.high = 0
	if s.lowSince.IsZero() {
		s.lowSince = now
	}
	if s.settling(now) && now.Sub(s.lowSince) < s.window && !sabotage.On(sabotage.ReleaseWithoutHysteresis) {
		s.holding = true
	}
}

// recount adopts count as the expected number of renewers if it is above
// percent × expected or self-preservation is off (Eureka's 15-minute update:
// it only lets the expectation fall gradually).
//
// Within one recount interval after the release rule fired it adopts
// nothing: the registry still holds the silent instances that the release
// is about to let the owners evict (15% per run), so counting it would
// restore the expectation the release just gave up and engage again
// (BUG-5 of the simulations). The evictions lower the expectation one by
// one meanwhile, and the next recount finds the live fleet.
func (s *selfPreservation) recount(count int, now time.Time) {
	if s.enabled && !s.released.IsZero() && now.Sub(s.released) < s.releaseAfter {
		return
	}
	if !s.enabled || float64(count) > s.percent*float64(s.expected) {
		s.expected = count
		s.silent = 0
	}
	s.expectationChanged()
}

// reason says in plain words what self-preservation decided and why.
func (s *selfPreservation) reason() string {
	t := s.threshold()
	switch {
	case !s.enabled:
		return "self-preservation is off: expired leases are evicted"
	case s.expected == 0:
		return "no renewals expected: nothing to protect"
	case s.warming:
		return fmt.Sprintf("not engaged: warming up, the first %v since this node started is not over (%d renewals counted "+
			"across %d member(s) so far); expired leases are evicted, the copied ones after a lease of grace",
			s.window, s.renewsLastWindow, max(1, s.members))
	case s.sticking:
		return fmt.Sprintf("engaged: %d renewals in the last %v across %d member(s), above the threshold of %d "+
			"(%.0f%% of %d expected clients) for one close only; expired leases are kept until a second close above it",
			s.renewsLastWindow, s.window, max(1, s.members), t, s.percent*100, s.expected)
	case s.engaged() && s.collapsed(s.renewsLastWindow):
		return fmt.Sprintf("engaged: %d renewals in the last %v across %d member(s), fewer than %.0f%% of the %d expected "+
			"clients send: a collapse is a network fault, so expired leases are kept until renewals come back "+
			"(the release after %v engaged does not adopt a collapsed rate)",
			s.renewsLastWindow, s.window, max(1, s.members), collapseShare*100, s.expected, s.releaseAfter)
	case s.engaged() && t == 0:
		return fmt.Sprintf("engaged: the threshold is 0 (%.0f%% of %d expected clients, each sending one renewal every %v, "+
			"over a window of %v rounds down to 0), so no count of renewals lets expired leases go, as in Eureka; "+
			"%d renewals in the last %v across %d member(s). The window is too short for the expected renewal interval "+
			"(--renewal-window, --expected-client-renewal-interval)",
			s.percent*100, s.expected, s.expectedInterval, s.window, s.renewsLastWindow, s.window, max(1, s.members))
	case s.engaged() && s.protected == 0:
		return fmt.Sprintf("engaged: %d renewals in the last %v across %d member(s), at or below the threshold of %d "+
			"(%.0f%% of %d expected clients); expired leases are kept in case the fault is on the network",
			s.renewsLastWindow, s.window, max(1, s.members), t, s.percent*100, s.expected)
	case s.engaged():
		return fmt.Sprintf("engaged: %d renewals in the last %v across %d member(s), at or below the threshold of %d "+
			"(%.0f%% of %d expected clients); expired leases are kept in case the fault is on the network, until "+
			"renewals pass %d (%.0f%% of what the %d clients it protects send) with every member heard, or for %v at most",
			s.renewsLastWindow, s.window, max(1, s.members), t, s.percent*100, s.expected,
			s.protectedThreshold(), s.percent*100, s.protected, s.releaseAfter) + s.unheardNote()
	case s.holding:
		return fmt.Sprintf("holding: %d renewals in the last %v across %d member(s), at or below the threshold of %d "+
			"(%.0f%% of %d expected clients) since %v ago, but self-preservation released %v ago: it engages again only "+
			"after a whole window this low; expired leases are evicted",
			s.renewsLastWindow, s.window, max(1, s.members), t, s.percent*100, s.expected,
			s.recentSpan(), s.sinceRelease())
	case !s.released.IsZero() && s.recoveredFrom > 0 && s.renewsLastWindow <= int64(t)+int64(s.expected):
		return fmt.Sprintf("released: renewals came back above %.0f%% of what the %d clients it protected send, so the fault "+
			"is over and the %d clients that renew are now expected; expired leases are evicted",
			s.percent*100, s.recoveredFrom, s.expected)
	case !s.released.IsZero() && s.renewsLastWindow <= int64(t)+int64(s.expected):
		return fmt.Sprintf("released: renewals stayed low for %v, so %d renewing clients are now expected; expired leases are evicted",
			s.releaseAfter, s.expected)
	}
	return fmt.Sprintf("not engaged: %d renewals in the last %v across %d member(s), above the threshold of %d; expired leases are evicted",
		s.renewsLastWindow, s.window, max(1, s.members), t)
}

// unheardNote says, while alive members are unheard, that recovery waits
// for their reports ("" otherwise).
func (s *selfPreservation) unheardNote() string {
	if s.unheard == 0 {
		return ""
	}
	return fmt.Sprintf("; %d alive member(s) unheard: recovery waits for their reports", s.unheard)
}

// recentSpan is how long the closes have been low, as of the last close.
func (s *selfPreservation) recentSpan() time.Duration {
	if s.lowSince.IsZero() || len(s.recent) == 0 {
		return 0
	}
	return s.recent[len(s.recent)-1].at.Sub(s.lowSince)
}

// sinceRelease is the time from the last release to the last close.
func (s *selfPreservation) sinceRelease() time.Duration {
	if s.released.IsZero() || len(s.recent) == 0 {
		return 0
	}
	return s.recent[len(s.recent)-1].at.Sub(s.released)
}

func (s *selfPreservation) status() *SelfPreservationStatus {
	st := &SelfPreservationStatus{
		Enabled:           s.enabled,
		Expected:          s.expected,
		Threshold:         s.threshold(),
		RenewsLastWindow:  s.renewsLastWindow,
		LocalRenewals:     s.local,
		PeerRenewals:      s.peers,
		Members:           max(1, s.members),
		ExpirationEnabled: s.expirationEnabled(),
		Engaged:           s.engaged(),
		EngagedSince:      s.engagedSince,
		Reason:            s.reason(),
		Window:            s.window,
	}
	if st.Engaged {
		st.Protected, st.RecoveryThreshold = s.protected, s.protectedThreshold()
	}
	return st
}

// Messages of the self-preservation actor.
type (
	spWindowTick  struct{}
	spRecountTick struct{ force bool }
	// spEvents says that spSink counted events (Registry.spAdded,
	// spRemoved) since the actor last took them.
	spEvents     struct{}
	spSetEnabled struct{ enabled bool }
)

// selfPreservationActor owns the selfPreservation state: it counts new and
// removed leases from events, closes a renewal window on every window tick
// (adding the peers' counts) and recounts the registry on every recount
// tick. It publishes its state through the registry so that the evictor and
// the HTTP layer read it without a round trip.
type selfPreservationActor struct {
	r      *Registry
	sp     selfPreservation
	timers []*ticker
	// quarters holds the local renewals of the last four quarter windows:
	// the window slides every quarter, so a collapse of renewals shows
	// within a quarter window (plus the peers' report interval), not a
	// whole window later. With Eureka's 90 s leases and one-minute window
	// a whole window is soon enough; with leases not much longer than the
	// window (tests, simulations, aggressive settings) it is not.
	quarters [windowQuarters]int64
	quarter  int
}

// windowQuarters is how many steps the renewal window slides by.
const windowQuarters = 4

func (a *selfPreservationActor) Receive(ctx actor.Context) {
	switch m := ctx.Message().(type) {
	case *actor.Started:
		if a.sp.warming {
			a.sp.warmUntil = a.r.cfg.Clock.Now().Add(a.r.cfg.RenewalWindow)
		}
		a.timers = append(a.timers,
			startTicker(ctx, max(a.r.cfg.RenewalWindow/windowQuarters, time.Millisecond), &spWindowTick{}),
			startTicker(ctx, a.r.cfg.RenewalThresholdUpdateInterval, &spRecountTick{}))
		a.publish()
	case *actor.Stopping:
		for _, t := range a.timers {
			t.stop()
		}
	case *spEvents:
		// Clear the flag before taking the counts: an event counted after
		// this sends a new message, and one counted before it is taken now
		// (a redundant message then finds nothing).
		a.r.spNotified.Store(false)
		added, removed, evicted := a.r.takeSPCounts()
		silentAdded := a.r.spSilentAdded.Swap(0)
		if added != 0 || removed != 0 || silentAdded != 0 {
			a.sp.onCountsSilent(added, silentAdded, removed, evicted)
			a.publish()
		}
	case *spSetEnabled:
		a.sp.enabled = m.enabled
		a.sp.engagedSince = time.Time{}
		if m.enabled {
			a.sp.recount(a.r.expectedCount(), a.r.cfg.Clock.Now())
		}
		a.publish()
		ctx.Respond(a.r.sp.Load())
	case *spWindowTick:
		a.quarters[a.quarter] = a.r.renewals.Swap(0)
		a.quarter = (a.quarter + 1) % windowQuarters
		var local int64
		for _, q := range a.quarters {
			local += q
		}
		var peers int64
		members := 0
		if a.r.cfg.Peers != nil && !sabotage.On(sabotage.SelfPreservationPerOwner) {
			peers, members = a.r.cfg.Peers.PeerRenewals(a.r.cfg.RenewalWindow)
		}
		a.sp.held = a.r.expectedCount()
		a.sp.unheard = 0
		if u, ok := a.r.cfg.Peers.(UnheardPeers); ok && !sabotage.On(sabotage.SelfPreservationPerOwner) {
			a.sp.unheard = u.UnheardMembers()
		}
		a.sp.closeWindow(a.r.cfg.Clock.Now(), local, peers, members)
		a.sp.recountIfNone(a.sp.held)
		if rel := a.sp.released; a.sp.recoveredFrom > 0 && rel.UnixMilli() != a.r.spMeasuredBefore.Load() {
			a.r.spMeasuredBefore.Store(rel.UnixMilli())
			a.r.spMeasuredUntil.Store(rel.Add(a.sp.releaseAfter).UnixMilli())
		}
		a.publish()
	case *spRecountTick:
		if m.force {
			a.sp.expected = a.r.expectedCount()
		} else {
			a.sp.recount(a.r.expectedCount(), a.r.cfg.Clock.Now())
		}
		a.publish()
	}
}

// publish makes the state readable, and logs a change of decision once:
// engaging at warn (expired leases are being kept), releasing and the
// operator's switch at info. The state a node starts in is not a change (a
// fresh node expects renewals before any client has had time to send one).
func (a *selfPreservationActor) publish() {
	st := a.sp.status()
	prev := a.r.sp.Swap(st)
	switch {
	case prev == nil:
	case prev.Enabled != st.Enabled:
		msg := "self-preservation switched off"
		if st.Enabled {
			msg = "self-preservation switched on"
		}
		a.r.log.Info(msg, "reason", st.Reason)
	case !prev.Engaged && st.Engaged:
		a.r.log.Warn("self-preservation engaged: expired leases are kept", "reason", st.Reason)
	case prev.Engaged && !st.Engaged:
		a.r.log.Info("self-preservation released: expired leases are evicted again", "reason", st.Reason)
		// The leases kept while engaged are evicted at once, not up to an
		// eviction interval later (the run keeps Eureka's 15% cap).
		if pid := a.r.evNow.Load(); pid != nil && st.ExpirationEnabled && !sabotage.On(sabotage.ReleaseOnCollapse) {
			a.r.root.Send(pid, &evictTick{})
		}
	}
}

// spSink counts new and removed leases for the self-preservation actor
// without blocking. It does not send one message per event (a message and
// a status rebuilt for every fresh registration): it adds to the
// registry's counters and sends the singleton spEvents only when no
// earlier one is waiting, so the actor takes the events of a burst at
// once.
type spSink struct{ r *Registry }

// takeSPCounts takes the new leases, the deletions and, of those, the
// evictions spSink counted. The deletions are taken first: a lease's
// deletion is counted after its addition, so every deletion taken has its
// addition taken by now, and the expectation never dips below the truth
// (where onCounts' floor at 0 would lose a deletion and leave Expected one
// too high for good). The evictions are taken before the deletions, for
// the same reason (spSink counts an eviction's deletion first).
func (r *Registry) takeSPCounts() (added, removed, evicted int64) {
	if sabotage.On(sabotage.SPCountsAddedFirst) {
		added = r.spAdded.Swap(0)
		return added, r.spRemoved.Swap(0), r.spEvicted.Swap(0)
	}
	evicted = r.spEvicted.Swap(0)
	removed = r.spRemoved.Swap(0)
	added = r.spAdded.Swap(0)
	return added, removed, evicted
}

// measuredLease reports whether ev, a new lease, is a copy that the last
// recovery release measured already: copied from a peer within a recount
// interval of that release, of an instance registered before it. A
// recovery adopts the renewals of the whole cluster once every member's
// reports are back, and a heal's transfers may still be arriving then:
// counting their leases again put the live clients of the other side
// twice, and the dead ones, in the expectation, which then engaged again
// after the heal (partition-churn seed 6: 54 expected, 43 clients
// renewing). Such a copy is expected already if its client renews, and
// silent if its copy had run out (LeaseExpired).
func (r *Registry) measuredLease(ev *Event) bool {
	if !ev.Replicated || sabotage.On(sabotage.MeasuredLeasesCountedTwice) {
		return false
	}
	before, until := r.spMeasuredBefore.Load(), r.spMeasuredUntil.Load()
	if before == 0 {
		return false
	}
	reg := ev.Instance.LeaseInfo.RegistrationTimestamp
	return reg > 0 && reg <= before && r.cfg.Clock.Now().UnixMilli() < until
}

// spEventsMsg is the one spEvents message spSink sends.
var spEventsMsg = &spEvents{}

func (s spSink) Apply(ev *Event) {
	if !(ev.NewLease || ev.Action == ActionDeleted) || ev.Cause == CauseRefuseStale || ev.Cause == CauseRefuseLate {
		return
	}
	if sabotage.On(sabotage.SelfPreservationPerOwner) && !s.r.owns(ev.Instance.App) {
		return
	}
	switch {
	case ev.NewLease && s.r.measuredLease(ev):
		if ev.LeaseExpired {
			s.r.spSilentAdded.Add(1)
		}
	case ev.NewLease:
		s.r.spAdded.Add(1)
	default:
		s.r.spRemoved.Add(1)
		if ev.Cause == CauseEvict {
			s.r.spEvicted.Add(1)
		}
	}
	if s.r.spNotified.CompareAndSwap(false, true) {
		s.r.root.Send(s.r.spPID, spEventsMsg)
	}
}
