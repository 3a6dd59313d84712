package bench

import (
	"context"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The workloads over real HTTP against a small node in this process: what
// each one does to the registry (the benchmarks only time them).

func smallFixture(t *testing.T, size int) (*Fixture, *http.Client) {
	t.Helper()
	f, err := NewFixture(size)
	require.NoError(t, err)
	t.Cleanup(f.Stop)
	c := NewClient(4)
	t.Cleanup(c.CloseIdleConnections)
	return f, c
}

func TestFreshRegistrationsGrowAndCancelsShrinkTheRegistry(t *testing.T) {
	f, c := smallFixture(t, 200)
	reg := f.Node.Registry()

	res, err := MeasureCtx(context.Background(), c, boundedLoad(FreshRegisterLoad(f.Base, f.Apps, f.Fresh, http.StatusNoContent), 150), 4, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 150, res.Requests)
	assert.Equal(t, 350, reg.Count(), "every request registered a new instance")
	assert.Equal(t, 150, f.Fresh.Len())
	assert.Equal(t, 150, f.Node.View().Snapshot().DeltaLen(), "and each one is in the delta window")

	f.Fresh.SetBudget(40)
	res, err = MeasureCtx(context.Background(), c, CancelLoad(f.Base, f.Fresh, http.StatusOK), 4, 0)
	require.NoError(t, err, "a spent budget ends the measurement without an error")
	assert.EqualValues(t, 40, res.Requests)
	assert.Equal(t, 310, reg.Count())

	require.NoError(t, Drain(c, f.Base, f.Fresh, 4))
	assert.Equal(t, 200, reg.Count(), "the drain restores the loaded size")
	assert.Zero(t, f.Fresh.Len())
}

func TestDeployAddsInstancesToTheDeltaWindow(t *testing.T) {
	f, c := smallFixture(t, 200)
	f.ForgetDelta()
	q := NewQueue()
	res, err := Deploy(c, f.Base, f.Apps, 100, 4, q, 0)
	require.NoError(t, err)
	assert.EqualValues(t, 100, res.Requests)
	assert.Equal(t, 300, f.Node.Registry().Count())
	assert.Equal(t, 100, f.Node.View().Snapshot().DeltaLen())
	assert.Equal(t, 100, q.Len())
	assert.Positive(t, res.CPU, "getrusage counted the process's CPU time")
}

// A paced churn makes no more pairs than its pace allows over its length
// (one more: the limiter's burst), however many connections it has.
func TestChurnHeldToItsPace(t *testing.T) {
	f, c := smallFixture(t, 200)
	q := LoadedQueue(f.Size)
	const pace = 40.0
	run, err := Churn(c, f.Base, f.Size, f.Apps, q, 8, 500*time.Millisecond, 50*time.Millisecond, 0, pace)
	require.NoError(t, err)
	assert.Equal(t, pace, run.Pace)
	require.Positive(t, run.Result.Requests)
	assert.LessOrEqual(t, float64(run.Result.Requests), 1+pace*run.Result.Elapsed.Seconds(),
		"8 connections held to %v pairs/s over %v", pace, run.Result.Elapsed)
	assert.Equal(t, 200, f.Node.Registry().Count())
}

func TestChurnKeepsTheSizeAndSamplesRSS(t *testing.T) {
	f, c := smallFixture(t, 200)
	q := LoadedQueue(f.Size)
	run, err := Churn(c, f.Base, f.Size, f.Apps, q, 4, 300*time.Millisecond, 20*time.Millisecond, 0, 0)
	require.NoError(t, err)
	require.Positive(t, run.Result.Requests)
	assert.Equal(t, 200, f.Node.Registry().Count(), "each pair registers one instance and cancels one")
	assert.Equal(t, 200, q.Len())
	last := run.Samples[len(run.Samples)-1]
	assert.Equal(t, run.Result.Requests, last.Pairs, "the last sample is taken after the run")
	assert.Positive(t, run.MaxRSS())
	wins := run.Windows(100 * time.Millisecond)
	require.NotEmpty(t, wins)
	timed := 0
	for _, w := range wins {
		assert.Greater(t, w.To, w.From)
		assert.Positive(t, w.MaxRSS)
		timed += w.Regs.Count()
	}
	registered := 0
	for _, s := range run.Samples {
		registered += s.Regs.Count()
	}
	assert.EqualValues(t, run.Result.Requests, registered, "every pair's registration is timed in one sample")
	assert.LessOrEqual(t, timed, registered, "a window holds its samples' registrations, none twice")
	assert.Positive(t, wins[0].Regs.Percentile(99))
	// Each pair replaces an instance of the same application.
	for a := 0; a < f.Apps; a++ {
		app := f.Node.View().Snapshot().App(AppName(a))
		require.NotNil(t, app, "application %d is still there", a)
		assert.Len(t, app.Instances(), InstancesPerApp)
	}
	// The loaded instances are cancelled oldest first.
	first := InstanceAt(0)
	_, err = do(c, newRequest(http.MethodGet, hostOf(f.Base), "/eureka/apps/"+first.App+"/"+first.ID, "", javaHeaders("application/json", false), nil), http.StatusNotFound)
	assert.NoError(t, err, "the oldest loaded instance was cancelled")
}

func TestReadsUnderChurn(t *testing.T) {
	f, c := smallFixture(t, 200)
	q := LoadedQueue(f.Size)
	var regs Durations
	reads, pairs, err := UnderChurn(c, Delta.LoadFor(f.Apps, f.Base), TimedChurnLoad(f.Base, q, http.StatusNoContent, http.StatusOK, &regs),
		2, 2, 200*time.Millisecond, 0, 0)
	require.NoError(t, err)
	assert.Positive(t, reads.Requests)
	assert.GreaterOrEqual(t, pairs.Requests, int64(2), "the churn ran on both its connections before the reads began")
	p99, n := regs.Percentile(99)
	assert.EqualValues(t, pairs.Requests, n, "one registration timed per pair")
	assert.Positive(t, p99)
	assert.Equal(t, 200, f.Node.Registry().Count())
}

// A paced churn holds its pairs to the pace however many connections run
// it (100 pairs/s for 300 ms: about 30, never the hundreds two
// connections make unpaced).
func TestReadsUnderPacedChurn(t *testing.T) {
	f, c := smallFixture(t, 200)
	q := LoadedQueue(f.Size)
	_, pairs, err := UnderChurn(c, Delta.LoadFor(f.Apps, f.Base), ChurnLoad(f.Base, q, http.StatusNoContent, http.StatusOK),
		2, 2, 300*time.Millisecond, 0, 100)
	require.NoError(t, err)
	assert.LessOrEqual(t, pairs.Requests, int64(100), "the pace held the churn")
	assert.Equal(t, 200, f.Node.Registry().Count())
}

func TestWindowsCompareRates(t *testing.T) {
	r := ChurnRun{}
	for s := 0; s <= 6; s++ {
		pairs := int64(s * 100)
		if s > 3 {
			pairs = 300 + int64(s-3)*50 // half the rate after 3 s
		}
		r.Samples = append(r.Samples, ChurnSample{At: time.Duration(s) * time.Second, Pairs: pairs, RSS: int64(s) << 20,
			CPU: time.Duration(s) * 10 * time.Millisecond})
	}
	wins := r.Windows(3 * time.Second)
	require.Len(t, wins, 2)
	assert.InDelta(t, 100, wins[0].Rate, 1e-9)
	assert.InDelta(t, 50, wins[1].Rate, 1e-9)
	assert.EqualValues(t, 3<<20, wins[0].MaxRSS)
	assert.EqualValues(t, 6<<20, wins[1].MaxRSS)
	assert.Equal(t, 100*time.Microsecond, wins[0].CPUPer)
	assert.EqualValues(t, 6<<20, r.MaxRSS())
}

func TestProcAccounting(t *testing.T) {
	cpu, err := ProcCPU(os.Getpid())
	require.NoError(t, err)
	assert.Positive(t, cpu)
	rss, err := ProcRSS(0)
	require.NoError(t, err)
	assert.Positive(t, rss)
	assert.Regexp(t, `^\d+\.\d\d \d+\.\d\d \d+\.\d\d$`, LoadAvg())
}

// A heureka process answers the same loads, and its CPU time is read from
// /proc/PID/stat.
func TestHeurekaProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("builds cmd/heureka")
	}
	dir := t.TempDir()
	bin, err := BuildHeureka(context.Background(), dir)
	require.NoError(t, err)
	p, err := StartHeurekaProcess(bin, dir)
	require.NoError(t, err)
	defer p.Stop()
	c := NewClient(4)
	defer c.CloseIdleConnections()
	_, err = RegisterLoaded(c, p.Base, 100, 4)
	require.NoError(t, err)
	res, err := MeasureCtx(context.Background(), c, boundedLoad(RenewLoad(p.Base, 100), 200), 4, p.PID)
	require.NoError(t, err)
	assert.EqualValues(t, 200, res.Requests)
	assert.True(t, res.External)
	body, err := FullJSON.Fetch(c, p.Base)
	require.NoError(t, err)
	assert.Contains(t, string(body), InstanceAt(99).ID)
	rss, err := ProcRSS(p.PID)
	require.NoError(t, err)
	assert.Positive(t, rss)
	p.Stop()
	_, err = ProcCPU(p.PID)
	assert.Error(t, err, "the process is gone after Stop")
}

// scenarioNamed returns the scenario of that name; the test fails when
// there is none.
func scenarioNamed(t *testing.T, name string) Scenario {
	t.Helper()
	for _, sc := range Scenarios {
		if sc.Name == name {
			return sc
		}
	}
	require.FailNow(t, "no such scenario", name)
	return Scenario{}
}

// TestAAServesBothSidesItself: a-a's two loads go to two trivial servers of
// its own, not to the server under test (here an address nobody listens
// on), and each answers renew's request with the trivial 200.
func TestAAServesBothSidesItself(t *testing.T) {
	aa := scenarioNamed(t, AA)
	ln, err := Serve(Trivial())
	require.NoError(t, err)
	nobody := ln.Base
	ln.Close() // its port refuses connections from now on

	ceiling, subject, stop, err := aa.Loads(nobody, 10, 1, nil, nil)
	require.NoError(t, err)
	defer stop()
	c := NewClient(1)
	defer c.CloseIdleConnections()
	for _, l := range []Load{ceiling, subject} {
		_, err := l.New(c, 0)()
		assert.NoError(t, err, l.Name)
	}
	assert.Equal(t, AA, subject.Name)
}

// TestFreshCeilingKeepsWhatItRegisters: register-fresh's ceiling load keeps
// the instances it registers, as the subject's does, in a queue of its own,
// so that both sides do the same work in the load generator.
func TestFreshCeilingKeepsWhatItRegisters(t *testing.T) {
	fresh := scenarioNamed(t, "register-fresh")
	f, c := smallFixture(t, 2*InstancesPerApp)
	ceiling, subject, stop, err := fresh.Loads(f.Base, f.Size, f.Apps, f.Fresh, nil)
	require.NoError(t, err)
	defer stop()
	for _, l := range []Load{ceiling, subject} {
		do := l.New(c, 0)
		for range 5 {
			_, err := do()
			require.NoError(t, err, l.Name)
		}
	}
	require.Same(t, f.Fresh, subject.Kept)
	assert.Equal(t, 5, f.Fresh.Len(), "the subject keeps what it registered")
	require.NotNil(t, ceiling.Kept, "the ceiling keeps what it registers too")
	assert.NotSame(t, f.Fresh, ceiling.Kept, "in a queue of its own")
	assert.Equal(t, 5, ceiling.Kept.Len())
}

// TestStaticServesEachApplicationItsOwnDocument: the ceiling of the app
// scenario holds every application's document at its own path, the bytes
// Heureka serves there (taken in process, or fetched from a server
// process), so that both sides read as many distinct documents.
func TestStaticServesEachApplicationItsOwnDocument(t *testing.T) {
	f, c := smallFixture(t, 3*InstancesPerApp)
	require.Equal(t, 3, f.Apps)
	fetched, err := OneApp.FetchBodies(c, f.Base, f.Apps)
	require.NoError(t, err)
	assert.Equal(t, fetched, OneApp.Bodies(f, f.Apps), "the node's prepared bytes are what it serves")

	st, err := Serve(Static(OneApp, OneApp.Bodies(f, f.Apps)))
	require.NoError(t, err)
	defer st.Close()
	paths := OneApp.Paths(f)
	require.Len(t, paths, 3)
	for _, p := range paths {
		body, err := OneApp.fetch(c, st.Base, p)
		require.NoError(t, err, p)
		assert.Equal(t, fetched[p], body, p)
	}
	assert.NotEqual(t, fetched[paths[0]], fetched[paths[1]], "each application is a different document")
	_, err = OneApp.fetch(c, st.Base, "/eureka/apps/NOSUCHAPP")
	assert.ErrorContains(t, err, "status 404")
}
