package netns

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/heureka/heureka/simulations"
)

// The real-process runs are judged by the simulations' checkers, fed with
// what this package records over HTTP. These tests build made-up histories
// the way a run does (HTTP documents through ParseApps and ParseMembers,
// rounds through roundOf, client lives through the recorder) and check
// that each invariant passes a good history and fails a bad one.

var histNodes = []string{"n0", "n1", "n2"}

// history is a made-up run: rounds every 200ms for 12s; the client of
// ORDERS/o-1 lives next to n0 from 0.1s until it cancels at 8s, and
// ORDERS/o-2 (next to n1) runs throughout. The faults end at 2s, the quiet
// phase ends at 10s.
type history struct {
	t0  time.Time
	rec *simulations.Recorder
}

func (h *history) at(sec float64) time.Time {
	return h.t0.Add(time.Duration(sec * float64(time.Second)))
}

// nodeView is what one node answers in one round.
type nodeView struct {
	status int      // 200, 403, or 0 for no answer
	ids    []string // ORDERS instance ids listed
	live   []string // live members
}

// appsJSON is a GET /eureka/apps document listing ids under ORDERS, as
// heureka writes it (arrays, string timestamps).
func appsJSON(ids []string) []byte {
	type inst struct {
		InstanceID string `json:"instanceId"`
		App        string `json:"app"`
		Status     string `json:"status"`
		Updated    string `json:"lastUpdatedTimestamp"`
		Dirty      string `json:"lastDirtyTimestamp"`
	}
	var ins []inst
	for _, id := range ids {
		ins = append(ins, inst{InstanceID: id, App: "ORDERS", Status: "UP", Updated: "1796075210667", Dirty: "1796075210001"})
	}
	doc := map[string]any{"applications": map[string]any{
		"versions__delta": "1", "apps__hashcode": fmt.Sprintf("UP_%d_", len(ids)),
		"application": []any{map[string]any{"name": "ORDERS", "instance": ins}},
	}}
	b, _ := json.Marshal(doc)
	return b
}

func membersJSON(live []string) []byte {
	var rows []map[string]string
	for _, n := range histNodes {
		state := "dead"
		for _, l := range live {
			if l == n {
				state = "alive"
			}
		}
		rows = append(rows, map[string]string{"name": n, "state": state})
	}
	b, _ := json.Marshal(rows)
	return b
}

// build records the history; view says what node answers at second s
// (the default: every node ready, listing the running clients' instances,
// seeing every node).
func build(t *testing.T, view func(node string, s float64, def nodeView) nodeView) *simulations.Observations {
	t.Helper()
	h := &history{t0: time.Unix(1_800_000_000, 0)}
	h.rec = simulations.NewRecorder(h.t0, histNodes, nil)
	o1 := h.rec.LifeStarted("ORDERS", "o-1", "n0", h.at(0.1))
	h.rec.Acked("o-1", o1, "n0", h.at(0.1), h.at(0.12))
	h.rec.Renewed("o-1", o1, "n0", h.at(7.1))
	h.rec.LifeEnded("o-1", o1, h.at(8), "n0")
	o2 := h.rec.LifeStarted("ORDERS", "o-2", "n1", h.at(0.1))
	h.rec.Acked("o-2", o2, "n1", h.at(0.1), h.at(0.12))
	topo := &simulations.Topology{Down: map[string]bool{}}
	for s := 0.2; s < 12; s += 0.2 {
		def := nodeView{status: 200, ids: []string{"o-2"}, live: histNodes}
		if s < 8.1 {
			def.ids = []string{"o-1", "o-2"}
		}
		var rs []Reading
		for _, n := range histNodes {
			v := view(n, s, def)
			rd := Reading{Node: n, Incarnation: 1, At: h.at(s), Status: v.status}
			if v.status == 200 {
				reg, err := ParseApps(appsJSON(v.ids))
				if err != nil {
					t.Fatal(err)
				}
				rd.Registry = reg
			}
			if v.status != 0 {
				live, err := ParseMembers(membersJSON(v.live))
				if err != nil {
					t.Fatal(err)
				}
				rd.Live = live
			}
			rs = append(rs, rd)
		}
		samples, probe := roundOf(h.at(s), histNodes, h.rec.AppNames(), topo, rs)
		h.rec.AddSamples(samples)
		h.rec.AddProbe(probe)
	}
	h.rec.Mark(func(o *simulations.Observations) {
		o.FaultsEnd, o.QuietStart, o.QuietEnd, o.End = h.at(2), h.at(2), h.at(10), h.at(12)
		o.SampleInterval, o.LeaseDuration = 200*time.Millisecond, 3*time.Second
		o.Timers = simulations.DefaultTimers()
	})
	return h.rec.Observations()
}

func verdict(t *testing.T, inv string, o *simulations.Observations) simulations.Verdict {
	t.Helper()
	return simulations.Checkers[inv](o, simulations.DefaultThresholds(simulations.DefaultTimers()))
}

func without(ids []string, drop string) []string {
	var out []string
	for _, id := range ids {
		if id != drop {
			out = append(out, id)
		}
	}
	return out
}

func TestGoodHistoryPasses(t *testing.T) {
	o := build(t, func(_ string, _ float64, def nodeView) nodeView { return def })
	for _, inv := range []string{simulations.InvNoMissingRenewer, simulations.InvConvergence,
		simulations.InvNoResurrection, simulations.InvMembership} {
		if v := verdict(t, inv, o); !v.Pass {
			t.Errorf("%s fails a good history: %s; %v", inv, v.Measured, v.Details)
		}
	}
}

func TestBadHistoriesFail(t *testing.T) {
	for _, tc := range []struct {
		name string
		inv  string
		view func(node string, s float64, def nodeView) nodeView
		want string // in the evidence
	}{
		{
			// n1 drops the renewing client's instance for 4s.
			name: "missing-renewer",
			inv:  simulations.InvNoMissingRenewer,
			view: func(n string, s float64, def nodeView) nodeView {
				if n == "n1" && s >= 3 && s < 7 {
					def.ids = without(def.ids, "o-1")
				}
				return def
			},
			want: "o-1 missing on n1",
		},
		{
			// n2 keeps an instance nobody else has, to the end.
			name: "diverged",
			inv:  simulations.InvConvergence,
			view: func(n string, _ float64, def nodeView) nodeView {
				if n == "n2" {
					def.ids = append(def.ids, "ghost-1")
				}
				return def
			},
			want: "n2 hold",
		},
		{
			// n1 serves the cancelled instance again from 9.4s.
			name: "resurrection",
			inv:  simulations.InvNoResurrection,
			view: func(n string, s float64, def nodeView) nodeView {
				if n == "n1" && s >= 9.4 {
					def.ids = append(def.ids, "o-1")
				}
				return def
			},
			want: "o-1 back on n1",
		},
		{
			// n2 never sees the others again.
			name: "membership-incomplete",
			inv:  simulations.InvMembership,
			view: func(n string, _ float64, def nodeView) nodeView {
				if n == "n2" {
					def.live = []string{"n2"}
				}
				return def
			},
			want: "n2 sees n2",
		},
		{
			// A node answering 403 (initial sync not done) after the
			// faults never counts as converged.
			name: "never-ready",
			inv:  simulations.InvConvergence,
			view: func(n string, _ float64, def nodeView) nodeView {
				if n == "n0" {
					def.status = 403
				}
				return def
			},
			want: "(not ready)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := build(t, tc.view)
			v := verdict(t, tc.inv, o)
			if v.Pass {
				t.Fatalf("%s passes a bad history: %s", tc.inv, v.Measured)
			}
			if !strings.Contains(strings.Join(v.Details, "\n"), tc.want) {
				t.Errorf("%s: evidence %q lacks %q", tc.inv, v.Details, tc.want)
			}
		})
	}
}

func TestParseApps(t *testing.T) {
	// A lone application and instance written as objects, numbers for
	// timestamps (other Eureka codecs do this).
	body := `{"applications":{"apps__hashcode":"UP_1_","application":{"name":"A","instance":` +
		`{"instanceId":"a-1","status":"UP","lastUpdatedTimestamp":17.5,"lastDirtyTimestamp":"9"}}}}`
	reg, err := ParseApps([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if !reg.IDs["A"]["a-1"] {
		t.Errorf("IDs = %v", reg.IDs)
	}
	// No '.' after '@': the checkers' version parser must find no version.
	if want := "UP_1_|A/a-1@17_5-9-UP"; reg.Fingerprint != want {
		t.Errorf("fingerprint %q, want %q", reg.Fingerprint, want)
	}
	if _, err := ParseApps([]byte(`<applications/>`)); err == nil {
		t.Error("XML parsed as JSON")
	}
	live, err := ParseMembers([]byte(`[{"name":"b","state":"suspect"},{"name":"a","state":"alive"},{"name":"c","state":"dead"},{"name":"d","state":"left"}]`))
	if err != nil || strings.Join(live, ",") != "a,b" {
		t.Errorf("live = %v, %v", live, err)
	}
}

func TestRoundOf(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	reg, _ := ParseApps(appsJSON([]string{"o-1"}))
	samples, p := roundOf(at, []string{"n0", "n1", "n2"}, []string{"ORDERS", "USERS"}, nil, []Reading{
		{Node: "n0", At: at, Status: 200, Registry: reg, Live: []string{"n0", "n1"}},
		{Node: "n1", At: at, Status: 403},
		{Node: "n2", At: at},                             // not asked (paused, link down)
		{Node: "n3", At: at, Status: 200, Registry: reg}, // not running: ignored
	})
	if len(samples) != 4 {
		t.Fatalf("%d samples, want 2 for n0 and 2 for n1", len(samples))
	}
	for _, s := range samples {
		switch {
		case s.Node == "n0" && s.App == "ORDERS" && (!s.Ready || !s.IDs["o-1"]):
			t.Errorf("n0 ORDERS: %+v", s)
		case s.Node == "n0" && s.App == "USERS" && (s.IDs == nil || len(s.IDs) != 0):
			t.Errorf("n0 USERS (absent app): %+v, want an empty sample", s)
		case s.Node == "n1" && (s.Ready || s.IDs != nil):
			t.Errorf("n1 (403): %+v, want not ready", s)
		}
	}
	if !p.Ready["n0"] || p.Ready["n1"] || p.Ready["n2"] || len(p.Up) != 3 {
		t.Errorf("probe %+v", p)
	}
	if p.Converged() || p.MembersComplete() {
		t.Error("a probe with unready nodes counts as converged or complete")
	}
}

func TestLateRegistrationExplainsResurrection(t *testing.T) {
	resurrect := func(n string, s float64, def nodeView) nodeView {
		if s >= 9.4 {
			def.ids = append(def.ids, "o-1")
		}
		return def
	}
	o := build(t, resurrect)
	v := verdict(t, simulations.InvNoResurrection, o)
	if v.Pass {
		t.Fatal("no-resurrection passes a resurrection")
	}
	// The lines heureka logs (text format).
	log := `time=2026-11-30T22:11:10.680Z level=INFO msg="cluster: member joined" node=n1 component=cluster member=n2
time=` + o.Start.Add(9300*time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z") + ` level=INFO msg=registered node=n1 component=registry app=ORDERS id=o-1 status=UP host=o-1.netns
time=` + o.Start.Add(100*time.Millisecond).UTC().Format("2006-01-02T15:04:05.000Z") + ` level=INFO msg=registered node=n0 component=registry app=ORDERS id=o-2 status=UP host=o-2.netns
`
	regs := parseRegistrations(log)
	if len(regs) != 2 || regs[0].Node != "n1" || regs[0].ID != "o-1" || regs[0].App != "ORDERS" {
		t.Fatalf("parsed %+v", regs)
	}
	late := lateRegistrations(o, regs)
	if late["o-2"] != "" || !strings.Contains(late["o-1"], "o-1 registered on n1 at +9.3s, 1.3s after its client stopped") {
		t.Fatalf("late = %q", late)
	}
	ev, ok := explainResurrections(v, late)
	if !ok || len(ev) != 1 {
		t.Fatalf("not explained: %v %v (details %q)", ev, ok, v.Details)
	}
	// Without the log line, or with more cases than the evidence shows, the
	// failure stands.
	if _, ok := explainResurrections(v, map[string]string{}); ok {
		t.Error("explained without a late registration")
	}
	v.Key.Value = float64(len(v.Details) + 1)
	if _, ok := explainResurrections(v, late); ok {
		t.Error("explained although the evidence was cut short")
	}
}
