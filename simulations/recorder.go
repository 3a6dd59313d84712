package simulations

// The recorder: what a run observes, collected as it happens into
// Observations for the checkers. Both harnesses record through it, the
// in-process one (Sim) and the one of real processes (simulations/netns),
// so that the checkers judge the two kinds of run on the same record.

import (
	"maps"
	"slices"
	"sort"
	"sync"
	"time"
)

// Recorder collects a run's observations: the timeline, the clients'
// lives, the samples and probes, the crashes. It is safe for concurrent
// use.
type Recorder struct {
	mu        sync.Mutex
	obs       Observations
	progress  func(Event)
	instances map[string]*InstanceLog
	apps      map[string]bool // the applications of the lives started
	lastRound time.Time       // start of the latest finished sampling round
}

// NewRecorder returns a recorder of a run that started at start on nodes;
// progress, if not nil, receives every timeline event as it is recorded.
func NewRecorder(start time.Time, nodes []string, progress func(Event)) *Recorder {
	r := &Recorder{progress: progress, instances: map[string]*InstanceLog{}, apps: map[string]bool{}}
	r.obs.Start = start
	r.obs.Nodes = slices.Clone(nodes)
	return r
}

// Event puts an entry on the timeline.
func (r *Recorder) Event(kind, detail string) {
	r.mu.Lock()
	ev := Event{At: time.Since(r.obs.Start), Kind: kind, Detail: detail}
	r.obs.Timeline = append(r.obs.Timeline, ev)
	r.mu.Unlock()
	if r.progress != nil {
		r.progress(ev)
	}
}

// Mark calls fn with the observations, under the recorder's lock: to set
// the phases' marks, or to read them.
func (r *Recorder) Mark(fn func(o *Observations)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fn(&r.obs)
}

// AppNames returns the applications of the lives started, sorted.
func (r *Recorder) AppNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Sorted(maps.Keys(r.apps))
}

// LifeStarted opens a life of the instance id of app, whose client lives
// next to the node loc, and returns the life's index.
func (r *Recorder) LifeStarted(app, id, loc string, at time.Time) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.apps[app] = true
	l := r.instances[id]
	if l == nil {
		l = &InstanceLog{App: app, ID: id, Location: loc}
		r.instances[id] = l
	}
	l.Lives = append(l.Lives, Life{Start: at})
	return len(l.Lives) - 1
}

// Acked notes that node acknowledged at at a registration of the life sent
// at sent.
func (r *Recorder) Acked(id string, life int, node string, sent, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lf := &r.instances[id].Lives[life]
	if lf.Acked.IsZero() {
		lf.Acked, lf.AckedBy = at, node
	}
	lf.Registrations = append(lf.Registrations, Span{From: sent, To: at})
}

// Renewed notes that node accepted a renewal of the life at at.
func (r *Recorder) Renewed(id string, life int, node string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lf := &r.instances[id].Lives[life]
	if lf.Renewed == nil {
		lf.Renewed = map[string]time.Time{}
	}
	lf.Renewed[node] = at
}

// Forwarded notes that a renewal of the life reached its owner at at.
func (r *Recorder) Forwarded(id string, life int, owner string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lf := &r.instances[id].Lives[life]
	if lf.Forwarded == nil {
		lf.Forwarded = map[string]time.Time{}
	}
	lf.Forwarded[owner] = at
}

// LifeEnded notes that a life ended at at, cancelled by the node
// cancelledBy ("" when the client died or its cancel failed).
func (r *Recorder) LifeEnded(id string, life int, at time.Time, cancelledBy string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	lf := &r.instances[id].Lives[life]
	lf.End, lf.Deregistered, lf.CancelledBy = at, cancelledBy != "", cancelledBy
}

// AllAcked reports whether the current life of every id has registered.
func (r *Recorder) AllAcked(ids []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		l := r.instances[id]
		if l == nil || len(l.Lives) == 0 || l.Lives[len(l.Lives)-1].Acked.IsZero() {
			return false
		}
	}
	return true
}

// Crashed notes that the node name lost its process at at.
func (r *Recorder) Crashed(name string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.obs.Crashes = append(r.obs.Crashes, NodeCrash{Node: name, At: at})
}

// RoundDone notes that a sampling round that started at start finished.
func (r *Recorder) RoundDone(start time.Time) {
	r.mu.Lock()
	if start.After(r.lastRound) {
		r.lastRound = start
	}
	r.mu.Unlock()
}

// SampledSince reports whether a sampling round that started after t has
// finished.
func (r *Recorder) SampledSince(t time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastRound.After(t)
}

// AddSamples records samples.
func (r *Recorder) AddSamples(s []Sample) {
	r.mu.Lock()
	r.obs.Samples = append(r.obs.Samples, s...)
	r.mu.Unlock()
}

// AddProbe records a probe.
func (r *Recorder) AddProbe(p Probe) {
	r.mu.Lock()
	r.obs.Probes = append(r.obs.Probes, p)
	r.mu.Unlock()
}

// LastProbe returns the newest probe, or nil.
func (r *Recorder) LastProbe() *Probe {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.obs.Probes) == 0 {
		return nil
	}
	p := r.obs.Probes[len(r.obs.Probes)-1]
	return &p
}

// Observations returns a deep copy of what was recorded, samples sorted by
// time.
func (r *Recorder) Observations() *Observations {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := r.obs
	o.Samples = append([]Sample(nil), r.obs.Samples...)
	sort.SliceStable(o.Samples, func(i, j int) bool { return o.Samples[i].At.Before(o.Samples[j].At) })
	o.Probes = append([]Probe(nil), r.obs.Probes...)
	o.Timeline = append([]Event(nil), r.obs.Timeline...)
	o.Instances = map[string]*InstanceLog{}
	for id, l := range r.instances {
		c := *l
		c.Lives = append([]Life(nil), l.Lives...)
		for i := range c.Lives {
			c.Lives[i].Renewed = maps.Clone(c.Lives[i].Renewed)
			c.Lives[i].Forwarded = maps.Clone(c.Lives[i].Forwarded)
			c.Lives[i].Registrations = slices.Clone(c.Lives[i].Registrations)
		}
		o.Instances[id] = &c
	}
	return &o
}
