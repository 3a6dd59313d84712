package view

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
)

// lineEncoder is a test Encoder with a line format:
//
//	<prefix> apps versions=<v> hash=<h>
//	app NAME
//	 ID STATUS ACTION          (one line per instance)
//	--                         (separator; empty for the xml-like formats)
//	end
//
// It counts how often each application is encoded.
type lineEncoder struct {
	prefix string
	sep    string

	mu    sync.Mutex
	calls map[string]int // instance encodings (AppendApplication and AppendInstance) by app name
}

func (e *lineEncoder) ContentType() string { return "text/x-" + e.prefix }

func (e *lineEncoder) AppendApplicationsOpen(dst []byte, versionDelta, hashcode string) []byte {
	return fmt.Appendf(dst, "%s apps versions=%s hash=%s\n", e.prefix, versionDelta, hashcode)
}

func (e *lineEncoder) AppendApplicationsSeparator(dst []byte) []byte { return append(dst, e.sep...) }

func (e *lineEncoder) AppendApplicationsClose(dst []byte) []byte { return append(dst, "end\n"...) }

func (e *lineEncoder) AppendApplication(dst []byte, name string, instances []*actors.Instance) []byte {
	e.mu.Lock()
	e.calls[name] += len(instances)
	e.mu.Unlock()
	return appendInstances(fmt.Appendf(dst, "app %s\n", name), instances)
}

func (e *lineEncoder) AppendApplicationOpen(dst []byte, name string) []byte {
	return fmt.Appendf(dst, "app %s\n", name)
}

func (e *lineEncoder) AppendInstance(dst []byte, in *actors.Instance) []byte {
	e.mu.Lock()
	e.calls[in.App]++
	e.mu.Unlock()
	return appendInstances(dst, []*actors.Instance{in})
}

func (e *lineEncoder) AppendInstanceSeparator(dst []byte) []byte { return dst }

func (e *lineEncoder) AppendApplicationClose(dst []byte) []byte { return dst }

func (e *lineEncoder) AppendApplicationDocument(dst []byte, name string, instances []*actors.Instance) []byte {
	return appendInstances(fmt.Appendf(dst, "%s doc %s\n", e.prefix, name), instances)
}

func appendInstances(dst []byte, instances []*actors.Instance) []byte {
	for _, in := range instances {
		dst = fmt.Appendf(dst, " %s %s %s\n", in.ID(), in.Status, in.ActionType)
	}
	return dst
}

func (e *lineEncoder) encodes(app string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[app]
}

var testEpoch = time.Date(2024, 3, 1, 12, 0, 0, 0, time.UTC)

// testEncoders returns one lineEncoder per format: the JSON-like ones
// separate applications with "--", the XML-like ones with nothing.
func testEncoders() ([NumFormats]Encoder, [NumFormats]*lineEncoder) {
	var enc [NumFormats]Encoder
	var lines [NumFormats]*lineEncoder
	for f, p := range [NumFormats]string{"json", "xml", "cjson", "cxml"} {
		sep := "--\n"
		if strings.HasSuffix(p, "xml") {
			sep = ""
		}
		lines[f] = &lineEncoder{prefix: p, sep: sep, calls: map[string]int{}}
		enc[f] = lines[f]
	}
	return enc, lines
}

// testView returns a view on a ManualClock with cfg changed by mutate.
func testView(t *testing.T, mutate func(*Config)) (*View, *actors.ManualClock, [NumFormats]*lineEncoder) {
	t.Helper()
	enc, lines := testEncoders()
	clock := actors.NewManualClock(testEpoch)
	cfg := DefaultConfig(enc)
	cfg.Clock = clock
	if mutate != nil {
		mutate(&cfg)
	}
	return New(cfg), clock, lines
}

// feeder builds events with increasing versions, as application actors do.
type feeder struct {
	v     *View
	clock atomic.Uint64
}

func newFeeder(v *View) *feeder { return &feeder{v: v} }

func testInst(app, id string, st actors.Status) *actors.Instance {
	return &actors.Instance{InstanceID: id, HostName: id + ".example.org", App: app, Status: st,
		OverriddenStatus: actors.StatusUnknown, VIPAddress: strings.ToLower(app)}
}

func (f *feeder) apply(action actors.ActionType, in *actors.Instance) *actors.Instance {
	in = in.Clone()
	in.ActionType = action
	f.v.Apply(&actors.Event{Action: action, Instance: in,
		Version: actors.Version{Clock: f.clock.Add(1), Node: "n1"}})
	return in
}

func (f *feeder) add(app, id string, st actors.Status) *actors.Instance {
	return f.apply(actors.ActionAdded, testInst(app, id, st))
}

func (f *feeder) modify(app, id string, st actors.Status) *actors.Instance {
	return f.apply(actors.ActionModified, testInst(app, id, st))
}

func (f *feeder) remove(app, id string) *actors.Instance {
	return f.apply(actors.ActionDeleted, testInst(app, id, actors.StatusUp))
}

func TestViewEmpty(t *testing.T) {
	v, _, _ := testView(t, nil)
	s := v.Snapshot()
	assert.Equal(t, uint64(1), s.Version())
	assert.Equal(t, 0, s.Count())
	assert.Equal(t, "", s.HashCode())
	assert.Equal(t, "json apps versions=1 hash=\nend\n", string(s.Full(FormatJSON, false)))
	assert.Equal(t, "xml apps versions=1 hash=\nend\n", string(s.Full(FormatXML, false)))
	assert.Equal(t, "json apps versions=1 hash=\nend\n", string(s.Delta(FormatJSON, false)))
	_, ok := s.AppDocument("NOPE", FormatJSON, false)
	assert.False(t, ok)
	assert.Nil(t, s.App("NOPE"))
	assert.Nil(t, s.Instance("NOPE", "x"))
	assert.Equal(t, 0, s.DeltaLen())
}

func TestViewApplyRegisterModifyDelete(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)

	f.add("B", "b1", actors.StatusUp)
	f.add("A", "a2", actors.StatusUp)
	f.add("A", "a1", actors.StatusDown)
	s := v.Snapshot()
	assert.Equal(t, uint64(4), s.Version())
	assert.Equal(t, 3, s.Count())
	assert.Equal(t, "DOWN_1_UP_2_", s.HashCode())
	assert.Equal(t, "json apps versions=1 hash=DOWN_1_UP_2_\n"+
		"app A\n a1 DOWN ADDED\n a2 UP ADDED\n--\n"+
		"app B\n b1 UP ADDED\n"+
		"end\n", string(s.Full(FormatJSON, false)), "apps by name, instances by id")
	assert.Equal(t, "xml apps versions=1 hash=DOWN_1_UP_2_\n"+
		"app A\n a1 DOWN ADDED\n a2 UP ADDED\n"+
		"app B\n b1 UP ADDED\n"+
		"end\n", string(s.Full(FormatXML, false)))
	doc, ok := s.AppDocument("A", FormatJSON, false)
	require.True(t, ok)
	assert.Equal(t, "json doc A\n a1 DOWN ADDED\n a2 UP ADDED\n", string(doc))

	f.modify("A", "a1", actors.StatusUp)
	s = v.Snapshot()
	assert.Equal(t, 3, s.Count())
	assert.Equal(t, "UP_3_", s.HashCode())
	doc, _ = s.AppDocument("A", FormatCompactJSON, false)
	assert.Equal(t, "cjson doc A\n a1 UP MODIFIED\n a2 UP ADDED\n", string(doc))

	f.remove("B", "b1")
	s = v.Snapshot()
	assert.Equal(t, 2, s.Count())
	_, ok = s.AppDocument("B", FormatJSON, false)
	assert.False(t, ok, "the last instance went: 404")
	assert.Equal(t, "json apps versions=1 hash=UP_2_\n"+
		"app A\n a1 UP MODIFIED\n a2 UP ADDED\n"+
		"end\n", string(s.Full(FormatJSON, false)))

	f.remove("A", "a1")
	f.remove("A", "a2")
	s = v.Snapshot()
	assert.Equal(t, 0, s.Count())
	assert.Equal(t, "", s.HashCode())
	assert.Equal(t, "json apps versions=1 hash=\nend\n", string(s.Full(FormatJSON, false)))

	// Deleting what is not there changes nothing but the version.
	f.remove("A", "a1")
	assert.Equal(t, 0, v.Snapshot().Count())
}

// Spec §4.8: STATUS_count_ for every status present, in alphabetical order.
func TestViewHashCode(t *testing.T) {
	tests := []struct {
		statuses []actors.Status
		want     string
	}{
		{nil, ""},
		{[]actors.Status{"UP", "UP", "UP", "DOWN"}, "DOWN_1_UP_3_"},
		{[]actors.Status{"UP", "OUT_OF_SERVICE", "UP"}, "OUT_OF_SERVICE_1_UP_2_"},
		{[]actors.Status{"UP", "UNKNOWN", "STARTING", "OUT_OF_SERVICE", "DOWN"},
			"DOWN_1_OUT_OF_SERVICE_1_STARTING_1_UNKNOWN_1_UP_1_"},
		{[]actors.Status{"STARTING", "STARTING"}, "STARTING_2_"},
	}
	for _, tc := range tests {
		t.Run(tc.want, func(t *testing.T) {
			v, _, _ := testView(t, nil)
			f := newFeeder(v)
			for i, st := range tc.statuses {
				f.add(fmt.Sprintf("APP%d", i%2), fmt.Sprintf("i-%d", i), st)
			}
			s := v.Snapshot()
			assert.Equal(t, tc.want, s.HashCode())
			assert.True(t, strings.HasPrefix(string(s.Full(FormatJSON, false)), "json apps versions=1 hash="+tc.want+"\n"))
		})
	}
}

func dataPtr(b []byte) *byte { return unsafe.SliceData(b) }

// A change re-encodes only its application: the others keep their cached
// element bytes (and gzip pieces) across snapshots.
func TestViewReusesUnchangedApps(t *testing.T) {
	v, _, lines := testView(t, nil)
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	f.add("B", "b1", actors.StatusUp)
	f.add("C", "c1", actors.StatusUp)

	s1 := v.Snapshot()
	full1 := string(s1.Full(FormatJSON, false))
	s1.Full(FormatJSON, true)
	enc := lines[FormatJSON]
	for _, app := range []string{"A", "B", "C"} {
		require.Equal(t, 1, enc.encodes(app), app)
	}

	f.modify("B", "b1", actors.StatusDown)
	s2 := v.Snapshot()
	require.Greater(t, s2.Version(), s1.Version())
	s2.Full(FormatJSON, false)
	s2.Full(FormatJSON, true)
	assert.Equal(t, 1, enc.encodes("A"), "unchanged A is not re-encoded")
	assert.Equal(t, 2, enc.encodes("B"), "changed B is re-encoded once")
	assert.Equal(t, 1, enc.encodes("C"))
	assert.Zero(t, lines[FormatXML].encodes("A"), "formats are built on demand")

	assert.Same(t, s1.App("A"), s2.App("A"))
	assert.NotSame(t, s1.App("B"), s2.App("B"))
	assert.Same(t, dataPtr(firstPiece(s1.App("A")).peek(FormatJSON)), dataPtr(firstPiece(s2.App("A")).peek(FormatJSON)),
		"same backing bytes")
	assert.Same(t, dataPtr(s1.App("C").gzChunks(enc, FormatJSON)[0].z.deflated),
		dataPtr(s2.App("C").gzChunks(enc, FormatJSON)[0].z.deflated))

	// Documents are cached per snapshot, and old snapshots are immutable.
	assert.Same(t, dataPtr(s2.Full(FormatJSON, false)), dataPtr(s2.Full(FormatJSON, false)))
	assert.Equal(t, full1, string(s1.Full(FormatJSON, false)))
	assert.NotEqual(t, full1, string(s2.Full(FormatJSON, false)))
	assert.Equal(t, 1, enc.encodes("A"))
}

// Checklist 15: each changed instance once in its latest state, grouped by
// application in first-seen order; versions__delta is the snapshot version
// and the hashcode is the full registry's.
func TestViewDelta(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	f.add("A", "a2", actors.StatusUp)
	f.modify("A", "a1", actors.StatusDown)
	f.remove("A", "a2")
	f.add("B", "b1", actors.StatusUp)
	f.remove("B", "b1")
	f.add("B", "b1", actors.StatusUp) // cancel then re-register ends as ADDED

	s := v.Snapshot()
	require.Equal(t, uint64(8), s.Version())
	assert.Equal(t, 3, s.DeltaLen(), "a1, a2 and b1, each once")
	assert.Equal(t, "DOWN_1_UP_1_", s.HashCode())
	want := "json apps versions=8 hash=DOWN_1_UP_1_\n" +
		"app A\n a1 DOWN MODIFIED\n a2 UP DELETED\n--\n" +
		"app B\n b1 UP ADDED\n" +
		"end\n"
	assert.Equal(t, want, string(s.Delta(FormatJSON, false)))
	assert.Same(t, dataPtr(s.Delta(FormatJSON, false)), dataPtr(s.Delta(FormatJSON, false)), "cached")
	assert.Equal(t, "xml apps versions=8 hash=DOWN_1_UP_1_\n"+
		"app A\n a1 DOWN MODIFIED\n a2 UP DELETED\n"+
		"app B\n b1 UP ADDED\n"+
		"end\n", string(s.Delta(FormatXML, false)))

	// The next change makes a new version; the old snapshot keeps its delta.
	f.add("C", "c1", actors.StatusUp)
	s2 := v.Snapshot()
	assert.Contains(t, string(s2.Delta(FormatJSON, false)), "versions=9 hash=DOWN_1_UP_2_\n")
	assert.Contains(t, string(s2.Delta(FormatJSON, false)), "app C\n c1 UP ADDED\n")
	assert.Equal(t, want, string(s.Delta(FormatJSON, false)))
}

// Entries leave the delta DeltaRetention after they were applied.
func TestViewPruneDelta(t *testing.T) {
	v, clock, _ := testView(t, func(c *Config) { c.DeltaRetention = 3 * time.Minute })
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	clock.Advance(2 * time.Minute)
	f.add("B", "b1", actors.StatusUp)

	v.PruneDelta()
	before := v.Snapshot()
	assert.Equal(t, 2, before.DeltaLen(), "nothing old enough: no new snapshot")
	assert.Equal(t, uint64(3), before.Version())

	clock.Advance(time.Minute) // a1 is exactly DeltaRetention old: kept
	v.PruneDelta()
	assert.Equal(t, 2, v.Snapshot().DeltaLen())

	clock.Advance(time.Millisecond)
	v.PruneDelta()
	s := v.Snapshot()
	assert.Equal(t, 1, s.DeltaLen())
	assert.Equal(t, uint64(4), s.Version(), "pruning makes a new version")
	assert.Equal(t, "json apps versions=4 hash=UP_2_\napp B\n b1 UP ADDED\nend\n", string(s.Delta(FormatJSON, false)))
	assert.Equal(t, 2, s.Count(), "pruning leaves the registry alone")
	assert.Equal(t, 2, before.DeltaLen(), "older snapshots keep their window")

	// New entries after a prune are appended as usual.
	f.add("C", "c1", actors.StatusUp)
	assert.Equal(t, 2, v.Snapshot().DeltaLen())
	clock.Advance(4 * time.Minute)
	v.PruneDelta()
	assert.Equal(t, 0, v.Snapshot().DeltaLen())
	assert.Equal(t, "json apps versions=6 hash=UP_3_\nend\n", string(v.Snapshot().Delta(FormatJSON, false)))
}

func vipInst(app, id string, st actors.Status, vip, svip string) *actors.Instance {
	in := testInst(app, id, st)
	in.VIPAddress, in.SecureVIPAddress = vip, svip
	return in
}

// Checklist 19: exact, case-sensitive element match in comma lists; no match
// gives an empty document with versions__delta -1.
func TestViewVIP(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	f.apply(actors.ActionAdded, vipInst("A", "a1", "UP", "foo,bar", "sec"))
	f.apply(actors.ActionAdded, vipInst("A", "a2", "UP", "Foo", ""))
	f.apply(actors.ActionAdded, vipInst("B", "b1", "DOWN", "foo", "sec,other"))
	f.apply(actors.ActionAdded, vipInst("B", "b2", "UP", "foobar", ""))
	f.apply(actors.ActionAdded, vipInst("C", "c1", "UP", " foo", ""))
	f.apply(actors.ActionAdded, vipInst("C", "c2", "UP", "bar,foo,", ""))

	empty := "json apps versions=-1 hash=\nend\n"
	s := v.Snapshot()
	tests := []struct {
		vip, want string
	}{
		{"foo", "json apps versions=-1 hash=DOWN_1_UP_2_\napp A\n a1 UP ADDED\n--\napp B\n b1 DOWN ADDED\n--\napp C\n c2 UP ADDED\nend\n"},
		{"Foo", "json apps versions=-1 hash=UP_1_\napp A\n a2 UP ADDED\nend\n"},
		{"bar", "json apps versions=-1 hash=UP_2_\napp A\n a1 UP ADDED\n--\napp C\n c2 UP ADDED\nend\n"},
		{" foo", "json apps versions=-1 hash=UP_1_\napp C\n c1 UP ADDED\nend\n"},
		{"foobar", "json apps versions=-1 hash=UP_1_\napp B\n b2 UP ADDED\nend\n"},
		{"FOO", empty},
		{"fo", empty},
		{"foo,bar", empty},
		{"", empty},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, string(s.VIP(tc.vip, FormatJSON, false)), "vip %q", tc.vip)
	}
	assert.Equal(t, "json apps versions=-1 hash=DOWN_1_UP_1_\napp A\n a1 UP ADDED\n--\napp B\n b1 DOWN ADDED\nend\n",
		string(s.SVIP("sec", FormatJSON, false)))
	assert.Equal(t, "json apps versions=-1 hash=DOWN_1_\napp B\n b1 DOWN ADDED\nend\n", string(s.SVIP("other", FormatJSON, false)))
	assert.Equal(t, empty, string(s.SVIP("foo", FormatJSON, false)), "VIPs and secure VIPs are separate")
	assert.Equal(t, "xml apps versions=-1 hash=\nend\n", string(s.VIP("nope", FormatXML, false)))

	// Moving, removing and emptying groups.
	f.apply(actors.ActionModified, vipInst("A", "a1", "UP", "bar", "sec"))
	f.remove("B", "b1")
	s = v.Snapshot()
	assert.Equal(t, "json apps versions=-1 hash=UP_1_\napp C\n c2 UP ADDED\nend\n", string(s.VIP("foo", FormatJSON, false)))
	assert.Equal(t, "json apps versions=-1 hash=UP_2_\napp A\n a1 UP MODIFIED\n--\napp C\n c2 UP ADDED\nend\n",
		string(s.VIP("bar", FormatJSON, false)))
	assert.Equal(t, empty, string(s.SVIP("other", FormatJSON, false)))
	f.remove("C", "c2")
	s = v.Snapshot()
	assert.Equal(t, empty, string(s.VIP("foo", FormatJSON, false)))
	_, ok := s.vips.Get("foo")
	assert.False(t, ok, "an emptied group is dropped")
}

// With CacheUpdateInterval, readers see changes only when Run refreshes.
func TestViewCacheUpdateInterval(t *testing.T) {
	v, _, _ := testView(t, func(c *Config) { c.CacheUpdateInterval = 20 * time.Millisecond })
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	assert.Equal(t, 0, v.Snapshot().Count(), "hidden until a refresh")
	assert.Equal(t, uint64(1), v.Snapshot().Version())

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.Run(ctx)
	}()
	require.Eventually(t, func() bool { return v.Snapshot().Count() == 1 }, 10*time.Second, 5*time.Millisecond)
	f.add("A", "a2", actors.StatusUp)
	require.Eventually(t, func() bool { return v.Snapshot().Count() == 2 }, 10*time.Second, 5*time.Millisecond)

	cancel()
	require.Eventually(t, func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	}, 10*time.Second, 5*time.Millisecond, "Run returns when its context ends")
	f.add("A", "a3", actors.StatusUp)
	assert.Equal(t, 2, v.Snapshot().Count(), "no refresh without Run")
}

// Run prunes the delta every DeltaRetentionInterval.
func TestViewRunPrunes(t *testing.T) {
	v, clock, _ := testView(t, func(c *Config) {
		c.DeltaRetention = time.Second
		c.DeltaRetentionInterval = 10 * time.Millisecond
	})
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.Run(ctx)
	}()
	defer func() { cancel(); <-done }()

	assert.Equal(t, 1, v.Snapshot().DeltaLen())
	clock.Advance(2 * time.Second)
	require.Eventually(t, func() bool { return v.Snapshot().DeltaLen() == 0 }, 10*time.Second, 5*time.Millisecond)
	assert.Equal(t, 1, v.Snapshot().Count())
}

func TestSnapshotLookups(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	f.add("A", "a1", actors.StatusUp)
	oos := testInst("B", "b1", actors.StatusOutOfService)
	oos.OverriddenStatus = actors.StatusOutOfService
	f.apply(actors.ActionAdded, oos)
	f.add("B", "b2", actors.StatusUp)

	s := v.Snapshot()
	require.NotNil(t, s.Instance("B", "b1"))
	assert.Equal(t, actors.StatusOutOfService, s.Instance("B", "b1").Status)
	assert.Nil(t, s.Instance("B", "zz"))
	assert.Equal(t, "B", s.InstanceByID("b2").App)
	assert.Nil(t, s.InstanceByID("zz"))
	assert.Equal(t, map[string]actors.Status{"b1": actors.StatusOutOfService}, s.Overrides())

	b := s.App("B")
	assert.Equal(t, "B", b.Name())
	require.Len(t, b.Instances(), 2)
	require.Len(t, b.Versions(), 2)
	assert.True(t, b.Versions()[0].Less(b.Versions()[1]), "b1 was applied before b2")

	var names []string
	s.Apps(func(a *App) bool {
		names = append(names, a.Name())
		return false // stop after the first
	})
	assert.Equal(t, []string{"A"}, names)
}

// Readers never lock and always see a consistent snapshot while writers
// apply events (run with -race).
func TestViewConcurrentReadersAndWriters(t *testing.T) {
	v, _, _ := testView(t, nil)
	const writers, readers, ops = 4, 4, 200

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := newFeeder(v)
			app := fmt.Sprintf("W%d", w)
			for i := 0; i < ops; i++ {
				id := fmt.Sprintf("i-%d", i%5)
				switch i % 3 {
				case 0:
					f.add(app, id, actors.StatusUp)
				case 1:
					f.modify(app, id, actors.StatusDown)
				default:
					f.remove(app, fmt.Sprintf("i-%d", (i+2)%5))
				}
			}
		}()
	}
	var rwg sync.WaitGroup
	for r := 0; r < readers; r++ {
		rwg.Add(1)
		go func() {
			defer rwg.Done()
			var last uint64
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				s := v.Snapshot()
				if !assert.GreaterOrEqual(t, s.Version(), last) {
					return
				}
				last = s.Version()
				full := s.Full(Format(n%int(NumFormats)), false)
				lines := strings.Split(strings.TrimSuffix(string(full), "\n"), "\n")
				assert.True(t, strings.HasSuffix(lines[0], " hash="+s.HashCode()), "header %q", lines[0])
				insts := 0
				for _, l := range lines {
					if strings.HasPrefix(l, " ") {
						insts++
					}
				}
				assert.Equal(t, s.Count(), insts)
				s.Delta(FormatJSON, false)
				s.VIP("w1", FormatJSON, n%2 == 0)
				s.AppDocument("W0", FormatXML, n%2 == 0)
				if n%10 == 0 {
					gz := s.Full(FormatJSON, true)
					assert.Equal(t, string(s.Full(FormatJSON, false)), string(gunzip(t, gz)))
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	rwg.Wait()

	s := v.Snapshot()
	assert.Equal(t, uint64(1+writers*ops), s.Version())
	assert.Equal(t, writers*5, s.DeltaLen(), "each writer's five instances, once")
	total := 0
	s.Apps(func(a *App) bool {
		total += len(a.Instances())
		return true
	})
	assert.Equal(t, s.Count(), total)
	assert.True(t, bytes.HasPrefix(s.Full(FormatJSON, false), []byte("json apps versions=1 hash="+s.HashCode()+"\n")))
}

// Changed is closed by the next published snapshot, once, for every caller
// that took it before; a caller after the change gets a fresh channel.
func TestViewChangedNotifies(t *testing.T) {
	v, _, _ := testView(t, nil)
	f := newFeeder(v)
	a, b := v.Changed(), v.Changed()
	select {
	case <-a:
		t.Fatal("closed before any change")
	default:
	}
	f.add("A", "a1", actors.StatusUp)
	for _, ch := range []<-chan struct{}{a, b} {
		select {
		case <-ch:
		default:
			t.Fatal("not closed by the change")
		}
	}
	c := v.Changed()
	select {
	case <-c:
		t.Fatal("a channel taken after the change is closed already")
	default:
	}
}
