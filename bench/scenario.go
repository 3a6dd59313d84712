package bench

import (
	"errors"
	"net/http"
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
	// Target is the minimum ratio of Heureka's throughput to the ceiling's;
	// 0 when the scenario has no target (it is measured to be seen).
	Target float64
	// Doc is the document a read scenario fetches (nil for writes).
	Doc *Doc
}

// Scenarios are the throughput scenarios in the order they run at each
// size. a-a comes first: renew's requests sent to two trivial servers, one
// as the ceiling and one in the subject's place, so that its ratio shows
// how far the run's ratios move by chance (1 but for noise). Writes come
// next: register-fresh grows the registry (and the delta window) by every
// request, cancel then removes those instances again, oldest first. Every
// read scenario starts from a quiet delta window and warm caches.
//
// The targets are the performance goals (BENCHMARKS.md): renew ≥ 0.9 and fresh registrations
// ≥ 0.6 of the trivial ceiling, one application, the delta and the full
// documents ≥ 0.9 of the static one. register's 0.4 is the earlier goal for
// re-registrations, which the goals do not name.
var Scenarios = []Scenario{
	{Name: AA, Ceiling: "trivial"},
	{Name: "renew", Ceiling: "trivial", Target: 0.9},
	{Name: "register", Ceiling: "trivial", Target: 0.4},
	{Name: "register-fresh", Ceiling: "trivial", Target: 0.6},
	{Name: "cancel", Ceiling: "trivial"},
	{Name: "full-json", Ceiling: "static", Target: 0.9, Doc: &FullJSON},
	{Name: "full-xml", Ceiling: "static", Target: 0.9, Doc: &FullXML},
	{Name: "full-gzip", Ceiling: "static", Target: 0.9, Doc: &FullGzip},
	{Name: "app", Ceiling: "static", Target: 0.9, Doc: &OneApp},
	{Name: "delta", Ceiling: "static", Target: 0.9, Doc: &Delta},
}

// AA is the name of the scenario whose subject is a second trivial server.
const AA = "a-a"

// BeforeRound prepares round i of rounds of the scenario's subject: for
// cancel it gives q (the instances register-fresh added) a budget of an
// equal share of what is left, so that every round has instances to
// cancel. Rounds end at their duration or when the budget is spent.
func (sc Scenario) BeforeRound(q *Queue, i, rounds int) {
	if sc.Name == "cancel" {
		q.SetBudget(q.Len() / (rounds - i))
	}
}

// Setup prepares f for the scenario and returns the ceiling's load, Heureka's
// load and a function that stops the ceiling's server.
func (sc Scenario) Setup(f *Fixture) (ceiling, subject Load, stop func(), err error) {
	if err = sc.Prepare(f); err != nil {
		return
	}
	return sc.Loads(f.Base, f.Size, f.Apps, f.Fresh, func(d Doc) (Bodies, error) { return d.Bodies(f, f.Apps), nil })
}

// Prepare readies f for a read scenario: exactly DeltaChanges changes in
// the delta window for delta, an empty window otherwise (so no delta
// pruning replaces the snapshot and its cached documents during the
// measurement), and the document's caches warm.
func (sc Scenario) Prepare(f *Fixture) error {
	d := sc.Doc
	if d == nil {
		return nil
	}
	if *d == Delta {
		if err := f.PrepareDelta(); err != nil {
			return err
		}
	} else {
		f.ForgetDelta()
	}
	d.Warm(f)
	return nil
}

// Loads starts the scenario's ceiling server and returns the ceiling's load,
// the subject's load against base (a registry of size instances in apps
// applications; q collects the instances register-fresh adds and feeds
// cancel) and a function that stops the ceiling (for a-a, both trivial
// servers; base is not used). body returns the bytes the
// subject serves at each path of a document, which the static ceiling
// writes.
func (sc Scenario) Loads(base string, size, apps int, q *Queue, body func(Doc) (Bodies, error)) (ceiling, subject Load, stop func(), err error) {
	var h http.Handler
	if sc.Doc == nil {
		h = Trivial()
	} else {
		var b Bodies
		if b, err = body(*sc.Doc); err != nil {
			return
		}
		h = Static(*sc.Doc, b)
	}
	s, err := Serve(h)
	if err != nil {
		return
	}
	stop = s.Close
	switch sc.Name {
	case AA:
		var s2 *Server
		if s2, err = Serve(Trivial()); err != nil {
			s.Close()
			return
		}
		stop = func() { s.Close(); s2.Close() }
		ceiling, subject = RenewLoad(s.Base, size), RenewLoad(s2.Base, size)
		subject.Name = AA
	case "renew":
		ceiling, subject = RenewLoad(s.Base, size), RenewLoad(base, size)
	case "register":
		ceiling, subject = RegisterLoad(s.Base, size, http.StatusOK), RegisterLoad(base, size, http.StatusNoContent)
	case "register-fresh":
		// The ceiling's load keeps what it registers too, in a queue of
		// its own that nothing reads: both sides then do the same work in
		// this process (the push, and the collector's scans of a queue
		// that grows by the rounds' requests), and the ratio compares the
		// servers alone.
		ceiling, subject = FreshRegisterLoad(s.Base, apps, NewQueue(), http.StatusOK), FreshRegisterLoad(base, apps, q, http.StatusNoContent)
	case "cancel":
		ceiling, subject = CancelLoad(s.Base, nil, http.StatusOK), CancelLoad(base, q, http.StatusOK)
	default:
		ceiling, subject = sc.Doc.LoadFor(apps, s.Base), sc.Doc.LoadFor(apps, base)
	}
	return ceiling, subject, stop, nil
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
