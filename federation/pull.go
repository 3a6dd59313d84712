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
	"time"
)

// UserAgent is what pulls send; it starts with Eureka's remote-region
// client's User-Agent.
const UserAgent = "Java-EurekaClient-RemoteRegion/heureka"

// pullAgentPrefix is how a server recognizes a remote region's pull.
const pullAgentPrefix = "Java-EurekaClient-RemoteRegion"

// IsRegionPull reports whether a request's User-Agent is a remote
// region's pull (a Java Eureka server's or a Heureka's), which must be
// answered with local data only.
func IsRegionPull(userAgent string) bool {
	return len(userAgent) >= len(pullAgentPrefix) && userAgent[:len(pullAgentPrefix)] == pullAgentPrefix
}

// puller pulls one region.
type puller struct {
	f        *Federation
	remote   Remote
	base     string
	st       *regionState
	needFull bool
	metrics  *regionMetrics
}

// run pulls until ctx ends.
func (p *puller) run(ctx context.Context) {
	p.tick(ctx) // the first pull at once: reads wait for it (403)
	stagger := rand.N(p.f.cfg.PullInterval)
	t := time.NewTimer(stagger)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		p.tick(ctx)
		t.Reset(p.f.cfg.PullInterval)
	}
}

// tick is one pull and the judgement after it.
func (p *puller) tick(ctx context.Context) {
	now := p.f.cfg.Now()
	changed, err := p.pull(ctx, now)
	now = p.f.cfg.Now()
	before := p.st.state
	if err != nil {
		p.st.lastErr = err.Error()
		p.needFull = true
		p.f.log.Debug("pull failed", "region", p.remote.Name, "err", err)
	} else {
		p.st.lastErr = ""
		p.st.lastOK = now
		p.st.loaded = true
		p.st.state = StateOK
	}
	if p.st.loaded {
		age := now.Sub(p.st.lastOK)
		switch {
		case age > p.f.cfg.DropAfter:
			if p.st.state != StateDropped {
				p.st.state = StateDropped
				changed = p.st.replace(nil, now) || true
				p.needFull = true
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
	if !p.needFull && p.st.loaded && p.st.state != StateDropped {
		d, err := p.get(ctx, "apps/delta")
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
	d, err := p.get(ctx, "apps/")
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
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return nil, fmt.Errorf("federation: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", UserAgent)
	req.Header.Set("DiscoveryIdentity-Name", "DefaultServer")
	req.Header.Set("DiscoveryIdentity-Version", "1.0")
	res, err := p.f.client.Do(req) // Go's transport asks for and inflates gzip
	if err != nil {
		return nil, fmt.Errorf("federation: GET %s: %w", req.URL, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, fmt.Errorf("federation: GET %s: reading: %w", req.URL, err)
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("federation: GET %s: %s", req.URL, res.Status)
	}
	return decodeApps(body)
}
