package dashboard_test

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/httpapi/dashboard"
)

// switchableRegions is a federation report the test switches.
type switchableRegions struct {
	r atomic.Pointer[federation.Report]
}

func (s *switchableRegions) Report() any { return *s.r.Load() }

// TestDashboardInBrowserShowsRegions: the "Remote regions" table is hidden
// without remote regions and lists each one's state, instances and error
// with them.
func TestDashboardInBrowserShowsRegions(t *testing.T) {
	reading := &switchableReading{}
	reading.sp.Store(&actors.SelfPreservationStatus{Enabled: true, ExpirationEnabled: true, Window: time.Minute})
	regions := &switchableRegions{}
	regions.r.Store(&federation.Report{Region: "dc1", Remotes: []federation.RegionStatus{}})
	h := dashboard.New(dashboard.Config{View: view.New(view.DefaultConfig(eureka.Encoders())), Registry: reading,
		Regions: regions, NodeName: "heureka-regions", Version: "1.0.0-test", Refresh: 200 * time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		http.DefaultClient.CloseIdleConnections()
	})

	b := openBrowser(t)
	b.open(srv.URL)
	b.waitFor("the page has rendered", `document.querySelector('#node-name').innerText === 'heureka-regions'`)
	hidden := `(() => { const s = document.querySelector('#regions'); return s.hidden && s.offsetHeight === 0; })()`
	b.waitFor("no remote region: the table is hidden", hidden)

	now := time.Now()
	regions.r.Store(&federation.Report{Region: "dc1", Ready: true, Remotes: []federation.RegionStatus{
		{Name: "dc2", URL: "http://eureka.dc2:8761/eureka/", State: federation.StateOK, Loaded: true, Instances: 42,
			LastSuccess: now.Add(-time.Second), LastChange: now.Add(-time.Minute)},
		{Name: "dc3", URL: "http://eureka.dc3:8761/eureka/", State: federation.StateStale, Loaded: true, Instances: 7,
			LastSuccess: now.Add(-2 * time.Minute), LastError: "federation: GET http://eureka.dc3:8761/eureka/apps/delta: 503 Service Unavailable"},
	}})
	b.waitFor("the table lists two regions",
		`!document.querySelector('#regions').hidden && document.querySelectorAll('#regions-table tbody tr').length === 2`)
	panel := b.text("#regions")
	assert.Contains(t, panel, "Remote regions")
	assert.Contains(t, panel, "This cluster is region dc1. Every remote region has loaded")
	assert.Contains(t, panel, "dc2")
	assert.Contains(t, panel, "42")
	assert.Contains(t, panel, "stale")
	assert.Contains(t, panel, "503 Service Unavailable")
	b.screenshot("heureka-dashboard-regions.png")

	b.mu.Lock()
	assert.Empty(t, b.errors, "uncaught JavaScript exceptions")
	b.mu.Unlock()
}
