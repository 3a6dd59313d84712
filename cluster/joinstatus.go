package cluster

// Join status: why a node is not (yet) in a cluster.
//
// A join attempt ends one of three ways: a seed answered and took this
// node in (joined), no seed answered at all (unreachable: a cold start, or
// the seeds are down), or a seed answered and refused (refused: another
// wire protocol, another gossip key, another memberlist label). The last
// one is a misconfiguration that waiting does not cure, so the replicator
// never becomes ready by its ready timeout while it lasts
// (Replicator.readyLoop): a node that cannot join must not serve its own
// empty registry as if it were the cluster's. joinLoop logs every refused
// attempt once, at ERROR, with the cause; JoinStatus says it for the
// status endpoints and the metrics.

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/heureka/heureka/internal/sabotage"
)

// JoinState says where this node's joining stands.
type JoinState string

// The join states.
const (
	// JoinJoining: the first attempt is under way.
	JoinJoining JoinState = "joining"
	// JoinJoined: a seed took this node in.
	JoinJoined JoinState = "joined"
	// JoinAlone: nothing to join (no seeds, or every seed is this node):
	// alone by design until another node joins it.
	JoinAlone JoinState = "alone"
	// JoinUnreachable: the last attempt reached no seed.
	JoinUnreachable JoinState = "unreachable"
	// JoinRefused: the last attempt reached a seed that refused this node,
	// or that this node refused (see RefusalCause).
	JoinRefused JoinState = "refused"
)

// RefusalCause classifies a refused join.
type RefusalCause string

// The refusal causes; each is a value of the heureka_join_refused metric's
// reason label.
const (
	// RefusedProtocol: the two nodes speak wire protocols neither reads.
	RefusedProtocol RefusalCause = "protocol"
	// RefusedKey: the gossip keys differ (or one side has none).
	RefusedKey RefusalCause = "key"
	// RefusedLabel: the seed took the connection and closed it without a
	// word, which memberlist does to a stream with another label.
	RefusedLabel RefusalCause = "label"
	// RefusedOther: the seed answered with an error of another kind.
	RefusedOther RefusalCause = "other"
)

// RefusalCauses lists every cause, for metrics that export one series each.
var RefusalCauses = []RefusalCause{RefusedProtocol, RefusedKey, RefusedLabel, RefusedOther}

// joinUser is a Delegate that wants the membership's JoinStatus (the
// Replicator: its readiness depends on it); Membership.Start hands it over.
type joinUser interface{ useJoinStatus(func() JoinStatus) }

// JoinStatus is where this node's joining stands, as JoinStatus reports it.
type JoinStatus struct {
	State JoinState
	// Cause is set when State is JoinRefused.
	Cause RefusalCause
	// Reason says it in plain words (the seeds, the error, the versions).
	Reason string
	// Attempts counts the join attempts made.
	Attempts int
	// Since is when State (and Cause) began.
	Since time.Time
	// SecondCluster, when set, says that this node, serving alone, met
	// another cluster of the same name and merged with it, at
	// SecondClusterAt.
	SecondCluster   string
	SecondClusterAt time.Time
}

// joinTracker holds a Membership's JoinStatus.
type joinTracker struct {
	mu sync.Mutex
	st JoinStatus
	// refusal is the last refusal noted by the merge or alive hooks
	// (noteRefused), with when; joinLoop reads the ones noted during an
	// attempt.
	refusal   error
	refusalAt time.Time
	// second is the last "second cluster" merge, with when.
	second   string
	secondAt time.Time
}

func (j *joinTracker) noteSecondCluster(msg string) {
	j.mu.Lock()
	j.second, j.secondAt = msg, time.Now()
	j.mu.Unlock()
}

func (j *joinTracker) get() JoinStatus {
	j.mu.Lock()
	defer j.mu.Unlock()
	st := j.st
	st.SecondCluster, st.SecondClusterAt = j.second, j.secondAt
	if st.State == "" {
		st.State = JoinJoining
	}
	return st
}

// set records a new status; Since moves only when the state or cause changes.
func (j *joinTracker) set(st JoinStatus) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if st.State != j.st.State || st.Cause != j.st.Cause || j.st.Since.IsZero() {
		st.Since = time.Now()
	} else {
		st.Since = j.st.Since
	}
	j.st = st
}

func (j *joinTracker) noteRefusal(err error) {
	j.mu.Lock()
	j.refusal, j.refusalAt = err, time.Now()
	j.mu.Unlock()
}

// refusalSince returns the refusal noted at or after t, if any.
func (j *joinTracker) refusalSince(t time.Time) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.refusal != nil && !j.refusalAt.Before(t) {
		return j.refusal
	}
	return nil
}

// JoinStatus reports where this node's joining stands: joined, alone by
// design, still trying with no seed reachable, or refused and why.
func (m *Membership) JoinStatus() JoinStatus { return m.join.get() }

// classifyJoinFailure tells a refused attempt from an unreachable one.
// refusal is what this node's own hooks refused during the attempt (a
// seed's state listing a member on another protocol); err is memberlist's
// join error, whose text is all memberlist gives (it formats the causes
// with %v).
func classifyJoinFailure(refusal, err error) (RefusalCause, string, bool) {
	if refusal != nil && errors.Is(refusal, ErrProtocolMismatch) {
		return RefusedProtocol, "protocol mismatch: " + refusal.Error(), true
	}
	text := strings.ToLower(ErrorText(err))
	switch {
	case strings.Contains(text, "peer speaks another wire protocol"):
		return RefusedProtocol, "protocol mismatch: " + ErrorText(err), true
	case strings.Contains(text, "no installed keys could decrypt"),
		strings.Contains(text, "encryption is not configured"),
		strings.Contains(text, "remote state is not encrypted"),
		strings.Contains(text, "decrypt"):
		return RefusedKey, "gossip key mismatch: the seed and this node use different --gossip-key values " +
			"(or only one of them has a key): " + ErrorText(err), true
	case strings.Contains(text, "label"):
		return RefusedLabel, "label mismatch: " + ErrorText(err), true
	case strings.Contains(text, "eof") || strings.Contains(text, "connection reset"):
		// memberlist closes a stream with another label without a word.
		return RefusedLabel, "the seed accepted the connection and closed it without answering " +
			"(another memberlist label, or the seed was stopping): " + ErrorText(err), true
	case strings.Contains(text, "remote error"):
		return RefusedOther, "the seed refused this node: " + ErrorText(err), true
	}
	return "", "", false
}

// noteJoinAttempt records the outcome of one failed join attempt and
// returns the status it set.
func (m *Membership) noteJoinAttempt(attempt int, started time.Time, seeds []string, err error) JoinStatus {
	st := JoinStatus{State: JoinUnreachable, Attempts: attempt}
	if cause, why, refused := classifyJoinFailure(m.join.refusalSince(started), err); refused {
		st.State, st.Cause = JoinRefused, cause
		st.Reason = fmt.Sprintf("seeds %s answered but this node cannot join them: %s", strings.Join(seeds, ", "), why)
	} else if len(seeds) == 0 {
		st.Reason = "no seed reachable: none resolved: " + ErrorText(err)
	} else {
		st.Reason = fmt.Sprintf("no seed reachable (%s): %s", strings.Join(seeds, ", "), ErrorText(err))
	}
	m.join.set(st)
	return m.join.get()
}

// Re-dialling members that left.
const (
	// leftRedialInterval is how often redialLeft dials the members that
	// left recently.
	leftRedialInterval = time.Second
	// leftRedialFor is how long after a member left redialLeft dials it
	// every leftRedialInterval; after that the reconnect rounds (every
	// ReconnectInterval) dial it until it is forgotten.
	leftRedialFor = 5 * time.Minute
)

// redialLeft dials, in the background, the members that left within
// leftRedialFor, at most reconnectPerRound of them, unless the last such
// dial is still running. A member that left and restarted at the same
// address without a seed of its own (the README's first node, or every
// node of a layout where all join one) serves alone until someone dials
// it; this is that someone. A dial to a member still gone fails fast on a
// closed port, and within memberlist's TCPTimeout otherwise.
func (m *Membership) redialLeft() {
	if sabotage.On(sabotage.NoRedialLeft) {
		return
	}
	now := time.Now()
	m.mu.Lock()
	if m.left || m.redialing {
		m.mu.Unlock()
		return
	}
	var targets []string
	for name, mem := range m.members {
		if name != m.cfg.NodeName && mem.State == StateLeft && now.Sub(mem.Since) < leftRedialFor && len(targets) < reconnectPerRound {
			targets = append(targets, mem.Address)
		}
	}
	if len(targets) == 0 {
		m.mu.Unlock()
		return
	}
	m.redialing = true
	m.mu.Unlock()
	select {
	case <-m.joined:
	default: // joinLoop is still at it
		m.mu.Lock()
		m.redialing = false
		m.mu.Unlock()
		return
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer func() {
			m.mu.Lock()
			m.redialing = false
			m.mu.Unlock()
		}()
		n, err := m.ml.Join(targets)
		if n > 0 {
			m.log.Info("cluster: re-found a member that had left (it restarted)", "targets", targets, "answered", n)
		} else {
			m.log.Debug("cluster: members that left still gone", "targets", targets, "err", ErrorText(err))
		}
	}()
}

// noteMerge warns when a push/pull merge brings this node, which had no
// live peer, a cluster of several members it did not know: it served as a
// cluster of its own (started without --join, or its seeds were down when
// it started) and is merging now. Its registry merges by anti-entropy.
func (m *Membership) noteMerge(peers []*memberlist.Node) {
	m.mu.Lock()
	alone := true
	for name, mem := range m.members {
		if name != m.cfg.NodeName && mem.State.Live() {
			alone = false
			break
		}
	}
	var unknown []string
	for _, n := range peers {
		if n.Name == m.cfg.NodeName || (n.State != memberlist.StateAlive && n.State != memberlist.StateSuspect) {
			continue
		}
		unknown = append(unknown, n.Name)
	}
	m.mu.Unlock()
	select {
	case <-m.joined:
	default:
		return // a join of joinLoop's: expected
	}
	if !alone || len(unknown) < 2 {
		return
	}
	slices.Sort(unknown)
	msg := fmt.Sprintf("this node served as a cluster of its own and met another cluster of %d members (%s); merging the two",
		len(unknown), strings.Join(unknown, ", "))
	m.join.noteSecondCluster(msg)
	// memberlist calls this with its locks held; logging does not call
	// back into memberlist.
	m.log.Warn("cluster: second cluster found: "+msg, "members", unknown)
}

// Restarts seen in probe acks.
//
// A member killed and restarted quickly under the same name and address,
// with no seed of its own (the README's first node), answers the others'
// probes at once: memberlist acks a ping addressed to its name, so the
// others keep it alive and never tell it about themselves, while it knows
// nobody (its push/pull with them waits for memberlist's push/pull
// interval, 30 s on a LAN, and its registry for that). So every process
// puts a random boot id in its probe acks (memberlist's AckPayload), and a
// member whose boot id changed is dialled at once (a join: a push/pull
// both ways), which tells the fresh process every member and starts its
// sync. Older releases send no payload and are never dialled for it.

// bootPayloadMagic starts a boot id ack payload.
const bootPayloadMagic = 'B'

// bootID is a process's random boot id.
type bootID [8]byte

func newBootID() bootID {
	var b bootID
	binary.LittleEndian.PutUint64(b[:], rand.Uint64()|1)
	return b
}

// payload is the ack payload carrying the boot id.
func (b bootID) payload() []byte { return append([]byte{bootPayloadMagic}, b[:]...) }

// parseBootPayload returns the boot id of an ack payload, if it has one.
func parseBootPayload(p []byte) (bootID, bool) {
	var b bootID
	if len(p) != 1+len(b) || p[0] != bootPayloadMagic {
		return b, false
	}
	copy(b[:], p[1:])
	return b, true
}

// bootTracker holds the boot ids seen in the members' acks.
type bootTracker struct {
	mu  sync.Mutex
	ids map[string]bootID
}

// note records name's boot id and reports whether it replaced another one
// (changed) or is the first this node has seen of name (first).
func (t *bootTracker) note(name string, id bootID) (changed, first bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ids == nil {
		t.ids = map[string]bootID{}
	}
	old, seen := t.ids[name]
	t.ids[name] = id
	return seen && old != id, !seen
}

// seen returns how many members' boot ids this node has seen.
func (t *bootTracker) seen() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.ids)
}

// BootsSeen returns how many other members have answered one of this
// node's probes with their boot id: each such first answer costs a
// push/pull with the member (noteBoot), once per member and process, so a
// booting cluster dials N−1 streams per node over its first probe round
// and then none for this.
func (m *Membership) BootsSeen() int { return m.boots.seen() }

// noteBoot reads a member's boot id from a probe ack and, when it changed
// (the member restarted), dials the member in the background. The first
// boot id seen of a member is dialled too, once: a member that lived less
// than a probe round before it was killed and restarted at the same
// address (a seed restarted twice in a row, kill -9 and back within a
// second) shows its new process's id first, and that process, started
// without --join, knows no one. It runs in memberlist's probe goroutine,
// which holds no memberlist lock there.
func (m *Membership) noteBoot(n *memberlist.Node, payload []byte) {
	id, ok := parseBootPayload(payload)
	if !ok || n.Name == m.cfg.NodeName || sabotage.On(sabotage.NoRedialLeft) {
		return
	}
	changed, first := m.boots.note(n.Name, id)
	if !changed && !first {
		return
	}
	addr := net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
	if m.cfg.Transport != nil {
		addr = n.Address() // a memnet.Network address is the name
	}
	select {
	case <-m.stop:
		return
	default:
	}
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		k, err := m.ml.Join([]string{addr})
		if first {
			m.log.Debug("cluster: first probe answer of a member; told it who is in the cluster",
				"member", n.Name, "addr", addr, "answered", k, "err", ErrorText(err))
			return
		}
		m.log.Info("cluster: a member restarted (a new process answers its probes); told it who is in the cluster",
			"member", n.Name, "addr", addr, "answered", k, "err", ErrorText(err))
	}()
}
