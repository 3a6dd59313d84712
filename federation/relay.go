package federation

// Relaying a region inside the cluster
//
// A node that holds a region's WAN link (links.go) serves its copy of the
// region to the other nodes of its cluster: GET
// /admin/regions/{region}/relay (httpapi's regions_relay.go calls
// ServeRelay) is a Server-Sent Events stream of the same Eureka documents
// as a Heureka remote's change stream, so the followers read it with the
// same stream reader (stream.go):
//
//	event: state      {"state":"ok","loaded":true,"ageMs":120}: the relay's
//	                  own state of the region and the age of its last
//	                  success over the WAN; first, before every snapshot and
//	                  delta, on every change of state and every keep-alive
//	                  interval (?keepalive=, default a third of StaleAfter)
//	event: snapshot   the region as the relay serves it (every instance
//	                  marked with the region, MarkerKey), with its
//	                  apps__hashcode; sent while the relay's copy is ok only
//	event: delta      what changed since, ActionType on each instance, and
//	                  the apps__hashcode after it
//
// The follower takes the relay's age as its own: its copy turns stale and
// is dropped when the relay's would, not a StaleAfter later. A relay sends
// a snapshot only while its region is ok: a node that starts (or restarts)
// while the WAN is cut stays loading, as it would over the WAN, instead of
// loading a stale copy. A follower that gets no ok state from its relay
// for StaleAfter sets the relay aside and follows the WAN itself.
//
// Relayed instances carry the region's marker: the follower accepts a
// marker that names the region it follows through a relay, and only that
// (it strips it, and serves the instance marked again); any other marker
// is an echo and is refused as over the WAN. A node relays only while it
// follows the region over the WAN itself (a link, or a follower in
// fallback): never a copy it got from a relay, so no copy goes round.
//
// The hub keeps, per region, the copy last published and the subscribed
// followers; the puller's goroutine publishes into it, and each follower's
// handler goroutine writes what its buffered channel receives. A follower
// that falls a buffer behind is cut; it reconnects and starts from a
// snapshot.

import (
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/streamzip"
)

// relayState is a relay's state of a region, as its state events carry it.
type relayState struct {
	State  State `json:"state"`
	Loaded bool  `json:"loaded"`
	// AgeMs is the time since the relay's last success over the WAN, in
	// milliseconds (an age, not a time: the two clocks need not agree).
	AgeMs int64 `json:"ageMs"`
}

// relayBuffer is how many frames a follower may fall behind before it is
// cut.
const relayBuffer = 256

// relaySub is one follower of a relayed region.
type relaySub struct {
	ch     chan []byte
	synced bool // it got a snapshot: deltas follow
	dead   bool // ch is closed
}

// relayHub serves one region's copy to its followers.
type relayHub struct {
	f    *Federation
	mu   sync.Mutex
	open bool // this node follows the region over the WAN
	snap *regionSnap
	subs map[*relaySub]bool
	seq  uint64
}

func newRelayHub(f *Federation) *relayHub {
	return &relayHub{f: f, open: true, subs: map[*relaySub]bool{}}
}

// setOpen says whether this node may relay the region; closing cuts the
// followers. Once the federation's relays are closed (CloseRelays), the
// hub stays closed.
func (h *relayHub) setOpen(open bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open = open && !h.f.relaysClosed.Load()
	if !h.open {
		for s := range h.subs {
			h.cutLocked(s)
		}
	}
}

// cutLocked ends a follower's stream.
func (h *relayHub) cutLocked(s *relaySub) {
	if !s.dead {
		s.dead = true
		close(s.ch)
	}
	delete(h.subs, s)
}

// sendLocked queues frames for s, or cuts s when it fell behind.
func (h *relayHub) sendLocked(s *relaySub, frames ...[]byte) {
	for _, fr := range frames {
		select {
		case s.ch <- fr:
		default:
			h.cutLocked(s)
			return
		}
	}
}

// subscribe adds a follower and queues its first frames; nil, and why,
// when this node does not relay the region (yet).
func (h *relayHub) subscribe() (*relaySub, string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case !h.open:
		return nil, "this node does not hold the region's WAN link"
	case h.snap == nil:
		return nil, "this node holds the region's WAN link but has not loaded it yet"
	}
	s := &relaySub{ch: make(chan []byte, relayBuffer)}
	h.subs[s] = true
	h.sendLocked(s, h.stateFrame(h.snap))
	if servable(h.snap) {
		h.seq++
		h.sendLocked(s, h.snapshotFrame(h.snap))
		s.synced = true
	}
	return s, ""
}

// unsubscribe removes a follower whose stream ended.
func (h *relayHub) unsubscribe(s *relaySub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.cutLocked(s)
}

// servable reports whether a copy may be sent as a snapshot: loaded and
// fresh.
func servable(s *regionSnap) bool { return s.loaded && s.state == StateOK }

// update takes the region's newly published copy and sends each follower
// what it needs: a snapshot to those that have none yet (once the copy is
// ok), the difference to the others, and the state when it changed.
func (h *relayHub) update(s *regionSnap, changed bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	prev := h.snap
	h.snap = s
	if len(h.subs) == 0 || prev == nil {
		return
	}
	stateChanged := prev.state != s.state || prev.loaded != s.loaded
	var state, delta, snapshot []byte
	diffed := false
	for sub := range h.subs {
		switch {
		case !sub.synced && servable(s):
			if snapshot == nil {
				h.seq++
				state, snapshot = h.stateFrame(s), h.snapshotFrame(s)
			}
			h.sendLocked(sub, state, snapshot)
			sub.synced = true
		case sub.synced && changed:
			if !diffed {
				diffed = true
				h.seq++
				state, delta = h.stateFrame(s), h.deltaFrame(prev, s)
			}
			if len(delta) > 0 {
				h.sendLocked(sub, state, delta)
			} else if stateChanged {
				h.sendLocked(sub, state)
			}
		case stateChanged:
			if state == nil {
				state = h.stateFrame(s)
			}
			h.sendLocked(sub, state)
		}
	}
}

// keepAlive returns the state frame of the current copy.
func (h *relayHub) keepAlive() []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.stateFrame(h.snap)
}

// stateFrame is the state event of s.
func (h *relayHub) stateFrame(s *regionSnap) []byte {
	st := relayState{State: s.state, Loaded: s.loaded}
	if s.loaded {
		st.AgeMs = max(h.f.cfg.Now().Sub(s.lastOK).Milliseconds(), 0)
	}
	b, _ := json.Marshal(st)
	return sseFrame("state", "", b)
}

// snapshotFrame is the snapshot event of s: every served instance, with
// their apps__hashcode.
func (h *relayHub) snapshotFrame(s *regionSnap) []byte {
	enc := h.f.enc[view.FormatJSON]
	out := enc.AppendApplicationsOpen(nil, strconv.FormatUint(h.seq, 10), s.counts.String())
	for i, n := range s.names {
		if i > 0 {
			out = enc.AppendApplicationsSeparator(out)
		}
		out = enc.AppendApplication(out, n, s.apps[n].instances)
	}
	out = enc.AppendApplicationsClose(out)
	return sseFrame("snapshot", strconv.FormatUint(h.seq, 10), out)
}

// deltaFrame is the delta event from prev to s, nil when nothing served
// differs. Applications whose entry did not change are skipped without a
// look (snapshots share unchanged entries).
func (h *relayHub) deltaFrame(prev, s *regionSnap) []byte {
	m := &merged{apps: map[string][]*actors.Instance{}}
	seen := map[actors.Key]bool{}
	mark := func(in *actors.Instance, a actors.ActionType) {
		c := in.Clone()
		c.ActionType = a
		m.add(c, seen)
	}
	for n, e := range s.apps {
		pe := prev.apps[n]
		if pe == e {
			continue
		}
		old := map[string]*actors.Instance{}
		if pe != nil {
			for _, in := range pe.instances {
				old[in.ID()] = in
			}
		}
		for _, in := range e.instances {
			switch o, ok := old[in.ID()]; {
			case !ok:
				mark(in, actors.ActionAdded)
			case o != in && differs(o, in):
				mark(in, actors.ActionModified)
			}
			delete(old, in.ID())
		}
		for _, in := range old {
			mark(in, actors.ActionDeleted)
		}
	}
	for n, pe := range prev.apps {
		if _, ok := s.apps[n]; !ok {
			for _, in := range pe.instances {
				mark(in, actors.ActionDeleted)
			}
		}
	}
	if len(m.names) == 0 {
		return nil
	}
	sortStrings(m.names)
	v := strconv.FormatUint(h.seq, 10)
	return sseFrame("delta", v, finish(h.f.enc[view.FormatJSON], m, v, s.counts.String(), false))
}

// sseFrame is one Server-Sent Event.
func sseFrame(event, id string, data []byte) []byte {
	var b strings.Builder
	b.Grow(len(data) + 32)
	b.WriteString("event: ")
	b.WriteString(event)
	b.WriteByte('\n')
	if id != "" {
		b.WriteString("id: ")
		b.WriteString(id)
		b.WriteByte('\n')
	}
	for _, line := range strings.Split(string(data), "\n") {
		b.WriteString("data: ")
		b.WriteString(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return []byte(b.String())
}

// CloseRelays ends every relay stream this node serves and refuses new
// ones: for the HTTP server's shutdown, which waits for the requests in
// flight (node registers it with http.Server.RegisterOnShutdown). The
// followers turn to another relay, or to the WAN.
func (f *Federation) CloseRelays() {
	f.relaysClosed.Store(true)
	for _, p := range f.pullers {
		p.hub.setOpen(false)
	}
}

// ServeRelay serves GET /admin/regions/{region}/relay: this node's copy of
// region as a stream for the other nodes of its cluster (see the file
// comment). 404 for a region not followed, 503 while this node does not
// follow the region over the WAN (it is no relay then).
func (f *Federation) ServeRelay(w http.ResponseWriter, r *http.Request, region string) {
	var p *puller
	for _, q := range f.pullers {
		if q.remote.Name == region {
			p = q
		}
	}
	if p == nil {
		http.Error(w, "federation: no such remote region", http.StatusNotFound)
		return
	}
	sub, why := p.hub.subscribe()
	if sub == nil {
		http.Error(w, "federation: "+why, http.StatusServiceUnavailable)
		return
	}
	defer p.hub.unsubscribe(sub)
	ka := f.cfg.StaleAfter / 3
	if d, err := time.ParseDuration(r.URL.Query().Get("keepalive")); err == nil && d > 0 {
		ka = max(d, 10*time.Millisecond)
	}
	rc := http.NewResponseController(w)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	var out io.Writer = w
	flush := rc.Flush
	var zip *streamzip.Writer
	if streamzip.Asked(r) { // a follower of this release
		zip = streamzip.NewWriter() // nil beyond streamzip.MaxStreams: plain
	}
	if zip != nil { // each batch compressed, then flushed
		defer zip.Close()
		streamzip.SetResponse(w.Header())
		out = zip
		flush = func() error {
			if err := zip.FlushTo(w); err != nil {
				return err
			}
			return rc.Flush()
		}
	}
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(f.cfg.StreamIdleTimeout))
		if _, err := out.Write(b); err != nil {
			return false
		}
		return true
	}
	_ = rc.SetWriteDeadline(time.Now().Add(f.cfg.StreamIdleTimeout))
	if rc.Flush() != nil {
		return
	}
	t := time.NewTicker(ka)
	defer t.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case b, ok := <-sub.ch:
			if !ok || !write(b) {
				return
			}
			for more := true; more; { // write what is queued, then flush once
				select {
				case b, ok := <-sub.ch:
					if !ok || !write(b) {
						return
					}
				default:
					more = false
				}
			}
		case <-t.C:
			if !write(p.hub.keepAlive()) {
				return
			}
		}
		if flush() != nil {
			return
		}
	}
}
