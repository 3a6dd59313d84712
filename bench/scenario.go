package bench

import (
	"errors"
	"net/http"
	"syscall"
	"time"

	"github.com/heureka/heureka/actors/view"
)

// Scenario is one throughput requirement: a load sent to Heureka and the
// same load sent to its ceiling.
type Scenario struct {
	Name string
	// Ceiling is "trivial" (an empty 200) or "static" (the same prepared
	// bytes with the same headers).
	Ceiling string
	// Target is the minimum ratio of Heureka's throughput to the ceiling's.
	Target float64
	// Doc is the document a read scenario fetches (nil for writes).
	Doc *Doc
}

// Scenarios are the throughput scenarios in the order they run at each
// size. Writes come first; every read scenario starts from a quiet delta
// window and warm caches.
var Scenarios = []Scenario{
	{Name: "renew", Ceiling: "trivial", Target: 0.8},
	{Name: "register", Ceiling: "trivial", Target: 0.4},
	{Name: "full-json", Ceiling: "static", Target: 0.9, Doc: &FullJSON},
	{Name: "full-xml", Ceiling: "static", Target: 0.9, Doc: &FullXML},
	{Name: "full-gzip", Ceiling: "static", Target: 0.9, Doc: &FullGzip},
	{Name: "app", Ceiling: "static", Target: 0.7, Doc: &OneApp},
	{Name: "delta", Ceiling: "static", Target: 0.8, Doc: &Delta},
}

// Setup prepares f for the scenario and returns the ceiling's load, Heureka's
// load and a function that stops the ceiling's server.
func (sc Scenario) Setup(f *Fixture) (ceiling, subject Load, stop func(), err error) {
	var h http.Handler
	switch {
	case sc.Doc == nil:
		h = Trivial()
		if sc.Name == "renew" {
			subject = RenewLoad(f.Base, f.Size)
		} else {
			subject = RegisterLoad(f.Base, f.Size, http.StatusNoContent)
		}
	default:
		d := *sc.Doc
		if d == Delta {
			err = f.PrepareDelta()
		} else {
			// An empty window: no delta pruning replaces the snapshot
			// (and its cached documents) during the measurement.
			f.ForgetDelta()
		}
		if err != nil {
			return
		}
		d.Warm(f)
		h = Static(d, d.Bytes(f))
		subject = d.Load(f, f.Base)
	}
	s, err := Serve(h)
	if err != nil {
		return
	}
	switch {
	case sc.Name == "renew":
		ceiling = RenewLoad(s.Base, f.Size)
	case sc.Name == "register":
		ceiling = RegisterLoad(s.Base, f.Size, http.StatusOK)
	default:
		ceiling = sc.Doc.Load(f, s.Base)
	}
	return ceiling, subject, s.Close, nil
}

// Warm builds the cached documents d's requests will read.
func (d Doc) Warm(f *Fixture) {
	s := f.Node.View().Snapshot()
	if d == OneApp {
		s.Apps(func(a *view.App) bool {
			s.AppDocument(a.Name(), d.Format, d.Gzip)
			return true
		})
		return
	}
	d.Bytes(f)
}

// cpuTime returns the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// RebuildAfterChange re-registers one instance and times building the full
// document on the new snapshot, plain JSON and then gzipped JSON (every
// other application's encoded bytes are reused). This is what the first
// full fetch after any change pays.
func (f *Fixture) RebuildAfterChange() (plain, gz time.Duration, err error) {
	before := f.Node.View().Snapshot()
	before.Full(view.FormatJSON, false)
	before.Full(view.FormatJSON, true)
	if err := registerDirect(f.Node.Registry(), AppendRegisterBody(nil, InstanceAt(f.Size/2))); err != nil {
		return 0, 0, err
	}
	s := f.Node.View().Snapshot()
	if s == before {
		return 0, 0, errors.New("bench: a registration made no new snapshot")
	}
	t0 := time.Now()
	s.Full(view.FormatJSON, false)
	t1 := time.Now()
	s.Full(view.FormatJSON, true)
	return t1.Sub(t0), time.Since(t1), nil
}
