package dashboard_test

// The dashboard in a real browser: Debian's chromium, headless, driven by
// chromedp, against a real three-node cluster on an in-memory network. The
// test reads the page as a person would (visible text), types in the search
// box, clicks every action and accepts its confirmation, and checks each
// effect through the Eureka API of another node; a second test does the same
// with basic auth on, the credentials in the page's URL. It saves screenshots as
// artefacts: under $HEUREKA_ARTIFACTS (default os.TempDir()), and with
// -update-screenshot the final one also as testdata/dashboard.png:
//
//	go test ./httpapi/dashboard -run Browser -update-screenshot

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
	"github.com/hashicorp/memberlist"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/bcrypt"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/httpapi/dashboard"
	"github.com/heureka/heureka/memnet"
	"github.com/heureka/heureka/node"
)

var updateScreenshot = flag.Bool("update-screenshot", false,
	"copy the browser test's final screenshot to testdata/dashboard.png")

// defaultChromium is where Debian's chromium package installs the browser;
// HEUREKA_CHROMIUM names another Chromium or Chrome binary.
const defaultChromium = "/usr/bin/chromium"

// chromium returns the browser binary, failing the test (not skipping it)
// when there is none: a dashboard nobody tested in a browser is not tested.
func chromium(t *testing.T) string {
	t.Helper()
	path := os.Getenv("HEUREKA_CHROMIUM")
	if path == "" {
		path = defaultChromium
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the dashboard's browser test needs Chromium at %s (%v): run `make testdeps`, which installs "+
			"Debian's chromium package, or set HEUREKA_CHROMIUM to a Chromium binary", path, err)
	}
	return path
}

// artefactDir is where screenshots go: $HEUREKA_ARTIFACTS, else the
// system's temporary directory.
func artefactDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("HEUREKA_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return dir
}

// startCluster starts n nodes on one in-memory network, each after the
// first joining the first, and waits until every node sees n live members
// and has finished its initial sync.
func startCluster(t *testing.T, n int) []*node.Node {
	t.Helper()
	mem := memnet.New(1)
	var nodes []*node.Node
	t.Cleanup(func() {
		for _, nd := range nodes {
			stopNode(nd)
		}
		mem.Shutdown()
	})
	for i := range n {
		name := fmt.Sprintf("heureka-%d", i)
		cfg := node.DefaultConfig(name)
		cfg.HTTPAddr = "127.0.0.1:0"
		cfg.Version = "1.0.0-test"
		cfg.Logger = slog.New(slog.DiscardHandler)
		cfg.Registry.EvictionInterval = 200 * time.Millisecond
		// Clients renew every second; count renewals over two seconds, so
		// that self-preservation settles within the test.
		cfg.Registry.ExpectedClientRenewalInterval = time.Second
		cfg.Registry.RenewalWindow = 2 * time.Second
		cc := cluster.DefaultLocalConfig()
		if i > 0 {
			cc.Join = []string{"heureka-0"}
		}
		cc.Transport = mem.NewTransport(name)
		cc.Resolver = mem.Resolve
		cc.MemberlistConfig = func(c *memberlist.Config) {
			c.ProbeInterval = 500 * time.Millisecond
			c.ProbeTimeout = 300 * time.Millisecond
			c.SuspicionMult = 4
			c.GossipInterval = 25 * time.Millisecond
			c.PushPullInterval = 2 * time.Second
		}
		cfg.Cluster = &cc
		cfg.Replication = cluster.DefaultReplicatorConfig()
		cfg.Replication.RenewFlushInterval = 100 * time.Millisecond
		cfg.Replication.AntiEntropyInterval = 500 * time.Millisecond
		cfg.Replication.ReadyTimeout = 10 * time.Second
		// Members report their renewal counts every quarter window, as
		// the heureka command configures it.
		cfg.Replication.LoadInterval = cfg.Registry.RenewalWindow / 4
		nd, err := node.Start(cfg)
		require.NoError(t, err)
		nodes = append(nodes, nd)
	}
	require.Eventually(t, func() bool {
		for _, nd := range nodes {
			if len(nd.Members().LiveMembers()) != n || !nd.Ready() {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "the cluster did not form")
	return nodes
}

// clients renews every instance twice a second on the node it registered
// with, and registers it again when a renewal answers 404, as Eureka
// clients do. Each instance has its own client goroutine.
type clients struct {
	stop map[string]chan struct{} // by "APP/id"; closed to stop that client
	done map[string]chan struct{} // closed when that client has stopped
}

func startClients(t *testing.T, roots []string, insts []instance) *clients {
	c := &clients{stop: map[string]chan struct{}{}, done: map[string]chan struct{}{}}
	for i, in := range insts {
		root := roots[i%len(roots)]
		register(t, root, in)
		key := in.app + "/" + in.id
		c.stop[key], c.done[key] = make(chan struct{}), make(chan struct{})
		go c.run(root, in, c.stop[key], c.done[key])
	}
	t.Cleanup(func() {
		for _, in := range insts {
			c.retire(in)
		}
	})
	return c
}

// retire stops the client of in and returns once it has stopped, so that
// nothing registers in again. It is idempotent.
func (c *clients) retire(in instance) {
	key := in.app + "/" + in.id
	select {
	case <-c.stop[key]:
	default:
		close(c.stop[key])
	}
	<-c.done[key]
}

func (c *clients) run(root string, in instance, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		req, _ := http.NewRequest(http.MethodPut, root+"/eureka/apps/"+in.app+"/"+in.id, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			continue
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusNotFound {
			req, _ := http.NewRequest(http.MethodPost, root+"/eureka/apps/"+in.app, strings.NewReader(in.body()))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_ = resp.Body.Close()
			}
		}
	}
}

// browser is a headless chromium tab with the page's dialogs accepted and
// its uncaught exceptions collected.
type browser struct {
	t       *testing.T
	ctx     context.Context
	root    string // the node whose dashboard is open (see open)
	mu      sync.Mutex
	dialogs []string // messages of the dialogs accepted
	errors  []string // uncaught JavaScript exceptions
}

func openBrowser(t *testing.T) *browser {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox, // tests may run as root, where chromium refuses its sandbox
		chromedp.WindowSize(1440, 1000),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	tabCtx, cancelTab := chromedp.NewContext(allocCtx)
	// Generous: the cluster, the browser and -race share the machine.
	ctx, cancel := context.WithTimeout(tabCtx, 4*time.Minute)
	t.Cleanup(func() {
		cancel()
		cancelTab()
		cancelAlloc()
	})
	b := &browser{t: t, ctx: ctx}

	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			msg := ev.ExceptionDetails.Text
			if ex := ev.ExceptionDetails.Exception; ex != nil {
				msg += " " + ex.Description
			}
			b.mu.Lock()
			b.errors = append(b.errors, msg)
			b.mu.Unlock()
		}
	}()
	return b
}

// open loads the dashboard of the node at root, which may carry
// credentials ("http://user:pass@host:port").
func (b *browser) open(root string) {
	b.t.Helper()
	b.root = root
	b.do("opening "+root+"/", chromedp.Navigate(root+"/"))
}

// do runs steps and fails the test on error, with a screenshot for the
// post-mortem.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	if err := chromedp.Do(b.ctx, steps...); err != nil {
		b.failed(what, err)
	}
}

// waitFor polls a JavaScript predicate until it holds.
func (b *browser) waitFor(what, predicate string) {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Poll[bool](predicate,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(time.Minute))); err != nil {
		b.failed("waiting until "+what, err)
	}
}

// text is the visible text of the first element sel matches.
func (b *browser) text(sel string) string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		b.failed("reading "+sel, err)
	}
	return s
}

// search types q into the search box as a person would: backspaces over
// what is there, then the new text, one key event at a time.
func (b *browser) search(q string) {
	b.t.Helper()
	old, err := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS("#search")))
	if err != nil {
		b.failed("reading the search box", err)
	}
	b.do("searching "+q, chromedp.SendKeys(chromedp.CSS("#search"), strings.Repeat(kb.Backspace, len([]rune(old)))+q))
}

// click clicks the action button of instance app/id; the confirmation
// dialog is accepted. It first waits until the page shows the node's
// current snapshot: the list is redrawn when the snapshot changes, and a
// button found before a redraw is gone when the click lands.
func (b *browser) click(app, id, action string) {
	b.t.Helper()
	code, body := call(b.t, http.MethodGet, b.root+"/dashboard/api/state", "")
	require.Equal(b.t, http.StatusOK, code, body)
	var st struct {
		Registry struct{ Token string } `json:"registry"`
	}
	require.NoError(b.t, json.Unmarshal([]byte(body), &st))
	b.waitFor("the page shows snapshot "+st.Registry.Token,
		fmt.Sprintf(`document.querySelector('#apps').dataset.token === %q`, st.Registry.Token))
	button := chromedp.CSS(fmt.Sprintf(`#apps tr[data-app=%q][data-id=%q] button[data-action=%q]`, app, id, action))
	for attempt := 1; ; attempt++ {
		err := chromedp.Do(b.ctx, chromedp.Click(button))
		if err == nil {
			return
		}
		// The list was redrawn between finding the button and clicking
		// it (the snapshot changed again): nothing was clicked; retry.
		if attempt == 3 || !strings.Contains(err.Error(), "Could not find node") {
			b.failed(fmt.Sprintf("clicking %s on %s/%s", action, app, id), err)
		}
	}
}

// screenshot saves a full-page PNG under the artefact directory and
// returns its path.
func (b *browser) screenshot(name string) string {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	require.NoError(b.t, err)
	path := filepath.Join(artefactDir(b.t), name)
	require.NoError(b.t, os.WriteFile(path, png, 0o644))
	b.t.Logf("screenshot: %s", path)
	return path
}

func (b *browser) failed(what string, err error) {
	b.t.Helper()
	if png, serr := chromedp.Run(b.ctx, chromedp.FullScreenshot(100)); serr == nil {
		path := filepath.Join(artefactDir(b.t), "heureka-dashboard-failure.png")
		if os.WriteFile(path, png, 0o644) == nil {
			b.t.Logf("screenshot of the failure: %s", path)
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.t.Fatalf("browser: %s: %v (JavaScript errors: %q)", what, err, b.errors)
}

// TestDashboardInBrowser is the dashboard as a person sees and uses it.
func TestDashboardInBrowser(t *testing.T) {
	nodes := startCluster(t, 3)
	roots := make([]string, len(nodes))
	for i, nd := range nodes {
		roots[i] = base(nd)
	}
	insts := []instance{
		{app: "GREETER", id: "greeter-1", zone: "zone-a", metadata: map[string]string{"version": "1.4.2"}},
		{app: "GREETER", id: "greeter-2", zone: "zone-b", metadata: map[string]string{"version": "1.4.2"}},
		{app: "BILLING", id: "billing-1", zone: "zone-a", metadata: map[string]string{"team": "payments"}},
		{app: "CATALOG", id: "i-0a1b2c3d", zone: "eu-west-1b", aws: true},
		{app: "CATALOG", id: "i-0e4f5a6b", zone: "eu-west-1c", aws: true},
		{app: "GREETER", id: "greeter-canary", zone: "zone-a", metadata: map[string]string{"version": "1.5.0-rc1"}},
	}
	fleet := startClients(t, roots, insts)
	require.Eventually(t, func() bool {
		for _, nd := range nodes {
			if nd.View().Snapshot().Count() != len(insts) {
				return false
			}
		}
		return true
	}, 30*time.Second, 20*time.Millisecond, "every node holds every instance")

	b := openBrowser(t)
	// Node 0's page; the API checks below ask node 1, so every action is
	// also seen to replicate.
	page, api := roots[0], roots[1]
	b.open(page)

	// Node and cluster.
	b.waitFor("three members are listed, all alive", `(() => {
		const rows = [...document.querySelectorAll('#members tbody tr')];
		return rows.length === 3 && rows.every((r) => r.innerText.includes('alive'));
	})()`)
	assert.Equal(t, "heureka-0", b.text("#node-name"))
	assert.Equal(t, "1.0.0-test", b.text("#node-version"))
	members := b.text("#members tbody")
	for _, name := range []string{"heureka-0", "heureka-1", "heureka-2"} {
		assert.Contains(t, members, name)
	}
	assert.Contains(t, members, "this node")
	assert.Contains(t, b.text("#member-count"), "3 members")

	// Applications and instances.
	b.waitFor("the three applications are listed", `document.querySelectorAll('#apps section.app').length === 3`)
	apps := b.text("#apps")
	for _, in := range insts {
		assert.Contains(t, apps, in.app)
		assert.Contains(t, apps, in.id)
		assert.Contains(t, apps, in.zone, "%s's zone", in.id)
	}
	assert.Contains(t, apps, "version=1.4.2", "metadata")
	assert.Contains(t, apps, "greeter-1.internal:8080", "host and port")
	assert.Contains(t, b.text("#app-count"), "6 instances")

	// Self-preservation: a healthy fleet renews above the threshold, and
	// the page says so calmly, with the registry's own reading.
	b.waitFor("self-preservation is reported not engaged",
		`document.querySelector('#sp-headline').innerText.startsWith('Not engaged')`)
	sp := b.text("#self-preservation")
	assert.Contains(t, sp, "leases that run out are evicted as usual")
	assert.Contains(t, sp, "The registry's reading: not engaged:")
	assert.Contains(t, sp, "Expected clients")
	assert.Contains(t, sp, "Threshold")
	assert.NotContains(t, strings.ToUpper(b.text("body")), "EMERGENCY")

	// The search box filters as one types: by application, then by zone.
	b.search("billing")
	b.waitFor("only BILLING is listed", `[...document.querySelectorAll('#apps section.app')].map((s) => s.dataset.app).join() === 'BILLING'`)
	b.search("zone-b")
	b.waitFor("only greeter-2 is listed", `[...document.querySelectorAll('#apps tr[data-id]')].map((r) => r.dataset.id).join() === 'greeter-2'`)
	b.screenshot("heureka-dashboard-search.png")

	// Out of service, clicked on the filtered row, confirmed, and seen
	// through the Eureka API of another node.
	b.click("GREETER", "greeter-2", "out-of-service")
	requireStatus(t, api, "GREETER", "greeter-2", "OUT_OF_SERVICE", "OUT_OF_SERVICE")
	b.waitFor("the row shows the override", `(() => {
		const row = document.querySelector('#apps tr[data-id="greeter-2"]');
		return row && row.innerText.includes('override: OUT_OF_SERVICE') && !!row.querySelector('button[data-action="back-in-service"]');
	})()`)
	assert.Contains(t, b.text("#message"), "GREETER/greeter-2 is out of service")

	// Back in service: the override goes and the status is UP.
	b.search("")
	b.click("CATALOG", "i-0e4f5a6b", "out-of-service")
	requireStatus(t, api, "CATALOG", "i-0e4f5a6b", "OUT_OF_SERVICE", "OUT_OF_SERVICE")
	b.waitFor("i-0e4f5a6b offers Back in service", `!!document.querySelector('#apps tr[data-id="i-0e4f5a6b"] button[data-action="back-in-service"]')`)
	b.click("CATALOG", "i-0e4f5a6b", "back-in-service")
	requireStatus(t, api, "CATALOG", "i-0e4f5a6b", "UP", "UNKNOWN")

	// Remove override: the status is UNKNOWN until the client's next
	// heartbeat gets 404 and it registers again, UP.
	b.click("CATALOG", "i-0a1b2c3d", "out-of-service")
	requireStatus(t, api, "CATALOG", "i-0a1b2c3d", "OUT_OF_SERVICE", "OUT_OF_SERVICE")
	b.waitFor("i-0a1b2c3d offers Remove override", `!!document.querySelector('#apps tr[data-id="i-0a1b2c3d"] button[data-action="remove-override"]')`)
	b.click("CATALOG", "i-0a1b2c3d", "remove-override")
	requireStatus(t, api, "CATALOG", "i-0a1b2c3d", "UP", "UNKNOWN")

	// Deregister: the lease is gone everywhere and the row disappears (its
	// client has stopped, so nothing registers it again).
	fleet.retire(insts[5])
	b.click("GREETER", "greeter-canary", "deregister")
	require.Eventually(t, func() bool {
		_, _, ok, err := eurekaStatus(api, "GREETER", "greeter-canary")
		return err == nil && !ok
	}, 30*time.Second, 20*time.Millisecond, "greeter-canary is deregistered")
	b.waitFor("greeter-canary's row is gone", `!document.querySelector('#apps tr[data-id="greeter-canary"]')`)

	b.mu.Lock()
	assert.Len(t, b.dialogs, 6, "every action asked for confirmation: %q", b.dialogs)
	if len(b.dialogs) > 0 {
		assert.Contains(t, b.dialogs[0], "Take GREETER/greeter-2 out of service?")
	}
	assert.Empty(t, b.errors, "uncaught JavaScript exceptions")
	b.mu.Unlock()

	// The final picture: three members, the applications, greeter-2 out of
	// service.
	b.waitFor("the page shows greeter-2 out of service and five instances", `(() => {
		const row = document.querySelector('#apps tr[data-id="greeter-2"]');
		return row && row.innerText.includes('OUT_OF_SERVICE') &&
			document.querySelectorAll('#apps tr[data-id]').length === 5;
	})()`)
	shot := b.screenshot("heureka-dashboard.png")
	if *updateScreenshot {
		png, err := os.ReadFile(shot)
		require.NoError(t, err)
		require.NoError(t, os.MkdirAll("testdata", 0o755))
		require.NoError(t, os.WriteFile(filepath.Join("testdata", "dashboard.png"), png, 0o644))
		t.Logf("updated testdata/dashboard.png")
	}
}

// requireStatus waits until the Eureka API at root reports app/id with the
// status and overridden status given.
func requireStatus(t *testing.T, root, app, id, status, overridden string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, ov, ok, err := eurekaStatus(root, app, id)
		if err == nil && ok && st == status && ov == overridden {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%s: want status %s, overridden %s; got status %q, overridden %q, found %t, err %v",
				app, id, status, overridden, st, ov, ok, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With basic auth on, a page opened with credentials in its URL (as Spring
// users write service URLs) sends them with its own requests: a user with
// the write role takes an instance out of service, and a read-only user
// sees the page and gets a clear refusal.
func TestDashboardInBrowserWithAuth(t *testing.T) {
	hash := func(pw string) string {
		h, err := bcrypt.GenerateFromPassword([]byte(pw), bcrypt.MinCost)
		require.NoError(t, err)
		return string(h)
	}
	nd := startNode(t, func(c *node.Config) {
		c.Auth = &httpapi.AuthConfig{Users: []httpapi.User{
			{Name: "operator", PasswordHash: hash("op-secret"), Roles: httpapi.RoleRead | httpapi.RoleWrite},
			{Name: "viewer", PasswordHash: hash("view-secret"), Roles: httpapi.RoleRead},
		}}
	})
	operator := "http://operator:op-secret@" + nd.Addr()
	register(t, operator, instance{app: "GREETER", id: "greeter-1", zone: "zone-a"})
	register(t, operator, instance{app: "GREETER", id: "greeter-2", zone: "zone-b"})
	code, _ := call(t, http.MethodGet, base(nd)+"/dashboard/api/state", "")
	require.Equal(t, http.StatusUnauthorized, code, "the state needs credentials")

	b := openBrowser(t)
	b.open(operator)
	b.waitFor("the instances are listed", `document.querySelectorAll('#apps tr[data-id]').length === 2`)
	b.click("GREETER", "greeter-1", "out-of-service")
	requireStatus(t, operator, "GREETER", "greeter-1", "OUT_OF_SERVICE", "OUT_OF_SERVICE")

	v := openBrowser(t)
	v.open("http://viewer:view-secret@" + nd.Addr())
	v.waitFor("the instances are listed", `document.querySelectorAll('#apps tr[data-id]').length === 2`)
	v.click("GREETER", "greeter-2", "out-of-service")
	v.waitFor("the refusal is shown", `document.querySelector('#message').innerText.includes('403')`)
	msg := v.text("#message")
	assert.Contains(t, msg, "Out of service failed for GREETER/greeter-2")
	assert.Contains(t, msg, "write role")
	requireStatus(t, operator, "GREETER", "greeter-2", "UP", "UNKNOWN")

	for _, br := range []*browser{b, v} {
		br.mu.Lock()
		assert.Empty(t, br.errors, "uncaught JavaScript exceptions")
		br.mu.Unlock()
	}
}

// switchableHolds is a cluster layer whose holds on eviction the test
// switches while the page is open.
type switchableHolds struct {
	mu sync.Mutex
	hs []httpapi.EvictionHold
}

func (s *switchableHolds) set(hs ...httpapi.EvictionHold) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hs = hs
}

// EvictionHolds implements httpapi.EvictionHoldSource.
func (s *switchableHolds) EvictionHolds() []httpapi.EvictionHold {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]httpapi.EvictionHold(nil), s.hs...)
}

// The "Eviction held" panel in a real browser: hidden while nothing holds
// eviction; when the cluster layer holds it (a silent member, views that
// disagree) and self-preservation is engaged, it lists every hold with its
// detail in plain words and when it ends; when the holds end it hides
// again. The page is the dashboard handler alone, over loopback, with a
// fake cluster layer and a fixed self-preservation reading.
func TestDashboardInBrowserShowsEvictionHolds(t *testing.T) {
	calm := &actors.SelfPreservationStatus{Enabled: true, ExpirationEnabled: true, Expected: 10, Threshold: 8,
		RenewsLastWindow: 20, Members: 3, Window: time.Minute, Reason: "not engaged: 20 renewals in the last 1m0s across 3 member(s), above the threshold of 8; expired leases are evicted"}
	engaged := &actors.SelfPreservationStatus{Enabled: true, Engaged: true, EngagedSince: time.Now().Add(-time.Minute), Expected: 10,
		Threshold: 8, RenewsLastWindow: 2, Members: 3, Window: time.Minute,
		Reason: "engaged: 2 renewals in the last 1m0s across 3 member(s), at or below the threshold of 8 (85% of 10 expected clients); expired leases are kept in case the fault is on the network"}
	reading := &switchableReading{}
	reading.sp.Store(calm)
	holds := &switchableHolds{}
	h := dashboard.New(dashboard.Config{View: view.New(view.DefaultConfig(eureka.Encoders())), Registry: reading,
		EvictionHolds: holds, NodeName: "heureka-holds", Version: "1.0.0-test", Refresh: 200 * time.Millisecond})
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		http.DefaultClient.CloseIdleConnections()
	})

	b := openBrowser(t)
	b.open(srv.URL)
	b.waitFor("the page has rendered", `document.querySelector('#node-name').innerText === 'heureka-holds'`)
	b.waitFor("self-preservation is reported not engaged",
		`document.querySelector('#sp-headline').innerText.startsWith('Not engaged')`)
	visible := `(() => { const s = document.querySelector('#eviction-holds'); return !s.hidden && s.offsetHeight > 0; })()`
	hidden := `(() => { const s = document.querySelector('#eviction-holds'); return s.hidden && s.offsetHeight === 0; })()`
	b.waitFor("no hold: the panel is hidden", hidden)

	now := time.Now()
	silent := httpapi.EvictionHold{Reason: "silent-member", Members: []string{"heureka-2"}, Since: now.Add(-40 * time.Second),
		Until: now.Add(80 * time.Second), Detail: "eviction held: no report from heureka-2 for 40s (renewals it forwards may be lost on the way); " +
			"held at most until 2m0s after its last report, then it counts as failed and its applications get a live owner"}
	disagree := httpapi.EvictionHold{Reason: "views-disagree", Members: []string{"heureka-3"}, Since: now, Until: now.Add(2 * time.Minute),
		Detail: "eviction held: heureka-3 still report(s) but are not alive in this node's view (it may be cut off one way) for 0s; " +
			"held at most 2m0s, then this node evicts only the applications it owns with them counted as owners"}
	holds.set(silent, disagree)
	reading.sp.Store(engaged)
	b.waitFor("the panel lists three holds", visible+` && document.querySelectorAll('#holds li').length === 3`)
	panel := b.text("#eviction-holds")
	assert.Contains(t, panel, "Eviction held")
	assert.Contains(t, panel, "3 holds")
	assert.Contains(t, panel, "Self-preservation")
	assert.Contains(t, panel, engaged.Reason, "self-preservation's reason is its detail")
	assert.Contains(t, panel, "Silent member")
	assert.Contains(t, panel, silent.Detail)
	assert.Contains(t, panel, "ends by", "a bounded hold says when it ends")
	assert.Contains(t, panel, "Membership views disagree")
	assert.Contains(t, panel, disagree.Detail)
	b.screenshot("heureka-dashboard-eviction-held.png")

	holds.set()
	reading.sp.Store(calm)
	b.waitFor("the holds ended: the panel is hidden again", hidden)

	b.mu.Lock()
	assert.Empty(t, b.errors, "uncaught JavaScript exceptions")
	b.mu.Unlock()
}

// switchableReading is a self-preservation reading the test switches.
type switchableReading struct {
	sp atomic.Pointer[actors.SelfPreservationStatus]
}

func (s *switchableReading) SelfPreservation() *actors.SelfPreservationStatus { return s.sp.Load() }
