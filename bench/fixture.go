// Package bench owns the measurement of Heureka over real HTTP on loopback
// against this machine's ceiling: the same load sent to a trivial net/http
// handler (an empty 200) and to a handler that writes the same prepared
// bytes the registry returns. It holds the fixtures (a node in this process
// loaded with generated instances, or a server process: a heureka binary or
// the reference Eureka server), the workloads (renew, re-register, fresh
// registrations, cancels, deploys, churn, reads), the load generator, the
// baseline servers and the process accounting (getrusage, /proc). The Go
// benchmarks live in scenario_bench_test.go, the tests of the workloads in
// workloads_test.go; the tables of BENCHMARKS.md are printed by the report
// program in cmd/report.
package bench

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/node"
)

// Sizes are the registry sizes every scenario runs at.
var Sizes = []int{1000, 10000, 100000}

// InstancesPerApp spreads instances over applications: 50 applications at
// 1k instances, 500 at 10k, 5000 at 100k.
const InstancesPerApp = 20

// DeltaChanges is the number of instances changed within the delta window
// when the delta is measured, the same at every registry size.
const DeltaChanges = 100

// LastDirty is the lastDirtyTimestamp every generated instance carries (and
// every renewal sends).
const LastDirty int64 = 1754499999870

var lastDirtyStr = strconv.FormatInt(LastDirty, 10)

// AppName returns the upper-case name of application a.
func AppName(a int) string { return fmt.Sprintf("SERVICE-%05d", a) }

// Instance describes generated instance i: its application, address and id.
type Instance struct {
	App string // upper case
	IP  string
	ID  string
}

// InstanceAt returns generated instance i of the loaded registry: application
// i/InstancesPerApp, address 10.x.y.z, id "ip:app:8080" like a Spring Cloud
// client's.
func InstanceAt(i int) Instance {
	return makeInstance(i/InstancesPerApp, 0, i)
}

// extraInstance is instance n registered during a measurement into app a,
// with addresses disjoint from the loaded ones.
func extraInstance(a, n int) Instance { return makeInstance(a, 128, n) }

// freshSeq numbers the instances registered during measurements, across
// every fixture and server of the process, so that no two are the same.
var freshSeq atomic.Int64

// NextFresh returns a new instance for application a (of apps) that no
// measurement of this process has registered before (up to 8M of them).
func NextFresh(apps int) Instance {
	n := int(freshSeq.Add(1))
	return extraInstance(n%apps, n)
}

// NextFreshIn returns a new instance of application app (upper case) that
// no measurement of this process has registered before.
func NextFreshIn(app string) Instance { return namedInstance(app, 128, int(freshSeq.Add(1))) }

func makeInstance(app, net, i int) Instance { return namedInstance(AppName(app), net, i) }

func namedInstance(name string, net, i int) Instance {
	ip := fmt.Sprintf("10.%d.%d.%d", net+((i>>16)&127), (i>>8)&255, i&255)
	return Instance{App: name, IP: ip, ID: ip + ":" + lower(name) + ":8080"}
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// AppendRegisterBody appends the register request body a Java (Spring Cloud)
// client sends for inst: the shape of spec §3.7.
func AppendRegisterBody(dst []byte, inst Instance) []byte {
	app := lower(inst.App)
	url := "http://" + inst.IP + ":8080/"
	dst = append(dst, `{"instance":{"instanceId":"`...)
	dst = append(dst, inst.ID...)
	dst = append(dst, `","hostName":"`...)
	dst = append(dst, inst.IP...)
	dst = append(dst, `","app":"`...)
	dst = append(dst, inst.App...)
	dst = append(dst, `","ipAddr":"`...)
	dst = append(dst, inst.IP...)
	dst = append(dst, `","status":"UP","overriddenStatus":"UNKNOWN","port":{"$":8080,"@enabled":"true"},`+
		`"securePort":{"$":443,"@enabled":"false"},"countryId":1,`+
		`"dataCenterInfo":{"@class":"com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo","name":"MyOwn"},`+
		`"leaseInfo":{"renewalIntervalInSecs":30,"durationInSecs":90,"registrationTimestamp":0,"lastRenewalTimestamp":0,`+
		`"evictionTimestamp":0,"serviceUpTimestamp":0},`+
		`"metadata":{"management.port":"8081","zone":"zone-a"},"homePageUrl":"`...)
	dst = append(dst, url...)
	dst = append(dst, `","statusPageUrl":"`...)
	dst = append(dst, url...)
	dst = append(dst, `actuator/info","healthCheckUrl":"`...)
	dst = append(dst, url...)
	dst = append(dst, `actuator/health","vipAddress":"`...)
	dst = append(dst, app...)
	dst = append(dst, `","secureVipAddress":"`...)
	dst = append(dst, app...)
	dst = append(dst, `","isCoordinatingDiscoveryServer":"false","lastUpdatedTimestamp":"`...)
	dst = append(dst, lastDirtyStr...)
	dst = append(dst, `","lastDirtyTimestamp":"`...)
	dst = append(dst, lastDirtyStr...)
	return append(dst, `"}}`...)
}

// ShiftClock is the wall clock moved forward by an adjustable offset. The
// fixtures give it to the view so that the registrations of the loading
// phase can be aged out of the delta window at once.
type ShiftClock struct{ off atomic.Int64 }

// Now implements actors.Clock.
func (c *ShiftClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// Advance moves the clock forward by d.
func (c *ShiftClock) Advance(d time.Duration) { c.off.Add(int64(d)) }

// Fixture is a running node loaded with Size instances.
type Fixture struct {
	Size int
	Apps int
	Node *node.Node
	// Base is the node's HTTP root, "http://127.0.0.1:port".
	Base string

	// Fresh holds the instances the register-fresh scenario added, oldest
	// first: the cancel scenario cancels them again.
	Fresh *Queue

	clock     *ShiftClock
	retention time.Duration // the view's DeltaRetention
}

// Start starts a node on a free loopback port with the production
// configuration (node.DefaultConfig), except that the view's clock is a
// ShiftClock and eviction sweeps run once a day. It holds no instances yet.
//
// The fixture's instances have no clients: their leases run out 90 s after
// the last renew round, and a production sweep (every 60 s) may then evict
// some of them in the middle of a report, once self-preservation has let go
// after a mass cancel (a churn's cancel of a loaded instance got 404). The
// report measures requests on a registry of a known size, not eviction.
// The sweeps also forget expired tombstones, so a run that lasts longer
// than the tombstone TTL keeps them all unless it sweeps (StartWith).
func Start() (*Fixture, error) {
	return StartWith(func(*node.Config) {})
}

// StartWith is Start with the configuration changed by edit after Start's
// own changes.
func StartWith(edit func(*node.Config)) (*Fixture, error) {
	cfg := node.DefaultConfig("bench")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Registry.EvictionInterval = 24 * time.Hour
	edit(&cfg)
	clock := &ShiftClock{}
	cfg.View.Clock = clock
	n, err := node.Start(cfg)
	if err != nil {
		return nil, err
	}
	return &Fixture{Node: n, Base: "http://" + n.Addr(), clock: clock, retention: cfg.View.DeltaRetention, Fresh: NewQueue()}, nil
}

// NewFixture starts a node and loads size instances into it.
func NewFixture(size int) (*Fixture, error) {
	return NewFixtureWith(size, func(*node.Config) {})
}

// NewFixtureWith is NewFixture on StartWith(edit).
func NewFixtureWith(size int, edit func(*node.Config)) (*Fixture, error) {
	f, err := StartWith(edit)
	if err != nil {
		return nil, err
	}
	if err := f.Load(size); err != nil {
		f.Stop()
		return nil, err
	}
	return f, nil
}

// Load registers instances 0…size-1 through the registry facade, the way
// the register handler does after reading the body: each body is decoded by
// eureka.DecodeInstance and normalized, so the registry holds exactly what
// an HTTP registration would have stored. Several workers register in
// parallel. Afterwards the loading is aged out of the delta window (as it
// would be three minutes later), leaving the registry in its steady state.
func (f *Fixture) Load(size int) error {
	if f.Size != 0 {
		return fmt.Errorf("bench: fixture already loaded")
	}
	workers := 4 * runtime.GOMAXPROCS(0)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	reg := f.Node.Registry()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var body []byte
			for {
				i := int(next.Add(1)) - 1
				if i >= size {
					return
				}
				body = AppendRegisterBody(body[:0], InstanceAt(i))
				if err := registerDirect(reg, body); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	if got := reg.Count(); got != size {
		return fmt.Errorf("bench: registry holds %d instances after loading %d", got, size)
	}
	f.Size = size
	f.Apps = (size + InstancesPerApp - 1) / InstancesPerApp
	f.ForgetDelta()
	return nil
}

func registerDirect(reg *actors.Registry, body []byte) error {
	inst, err := eureka.DecodeInstance("application/json", body)
	if err != nil {
		return err
	}
	inst.Normalize()
	return reg.Register(context.Background(), inst, false)
}

// ForgetDelta ages every change so far out of the delta window.
func (f *Fixture) ForgetDelta() {
	f.clock.Advance(10 * time.Minute)
	f.Node.View().PruneDelta()
}

// HoldDeltaWindow keeps the delta window at about the changes of the last
// w of real time until stop is called, so that reads under a steady churn
// read a delta of steady size (with the production retention of 3 minutes
// the window, and the delta, grow through any measurement shorter than
// that). The view's clock, which only stamps and ages delta entries, runs
// retention÷w times as fast meanwhile, and the window is pruned every w/10.
// Leases do not use this clock.
func (f *Fixture) HoldDeltaWindow(w time.Duration) (stop func()) {
	retention := f.retention
	tick := w / 10
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				f.clock.Advance(time.Duration(float64(tick) * (float64(retention)/float64(w) - 1)))
				f.Node.View().PruneDelta()
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
	}
}

// PrepareDelta leaves exactly DeltaChanges recent changes in the delta
// window (re-registrations spread over the applications), whatever the
// registry size, and returns the delta document's size (JSON, gzip).
func (f *Fixture) PrepareDelta() error {
	f.ForgetDelta()
	reg := f.Node.Registry()
	var body []byte
	for k := 0; k < DeltaChanges; k++ {
		i := (k * f.Size / DeltaChanges) % f.Size
		body = AppendRegisterBody(body[:0], InstanceAt(i))
		if err := registerDirect(reg, body); err != nil {
			return err
		}
	}
	if n := f.Node.View().Snapshot().DeltaLen(); n != DeltaChanges {
		return fmt.Errorf("bench: delta window holds %d entries, want %d", n, DeltaChanges)
	}
	return nil
}

// FillFresh registers new instances through the registry facade (not over
// HTTP) until f.Fresh holds at least n: what the cancel benchmark cancels.
func (f *Fixture) FillFresh(n int) error {
	reg := f.Node.Registry()
	var body []byte
	for f.Fresh.Len() < n {
		in := NextFresh(f.Apps)
		body = AppendRegisterBody(body[:0], in)
		if err := registerDirect(reg, body); err != nil {
			return err
		}
		f.Fresh.Push(in)
	}
	return nil
}

// Stop stops the node.
func (f *Fixture) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = f.Node.Stop(ctx)
}
