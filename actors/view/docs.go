package view

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/benbjohnson/immutable"

	"github.com/heureka/heureka/actors"
)

// docCache holds a snapshot's whole documents, built on first use.
type docCache struct {
	full        [NumFormats][2]lazy
	delta       [NumFormats][2]lazy
	vips, svips sync.Map // name, format, gzip → *lazy
}

func newDocCache() *docCache { return &docCache{} }

func gzIndex(gz bool) int {
	if gz {
		return 1
	}
	return 0
}

// FullVersionDelta is the versions__delta of a full registry document: any
// value other than -1 makes Java clients use deltas afterwards.
const FullVersionDelta = "1"

// fullPlain builds the full registry document in format f from the
// applications' cached instance bytes: one pass to size it (encoding the
// instances that are not yet), one to copy.
func (s *Snapshot) fullPlain(f Format) []byte {
	enc := s.enc[f]
	size := 256
	s.Apps(func(a *App) bool {
		n := a.plainLen(f)
		if n < 0 {
			for _, p := range a.pieces {
				p.bytes(enc, f)
			}
			n = a.plainLen(f)
		}
		size += n + 2*len(a.name) + 64 + len(a.pieces)
		return true
	})
	out := make([]byte, 0, size)
	out = enc.AppendApplicationsOpen(out, FullVersionDelta, s.HashCode())
	first := true
	s.Apps(func(a *App) bool {
		if !first {
			out = enc.AppendApplicationsSeparator(out)
		}
		first = false
		out = appendElement(out, enc, f, a.name, a.pieces)
		return true
	})
	return enc.AppendApplicationsClose(out)
}

// fullGzip builds the gzipped full registry document in format f from the
// applications' gzip pieces: only applications that changed since they were
// last compressed are compressed.
func (s *Snapshot) fullGzip(f Format) []byte {
	enc := s.enc[f]
	pieces := make([]gzPiece, 0, 2*s.apps.Len()+2)
	pieces = append(pieces, compressPiece(enc.AppendApplicationsOpen(nil, FullVersionDelta, s.HashCode())))
	var sepPiece gzPiece
	sep := enc.AppendApplicationsSeparator(nil)
	if len(sep) > 0 {
		sepPiece = compressPiece(sep)
	}
	first := true
	s.Apps(func(a *App) bool {
		if !first && len(sep) > 0 {
			pieces = append(pieces, sepPiece)
		}
		first = false
		pieces = append(pieces, a.gzElement(enc, f))
		return true
	})
	pieces = append(pieces, compressPiece(enc.AppendApplicationsClose(nil)))
	return assembleGzip(pieces)
}

// Full returns the full registry document (GET apps) in format f, gzipped
// if gz, built once per snapshot (on first use) from the applications'
// cached pieces. Applications without instances are omitted.
func (s *Snapshot) Full(f Format, gz bool) []byte {
	return s.docCache.full[f][gzIndex(gz)].get(func() []byte {
		if gz {
			return s.fullGzip(f)
		}
		return s.fullPlain(f)
	})
}

// AppDocument returns the document of one application (GET apps/{app}) and
// whether the application exists.
func (s *Snapshot) AppDocument(name string, f Format, gz bool) ([]byte, bool) {
	a := s.App(name)
	if a == nil {
		return nil, false
	}
	return a.Document(s.enc[f], f, gz), true
}

// Delta returns the delta document (GET apps/delta): every instance changed
// within the retention window, once, in its latest state, grouped by
// application; versions__delta is the snapshot version and apps__hashcode is
// the full registry's. It is built once per snapshot from the window's
// pieces, which are encoded once each and shared with the applications.
func (s *Snapshot) Delta(f Format, gz bool) []byte {
	return s.docCache.delta[f][gzIndex(gz)].get(func() []byte {
		if gz {
			return assembleGzip([]gzPiece{compressPiece(s.deltaPlain(f))})
		}
		return s.deltaPlain(f)
	})
}

// deltaPlain builds the delta document in format f.
func (s *Snapshot) deltaPlain(f Format) []byte {
	type group struct {
		name   string
		pieces []*piece
	}
	var groups []*group
	byApp := map[string]*group{}
	pos := make(map[actors.Key]int, len(s.window))
	for _, e := range s.window {
		k := e.p.inst.Key()
		g := byApp[k.App]
		if g == nil {
			g = &group{name: k.App}
			byApp[k.App] = g
			groups = append(groups, g)
		}
		if i, ok := pos[k]; ok {
			g.pieces[i] = e.p
		} else {
			pos[k] = len(g.pieces)
			g.pieces = append(g.pieces, e.p)
		}
	}
	enc := s.enc[f]
	size := 256
	for _, g := range groups {
		size += 64 + 2*len(g.name) + len(g.pieces)
		for _, p := range g.pieces {
			size += len(p.bytes(enc, f))
		}
	}
	out := make([]byte, 0, size)
	out = enc.AppendApplicationsOpen(out, strconv.FormatUint(s.version, 10), s.HashCode())
	for i, g := range groups {
		if i > 0 {
			out = enc.AppendApplicationsSeparator(out)
		}
		out = appendElement(out, enc, f, g.name, g.pieces)
	}
	return enc.AppendApplicationsClose(out)
}

// DeltaLen returns the number of entries in the delta window.
func (s *Snapshot) DeltaLen() int { return len(s.window) }

// VIPVersionDelta is the versions__delta Eureka sends in VIP documents.
const VIPVersionDelta = "-1"

// VIP returns the document of the instances whose vipAddress lists vip
// (GET vips/{vip}); an unknown VIP gives an empty document.
func (s *Snapshot) VIP(vip string, f Format, gz bool) []byte {
	g, _ := s.vips.Get(vip)
	return s.groupDocument(&s.docCache.vips, g, vip, f, gz)
}

// SVIP is VIP for secureVipAddress (GET svips/{svip}).
func (s *Snapshot) SVIP(svip string, f Format, gz bool) []byte {
	g, _ := s.svips.Get(svip)
	return s.groupDocument(&s.docCache.svips, g, svip, f, gz)
}

// Group is the set of instances that share a VIP or secure VIP address, as
// keys sorted by app and id. It is immutable and changes only when an
// instance joins or leaves the address, so a re-registration that keeps its
// addresses costs the index nothing.
type Group struct {
	keys []actors.Key
}

func groupLess(a, b actors.Key) bool {
	if a.App != b.App {
		return a.App < b.App
	}
	return a.ID < b.ID
}

// with returns a group that also holds key (g itself if it does).
func (g *Group) with(key actors.Key) *Group {
	var keys []actors.Key
	if g != nil {
		keys = g.keys
	}
	i := sort.Search(len(keys), func(i int) bool { return !groupLess(keys[i], key) })
	if i < len(keys) && keys[i] == key {
		return g
	}
	n := &Group{keys: make([]actors.Key, 0, len(keys)+1)}
	n.keys = append(append(append(n.keys, keys[:i]...), key), keys[i:]...)
	return n
}

// without returns a group without key, nil when that leaves it empty.
func (g *Group) without(key actors.Key) *Group {
	if g == nil {
		return nil
	}
	i := sort.Search(len(g.keys), func(i int) bool { return !groupLess(g.keys[i], key) })
	if i == len(g.keys) || g.keys[i] != key {
		return g
	}
	if len(g.keys) == 1 {
		return nil
	}
	n := &Group{keys: make([]actors.Key, 0, len(g.keys)-1)}
	n.keys = append(append(n.keys, g.keys[:i]...), g.keys[i+1:]...)
	return n
}

// groupDocument builds (once per snapshot) the document of group g named
// name: its instances grouped by application, versions__delta "-1" and the
// hashcode of the subset, as Eureka does.
func (s *Snapshot) groupDocument(cache *sync.Map, g *Group, name string, f Format, gz bool) []byte {
	type key struct {
		name string
		f    Format
		gz   bool
	}
	v, _ := cache.LoadOrStore(key{name, f, gz}, &lazy{})
	return v.(*lazy).get(func() []byte {
		if gz {
			return assembleGzip([]gzPiece{compressPiece(s.groupPlain(g, f))})
		}
		return s.groupPlain(g, f)
	})
}

// groupPlain builds the document of group g in format f.
func (s *Snapshot) groupPlain(g *Group, f Format) []byte {
	enc := s.enc[f]
	var counts [len(actors.AllStatuses)]int
	var pieces []*piece
	if g != nil {
		pieces = make([]*piece, 0, len(g.keys))
		for _, k := range g.keys {
			if a := s.App(k.App); a != nil {
				if p := a.findPiece(k.ID); p != nil {
					pieces = append(pieces, p)
					counts[statusIndex(p.inst.Status)]++
				}
			}
		}
	}
	out := enc.AppendApplicationsOpen(nil, VIPVersionDelta, hashCode(&counts))
	for i := 0; i < len(pieces); {
		j := i
		for j < len(pieces) && pieces[j].inst.App == pieces[i].inst.App {
			j++
		}
		if i > 0 {
			out = enc.AppendApplicationsSeparator(out)
		}
		out = appendElement(out, enc, f, pieces[i].inst.App, pieces[i:j])
		i = j
	}
	return enc.AppendApplicationsClose(out)
}

// splitAddresses splits a comma-separated VIP list. Eureka matches elements
// exactly (case-sensitive, untrimmed); empty elements are dropped.
func splitAddresses(s string) []string {
	if s == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	out := parts[:0]
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return out
}

// updateGroups moves key from the groups named by old's field to those named
// by cur's (either may be nil). Nothing changes when the addresses did not.
func updateGroups(m *immutable.Map[string, *Group], key actors.Key, old, cur *actors.Instance,
	field func(*actors.Instance) string) *immutable.Map[string, *Group] {
	var before, after string
	if old != nil {
		before = field(old)
	}
	if cur != nil {
		after = field(cur)
	}
	if before == after && (old == nil) == (cur == nil) {
		return m
	}
	oldNames, newNames := splitAddresses(before), splitAddresses(after)
	for _, name := range oldNames {
		if !slices.Contains(newNames, name) {
			g, _ := m.Get(name)
			if n := g.without(key); n == nil {
				m = m.Delete(name)
			} else if n != g {
				m = m.Set(name, n)
			}
		}
	}
	for _, name := range newNames {
		g, _ := m.Get(name)
		if n := g.with(key); n != g {
			m = m.Set(name, n)
		}
	}
	return m
}
