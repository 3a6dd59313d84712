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
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"time"

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
	metrics  *regionMetrics
	// stream follows the remote's change stream (stream.go); nil without
	// Config.Stream or once the remote turned out to have none.
	stream *streamReader
	// streaming: the stream is connected; no polls meanwhile.
	streaming bool
}

// run pulls until ctx ends.
func (p *puller) run(ctx context.Context) {
	var msgs <-chan streamMsg
	if p.f.cfg.Stream {
		p.stream = newStreamReader(p)
		msgs = p.stream.msgs
		p.f.wg.Add(1)
		go func() {
			defer p.f.wg.Done()
			p.stream.run(ctx)
		}()
	}
	p.tick(ctx) // the first pull at once: reads wait for it (403)
	t := time.NewTimer(rand.N(p.f.cfg.PullInterval))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case m := <-msgs:
			if m.kind == "unsupported" {
				msgs, p.stream = nil, nil
			}
			p.onStream(m)
		case <-t.C:
			p.tick(ctx)
			t.Reset(p.f.cfg.PullInterval)
		}
	}
}

// tick polls (unless the stream is up) and judges the region.
func (p *puller) tick(ctx context.Context) {
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
		p.judge(now, false)
		return
	}
	if p.stream != nil {
		p.stream.resume.Store(false) // what a poll builds, a snapshot replaces
	}
	now := p.f.cfg.Now()
	changed, err := p.pull(ctx, now)
	if err != nil {
		p.st.lastErr = err.Error()
		p.needFull = true
		p.f.log.Debug("pull failed", "region", p.remote.Name, "err", err)
	} else {
		p.succeeded(p.f.cfg.Now())
	}
	p.judge(p.f.cfg.Now(), changed)
}

// succeeded records a successful pull or stream event at now.
func (p *puller) succeeded(now time.Time) {
	p.st.lastErr = ""
	p.st.lastOK = now
	p.st.loaded = true
	p.st.state = StateOK
}

// onStream applies what the stream reader learnt.
func (p *puller) onStream(m streamMsg) {
	now := p.f.cfg.Now()
	changed := false
	switch m.kind {
	case "up":
		p.streaming = true
		p.f.log.Debug("stream connected", "region", p.remote.Name)
	case "down", "unsupported":
		p.streaming = false
		if m.kind == "unsupported" {
			p.f.log.Info("remote has no change stream: polling", "region", p.remote.Name)
		} else {
			p.f.log.Debug("stream broke", "region", p.remote.Name, "err", m.err)
		}
		return
	case "snapshot":
		changed = p.st.replace(m.doc.instances, now)
		p.needFull = false
		p.metrics.pull("stream-snapshot", "ok")
		p.succeeded(now)
	case "delta":
		changed = p.st.apply(m.doc.instances, now)
		if p.st.hashcode() != m.doc.hashcode {
			p.metrics.pull("stream-delta", "mismatch")
			p.stream.kick(false) // reconnect for a snapshot
		} else {
			p.metrics.pull("stream-delta", "ok")
		}
		p.succeeded(now)
	}
	p.judge(now, changed)
}

// judge marks the region stale or dropped by the time since its last
// success, prunes the delta window and publishes the region.
func (p *puller) judge(now time.Time, changed bool) {
	before := p.st.state
	if p.st.loaded {
		age := now.Sub(p.st.lastOK)
		switch {
		case age > p.f.cfg.DropAfter:
			if p.st.state != StateDropped {
				p.st.state = StateDropped
				p.st.replace(nil, now)
				changed = true
				p.needFull = true
				if p.streaming {
					// The copy is gone: a connection that comes back to
					// life (a WAN cut shorter than StreamIdleTimeout)
					// would revive the region empty. Reconnect for a
					// snapshot.
					p.stream.kick(false)
				}
			}
		case age > p.f.cfg.StaleAfter:
			p.st.state = StateStale
		}
	}
	if p.st.prune(now, p.f.cfg.DeltaRetention) {
		changed = true
	}
	if p.st.state != before {
		changed = true
		p.f.log.Info("region state", "region", p.remote.Name, "from", before, "to", p.st.state, "lastErr", p.st.lastErr)
	}
	p.f.publish(p.remote.Name, p.st.snapshot(), changed)
}

// pull fetches the delta or the full registry and applies it; it reports
// whether the region changed.
func (p *puller) pull(ctx context.Context, now time.Time) (bool, error) {
	if !p.needFull && p.st.loaded && p.st.state != StateDropped && p.st.state != StateStale {
		d, err := p.get(ctx, "apps/delta"+localOnlyQuery)
		if err != nil {
			p.metrics.pull("delta", "error")
			return false, err
		}
		changed := p.st.apply(d.instances, now)
		if h := p.st.hashcode(); h == d.hashcode {
			p.metrics.pull("delta", "ok")
			return changed, nil
		}
		p.metrics.pull("delta", "mismatch")
	}
	d, err := p.get(ctx, "apps/"+localOnlyQuery)
	if err != nil {
		p.metrics.pull("full", "error")
		return false, err
	}
	p.metrics.pull("full", "ok")
	p.needFull = false
	return p.st.replace(d.instances, now), nil
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
	if !echo { // the sabotaged pull looks like any client's read: the remote re-exports
		req.Header.Set("User-Agent", UserAgent)
		req.Header.Set("DiscoveryIdentity-Name", "DefaultServer")
		req.Header.Set("DiscoveryIdentity-Version", "1.0")
	}
	res, err := p.f.client.Do(req) // Go's transport asks for and inflates gzip
	if err != nil {
		return nil, fmt.Errorf("federation: GET %s: %w", req.URL.Redacted(), err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("federation: GET %s: reading: %w", req.URL.Redacted(), err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("federation: GET %s: %s", req.URL.Redacted(), res.Status)
	}
	return decodeApps(body)
}
