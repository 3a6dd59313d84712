package federation

// Merged documents
//
// A ?regions= read answers the local applications with each requested
// region's instances in the same application elements (a Java client's
// Applications keeps one Application per name: a second element of the
// same name would replace the first), and apps__hashcode over that union.
// Where a remote instance has the id of a local one in the same
// application, the local one is served and the remote one is not (Eureka's
// Application.addInstance lets the remote copy replace the local record:
// that is how a stale echo overwrites a fresh one); between regions, the
// first region in the sorted list wins.
//
// The plain, region-less reads never come here: they are the view's
// prepared bytes, untouched. Merged documents are encoded from the
// instances (the view's per-instance byte cache is internal to it) and
// cached per (local snapshot version, regions' generation, kind, region
// list, format, gzip): under a steady registry every client asking for the
// same regions shares one encoding, and a change of either side builds the
// next one once, on first read.

import (
	"bytes"
	"compress/gzip"
	"strconv"
	"strings"
	"sync"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
)

// The kinds of merged document.
const (
	kindFull = iota
	kindDelta
	kindVIP
	kindSVIP
)

// docKey identifies a merged document apart from its stamp.
type docKey struct {
	kind    int
	name    string // VIP name
	regions string // sorted, comma-joined
	f       view.Format
	gz      bool
}

// docEntry is a merged document of one stamp, built once.
type docEntry struct {
	local, gen uint64
	once       sync.Once
	body       []byte
}

// docCache holds the latest merged document per key.
type docCache struct {
	mu      sync.Mutex
	entries map[docKey]*docEntry
}

// maxCachedDocs bounds the cache: region lists and VIP names come from
// clients, so an adversary could otherwise grow it without end.
const maxCachedDocs = 256

// get returns the document of key at the stamp, building it with build
// on first use.
func (c *docCache) get(k docKey, local, gen uint64, build func() []byte) []byte {
	c.mu.Lock()
	e := c.entries[k]
	if e == nil || e.local != local || e.gen != gen {
		if c.entries == nil || len(c.entries) >= maxCachedDocs {
			c.entries = map[docKey]*docEntry{}
		}
		e = &docEntry{local: local, gen: gen}
		c.entries[k] = e
	}
	c.mu.Unlock()
	e.once.Do(func() { e.body = build() })
	return e.body
}

// Apps returns the full registry document of local with the named regions'
// instances merged in (regions sorted, lower case; unknown names are
// ignored; nil: every remote region, for transparent fallback).
func (f *Federation) Apps(local *view.Snapshot, regions []string, format view.Format, gz bool) []byte {
	k := docKey{kind: kindFull, regions: strings.Join(regions, ","), f: format, gz: gz}
	return f.docs.get(k, local.Version(), f.gen.Load(), func() []byte {
		m := f.merge(local, regions, false)
		return finish(f.enc[format], m, view.FullVersionDelta, m.counts.String(), gz)
	})
}

// Delta returns the delta document of local with the named regions'
// recent changes merged in; apps__hashcode is the full union's.
func (f *Federation) Delta(local *view.Snapshot, regions []string, format view.Format, gz bool) []byte {
	k := docKey{kind: kindDelta, regions: strings.Join(regions, ","), f: format, gz: gz}
	return f.docs.get(k, local.Version(), f.gen.Load(), func() []byte {
		full := f.merge(local, regions, false)
		d := f.merge(local, regions, true)
		v := strconv.FormatUint(f.deltaVersion.Add(1), 10)
		return finish(f.enc[format], d, v, full.counts.String(), gz)
	})
}

// VIP returns the document of a VIP (secure: a secure VIP) over local and
// every remote region: what VIP reads serve with transparent fallback (the
// reference server's VIP reads ignore ?regions= and follow the fallback
// switch).
func (f *Federation) VIP(local *view.Snapshot, vip string, secure bool, format view.Format, gz bool) []byte {
	kind := kindVIP
	if secure {
		kind = kindSVIP
	}
	k := docKey{kind: kind, name: vip, f: format, gz: gz}
	return f.docs.get(k, local.Version(), f.gen.Load(), func() []byte {
		m := f.merge(local, f.names, false)
		m.filter(func(in *actors.Instance) bool {
			if secure {
				return listsAddress(in.SecureVIPAddress, vip)
			}
			return listsAddress(in.VIPAddress, vip)
		})
		return finish(f.enc[format], m, view.VIPVersionDelta, m.counts.String(), gz)
	})
}

// merged is a union of applications being assembled.
type merged struct {
	names  []string
	apps   map[string][]*actors.Instance
	counts counts
}

// merge builds the union of local and the named regions: full registries,
// or (delta) the local delta and the regions' windows.
func (f *Federation) merge(local *view.Snapshot, regions []string, delta bool) *merged {
	if regions == nil {
		regions = f.names
	}
	m := &merged{apps: map[string][]*actors.Instance{}}
	seen := map[actors.Key]bool{}
	add := func(in *actors.Instance) {
		k := in.Key()
		if seen[k] {
			return
		}
		seen[k] = true
		if _, ok := m.apps[in.App]; !ok {
			m.names = append(m.names, in.App)
		}
		m.apps[in.App] = append(m.apps[in.App], in)
		m.counts.add(in.Status)
	}
	if delta {
		// The view exposes its delta as a document only: read it back.
		if d, err := decodeApps(local.Delta(view.FormatJSON, false)); err == nil {
			for _, in := range d.instances {
				add(in)
			}
		}
	} else {
		local.Apps(func(a *view.App) bool {
			for in := range a.All() {
				add(in)
			}
			return true
		})
	}
	for _, r := range f.snaps(regions) {
		apps, names := r.apps, r.names
		if delta {
			apps, names = r.delta, r.deltaNames
		}
		for _, n := range names {
			for _, in := range apps[n] {
				// Local wins (see the file comment): in a full document
				// seen holds every local key; a delta holds only the
				// local changes, so look the registry up.
				if delta && local.Instance(in.App, in.ID()) != nil {
					continue
				}
				add(in)
			}
		}
	}
	sortStrings(m.names)
	return m
}

// filter keeps the instances keep accepts and recounts.
func (m *merged) filter(keep func(*actors.Instance) bool) {
	m.counts = counts{}
	names := m.names[:0]
	for _, n := range m.names {
		l := m.apps[n][:0]
		for _, in := range m.apps[n] {
			if keep(in) {
				l = append(l, in)
				m.counts.add(in.Status)
			}
		}
		if len(l) > 0 {
			m.apps[n] = l
			names = append(names, n)
		}
	}
	m.names = names
}

// finish encodes m as an applications document, gzipped if asked.
func finish(enc view.Encoder, m *merged, versionDelta, hashcode string, gz bool) []byte {
	out := enc.AppendApplicationsOpen(nil, versionDelta, hashcode)
	for i, n := range m.names {
		if i > 0 {
			out = enc.AppendApplicationsSeparator(out)
		}
		out = enc.AppendApplication(out, n, m.apps[n])
	}
	out = enc.AppendApplicationsClose(out)
	if !gz {
		return out
	}
	var b bytes.Buffer
	w, _ := gzip.NewWriterLevel(&b, gzip.BestSpeed)
	_, _ = w.Write(out)
	_ = w.Close()
	return b.Bytes()
}

// listsAddress reports whether the comma-separated list holds name as an
// element, matched exactly as Eureka (and the view) match VIPs.
func listsAddress(list, name string) bool {
	if name == "" {
		return false
	}
	for _, e := range strings.Split(list, ",") {
		if e == name {
			return true
		}
	}
	return false
}
