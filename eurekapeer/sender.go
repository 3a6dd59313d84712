package eurekapeer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
)

// The Eureka replication actions, as Java's ReplicationInstance spells them.
const (
	actionRegister       = "Register"
	actionHeartbeat      = "Heartbeat"
	actionCancel         = "Cancel"
	actionStatusUpdate   = "StatusUpdate"
	actionDeleteOverride = "DeleteStatusOverride"
)

// replicationHeader marks a request as a peer's, so that the Eureka server
// applies it as a replica and does not replicate it further.
const replicationHeader = "x-netflix-discovery-replication"

// Sender replicates this node's client changes to Eureka peers. Its methods
// are safe for concurrent use and never block on I/O.
type Sender struct {
	cfg    Config
	log    *slog.Logger
	peers  []*peer
	closed atomic.Bool

	stop      chan struct{} // closed by Close: flush once more and exit
	baseCtx   context.Context
	cancelAll context.CancelFunc // aborts in-flight requests
	wg        sync.WaitGroup
	closeOnce sync.Once
}

// peer is one Eureka server: its queue, its goroutine's state and counters.
type peer struct {
	url   *url.URL // with a trailing slash, without user info
	user  *url.Userinfo
	name  string // url as logged and labelled
	q     *queue
	kick  chan struct{}
	stats peerCounters
}

// peerCounters are a peer's cumulative figures.
type peerCounters struct {
	batches, failed            atomic.Uint64
	sent                       [5]atomic.Uint64 // by action, in actionIndex order
	reregistered, conflicts    atomic.Uint64
	itemErrors, itemsAbandoned atomic.Uint64
}

var actions = [...]string{actionRegister, actionHeartbeat, actionCancel, actionStatusUpdate, actionDeleteOverride}

func actionIndex(a string) int {
	for i, x := range actions {
		if x == a {
			return i
		}
	}
	return 0
}

// PeerStats are one peer's figures (Sender.Stats).
type PeerStats struct {
	// Peer is the peer's service URL, without credentials.
	Peer string
	// Pending is the number of instances with changes still to send.
	Pending int
	// Dropped counts changes refused because the queue was full.
	Dropped uint64
	// Batches counts requests answered with 200; Failed those that were
	// not (transport error, other status, unreadable reply).
	Batches, Failed uint64
	// Sent counts the items delivered, by action (Register, Heartbeat,
	// Cancel, StatusUpdate, DeleteStatusOverride).
	Sent map[string]uint64
	// Reregistered counts 404 replies answered with a registration;
	// Conflicts the 409 replies whose newer copy was installed here.
	Reregistered, Conflicts uint64
	// ItemErrors counts items answered with an error status (retried on
	// 5xx, given up on other 4xx: ItemsAbandoned).
	ItemErrors, ItemsAbandoned uint64
}

// New starts a Sender: one goroutine per peer, until Close.
func New(cfg Config) (*Sender, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{Timeout: cfg.Timeout}
	}
	s := &Sender{cfg: cfg, log: cfg.Logger.With("component", "eurekapeer"), stop: make(chan struct{})}
	s.baseCtx, s.cancelAll = context.WithCancel(context.Background())
	for _, raw := range cfg.Peers {
		u, _ := ParsePeerURL(raw) // checked by Validate
		p := &peer{url: u, user: u.User, q: newQueue(cfg.MaxPending), kick: make(chan struct{}, 1)}
		clean := *u
		clean.User = nil
		p.url = &clean
		p.name = clean.String()
		s.peers = append(s.peers, p)
	}
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(newCollector(s)); err != nil {
			s.cancelAll()
			return nil, fmt.Errorf("eurekapeer: metrics: %w", err)
		}
	}
	for _, p := range s.peers {
		s.wg.Add(1)
		go s.run(p)
	}
	s.log.Info("replicating client changes to Eureka peers", "peers", len(s.peers))
	return s, nil
}

// Registered notes that a client registered (or re-registered) an instance,
// or changed its metadata.
func (s *Sender) Registered(app, id string) { s.note(app, id, pending{register: true}) }

// Renewed notes a client's successful renewal.
func (s *Sender) Renewed(app, id string) { s.note(app, id, pending{heartbeat: true}) }

// Cancelled notes a client's cancel.
func (s *Sender) Cancelled(app, id string) { s.note(app, id, pending{cancel: true}) }

// StatusUpdated notes a status override set to st.
func (s *Sender) StatusUpdated(app, id string, st actors.Status) {
	s.note(app, id, pending{status: &statusOp{status: st}})
}

// OverrideDeleted notes a status override removed, the status becoming st
// ("" or UNKNOWN: the peer decides).
func (s *Sender) OverrideDeleted(app, id string, st actors.Status) {
	s.note(app, id, pending{status: &statusOp{status: st, delete: true}})
}

func (s *Sender) note(app, id string, n pending) {
	if s.closed.Load() {
		return
	}
	k := actors.Key{App: app, ID: id}
	for _, p := range s.peers {
		if size, ok := p.q.add(k, n); ok && size >= s.cfg.BatchSize {
			select {
			case p.kick <- struct{}{}:
			default:
			}
		}
	}
}

// Stats returns every peer's figures, in the order of Config.Peers.
func (s *Sender) Stats() []PeerStats {
	out := make([]PeerStats, 0, len(s.peers))
	for _, p := range s.peers {
		ps := PeerStats{
			Peer: p.name, Pending: p.q.len(), Dropped: p.q.droppedCount(),
			Batches: p.stats.batches.Load(), Failed: p.stats.failed.Load(), Sent: map[string]uint64{},
			Reregistered: p.stats.reregistered.Load(), Conflicts: p.stats.conflicts.Load(),
			ItemErrors: p.stats.itemErrors.Load(), ItemsAbandoned: p.stats.itemsAbandoned.Load(),
		}
		for i, a := range actions {
			ps.Sent[a] = p.stats.sent[i].Load()
		}
		out = append(out, ps)
	}
	return out
}

// Close stops taking changes, sends what is pending once more within ctx,
// aborts what is still in flight when ctx ends, and returns once every
// goroutine has stopped. It is idempotent.
func (s *Sender) Close(ctx context.Context) error {
	var err error
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		close(s.stop)
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			err = ctx.Err()
			s.cancelAll()
			<-done
		}
		s.cancelAll()
		left := 0
		for _, p := range s.peers {
			left += p.q.len()
		}
		if left > 0 {
			s.log.Warn("stopped with changes not sent to Eureka peers", "instances", left)
		}
	})
	return err
}

// run is a peer's goroutine: flush on the interval or when kicked, back off
// after failures, flush once more on Close.
func (s *Sender) run(p *peer) {
	defer s.wg.Done()
	failures := 0
	// A random initial stagger so that peers (and nodes) do not send in step.
	timer := time.NewTimer(time.Duration(rand.Int64N(int64(s.cfg.FlushInterval)) + 1))
	defer timer.Stop()
	for {
		kicked := false
		select {
		case <-s.stop:
			s.flush(s.baseCtx, p)
			return
		case <-timer.C:
		case <-p.kick:
			kicked = true
		}
		if kicked && failures > 0 {
			continue // backing off: the timer decides
		}
		if s.flush(s.baseCtx, p) {
			failures = 0
		} else {
			failures++
		}
		if !timer.Stop() {
			select {
			case <-timer.C:
			default:
			}
		}
		timer.Reset(s.delay(failures))
	}
}

// delay is the wait before the next flush: FlushInterval, doubled per
// consecutive failure up to MaxBackoff, with ±20% jitter on backoffs.
func (s *Sender) delay(failures int) time.Duration {
	if failures == 0 {
		return s.cfg.FlushInterval
	}
	d := s.cfg.FlushInterval << min(failures, 20)
	if d <= 0 || d > s.cfg.MaxBackoff {
		d = s.cfg.MaxBackoff
	}
	return d - d/5 + time.Duration(rand.Int64N(int64(d/5)*2+1))
}

// flush sends the peer's queue in batches; it reports
// false when a request failed (what was taken is back in the queue).
func (s *Sender) flush(ctx context.Context, p *peer) bool {
	// Bounded by what was pending at the start: what the replies requeue
	// (a registration after a 404, a retried item) waits for the next
	// flush, so a peer that keeps failing items cannot spin this loop.
	for rounds := p.q.len()/s.cfg.BatchSize + 1; rounds > 0 && p.q.len() > 0; rounds-- {
		if ctx.Err() != nil {
			return false
		}
		if !s.sendBatch(ctx, p, p.q.take(s.cfg.BatchSize)) {
			return false
		}
	}
	return true
}

// wireItem is Java's ReplicationInstance.
type wireItem struct {
	AppName            string          `json:"appName"`
	ID                 string          `json:"id"`
	LastDirtyTimestamp *int64          `json:"lastDirtyTimestamp,omitempty"`
	OverriddenStatus   string          `json:"overriddenStatus,omitempty"`
	Status             string          `json:"status,omitempty"`
	InstanceInfo       json.RawMessage `json:"instanceInfo,omitempty"`
	Action             string          `json:"action"`
}

// wireReply is Java's ReplicationInstanceResponse.
type wireReply struct {
	StatusCode     int             `json:"statusCode"`
	ResponseEntity json.RawMessage `json:"responseEntity"`
}

// sent remembers which entry an item came from, to requeue it.
type sent struct {
	key  actors.Key
	item wireItem
	op   pending // the part of the entry this item carries
	inst *actors.Instance
}

// build turns pending entries into items, reading each live instance's
// current state from the registry.
func (s *Sender) build(ctx context.Context, p *peer, entries map[actors.Key]pending) []sent {
	out := make([]sent, 0, len(entries))
	for k, e := range entries {
		if e.cancel {
			out = append(out, sent{key: k, op: e, item: wireItem{AppName: k.App, ID: k.ID, Action: actionCancel}})
			continue
		}
		inst, expired, ok, err := s.cfg.Registry.Get(ctx, k.App, k.ID)
		if err != nil {
			p.q.requeue(k, e) // the registry is closing or busy: later
			continue
		}
		if !ok || expired {
			continue // cancelled (its cancel is queued) or evicted: nothing to renew
		}
		dirty := inst.LastDirtyTimestamp
		base := wireItem{AppName: k.App, ID: k.ID, LastDirtyTimestamp: &dirty, Status: string(inst.Status)}
		if inst.OverriddenStatus != "" && inst.OverriddenStatus != actors.StatusUnknown {
			base.OverriddenStatus = string(inst.OverriddenStatus)
		}
		switch {
		case e.register:
			it := base
			it.Action = actionRegister
			it.InstanceInfo = instanceJSON(inst)
			out = append(out, sent{key: k, op: pending{register: true}, item: it, inst: inst})
		case e.heartbeat:
			it := base
			it.Action = actionHeartbeat
			out = append(out, sent{key: k, op: pending{heartbeat: true}, item: it, inst: inst})
		}
		if e.status != nil {
			it := base
			it.OverriddenStatus = ""
			it.Status = string(e.status.status)
			it.Action = actionStatusUpdate
			if e.status.delete {
				it.Action = actionDeleteOverride
				if e.status.status == actors.StatusUnknown {
					it.Status = ""
				}
			}
			out = append(out, sent{key: k, op: pending{status: e.status}, item: it, inst: inst})
		}
	}
	return out
}

// instanceJSON is the instance as Java's InstanceInfo JSON, unwrapped.
func instanceJSON(inst *actors.Instance) json.RawMessage {
	doc := eureka.AppendInstanceDocument(nil, view.FormatJSON, inst) // {"instance":{…}}
	return json.RawMessage(doc[len(`{"instance":`) : len(doc)-1])
}

// sendBatch sends one batch and handles the replies; false when the request
// failed as a whole (every item is requeued).
func (s *Sender) sendBatch(ctx context.Context, p *peer, entries map[actors.Key]pending) bool {
	items := s.build(ctx, p, entries)
	if len(items) == 0 {
		return true
	}
	replies, err := s.post(ctx, p, items)
	if err != nil {
		p.stats.failed.Add(1)
		for _, it := range items {
			p.q.requeue(it.key, it.op)
		}
		if ctx.Err() == nil {
			s.log.Warn("replication batch to Eureka peer failed", "peer", p.name, "items", len(items), "err", err)
		}
		return false
	}
	p.stats.batches.Add(1)
	for i, it := range items {
		s.reply(ctx, p, it, replies[i])
	}
	return true
}

// reply reacts to one item's reply as a Java peer does.
func (s *Sender) reply(ctx context.Context, p *peer, it sent, r wireReply) {
	switch code := r.StatusCode; {
	case code >= 200 && code < 300:
		p.stats.sent[actionIndex(it.item.Action)].Add(1)
	case code == http.StatusNotFound:
		switch it.item.Action {
		case actionHeartbeat, actionStatusUpdate, actionDeleteOverride:
			// The peer lost or never had the instance (or holds an
			// older copy): send it, as Java's heartbeat task does.
			p.stats.reregistered.Add(1)
			p.q.requeue(it.key, pending{register: true})
			s.log.Debug("Eureka peer does not know the instance; registering it", "peer", p.name, "app", it.key.App, "id", it.key.ID)
		default:
			p.stats.sent[actionIndex(it.item.Action)].Add(1) // a cancel of what is gone: done
		}
	case code == http.StatusConflict && it.item.Action == actionHeartbeat:
		// The peer holds a newer copy (Java's
		// syncInstancesIfTimestampDiffers): take it, as a replica.
		p.stats.conflicts.Add(1)
		if len(r.ResponseEntity) == 0 || string(r.ResponseEntity) == "null" {
			return
		}
		theirs, err := eureka.DecodeInstance("application/json", r.ResponseEntity)
		if err != nil {
			s.log.Warn("unreadable instance in a Eureka peer's 409", "peer", p.name, "err", err)
			return
		}
		theirs.Normalize()
		if it.inst != nil && theirs.LastDirtyTimestamp > it.inst.LastDirtyTimestamp && theirs.Key() == it.key {
			if err := s.cfg.Registry.Register(ctx, theirs, true); err != nil {
				s.log.Warn("installing a Eureka peer's newer copy", "peer", p.name, "err", err)
			}
		}
	case code >= 500:
		p.stats.itemErrors.Add(1)
		p.q.requeue(it.key, it.op)
	default:
		p.stats.itemErrors.Add(1)
		p.stats.itemsAbandoned.Add(1)
		s.log.Warn("Eureka peer refused a replication item", "peer", p.name, "action", it.item.Action,
			"app", it.key.App, "id", it.key.ID, "status", code)
	}
}

// post sends the ReplicationList and decodes the ReplicationListResponse.
func (s *Sender) post(ctx context.Context, p *peer, items []sent) ([]wireReply, error) {
	list := struct {
		ReplicationList []wireItem `json:"replicationList"`
	}{make([]wireItem, len(items))}
	for i := range items {
		list.ReplicationList[i] = items[i].item
	}
	body, err := json.Marshal(list)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.url.String()+"peerreplication/batch", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set(replicationHeader, "true")
	if p.user != nil {
		pw, _ := p.user.Password()
		req.SetBasicAuth(p.user.Username(), pw)
	}
	resp, err := s.cfg.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("reading the reply: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("status %d: %.200s", resp.StatusCode, data)
	}
	var out struct {
		ResponseList []wireReply `json:"responseList"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return nil, fmt.Errorf("unreadable reply: %w", err)
	}
	if len(out.ResponseList) != len(items) {
		return nil, errors.New("reply has " + fmt.Sprint(len(out.ResponseList)) + " entries for " + fmt.Sprint(len(items)) + " items")
	}
	return out.ResponseList, nil
}
