package bench

import (
	"runtime"

	"github.com/heureka/heureka/actors/view"
)

// Heap is the live heap a registry of Size instances holds, split into the
// registry state and the encoded response caches.
type Heap struct {
	Size int
	// State is the heap of the loaded registry before any read: leases,
	// instances, application actors, the view's snapshot and indexes.
	State int64
	// FullCaches is what warming the full registry document in every
	// format, plain and gzip, added: each application's encoded element and
	// gzip piece per format, and the eight assembled documents.
	FullCaches int64
	// AppCaches is what warming every application's own document (GET
	// apps/{app}) in every format, plain and gzip, added on top.
	AppCaches int64
	// FullJSON, FullXML and FullGzip are the sizes of the full registry
	// document in JSON, XML and gzipped JSON.
	FullJSON, FullXML, FullGzip int
	// JSONOnly says that, the registry being larger than WarmEveryFormatUpTo,
	// only the full JSON document (plain and gzip) was warmed: FullCaches
	// holds its caches alone, and AppCaches and FullXML were not measured.
	JSONOnly bool
}

// WarmEveryFormatUpTo is the largest registry whose heap is measured with
// every format and every application document warmed. Above it only the
// full JSON document is: at 1M the caches of every format and application
// would hold about 14 GB (13.9 kB per instance at 100k), twice that under
// the collector's default GOGC, more than a 24 GB machine has.
const WarmEveryFormatUpTo = 100_000

// PerInstance returns b divided by the number of instances.
func (h Heap) PerInstance(b int64) float64 { return float64(b) / float64(h.Size) }

// liveHeap collects garbage (twice, so that sync.Pool victims go too) and
// returns the live heap.
func liveHeap() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// MeasureHeap starts a fresh node, measures it with LoadMeasured and stops
// it.
func MeasureHeap(size int) (Heap, error) {
	f, err := Start()
	if err != nil {
		return Heap{}, err
	}
	defer f.Stop()
	return f.LoadMeasured(size)
}

// LoadMeasured loads size instances into the fresh fixture f and measures
// the live heap before loading, after loading (registry state, the delta
// window aged out), after warming every full document, and after warming
// every application document (above WarmEveryFormatUpTo: after warming the
// full JSON document only). The rest of the process must be idle.
func (f *Fixture) LoadMeasured(size int) (Heap, error) {
	h := Heap{Size: size}
	before := liveHeap()
	if err := f.Load(size); err != nil {
		return h, err
	}
	state := liveHeap()
	h.State = state - before

	s := f.Node.View().Snapshot()
	if size > WarmEveryFormatUpTo {
		h.JSONOnly = true
		h.FullJSON = len(s.Full(view.FormatJSON, false))
		h.FullGzip = len(s.Full(view.FormatJSON, true))
		h.FullCaches = liveHeap() - state
		if s != f.Node.View().Snapshot() {
			return h, errSnapshotChanged
		}
		return h, nil
	}
	for fm := view.Format(0); fm < view.NumFormats; fm++ {
		s.Full(fm, false)
		s.Full(fm, true)
	}
	h.FullJSON = len(s.Full(view.FormatJSON, false))
	h.FullXML = len(s.Full(view.FormatXML, false))
	h.FullGzip = len(s.Full(view.FormatJSON, true))
	full := liveHeap()
	h.FullCaches = full - state

	s.Apps(func(a *view.App) bool {
		for fm := view.Format(0); fm < view.NumFormats; fm++ {
			s.AppDocument(a.Name(), fm, false)
			s.AppDocument(a.Name(), fm, true)
		}
		return true
	})
	apps := liveHeap()
	h.AppCaches = apps - full
	if s != f.Node.View().Snapshot() {
		// A new snapshot would have dropped the full documents measured.
		return h, errSnapshotChanged
	}
	return h, nil
}

type benchError string

func (e benchError) Error() string { return string(e) }

const errSnapshotChanged = benchError("bench: the snapshot changed while the heap was measured")
