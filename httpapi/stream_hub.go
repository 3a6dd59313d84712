package httpapi

// The stream hub
//
// One hub per Server turns view snapshots into stream events and hands
// them to the watchers (one per open stream). Its goroutine runs while at
// least one watcher is connected: it sleeps on the shared change channel
// (watch_changes.go); a change after a quiet spell of PushConfig.StreamCoalesce
// is published at once, and the changes that follow an event closer than
// that are gathered until StreamCoalesce after it (a burst of registrations
// costs one document per watcher per StreamCoalesce, and a lone change
// waits for nothing). Then it diffs
// the snapshot it published last against the current one
// (stream_event.go) and, under its lock, numbers the event, keeps it in
// the resume window and appends it to the queue of every watcher whose
// filter it touches. Nothing is encoded under the lock: each watcher's
// handler asks the event for its frame, which is encoded once per filter.
//
// # Ids and resume
//
// An event id is "<epoch>-<seq>": seq counts this hub's events, and epoch
// is random per Server, so that an id issued by another node or an earlier
// process is never taken for one of ours. A watcher that connects with a
// Last-Event-ID of this epoch whose successor is still in the window
// (the last StreamWindow events) gets the missed events it touches, in
// order; with the newest id, nothing; with any other id (or none), a
// snapshot first: the /apps document of the snapshot the hub published
// last, with the id of the last event it includes. Events and snapshots
// are consistent: a watcher joins under the lock, so it gets exactly the
// events after its snapshot or its resume point.
//
// While nobody watches, the hub's goroutine stops, keeping the snapshot
// it published last, its counter and its window; the next watcher starts
// it again, and the changes made meanwhile become one event (their diff),
// so a client that was the only watcher can still resume.
//
// # Slow watchers
//
// A watcher's queue holds at most StreamBacklog events. One more, and its
// queue is dropped and it is marked for a snapshot instead (counted in
// heureka_push_slow_watchers_cut_total{reason="backlog"}), so a watcher
// that does not read holds at most StreamBacklog events, whose bytes are
// shared, and never slows the hub or the others. A write that does not
// complete in StreamWriteTimeout closes its connection (stream.go).

import (
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/internal/appdigest"
	"github.com/heureka/heureka/internal/sabotage"
)

// hub publishes stream events to watchers (see the file comment).
type hub struct {
	p     *push
	view  Snapshots
	enc   view.Encoder // JSON, like /apps/delta with Accept: application/json
	epoch string

	mu       sync.Mutex
	watchers map[*watcher]struct{}
	running  bool
	kick     chan struct{} // wakes run to see that the last watcher left
	seq      uint64        // the last event's
	last     *view.Snapshot
	window   []*event // the last events, oldest first
	snaps    *snapshotFrames

	// Only run's goroutine uses these.
	published time.Time // when run last published
	// after is time.After's stand-in: tests replace it to hold the
	// gathering of changes, so that they see a lone change go out at once.
	after func(time.Duration) <-chan time.Time
}

func newHub(p *push, v Snapshots) *hub {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return &hub{p: p, view: v, enc: eureka.Encoders()[view.FormatJSON], epoch: hex.EncodeToString(b[:]),
		watchers: map[*watcher]struct{}{}, kick: make(chan struct{}, 1), after: time.After}
}

// watcher is one open stream's place in the hub.
type watcher struct {
	filter *filter
	notify chan struct{} // signalled (without blocking) when queue or resync changed

	// wake, when set (a hijacked stream, stream_conn.go), is called
	// instead of signalling notify. Set and read under hub.mu.
	wake func()

	// Guarded by hub.mu.
	queue  []*event
	resync bool // send a snapshot (and drop queue) before anything else
	// repairBase is the snapshot a repair is built against and digest the
	// watcher's copy (set by join, cleared by take); repair is the repair
	// frame, sent before queue (set by the handler before anything takes).
	repairBase *snapshotFrames
	digest     appdigest.Digest
	repair     []byte
}

// errTooManyStreams answers a stream over PushConfig.MaxStreams.
var errTooManyStreams = &httpError{code: http.StatusServiceUnavailable,
	msg: "too many streams open on this server; retry later or connect to another server"}

// join adds a watcher with filter f that resumes after lastID ("" for a
// new client); one that cannot resume gets a snapshot, or, when it sent a
// digest of its copy, a repair against the published snapshot
// (stream_repair.go), which its handler builds before anything is taken.
func (h *hub) join(f *filter, lastID string, digest appdigest.Digest) (*watcher, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watchers) >= h.p.cfg.MaxStreams {
		return nil, errTooManyStreams
	}
	if !h.running {
		h.start()
	}
	w := &watcher{filter: f, notify: make(chan struct{}, 1)}
	w.resync = !h.resume(w, lastID)
	if w.resync && digest != nil {
		// The events after the published snapshot are queued as they
		// come, behind the repair built against it.
		w.resync = false
		w.repairBase, w.digest = h.snaps, digest
	}
	h.watchers[w] = struct{}{}
	w.signal()
	return w, nil
}

// resume queues the events after lastID for w and reports whether it
// could; h.mu must be held.
func (h *hub) resume(w *watcher, lastID string) bool {
	epoch, seqText, ok := strings.Cut(lastID, "-")
	if !ok || epoch != h.epoch {
		return false
	}
	seq, err := strconv.ParseUint(seqText, 10, 64)
	if err != nil || seq > h.seq {
		return false
	}
	if seq == h.seq {
		return true
	}
	if len(h.window) == 0 || h.window[0].seq > seq+1 {
		return false // the next event has left the window
	}
	for _, e := range h.window[seq+1-h.window[0].seq:] {
		if e.touches(w.filter) {
			e.queuedFor()
			w.queue = append(w.queue, e)
		}
	}
	if len(w.queue) > h.p.cfg.StreamBacklog {
		doneWithAll(w.queue, h.p.metrics.streamFanout)
		w.queue = nil
		return false
	}
	return true
}

// leave removes w; the hub's goroutine stops when no watcher is left.
func (h *hub) leave(w *watcher) {
	h.mu.Lock()
	doneWithAll(w.queue, h.p.metrics.streamFanout)
	w.queue = nil
	delete(h.watchers, w)
	empty := len(h.watchers) == 0
	h.mu.Unlock()
	if empty {
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
}

// take returns what w should write next: a snapshot (when resync) or a
// repair, and the queued events after it. A snapshot supersedes a repair
// (the watcher's backlog overflowed meanwhile).
func (h *hub) take(w *watcher) (snap *snapshotFrames, repair []byte, evs []*event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.resync {
		w.resync = false
		snap = h.snaps
	} else {
		repair = w.repair
	}
	w.repair, w.repairBase, w.digest = nil, nil, nil
	evs, w.queue = w.queue, nil
	return snap, repair, evs
}

// attach makes fn what wakes w from now on, and calls it once for what
// is already queued.
func (h *hub) attach(w *watcher, fn func()) {
	h.mu.Lock()
	w.wake = fn
	h.mu.Unlock()
	fn()
}

// signal wakes w's handler (or its hijacked stream's writer); h.mu must
// be held.
func (w *watcher) signal() {
	if w.wake != nil {
		w.wake()
		return
	}
	select {
	case w.notify <- struct{}{}:
	default:
	}
}

// start catches up with the view and starts the hub's goroutine; h.mu
// must be held.
func (h *hub) start() {
	h.running = true
	h.p.changes.acquire()
	cur := h.view.Snapshot()
	if h.last == nil {
		h.install(cur, nil)
	} else if cur != h.last {
		h.install(cur, diffSnapshots(h.last, cur))
	}
	go h.run()
}

// run publishes events while anyone watches. It looks for watchers before
// every wait: a kick (the last watcher left) may have been taken while it
// gathered changes.
func (h *hub) run() {
	for {
		if h.stopIfIdle() {
			return
		}
		// The channel first, then the comparison: a change published
		// after the hub's last snapshot read, before this wait, has
		// closed an earlier channel (see watch_changes.go).
		changed := h.p.changes.wait()
		h.mu.Lock()
		last := h.last
		h.mu.Unlock()
		if h.view.Snapshot() == last {
			select {
			case <-changed:
			case <-h.kick:
				continue
			}
		}
		if wait := h.p.cfg.StreamCoalesce - time.Since(h.published); wait > 0 && !sabotage.On(sabotage.StreamCoalesceTrailing) {
			select {
			case <-h.after(wait):
			case <-h.kick:
			}
		} else if d := h.p.cfg.StreamCoalesce; d > 0 && sabotage.On(sabotage.StreamCoalesceTrailing) {
			select { // as before: every change waits the whole StreamCoalesce
			case <-h.after(d):
			case <-h.kick:
			}
		}
		h.publish()
		h.published = time.Now()
	}
}

// stopIfIdle stops the hub when no watcher is left and reports whether it
// did.
func (h *hub) stopIfIdle() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.watchers) > 0 {
		return false
	}
	h.running = false
	h.p.changes.release()
	return true
}

// publish makes an event of the changes since the last one, if any. Only
// run calls it, so h.last changes under it only by its own hand.
func (h *hub) publish() {
	h.mu.Lock()
	prev := h.last
	h.mu.Unlock()
	cur := h.view.Snapshot()
	if cur == prev {
		return
	}
	changes := diffSnapshots(prev, cur) // outside the lock: O(changed applications)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.install(cur, changes)
}

// install makes cur the published snapshot and changes (if any) its
// event, queued for the watchers it touches; h.mu must be held.
func (h *hub) install(cur *view.Snapshot, changes []appChange) {
	h.last = cur
	if len(changes) > 0 {
		h.seq++
		e := &event{seq: h.seq, id: h.epoch + "-" + strconv.FormatUint(h.seq, 10), changes: changes,
			hashcode: cur.HashCode()}
		for i := range changes {
			e.size += len(changes[i].insts)
		}
		h.window = append(h.window, e)
		if over := len(h.window) - h.p.cfg.StreamWindow; over > 0 {
			clear(h.window[:over])
			h.window = h.window[over:]
		}
		h.queue(e)
	}
	// A snapshot includes the events up to h.seq; a watcher that needs
	// one gets the published snapshot, never a newer one, so that it then
	// gets exactly the events after it.
	h.snaps = &snapshotFrames{snap: cur, id: h.epoch + "-" + strconv.FormatUint(h.seq, 10)}
}

// queue appends e to every watcher it touches, dropping to a snapshot
// those whose backlog overflows; h.mu must be held.
func (h *hub) queue(e *event) {
	took := h.p.metrics.streamFanout
	e.queued = time.Now()
	e.queuedFor() // the hub's own count, so that no stream's write ends the fan-out while it queues
	n := 0
	touched := map[string]bool{}
	for w := range h.watchers {
		if w.resync {
			continue // its snapshot will include e
		}
		t, ok := touched[w.filter.key]
		if !ok {
			t = e.touches(w.filter)
			touched[w.filter.key] = t
		}
		if !t {
			continue
		}
		if len(w.queue) >= h.p.cfg.StreamBacklog {
			doneWithAll(w.queue, took)
			w.queue = nil
			w.resync = true
			h.p.metrics.cutBacklog.Inc()
		} else {
			e.queuedFor()
			n++
			w.queue = append(w.queue, e)
		}
		w.signal()
	}
	if n == 0 {
		e.observed.Store(true) // no stream to reach: no fan-out to time
	}
	e.doneWith(took)
}
