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

// parts is a document as a sequence of byte slices in order, shared with the
// applications' caches.
type parts struct {
	pieces [][]byte
	len    int
}

// bytes joins the parts into one slice.
func (p *parts) bytes() []byte {
	out := make([]byte, 0, p.len)
	for _, b := range p.pieces {
		out = append(out, b...)
	}
	return out
}

func (p *parts) add(b []byte) {
	if len(b) > 0 {
		p.pieces = append(p.pieces, b)
		p.len += len(b)
	}
}

// fullParts lists the pieces of the full registry document in format f,
// gzipped if gz: the document's head and tail around each application's
// cached bytes, so a change re-encodes one application, never the registry.
func (s *Snapshot) fullParts(f Format, gz bool) *parts {
	enc := s.enc[f]
	open := enc.AppendApplicationsOpen(nil, FullVersionDelta, s.HashCode())
	sep := enc.AppendApplicationsSeparator(nil)
	closing := enc.AppendApplicationsClose(nil)
	p := &parts{pieces: make([][]byte, 0, 2*s.apps.Len()+4)}
	if gz {
		pieces := make([]gzPiece, 0, 2*s.apps.Len()+2)
		pieces = append(pieces, compressPiece(open))
		var sepPiece gzPiece
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
		pieces = append(pieces, compressPiece(closing))
		for _, b := range gzipParts(pieces) {
			p.add(b)
		}
		return p
	}
	p.add(open)
	first := true
	s.Apps(func(a *App) bool {
		if !first {
			p.add(sep)
		}
		first = false
		p.add(a.element(enc, f))
		return true
	})
	p.add(closing)
	return p
}

// Full returns the full registry document (GET apps) in format f, gzipped
// if gz, built once per snapshot from the applications' cached bytes.
// Applications without instances are omitted.
func (s *Snapshot) Full(f Format, gz bool) []byte {
	return s.docCache.full[f][gzIndex(gz)].get(func() []byte { return s.fullParts(f, gz).bytes() })
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
// the full registry's.
func (s *Snapshot) Delta(f Format, gz bool) []byte {
	return s.docCache.delta[f][gzIndex(gz)].get(func() []byte {
		type group struct {
			name  string
			insts []*actors.Instance
			pos   map[string]int
		}
		var groups []*group
		byApp := map[string]*group{}
		for _, e := range s.window {
			k := e.inst.Key()
			g := byApp[k.App]
			if g == nil {
				g = &group{name: k.App, pos: map[string]int{}}
				byApp[k.App] = g
				groups = append(groups, g)
			}
			if i, ok := g.pos[k.ID]; ok {
				g.insts[i] = e.inst
			} else {
				g.pos[k.ID] = len(g.insts)
				g.insts = append(g.insts, e.inst)
			}
		}
		enc := s.enc[f]
		out := enc.AppendApplicationsOpen(nil, strconv.FormatUint(s.version, 10), s.HashCode())
		for i, g := range groups {
			if i > 0 {
				out = enc.AppendApplicationsSeparator(out)
			}
			out = enc.AppendApplication(out, g.name, g.insts)
		}
		out = enc.AppendApplicationsClose(out)
		if gz {
			return assembleGzip([]gzPiece{compressPiece(out)})
		}
		return out
	})
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
		enc := s.enc[f]
		var counts [len(actors.AllStatuses)]int
		var insts []*actors.Instance
		if g != nil {
			insts = make([]*actors.Instance, 0, len(g.keys))
			for _, k := range g.keys {
				if in := s.Instance(k.App, k.ID); in != nil {
					insts = append(insts, in)
					counts[statusIndex(in.Status)]++
				}
			}
		}
		out := enc.AppendApplicationsOpen(nil, VIPVersionDelta, hashCode(&counts))
		for i := 0; i < len(insts); {
			j := i
			for j < len(insts) && insts[j].App == insts[i].App {
				j++
			}
			if i > 0 {
				out = enc.AppendApplicationsSeparator(out)
			}
			out = enc.AppendApplication(out, insts[i].App, insts[i:j])
			i = j
		}
		out = enc.AppendApplicationsClose(out)
		if gz {
			return assembleGzip([]gzPiece{compressPiece(out)})
		}
		return out
	})
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
