package federation

// A region's state
//
// regionState is the plain core of one remote region, driven by its
// puller (pull.go) and testable without a network: it holds the instances
// exactly as the remote served them (raw), so that apps__hashcode can be
// checked against the remote's, and a window of recent changes for the
// region part of ?regions= deltas. publish turns it into an immutable
// regionSnap, the only thing readers see.
//
// Raw and served differ: every served instance is a copy marked with its
// region (MarkerKey) and, when it has none, a zone (ZoneKey) equal to its
// region, and a raw instance that already carries a region marker is not
// served at all. Heureka never re-exports remote data, so such an instance
// was re-exported by something else (a Java Eureka server with transparent
// fallback, say), and serving it would echo a region's own instances back
// to it, or hand clients a second, possibly stale, copy of another
// region's.

import (
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/appdigest"
	"github.com/heureka/heureka/internal/sabotage"
)

// MarkerKey is the metadata key that names the region a served remote
// instance came from.
const MarkerKey = "heureka.region"

// ZoneKey is the metadata key of an instance's availability zone (Spring
// Cloud's eureka.instance.metadata-map.zone), which Spring LoadBalancer's
// zone preference compares with the caller's zone. A remote instance
// without one is given its region's name, so that zone preference picks
// same-datacenter instances first and fails over to remote ones.
const ZoneKey = "zone"

// State is a region's state as operators see it.
type State string

// The region states.
const (
	// StateLoading: no pull has succeeded yet; ?regions= reads answer 403.
	StateLoading State = "loading"
	// StateOK: the last pull succeeded within StaleAfter.
	StateOK State = "ok"
	// StateStale: no successful pull for StaleAfter; still served.
	StateStale State = "stale"
	// StateDropped: no successful pull for DropAfter; nothing served.
	StateDropped State = "dropped"
)

// change is one entry of a region's delta window: the served copy of an
// instance as last changed, with its ActionType, and when it changed.
type change struct {
	at   time.Time
	inst *actors.Instance
}

// regionState is one region's mutable state; only its puller touches it.
// It is kept incrementally: a change costs its application, not the
// region (a stream delivers changes one by one).
type regionState struct {
	name, home string // the region, and the region this cluster is in
	// apps is the region's application whitelist; nil: every application.
	apps      map[string]bool
	raw       map[actors.Key]*actors.Instance
	rawCounts counts // of raw, for hashcode
	// served holds the served copies by application and id.
	served map[string]map[string]*actors.Instance
	// entries are the applications as last published; dirty names those
	// changed since.
	entries map[string]*appEntry
	names   []string
	dirty   map[string]bool
	// changed: the copy changed since judge last took it (takeChanged).
	changed bool
	window  map[actors.Key]change
	state   State
	loaded  bool      // a pull has succeeded once
	lastOK  time.Time // last successful pull
	// lastChange is the last change of raw.
	lastChange time.Time
	lastErr    string
	// How this node follows the region (links.go), for Status.
	via       Via
	relay     string
	viaReason string
	links     []string
}

func newRegionState(name, home string) *regionState {
	return &regionState{name: name, home: home, raw: map[actors.Key]*actors.Instance{},
		served: map[string]map[string]*actors.Instance{}, entries: map[string]*appEntry{},
		dirty: map[string]bool{}, window: map[actors.Key]change{}, state: StateLoading}
}

// set puts in into raw and its served copy into served.
func (r *regionState) set(k actors.Key, in *actors.Instance) {
	if old, ok := r.raw[k]; ok {
		r.rawCounts.sub(old.Status)
	}
	r.raw[k] = in
	r.rawCounts.add(in.Status)
	r.dirty[k.App] = true
	r.changed = true
	s := r.serve(in)
	m := r.served[k.App]
	if s == nil {
		delete(m, k.ID)
		return
	}
	if m == nil {
		m = map[string]*actors.Instance{}
		r.served[k.App] = m
	}
	m[k.ID] = s
}

// del removes k from raw and served.
func (r *regionState) del(k actors.Key) {
	if old, ok := r.raw[k]; ok {
		r.rawCounts.sub(old.Status)
		delete(r.raw, k)
	}
	r.dirty[k.App] = true
	r.changed = true
	if m := r.served[k.App]; m != nil {
		delete(m, k.ID)
		if len(m) == 0 {
			delete(r.served, k.App)
		}
	}
}

// takeChanged reports whether the copy changed since the last call, and
// starts over.
func (r *regionState) takeChanged() bool {
	c := r.changed
	r.changed = false
	return c
}

// replace makes raw the instances of a full fetch and records the
// difference in the window; it reports whether anything changed.
func (r *regionState) replace(insts []*actors.Instance, now time.Time) bool {
	next := make(map[actors.Key]*actors.Instance, len(insts))
	for _, in := range insts {
		next[in.Key()] = in
	}
	return r.merge(next, nil, now)
}

// merge makes the copy's instances of the applications in scope (every
// application when scope is nil) those of next, recording each difference
// in the window; it reports whether anything changed.
func (r *regionState) merge(next map[actors.Key]*actors.Instance, scope map[string]bool, now time.Time) bool {
	changed := false
	for k, old := range r.raw {
		if _, ok := next[k]; !ok && (scope == nil || scope[k.App]) {
			r.record(cancelled(old, now), actors.ActionDeleted, now)
			r.del(k)
			changed = true
		}
	}
	for k, in := range next {
		old, ok := r.raw[k]
		switch {
		case !ok:
			r.set(k, in)
			r.record(in, actors.ActionAdded, now)
			changed = true
		case differs(old, in):
			r.set(k, in)
			r.record(in, actors.ActionModified, now)
			changed = true
		}
	}
	if changed {
		r.lastChange = now
	}
	return changed
}

// apply applies a delta's instances; it reports whether anything changed.
func (r *regionState) apply(insts []*actors.Instance, now time.Time) bool {
	changed := false
	for _, in := range insts {
		k := in.Key()
		old, ok := r.raw[k]
		if in.ActionType == actors.ActionDeleted {
			if ok {
				// The remote's own entry, as Eureka's region delta passes
				// it on: the instance as cancelled, not the copy held
				// before.
				r.record(cancelled(in, now), actors.ActionDeleted, now)
				r.del(k)
				changed = true
			}
			continue
		}
		if ok && !differs(old, in) {
			continue // a delta repeats a change for its whole retention
		}
		r.set(k, in)
		if ok {
			r.record(in, actors.ActionModified, now)
		} else {
			r.record(in, actors.ActionAdded, now)
		}
		changed = true
	}
	if changed {
		r.lastChange = now
	}
	return changed
}

// repair applies a repair event (stream.go): each application it carries
// replaces this copy's application of that name, instance for instance
// (what the copy holds and the repair does not is deleted, as a full
// fetch deletes it), and the applications it names as removed are
// deleted; every other application stays as it is. It reports whether
// anything changed.
func (r *regionState) repair(insts []*actors.Instance, removed []string, now time.Time) bool {
	next := make(map[actors.Key]*actors.Instance, len(insts))
	replaced := make(map[string]bool, len(removed))
	for _, in := range insts {
		next[in.Key()] = in
		replaced[in.App] = true
	}
	if !sabotage.On(sabotage.RepairIgnoresRemovedApps) {
		for _, n := range removed {
			replaced[n] = true
		}
	}
	return r.merge(next, replaced, now)
}

// digest is the digest of the copy as the remote sent it (package
// appdigest), for a repair.
func (r *regionState) digest() appdigest.Digest {
	d := appdigest.Digest{}
	for _, in := range r.raw {
		d.Add(in)
	}
	return d
}

// cancelled is in as a DELETED delta entry carries it: with its lease's
// evictionTimestamp, set to now when in has none (Heureka's change stream
// sends none; its apps/delta and Eureka's do).
func cancelled(in *actors.Instance, now time.Time) *actors.Instance {
	if in.LeaseInfo.EvictionTimestamp != 0 {
		return in
	}
	c := in.Clone()
	c.LeaseInfo.EvictionTimestamp = now.UnixMilli()
	return c
}

// differs reports whether b is a change of a: what Eureka's delta would
// carry (status, or anything that moves lastDirtyTimestamp or
// lastUpdatedTimestamp).
func differs(a, b *actors.Instance) bool {
	return a.Status != b.Status || a.OverriddenStatus != b.OverriddenStatus ||
		a.LastDirtyTimestamp != b.LastDirtyTimestamp || a.LastUpdatedTimestamp != b.LastUpdatedTimestamp
}

// record puts a served copy of in with action into the window.
func (r *regionState) record(in *actors.Instance, action actors.ActionType, now time.Time) {
	s := r.serve(in)
	if s == nil {
		return
	}
	s.ActionType = action
	r.window[in.Key()] = change{at: now, inst: s}
}

// serve returns the copy of a raw instance that readers get: marked with
// the region and given a zone; nil for an instance that is not served
// (it carries a region marker already: see the file comment; or its
// application is not in the region's whitelist).
func (r *regionState) serve(in *actors.Instance) *actors.Instance {
	if _, marked := in.Metadata[MarkerKey]; marked && !sabotage.On(sabotage.RemoteEchoOverwritesLocal) {
		return nil
	}
	if r.apps != nil && !r.apps[in.App] {
		return nil // not in the region's whitelist
	}
	c := in.Clone()
	if c.Metadata == nil {
		c.Metadata = make(map[string]string, 2)
	}
	c.Metadata[MarkerKey] = r.name
	if c.Metadata[ZoneKey] == "" {
		c.Metadata[ZoneKey] = r.name
	}
	return c
}

// prune drops window entries older than retention.
func (r *regionState) prune(now time.Time, retention time.Duration) bool {
	pruned := false
	for k, c := range r.window {
		if now.Sub(c.at) > retention {
			delete(r.window, k)
			pruned = true
		}
	}
	return pruned
}

// hashcode is Eureka's apps__hashcode of the raw instances, to compare
// with the remote's.
func (r *regionState) hashcode() string { return r.rawCounts.String() }

// appEntry is one application of a region as published: immutable, shared
// by every snapshot until the application changes, with the encoded bytes
// of its instances cached per format (encoded once, on first read).
type appEntry struct {
	name      string
	instances []*actors.Instance // sorted by id
	counts    counts
	// parts are the instances' bytes joined by the instance separator, per
	// format.
	parts [view.NumFormats]atomic.Pointer[[]byte]
}

// part returns the instances' bytes in format f, joined by enc's
// instance separator.
func (e *appEntry) part(enc view.Encoder, f view.Format) []byte {
	if p := e.parts[f].Load(); p != nil {
		return *p
	}
	var b []byte
	for i, in := range e.instances {
		if i > 0 {
			b = enc.AppendInstanceSeparator(b)
		}
		b = enc.AppendInstance(b, in)
	}
	e.parts[f].Store(&b)
	return b
}

// regionSnap is an immutable served state of a region.
type regionSnap struct {
	name   string
	state  State
	loaded bool
	// apps maps application names to their entries; names lists them
	// sorted. Empty for a dropped region.
	apps   map[string]*appEntry
	names  []string
	counts counts // of every served instance
	total  int
	// window is the delta window's entries, in no order.
	window     []*actors.Instance
	lastOK     time.Time
	lastChange time.Time
	lastErr    string
	via        Via
	relay      string
	viaReason  string
	links      []string
}

// snapshot builds the served state, rebuilding only the applications that
// changed since the last one. A dropped region serves nothing.
func (r *regionState) snapshot() *regionSnap {
	if len(r.dirty) > 0 {
		next := make(map[string]*appEntry, len(r.entries)+len(r.dirty))
		for n, e := range r.entries {
			next[n] = e
		}
		for n := range r.dirty {
			m := r.served[n]
			if len(m) == 0 {
				delete(next, n)
				continue
			}
			e := &appEntry{name: n, instances: make([]*actors.Instance, 0, len(m))}
			for _, in := range m {
				e.instances = append(e.instances, in)
				e.counts.add(in.Status)
			}
			slices.SortFunc(e.instances, func(a, b *actors.Instance) int { return strings.Compare(a.ID(), b.ID()) })
			next[n] = e
		}
		r.entries = next
		r.names = make([]string, 0, len(next))
		for n := range next {
			r.names = append(r.names, n)
		}
		sort.Strings(r.names)
		clear(r.dirty)
	}
	s := &regionSnap{name: r.name, state: r.state, loaded: r.loaded, lastOK: r.lastOK,
		lastChange: r.lastChange, lastErr: r.lastErr, via: r.via, relay: r.relay, viaReason: r.viaReason, links: r.links}
	if r.state != StateDropped {
		s.apps, s.names = r.entries, r.names
		for _, e := range r.entries {
			for i, n := range e.counts {
				s.counts[i] += n
				s.total += n
			}
		}
	}
	s.window = make([]*actors.Instance, 0, len(r.window))
	for _, c := range r.window {
		s.window = append(s.window, c.inst)
	}
	return s
}

// group groups instances by application, each list sorted by id.
func group(all []*actors.Instance) (map[string][]*actors.Instance, []string) {
	m := map[string][]*actors.Instance{}
	for _, in := range all {
		m[in.App] = append(m[in.App], in)
	}
	names := make([]string, 0, len(m))
	for n, l := range m {
		names = append(names, n)
		slices.SortFunc(l, func(a, b *actors.Instance) int { return strings.Compare(a.ID(), b.ID()) })
	}
	sort.Strings(names)
	return m, names
}

// counts are instance counts by status, in actors.AllStatuses order.
type counts [len(actors.AllStatuses)]int

func (c *counts) add(s actors.Status) { c[statusIndex(s)]++ }

func (c *counts) sub(s actors.Status) { c[statusIndex(s)]-- }

// statusIndex is s's index in actors.AllStatuses (UNKNOWN for anything
// else).
func statusIndex(s actors.Status) int {
	for i, st := range actors.AllStatuses {
		if st == s {
			return i
		}
	}
	return 3 // UNKNOWN
}

// plus adds o to c.
func (c *counts) plus(o *counts) {
	for i, n := range o {
		c[i] += n
	}
}

// String is Eureka's apps__hashcode of the counts: STATUS_count_ for each
// status with a count, in alphabetical order (the view's own rule).
func (c *counts) String() string {
	var b strings.Builder
	for i, n := range c {
		if n > 0 {
			b.WriteString(string(actors.AllStatuses[i]))
			b.WriteByte('_')
			b.WriteString(itoa(n))
			b.WriteByte('_')
		}
	}
	return b.String()
}

// parseCounts reads an apps__hashcode back into counts (the local view
// exposes its counts only as the hashcode).
func parseCounts(h string) counts {
	var c counts
	parts := strings.Split(h, "_")
	// "DOWN_1_OUT_OF_SERVICE_2_UP_3_": a status name may hold '_', so
	// read each count as the first all-digit part after a name.
	name := ""
	for _, p := range parts {
		if p == "" {
			continue
		}
		if n, ok := atoi(p); ok && name != "" {
			for i, st := range actors.AllStatuses {
				if string(st) == name {
					c[i] += n
				}
			}
			name = ""
			continue
		}
		if name != "" {
			name += "_"
		}
		name += p
	}
	return c
}
