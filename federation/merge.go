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
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/sabotage"
)

// The kinds of merged document.
const (
	kindFull = iota
	kindDelta
	kindVIP
	kindSVIP
	kindApp
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
		return f.fullDocument(local, f.snapsOrAll(regions), format, gz)
	})
}

// Delta returns the delta document of local with the named regions'
// recent changes merged in; apps__hashcode is the full union's.
func (f *Federation) Delta(local *view.Snapshot, regions []string, format view.Format, gz bool) []byte {
	k := docKey{kind: kindDelta, regions: strings.Join(regions, ","), f: format, gz: gz}
	return f.docs.get(k, local.Version(), f.gen.Load(), func() []byte {
		snaps := f.snapsOrAll(regions)
		m := &merged{apps: map[string][]*actors.Instance{}}
		seen := map[actors.Key]bool{}
		// The view exposes its delta as a document only: read it back (a
		// delta is small but for the minutes after a mass change).
		if d, err := decodeApps(local.Delta(view.FormatJSON, false)); err == nil {
			for _, in := range d.instances {
				m.add(in, seen)
			}
		}
		for _, r := range snaps {
			wapps, wnames := group(r.window)
			for _, n := range wnames {
				for _, in := range wapps[n] {
					// Local wins (see the file comment).
					if local.Instance(in.App, in.ID()) == nil {
						m.add(in, seen)
					}
				}
			}
		}
		sortStrings(m.names)
		total := unionCounts(local, snaps)
		v := strconv.FormatUint(f.deltaVersion.Add(1), 10)
		return finish(f.enc[format], m, v, total.String(), gz)
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
		keep := func(in *actors.Instance) bool {
			if secure {
				return listsAddress(in.SecureVIPAddress, vip)
			}
			return listsAddress(in.VIPAddress, vip)
		}
		m := &merged{apps: map[string][]*actors.Instance{}}
		seen := map[actors.Key]bool{}
		local.Apps(func(a *view.App) bool {
			for in := range a.All() {
				if keep(in) {
					m.add(in, seen)
				}
			}
			return true
		})
		for _, r := range f.snaps(f.names) {
			for _, n := range r.names {
				for _, in := range r.apps[n].instances {
					if keep(in) && local.Instance(in.App, in.ID()) == nil {
						m.add(in, seen)
					}
				}
			}
		}
		sortStrings(m.names)
		return finish(f.enc[format], m, view.VIPVersionDelta, m.counts.String(), gz)
	})
}

// App returns the document of one application (GET apps/{app}) with
// transparent fallback, and whether the application has any instance. It
// is not a union: as Eureka's getApplication(name, includeRemoteRegion)
// does, it serves the local application when it has instances, else the
// application of the first remote region (in sorted order; Eureka takes its
// regions in hash order) that holds it. Eureka's one-application read
// follows the fallback switch and takes no ?regions= (TestRegionsDifferential,
// clients/reference, compares it with the reference server's).
func (f *Federation) App(local *view.Snapshot, name string, format view.Format, gz bool) ([]byte, bool) {
	k := docKey{kind: kindApp, name: name, f: format, gz: gz}
	doc := f.docs.get(k, local.Version(), f.gen.Load(), func() []byte {
		var list []*actors.Instance
		if la := local.App(name); la != nil {
			list = la.Instances()
		}
		for _, r := range f.snaps(f.names) {
			if len(list) > 0 {
				break
			}
			if e := r.apps[name]; e != nil {
				list = e.instances
			}
		}
		if len(list) == 0 {
			return nil
		}
		return compress(f.enc[format].AppendApplicationDocument(nil, name, list), gz)
	})
	return doc, doc != nil
}

// snapsOrAll is snaps of regions, or of every region for nil.
func (f *Federation) snapsOrAll(regions []string) []*regionSnap {
	if regions == nil {
		regions = f.names
	}
	return f.snaps(regions)
}

// fullDocument assembles the union's full document. Each application
// element is spliced from prepared bytes where it can be: the view's
// cached element of the local application (DocumentWrapper encoders: the
// JSON formats) and each region's cached instance bytes (appEntry.part),
// so a build after a change copies bytes and encodes only what changed.
// An application where a remote instance collides with a local one, or
// two regions hold the same id, is encoded from its instances.
func (f *Federation) fullDocument(local *view.Snapshot, snaps []*regionSnap, format view.Format, gz bool) []byte {
	enc := f.enc[format]
	wrapper, _ := enc.(view.DocumentWrapper)
	var open, closing string
	if wrapper != nil {
		open, closing = wrapper.ApplicationDocumentWrap()
	}
	appClose := enc.AppendApplicationClose(nil)
	appsSep := enc.AppendApplicationsSeparator(nil)
	instSep := enc.AppendInstanceSeparator(nil)
	total := parseCounts(local.HashCode())
	// The document is gathered as segments (mostly cached bytes) and copied
	// once into a buffer of its final size.
	var segs [][]byte
	size := 0
	seg := func(b []byte) {
		segs = append(segs, b)
		size += len(b)
	}
	element := func(name string, la *view.App, entries []*appEntry) {
		if len(segs) > 0 {
			seg(appsSep)
		}
		skip := collisions(local, la, entries)
		for _, e := range entries {
			total.plus(&e.counts)
		}
		for _, in := range skip {
			total.sub(in.Status)
		}
		if len(skip) == 0 && (la == nil || wrapper != nil) {
			var head []byte
			if la != nil {
				doc := la.Document(enc, format, false)
				elem := doc[len(open) : len(doc)-len(closing)]
				if bytes.HasSuffix(elem, appClose) {
					head = elem[:len(elem)-len(appClose)]
				}
			} else {
				head = enc.AppendApplicationOpen(nil, name)
			}
			if head != nil {
				seg(head)
				for i, e := range entries {
					if la != nil || i > 0 {
						seg(instSep)
					}
					seg(e.part(enc, format))
				}
				seg(appClose)
				return
			}
		}
		// The slow path: encode the application's instances.
		var list []*actors.Instance
		if la != nil {
			list = la.Instances()
		}
		if sabotage.On(sabotage.RegionEchoOverwritesLocal) || sabotage.On(sabotage.RemoteEchoOverwritesLocal) {
			list = overwriteLocal(list, entries)
			skip = nil
		}
		for _, e := range entries {
			for _, in := range e.instances {
				if !slices.Contains(skip, in) {
					list = append(list, in)
				}
			}
		}
		seg(enc.AppendApplication(nil, name, list))
	}
	// Every application name, local and remote, in order.
	var names []string
	local.Apps(func(a *view.App) bool {
		names = append(names, a.Name())
		return true
	})
	for _, r := range snaps {
		names = append(names, r.names...)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	var entries []*appEntry
	for _, name := range names {
		entries = entries[:0]
		for _, r := range snaps {
			if e := r.apps[name]; e != nil {
				entries = append(entries, e)
			}
		}
		element(name, local.App(name), entries)
	}
	head := enc.AppendApplicationsOpen(nil, view.FullVersionDelta, total.String())
	tail := enc.AppendApplicationsClose(nil)
	out := make([]byte, 0, len(head)+size+len(tail))
	out = append(out, head...)
	for _, b := range segs {
		out = append(out, b...)
	}
	out = append(out, tail...)
	return compress(out, gz)
}

// collisions returns the remote instances of entries that are not served:
// those with the id of a local instance of the application, and those with
// the id of an instance of an earlier region.
func collisions(local *view.Snapshot, la *view.App, entries []*appEntry) []*actors.Instance {
	var skip []*actors.Instance
	var ids map[string]bool
	if len(entries) > 1 {
		ids = map[string]bool{}
	}
	for _, e := range entries {
		for _, in := range e.instances {
			id := in.ID()
			switch {
			case la != nil && local.Instance(la.Name(), id) != nil:
				skip = append(skip, in)
			case ids != nil && ids[id]:
				skip = append(skip, in)
			}
			if ids != nil {
				ids[id] = true
			}
		}
	}
	return skip
}

// overwriteLocal is the sabotaged merge (RegionEchoOverwritesLocal): the
// local instances that a remote one shares an id with are dropped, so the
// remote copy replaces them, as Eureka's Application.addInstance does.
func overwriteLocal(list []*actors.Instance, entries []*appEntry) []*actors.Instance {
	remote := map[string]bool{}
	for _, e := range entries {
		for _, in := range e.instances {
			remote[in.ID()] = true
		}
	}
	return slices.DeleteFunc(list, func(in *actors.Instance) bool { return remote[in.ID()] })
}

// unionCounts counts the instances of the full union of local and snaps
// by status, as fullDocument serves it, without building it.
func unionCounts(local *view.Snapshot, snaps []*regionSnap) counts {
	total := parseCounts(local.HashCode())
	apps := map[string][]*appEntry{}
	for _, r := range snaps {
		total.plus(&r.counts)
		for _, n := range r.names {
			apps[n] = append(apps[n], r.apps[n])
		}
	}
	for n, entries := range apps {
		for _, in := range collisions(local, local.App(n), entries) {
			total.sub(in.Status)
		}
	}
	return total
}

// merged is a union of applications being assembled from instances.
type merged struct {
	names  []string
	apps   map[string][]*actors.Instance
	counts counts
}

// add adds in unless its key was seen.
func (m *merged) add(in *actors.Instance, seen map[actors.Key]bool) {
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

// finish encodes m as an applications document, gzipped if asked.
func finish(enc view.Encoder, m *merged, versionDelta, hashcode string, gz bool) []byte {
	out := enc.AppendApplicationsOpen(nil, versionDelta, hashcode)
	for i, n := range m.names {
		if i > 0 {
			out = enc.AppendApplicationsSeparator(out)
		}
		out = enc.AppendApplication(out, n, m.apps[n])
	}
	return compress(enc.AppendApplicationsClose(out), gz)
}

// compress gzips out if gz.
func compress(out []byte, gz bool) []byte {
	if !gz {
		return out
	}
	var b bytes.Buffer
	b.Grow(len(out) / 4)
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
