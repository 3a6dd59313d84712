package cluster

import (
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gatedPeers is a membership whose next AliveMembers call, once hold is
// set, takes its copy of the list and then waits until hold is closed: the
// reader of an older list is held back while the list changes.
type gatedPeers struct {
	mu      sync.Mutex
	members []string
	hold    chan struct{}
	read    chan struct{} // told when the held call has its copy
}

func (p *gatedPeers) LocalName() string { return "a" }

func (p *gatedPeers) AliveMembers() []string {
	p.mu.Lock()
	out, hold := slices.Clone(p.members), p.hold
	p.hold = nil
	p.mu.Unlock()
	if hold != nil {
		p.read <- struct{}{}
		<-hold
	}
	return out
}

func (p *gatedPeers) SendReliable(string, []byte) error { return errors.New("no network in this test") }

func (p *gatedPeers) set(members ...string) {
	p.mu.Lock()
	p.members = members
	p.mu.Unlock()
}

// membersAppliedAfterRace runs two MembersChanged calls the way a joining
// node's event goroutine and its Start can: the first reads the members
// before the join ("a" alone) and is held back; the list then gains "b"
// and the second call runs. It returns, once both returned, the members
// the ownership holds and whether a peer link to "b" exists. With
// secondFirst, the first call is held until the second has returned (only
// possible when the calls are not serialized); else the second gets 200 ms
// to run past the first.
func membersAppliedAfterRace(t *testing.T, secondFirst bool) ([]string, bool) {
	t.Helper()
	r, err := NewReplicator(testReplicatorConfig())
	require.NoError(t, err)
	p := &gatedPeers{members: []string{"a"}, read: make(chan struct{}, 1)}
	r.Start(p, false)
	defer r.Stop()

	hold := make(chan struct{})
	p.mu.Lock()
	p.hold = hold
	p.mu.Unlock()
	first := make(chan struct{})
	go func() { defer close(first); r.MembersChanged() }()
	<-p.read // the first call holds the list from before the join

	p.set("a", "b")
	second := make(chan struct{})
	go func() { defer close(second); r.MembersChanged() }()
	// Give the second call the chance to run past the first (it cannot
	// when calls are serialized); either way the first then goes on.
	if secondFirst {
		<-second
	} else {
		select {
		case <-second:
		case <-time.After(200 * time.Millisecond):
		}
	}
	close(hold)
	<-first
	<-second
	return r.own.Load().members, r.link("b") != nil
}

// A MembersChanged call that read the member list before a join cannot
// apply it after a call that read it since: the node keeps the newest list
// and its link to the new member. (Seen as TestClusterNewNodeSyncsBeforeReady
// failing in CI: the joining node kept the list from before its join, had
// no link and no anti-entropy peer, and never became ready.)
func TestMembersChangedAppliesTheNewestList(t *testing.T) {
	members, linked := membersAppliedAfterRace(t, false)
	assert.Equal(t, []string{"a", "b"}, members)
	assert.True(t, linked, "the link to the new member was closed by the older list")
}
