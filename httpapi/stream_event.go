package httpapi

// Stream events and their encoding
//
// An event is the difference between two snapshots of the view: the
// instances that appeared, changed (another version) or went. It is found
// by comparing the snapshots, not by listening to the registry, so it
// covers every source of change alike (clients, peers, evictions,
// anti-entropy) and a gap while nobody watched is one diff. Unchanged
// applications are the same *view.App in both snapshots (the view shares
// them), so the comparison visits only the applications that changed.
//
// An event is encoded as a Eureka delta document in JSON (the encoder of
// GET /apps/delta with Accept: application/json): ADDED for an instance
// new to the watcher's view, MODIFIED for a new version, DELETED (the
// last state seen, marked so) for one gone. versions__delta is the
// event's sequence number and apps__hashcode the full registry's after
// the event, as in /apps/delta, so a client that applies the event can
// compare hashcodes and detect divergence. An event is encoded at most
// once per distinct filter (frames), and those bytes are shared by every
// watcher with that filter.

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

// instChange is one instance's change between two snapshots.
type instChange struct {
	cur  *actors.Instance // nil: deleted
	prev *actors.Instance // nil: new
}

// appChange is the changes of one application, by instance id.
type appChange struct {
	name  string
	insts []instChange
}

// diffSnapshots returns the changes from prev to cur, by application
// name.
func diffSnapshots(prev, cur *view.Snapshot) []appChange {
	var out []appChange
	cur.Apps(func(a *view.App) bool {
		if p := prev.App(a.Name()); p != a {
			if c := diffApp(a.Name(), p, a); len(c.insts) > 0 {
				out = append(out, c)
			}
		}
		return true
	})
	prev.Apps(func(p *view.App) bool {
		if cur.App(p.Name()) == nil {
			if c := diffApp(p.Name(), p, nil); len(c.insts) > 0 {
				out = append(out, c)
			}
		}
		return true
	})
	slices.SortFunc(out, func(a, b appChange) int { return strings.Compare(a.name, b.name) })
	return out
}

// diffApp compares two states of one application (either may be nil),
// both sorted by instance id.
func diffApp(name string, prev, cur *view.App) appChange {
	var pi, ci []*actors.Instance
	var pv, cv []actors.Version
	if prev != nil {
		pi, pv = prev.Instances(), prev.Versions()
	}
	if cur != nil {
		ci, cv = cur.Instances(), cur.Versions()
	}
	c := appChange{name: name}
	i, j := 0, 0
	for i < len(pi) || j < len(ci) {
		switch {
		case j == len(ci) || (i < len(pi) && pi[i].ID() < ci[j].ID()):
			c.insts = append(c.insts, instChange{prev: pi[i]})
			i++
		case i == len(pi) || ci[j].ID() < pi[i].ID():
			c.insts = append(c.insts, instChange{cur: ci[j]})
			j++
		default:
			if pv[i] != cv[j] {
				c.insts = append(c.insts, instChange{prev: pi[i], cur: ci[j]})
			}
			i++
			j++
		}
	}
	return c
}

// filter selects what a stream shows: the instances of the named
// applications and those whose vipAddress lists one of the VIPs. An empty
// filter shows everything.
type filter struct {
	apps []string // upper case, sorted, unique
	vips []string // sorted, unique
	key  string   // canonical form, for sharing encodings
}

// all reports whether f shows everything.
func (f *filter) all() bool { return len(f.apps) == 0 && len(f.vips) == 0 }

// shows reports whether f shows inst (of application app).
func (f *filter) shows(app string, inst *actors.Instance) bool {
	if f.all() {
		return true
	}
	if _, ok := slices.BinarySearch(f.apps, app); ok {
		return true
	}
	for _, v := range f.vips {
		if listsAddress(inst.VIPAddress, v) {
			return true
		}
	}
	return false
}

// listsAddress reports whether a comma-separated vipAddress lists name
// (exactly, as Eureka matches VIPs).
func listsAddress(list, name string) bool {
	for list != "" {
		var item string
		item, list, _ = strings.Cut(list, ",")
		if strings.TrimSpace(item) == name {
			return true
		}
	}
	return false
}

// entries returns the instances of c that f shows, marked with their
// action: a change that takes an instance out of f's view (its VIP
// changed) is a deletion for f.
func (f *filter) entries(c *appChange) []*actors.Instance {
	var out []*actors.Instance
	for _, ic := range c.insts {
		switch {
		case ic.cur != nil && f.shows(c.name, ic.cur):
			action := actors.ActionModified
			if ic.prev == nil || !f.shows(c.name, ic.prev) {
				action = actors.ActionAdded
			}
			out = append(out, withAction(ic.cur, action))
		case ic.prev != nil && f.shows(c.name, ic.prev):
			out = append(out, withAction(ic.prev, actors.ActionDeleted))
		}
	}
	return out
}

// withAction returns inst with its ActionType set to a, copying it only
// when it differs (the view's instances are shared and never written).
func withAction(inst *actors.Instance, a actors.ActionType) *actors.Instance {
	if inst.ActionType == a {
		return inst
	}
	c := *inst
	c.ActionType = a
	return &c
}

// event is one published change of the stream.
type event struct {
	seq      uint64
	id       string      // the SSE id: epoch and seq
	changes  []appChange // by application name
	hashcode string      // the full registry's, after the event
	size     int         // instances changed

	mu     sync.Mutex
	frames map[string][]byte // by filter key; nil value: f shows nothing of it

	// The fan-out's timing (heureka_push_stream_fanout_seconds): queued is
	// when the hub queued e, pending the streams it is queued for that
	// are not done with it (written it, or let it go: cut to a snapshot,
	// closed), plus the hub while it queues; the last one done observes
	// the fan-out, once.
	queued   time.Time
	pending  atomic.Int64
	observed atomic.Bool
}

// queuedFor counts one more stream e is queued for.
func (e *event) queuedFor() { e.pending.Add(1) }

// doneWith counts a stream done with e: the last one observes how long
// e took to reach every stream it was queued for.
func (e *event) doneWith(took prometheus.Observer) {
	if e.pending.Add(-1) == 0 && e.observed.CompareAndSwap(false, true) {
		took.Observe(time.Since(e.queued).Seconds())
	}
}

// doneWithAll is doneWith for each of evs.
func doneWithAll(evs []*event, took prometheus.Observer) {
	for _, e := range evs {
		e.doneWith(took)
	}
}

// frame returns the SSE frame of e for f, encoding it on first use for
// f's key; nil when f shows nothing of e.
func (e *event) frame(f *filter, enc view.Encoder) []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	if b, ok := e.frames[f.key]; ok {
		return b
	}
	var doc []byte
	first := true
	for i := range e.changes {
		insts := f.entries(&e.changes[i])
		if len(insts) == 0 {
			continue
		}
		if first {
			doc = enc.AppendApplicationsOpen(nil, strconv.FormatUint(e.seq, 10), e.hashcode)
			first = false
		} else {
			doc = enc.AppendApplicationsSeparator(doc)
		}
		doc = enc.AppendApplication(doc, e.changes[i].name, insts)
	}
	var b []byte
	if doc != nil {
		doc = enc.AppendApplicationsClose(doc)
		b = appendFrame(nil, "delta", e.id, doc)
	}
	if e.frames == nil {
		e.frames = map[string][]byte{}
	}
	e.frames[f.key] = b
	return b
}

// touches reports whether f shows anything of e (without encoding).
func (e *event) touches(f *filter) bool {
	if f.all() {
		return true
	}
	for i := range e.changes {
		for _, ic := range e.changes[i].insts {
			if (ic.cur != nil && f.shows(e.changes[i].name, ic.cur)) ||
				(ic.prev != nil && f.shows(e.changes[i].name, ic.prev)) {
				return true
			}
		}
	}
	return false
}

// appendFrame appends an SSE event: its id, type and data, one data line
// per line of data (JSON documents have none, but a frame must never be
// broken by one).
func appendFrame(dst []byte, typ, id string, data []byte) []byte {
	dst = append(dst, "id: "...)
	dst = append(dst, id...)
	dst = append(dst, "\nevent: "...)
	dst = append(dst, typ...)
	dst = append(dst, '\n')
	for {
		dst = append(dst, "data: "...)
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			dst = append(dst, data...)
			break
		}
		dst = append(dst, data[:i]...)
		dst = append(dst, '\n')
		if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
			i++
		}
		data = data[i+1:]
	}
	return append(dst, "\n\n"...)
}

// snapshotDoc returns the applications document of snap that f shows:
// the view's prepared /apps document when f shows everything, else one
// built from the applications and instances f shows (versions__delta "1"
// and the full registry's apps__hashcode, as the unfiltered one has).
func snapshotDoc(snap *view.Snapshot, f *filter, enc view.Encoder) []byte {
	if f.all() {
		return snap.Full(view.FormatJSON, false)
	}
	doc := enc.AppendApplicationsOpen(nil, view.FullVersionDelta, snap.HashCode())
	first := true
	add := func(a *view.App) {
		var insts []*actors.Instance
		for inst := range a.All() {
			if f.shows(a.Name(), inst) {
				insts = append(insts, inst)
			}
		}
		if len(insts) == 0 {
			return
		}
		if !first {
			doc = enc.AppendApplicationsSeparator(doc)
		}
		first = false
		doc = enc.AppendApplication(doc, a.Name(), insts)
	}
	if len(f.vips) == 0 {
		for _, name := range f.apps { // sorted: the order of /apps
			if a := snap.App(name); a != nil {
				add(a)
			}
		}
	} else {
		snap.Apps(func(a *view.App) bool {
			add(a)
			return true
		})
	}
	return enc.AppendApplicationsClose(doc)
}

// snapshotFrames caches the snapshot frames of one snapshot by filter key.
type snapshotFrames struct {
	snap *view.Snapshot
	id   string // the id of the last event the snapshot includes

	mu     sync.Mutex
	frames map[string][]byte
}

// frame returns the snapshot frame for f, building it on first use.
func (s *snapshotFrames) frame(f *filter, enc view.Encoder) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	if b, ok := s.frames[f.key]; ok {
		return b
	}
	b := appendFrame(nil, "snapshot", s.id, snapshotDoc(s.snap, f, enc))
	if s.frames == nil {
		s.frames = map[string][]byte{}
	}
	s.frames[f.key] = b
	return b
}
