package federation

// Pulling a remote region
//
// One goroutine per region, with its own ticker and a random initial
// stagger (so that the nodes of a cluster, which all pull, do not pull in
// step). Each tick is one pull: a full GET {url}apps/ while the region has
// not loaded, after a failed or dropped pull, or when a delta left the
// region's apps__hashcode different from the remote's; otherwise GET
// {url}apps/delta, applied and checked against the delta's apps__hashcode
// (a mismatch fetches in full at once, as Eureka's client does). Requests
// ask for JSON, accept gzip, identify as a Eureka server
// (DiscoveryIdentity-Name: DefaultServer, which Eureka's rate limiter
// exempts) and send a User-Agent that starts like Eureka's remote-region
// client's, Java-EurekaClient-RemoteRegion, by which a Heureka server
// knows a pull and answers it with local data only.
//
// After each attempt the state is judged: no success for StaleAfter →
// stale; for DropAfter → dropped (instances gone from every read, DELETED
// entries in the region's delta window). A hung remote cannot delay this
// by more than RequestTimeout.

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/internal/sabotage"
)

// localOnlyQuery asks a Java Eureka server for its local instances only.
// A Java server with transparent fallback on (its default) answers a plain
// GET apps/ with its remote regions too, among them this region's own
// instances when it pulls this region: served back here, a stale copy of a
// cancelled local instance would come back as a remote one. Asked for a
// region it does not know, it answers its local registry plus that region,
// which it skips: local only, with the hashcode and delta of that same
// set. A Heureka remote answers a pull with local data only anyway.
const localOnlyQuery = "?regions=heureka-local-only"

// UserAgent is what pulls send: the User-Agent of Eureka 1.x's
// remote-region client, by which (or by the DiscoveryIdentity-Name
// DefaultServer they also send) a Heureka server knows a pull and answers it
// with local data only (httpapi's isRegionPull).
const UserAgent = "Java-EurekaClient-RemoteRegion/heureka"

// puller pulls one region; it is the only writer of the region's state.
type puller struct {
	f        *Federation
	remote   Remote
	base     string
	st       *regionState
	needFull bool
	// logged is the state last logged: a change made where a pull or an
	// event succeeds (back to ok) is logged by the next judge too.
	logged  State
	metrics *regionMetrics
	// stream follows the remote's change stream (stream.go); nil without
	// Config.Stream or once the remote turned out to have none.
	stream *streamReader
	// streaming: the stream is connected; no polls meanwhile.
	streaming bool
	// hub serves this node's copy to the cluster's other nodes while it
	// follows the region over the WAN (relay.go).
	hub *relayHub

	// Where the region is followed from (links.go): src, and gen, which
	// numbers the stream reader's targets.
	src source
	gen uint64
	// relayBad holds the relays set aside, until when, and relayWhy why.
	relayBad map[string]time.Time
	relayWhy map[string]string
	// While following a relay: its last state, the last success over the
	// WAN it reported (in this node's clock), since when its state is not
	// ok, and whether its snapshot arrived (deltas apply after it only).
	relayState      State
	relayOK         time.Time
	relayNotOKSince time.Time
	relaySynced     bool

	// ctx is run's, for a poll started by a stream message.
	ctx context.Context
	// connecting: the WAN stream is being connected since connectSince and
	// has not answered yet; the puller does not poll meanwhile (the
	// stream's snapshot loads the region), unless that takes longer than
	// RequestTimeout.
	connecting   bool
	connectSince time.Time
	// streamSeen: the remote's stream was up once; unreachable: its last
	// attempt failed on the connection (no answer). Then the puller does
	// not poll: a poll would fail the same way, and once the WAN is back
	// the stream's repair costs what changed, where a poll after a failed
	// one fetches the whole registry.
	streamSeen  bool
	unreachable bool
	// repairFailed: the last repair left the copy's apps__hashcode other
	// than the remote's; the next connection takes a snapshot (no loop).
	repairFailed bool
}

// run pulls until ctx ends.
func (p *puller) run(ctx context.Context) {
	var msgs <-chan streamMsg
	if p.f.cfg.Stream || p.f.cfg.Members != nil { // a relay is a stream too
		p.stream = newStreamReader(p)
		msgs = p.stream.msgs
	}
	p.ctx = ctx
	p.route(p.f.cfg.Now()) // before the reader starts: a follower never dials the WAN for nothing
	if p.stream != nil {
		p.f.wg.Add(1)
		go func() {
			defer p.f.wg.Done()
			p.stream.run(ctx)
		}()
	}
	p.tick(ctx) // the first pull at once, unless the stream loads the region: reads wait for it (403)
	t := time.NewTimer(rand.N(p.f.cfg.PullInterval))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-msgs:
			p.onStream(m)
		case <-t.C:
			p.tick(ctx)
			t.Reset(p.f.cfg.PullInterval)
		}
	}
}

// route follows the region from where pick says: on a change, the
// stream reader gets its new target and this node relays the region only
// while it follows the WAN.
func (p *puller) route(now time.Time) {
	want, links := p.pick(now)
	p.st.links = links
	p.st.viaReason = p.viaReason(now, want, links)
	if want == p.src {
		return
	}
	from := p.src
	p.src = want
	p.st.via, p.st.relay = want.via, want.member
	p.streaming = false
	p.relaySynced, p.relayState, p.relayOK, p.relayNotOKSince = false, "", time.Time{}, time.Time{}
	p.gen++
	t := &streamTarget{gen: p.gen, url: p.base + "stream"}
	if want.via == ViaRelay {
		t.relay, t.member = true, want.member
		t.url = strings.TrimSuffix(p.f.memberURL(want.member), "/") + "/admin/regions/" + url.PathEscape(p.remote.Name) + "/relay"
		p.hub.setOpen(false)
	} else {
		p.needFull = from.via != "" // what a relay built, a full pull or a snapshot (or repair) replaces
		p.hub.setOpen(true)
		p.connecting, p.connectSince = p.wanStreams(), now
	}
	if p.stream != nil {
		p.stream.retarget(t)
	}
	if from.via != "" || want.via != ViaWAN || p.f.cfg.Members != nil {
		p.f.log.Info("region link", "region", p.remote.Name, "via", want.via, "relay", want.member, "links", links)
	}
}

// setRelayAside stops using the current relay for relayRetry (for a
// pull interval when it only does not relay the region yet) and follows
// the region from elsewhere.
func (p *puller) setRelayAside(now time.Time, why string, notYet bool) {
	retry := p.relayRetry()
	if notYet {
		retry = p.f.cfg.PullInterval
	}
	p.relayBad[p.src.member] = now.Add(retry)
	p.relayWhy[p.src.member] = why
	p.f.log.Info("relay set aside", "region", p.remote.Name, "relay", p.src.member, "why", why)
	p.route(now)
}

// viaReason says why want is the WAN though this node is no link
// (Status.ViaReason); "" otherwise.
func (p *puller) viaReason(now time.Time, want source, links []string) string {
	if want.via != ViaFallback {
		return ""
	}
	if p.f.relaysBlocked() {
		return reasonNoSharedKey
	}
	var why []string
	for _, l := range links {
		switch {
		case p.relayBad[l].After(now):
			why = append(why, "relay "+l+" set aside for "+p.relayBad[l].Sub(now).Round(time.Second).String()+": "+p.relayWhy[l])
		case p.f.memberURL(l) == "":
			why = append(why, "relay "+l+": no known HTTP address")
		}
	}
	return strings.Join(why, "; ")
}

// relayRetry is how long a relay that failed is set aside: StaleAfter, at
// least four pulls.
func (p *puller) relayRetry() time.Duration {
	return max(p.f.cfg.StaleAfter, 4*p.f.cfg.PullInterval)
}

// tick polls (unless the stream is up) and judges the region.
func (p *puller) tick(ctx context.Context) {
	p.route(p.f.cfg.Now())
	if p.src.via == ViaRelay {
		p.tickRelay(p.f.cfg.Now())
		return
	}
	if p.streaming {
		// Liveness is the stream's activity (stream.go).
		now := p.f.cfg.Now()
		act := time.Unix(0, p.stream.lastActivity.Load())
		if now.Sub(act) > p.f.cfg.StreamIdleTimeout {
			p.f.log.Debug("stream idle: reconnecting", "region", p.remote.Name, "idle", now.Sub(act))
			p.stream.kick(true)
		} else if p.st.loaded && !p.needFull && act.After(p.st.lastOK) {
			// (With needFull, only a snapshot revives the region.)
			p.st.lastOK = act
			p.st.state = StateOK
		}
		p.judge(now)
		return
	}
	now := p.f.cfg.Now()
	if p.wanStreams() {
		switch {
		case p.connecting && now.Sub(p.connectSince) < p.f.cfg.RequestTimeout:
			// The stream's snapshot loads the region: no full poll beside it.
			p.judge(now)
			return
		case p.streamSeen && p.unreachable && p.st.loaded && !sabotage.On(sabotage.RepairBySnapshot):
			// The remote does not answer: the stream's reconnection
			// repairs the copy once it does.
			p.judge(now)
			return
		}
	}
	if p.stream != nil {
		p.stream.resume.Store(false) // what a poll builds, a snapshot (or repair) replaces
	}
	if err := p.pull(ctx, now); err != nil {
		p.st.lastErr = err.Error()
		p.needFull = true
		p.f.log.Debug("pull failed", "region", p.remote.Name, "err", err)
	} else {
		p.succeeded(p.f.cfg.Now())
	}
	p.judge(p.f.cfg.Now())
}

// wanStreams reports whether the region is to be followed by the
// remote's stream over the WAN: Config.Stream, a remote that has one, and
// not through a relay.
func (p *puller) wanStreams() bool {
	return p.stream != nil && p.f.cfg.Stream && p.src.via != ViaRelay && !p.stream.noStream.Load()
}

// digestBody is the digest of the copy a reconnection sends for a repair
// (appdigest's wire form); nil for a snapshot instead: nothing loaded or
// kept (dropped, empty), or the last repair failed.
func (p *puller) digestBody() []byte {
	if sabotage.On(sabotage.RepairBySnapshot) || p.src.via == ViaRelay || !p.st.loaded ||
		p.st.state == StateDropped || len(p.st.raw) == 0 || p.repairFailed {
		return nil
	}
	return p.st.digest().Encode()
}

// succeeded records a successful pull or stream event at now.
func (p *puller) succeeded(now time.Time) {
	p.st.lastErr = ""
	p.st.lastOK = now
	p.st.loaded = true
	p.st.state = StateOK
}

// tickRelay watches the relay's stream and judges the region.
func (p *puller) tickRelay(now time.Time) {
	if p.streaming {
		act := time.Unix(0, p.stream.lastActivity.Load())
		switch {
		case now.Sub(act) > p.f.cfg.StreamIdleTimeout:
			p.f.log.Debug("relay idle: reconnecting", "region", p.remote.Name, "relay", p.src.member, "idle", now.Sub(act))
			p.stream.kick(false)
		case !p.relayNotOKSince.IsZero() && now.Sub(p.relayNotOKSince) > p.f.cfg.StaleAfter:
			p.setRelayAside(now, "its copy stayed "+string(p.relayState), false)
		}
	}
	p.judge(now)
}

// onRelay applies what the stream reader learnt from a relay.
func (p *puller) onRelay(m streamMsg) {
	now := p.f.cfg.Now()
	switch m.kind {
	case "up":
		p.streaming, p.relaySynced = true, false
		p.f.log.Debug("relay connected", "region", p.remote.Name, "relay", p.src.member)
	case "down":
		p.streaming = false
		why := "its stream broke"
		if m.err != nil {
			p.st.lastErr = "relay " + p.src.member + ": " + m.err.Error()
			why += ": " + m.err.Error()
		}
		p.setRelayAside(now, why, errors.Is(m.err, errRelayNotYet))
	case "state":
		p.relayState = m.state.State
		if m.state.Loaded {
			p.relayOK = now.Add(-time.Duration(m.state.AgeMs) * time.Millisecond)
		}
		switch {
		case p.relayState == StateOK:
			p.relayNotOKSince = time.Time{}
			if p.relaySynced && p.st.loaded && !p.needFull && p.relayOK.After(p.st.lastOK) {
				p.st.lastOK = p.relayOK
				p.st.state = StateOK
			}
		case p.relayNotOKSince.IsZero():
			p.relayNotOKSince = now
		}
	case "snapshot":
		p.st.replace(p.fromRelay(m.doc.instances), now)
		p.needFull = false
		p.relaySynced = true
		p.metrics.pull("relay-snapshot", "ok")
		p.relaySucceeded()
	case "delta":
		if !p.relaySynced {
			return
		}
		p.st.apply(p.fromRelay(m.doc.instances), now)
		if p.st.hashcode() != m.doc.hashcode {
			p.metrics.pull("relay-delta", "mismatch")
			p.stream.kick(false) // reconnect for a snapshot
		} else {
			p.metrics.pull("relay-delta", "ok")
			// This copy is the relay's again (after a drop, its deltas
			// rebuilt it): the relay's keep-alives freshen it from now
			// on, as after a snapshot. Kept waiting for a snapshot that
			// never comes, a quiet region went stale and dropped again.
			p.needFull = p.needFull && sabotage.On(sabotage.RelayHealNotRevived)
		}
		p.relaySucceeded()
	}
	p.judge(now)
}

// relaySucceeded records a relayed snapshot or delta: the region is as
// fresh as the relay said.
func (p *puller) relaySucceeded() {
	p.st.lastErr = ""
	p.st.loaded = true
	if p.relayOK.After(p.st.lastOK) {
		p.st.lastOK = p.relayOK
	}
	if p.st.state != StateDropped || p.f.cfg.Now().Sub(p.st.lastOK) <= p.f.cfg.DropAfter {
		// judge ages it by lastOK; a copy dropped with its relay's
		// (the relay's delta that deletes every instance) stays dropped.
		p.st.state = StateOK
	}
}

// fromRelay accepts relayed instances as the region's: the marker that
// names the followed region is what a relay sends, and is taken off (the
// served copy is marked again); any other marker stays, and the instance
// is refused as an echo (regionState.serve).
func (p *puller) fromRelay(insts []*actors.Instance) []*actors.Instance {
	if sabotage.On(sabotage.RelayedCopyRefused) {
		return insts
	}
	for _, in := range insts {
		if in.Metadata[MarkerKey] == p.remote.Name {
			// A copy: the decoder may share metadata maps between
			// instances (and between nodes in one process).
			m := maps.Clone(in.Metadata)
			delete(m, MarkerKey)
			in.Metadata = m
		}
	}
	return insts
}

// onStream applies what the stream reader learnt.
func (p *puller) onStream(m streamMsg) {
	if m.kind == "digest" {
		var b []byte
		if m.gen == p.gen {
			b = p.digestBody()
		}
		m.reply <- b // buffered
		return
	}
	if m.gen != p.gen {
		return // from a former target
	}
	if p.src.via == ViaRelay {
		p.onRelay(m)
		return
	}
	now := p.f.cfg.Now()
	switch m.kind {
	case "up":
		p.streaming, p.connecting, p.streamSeen, p.unreachable = true, false, true, false
		p.f.log.Debug("stream connected", "region", p.remote.Name)
	case "down", "unsupported":
		p.streaming, p.connecting = false, false
		p.unreachable = m.unreachable
		if m.kind == "unsupported" {
			p.f.log.Info("remote has no change stream: polling", "region", p.remote.Name)
		} else {
			p.f.log.Debug("stream broke", "region", p.remote.Name, "err", m.err)
		}
		if !p.st.loaded {
			p.tick(p.ctx) // the first load by a poll, at once
		}
		return
	case "snapshot":
		p.st.replace(m.doc.instances, now)
		p.needFull, p.repairFailed = false, false
		p.metrics.pull("stream-snapshot", "ok")
		p.succeeded(now)
	case "repair":
		// Only the applications that differed, and those removed
		// (docs/push.md): the copy is then the remote's, checked by its
		// apps__hashcode; a mismatch takes a snapshot, not another repair.
		p.st.repair(m.doc.instances, m.doc.removed, now)
		if p.st.hashcode() != m.doc.hashcode {
			p.metrics.pull("stream-repair", "mismatch")
			p.f.log.Info("repair left the region unlike the remote: snapshot", "region", p.remote.Name,
				"hashcode", p.st.hashcode(), "remote", m.doc.hashcode)
			p.repairFailed = true
			p.stream.kick(false)
		} else {
			p.metrics.pull("stream-repair", "ok")
			p.needFull, p.repairFailed = false, false
		}
		p.succeeded(now)
	case "delta":
		p.st.apply(m.doc.instances, now)
		if p.st.hashcode() != m.doc.hashcode {
			p.metrics.pull("stream-delta", "mismatch")
			p.stream.kick(false) // reconnect for a snapshot
		} else {
			p.metrics.pull("stream-delta", "ok")
		}
		p.succeeded(now)
	}
	p.judge(now)
}

// judge marks the region stale or dropped by the time since its last
// success, prunes the delta window and publishes the region.
func (p *puller) judge(now time.Time) {
	before := p.st.state
	if p.st.loaded {
		age := now.Sub(p.st.lastOK)
		switch {
		case age > p.f.cfg.DropAfter && !p.relayHoldsCopy():
			if p.st.state != StateDropped {
				p.st.state = StateDropped
				p.st.replace(nil, now)
				p.needFull = true
				if p.streaming && (p.src.via != ViaRelay || sabotage.On(sabotage.RelayStreamCutOnDrop)) {
					// The copy is gone: a connection that comes back to
					// life (a WAN cut shorter than StreamIdleTimeout)
					// would revive the region empty. Reconnect for a
					// snapshot. Not a relay's stream: the relay has
					// dropped its copy too (relayHoldsCopy), its deltas
					// keep this copy equal to its own, and it sends what
					// it loads again; cutting it made the reconnection
					// fail and set the relay aside, so every relayed node
					// followed the WAN for the stale bound after a cut
					// (netns datacenter runs).
					p.stream.kick(false)
				}
			}
		case age > p.f.cfg.StaleAfter && p.st.state != StateDropped:
			p.st.state = StateStale
		}
	}
	// Whatever changed the copy since the last publication (a delta, a
	// full fetch, a snapshot, a repair, the drop above) is taken from the
	// copy itself, not from the step that ran last: a delta whose
	// apps__hashcode mismatches is followed by a full fetch that finds
	// nothing more, and its change must still reach the served documents
	// and the relay's followers.
	changed := p.st.takeChanged()
	if p.st.prune(now, p.f.cfg.DeltaRetention) {
		changed = true
	}
	if p.st.state != before {
		changed = true
	}
	if p.st.state != p.logged {
		p.f.log.Info("region state", "region", p.remote.Name, "from", p.logged, "to", p.st.state, "lastErr", p.st.lastErr)
		p.logged = p.st.state
	}
	snap := p.st.snapshot()
	p.f.publish(p.remote.Name, snap, changed)
	p.hub.update(snap, changed)
}

// relayHoldsCopy reports whether this node follows a relay that still
// holds its copy of the region: connected, synced, and the relay's last
// state not dropped. The node then drops its own copy when the relay says
// it dropped (its state event, then the delta that deletes every
// instance), not on its own tick a moment before: a heal in between would
// bring the relay back to ok with the copy it kept, which it does not
// send again, and leave this node empty until the next remote change.
// Meanwhile the region shows stale; a relay that stays other than ok for
// StaleAfter is set aside (tickRelay), and the WAN judges on its own.
func (p *puller) relayHoldsCopy() bool {
	if sabotage.On(sabotage.RelayFollowerDropsAhead) {
		return false
	}
	return p.src.via == ViaRelay && p.streaming && p.relaySynced && p.relayState != StateDropped
}

// pull fetches the delta or the full registry and applies it to the
// copy (judge publishes what changed).
func (p *puller) pull(ctx context.Context, now time.Time) error {
	if !p.needFull && p.st.loaded && p.st.state != StateDropped && p.st.state != StateStale {
		d, err := p.get(ctx, "apps/delta"+localOnlyQuery)
		if err != nil {
			p.metrics.pull("delta", "error")
			return err
		}
		p.st.apply(d.instances, now)
		if h := p.st.hashcode(); h == d.hashcode {
			p.metrics.pull("delta", "ok")
			return nil
		}
		p.metrics.pull("delta", "mismatch")
		if sabotage.On(sabotage.DeltaForgottenByFullFetch) {
			p.st.takeChanged() // as before: the full fetch's own report decided
		}
	}
	d, err := p.get(ctx, "apps/"+localOnlyQuery)
	if err != nil {
		p.metrics.pull("full", "error")
		return err
	}
	p.metrics.pull("full", "ok")
	p.needFull = false
	p.st.replace(d.instances, now)
	return nil
}

// get fetches and decodes one applications document.
func (p *puller) get(ctx context.Context, path string) (*document, error) {
	ctx, cancel := context.WithTimeout(ctx, p.f.cfg.RequestTimeout)
	defer cancel()
	echo := sabotage.On(sabotage.RemoteEchoOverwritesLocal)
	if echo {
		path = strings.TrimSuffix(path, localOnlyQuery) // a Java remote's fallback answers every region
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("federation: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	// Asked for here, not by Go's transport, so that the body is read as
	// it came (heureka_region_received_bytes_total) and inflated below.
	req.Header.Set("Accept-Encoding", "gzip")
	if !echo { // the sabotaged pull looks like any client's read: the remote re-exports
		req.Header.Set("User-Agent", UserAgent)
		req.Header.Set("DiscoveryIdentity-Name", "DefaultServer")
		req.Header.Set("DiscoveryIdentity-Version", "1.0")
	}
	res, err := p.f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("federation: GET %s: %w", req.URL.Redacted(), err)
	}
	defer res.Body.Close()
	var src io.Reader = p.metrics.counted(fromWAN, res.Body)
	if strings.EqualFold(res.Header.Get("Content-Encoding"), "gzip") {
		zr, err := gzip.NewReader(src)
		if err != nil {
			return nil, fmt.Errorf("federation: GET %s: %w", req.URL.Redacted(), err)
		}
		src = zr
	}
	body, err := io.ReadAll(src)
	if err != nil {
		return nil, fmt.Errorf("federation: GET %s: reading: %w", req.URL.Redacted(), err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("federation: GET %s: %s", req.URL.Redacted(), res.Status)
	}
	return decodeApps(body)
}
