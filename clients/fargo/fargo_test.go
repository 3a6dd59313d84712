// Package fargo_test drives the real Go Eureka client github.com/hudl/fargo
// (v1.4.0) against a real Heureka node, in fargo's JSON and XML modes. See
// shared/spec/clients/fargo.md for what fargo sends and insists on.
package fargo_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hudl/fargo"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/heureka/heureka/node"
)

// startNode starts a node on a free loopback port with timers short enough
// for eviction to be observable in a test.
func startNode(t *testing.T) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig("fargo-test")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Registry.EvictionInterval = 200 * time.Millisecond
	cfg.Registry.RenewalWindow = 200 * time.Millisecond
	cfg.Registry.SelfPreservation = false
	n, err := node.Start(cfg)
	require.NoError(t, err)
	return n
}

// newConn returns a fargo connection to the node. fargo joins the service
// URL and the path with "/", so the URL must not end in a slash.
func newConn(t *testing.T, url string, useJSON bool) *fargo.EurekaConnection {
	t.Helper()
	require.False(t, strings.HasSuffix(url, "/"), "fargo needs a service URL without trailing slash: %s", url)
	conn := fargo.NewConn(url)
	conn.UseJson = useJSON
	return &conn
}

// newInstance builds an instance the way a fargo user does: lower-case app
// name, metadata, both ports, a VIP and a secure VIP, and a LeaseInfo left at
// zero (which fargo sends as all zeros).
func newInstance(app, id, host string, port int) *fargo.Instance {
	ins := &fargo.Instance{
		InstanceId:        id,
		HostName:          host,
		App:               app,
		IPAddr:            "127.0.0.11",
		VipAddress:        app + ".vip",
		SecureVipAddress:  app + ".svip",
		Status:            fargo.UP,
		Port:              port,
		PortEnabled:       true,
		SecurePort:        port + 1000,
		SecurePortEnabled: true,
		HomePageUrl:       fmt.Sprintf("http://%s:%d/", host, port),
		StatusPageUrl:     fmt.Sprintf("http://%s:%d/info", host, port),
		HealthCheckUrl:    fmt.Sprintf("http://%s:%d/health", host, port),
		CountryId:         1,
		DataCenterInfo:    fargo.DataCenterInfo{Name: fargo.MyOwn},
	}
	ins.SetMetadataString("version", "1.2.3")
	ins.SetMetadataString("weight", "10")
	ins.SetMetadataString("zone", "zone-a")
	return ins
}

// statusCode is the HTTP status fargo attached to err (0 if none).
func statusCode(err error) int {
	code, _ := fargo.HTTPResponseStatusCode(err)
	return code
}

// metaString reads a metadata value as text. In XML mode fargo parses the
// metadata with mxj and recasts numeric-looking values to float64 whatever
// the server sends (fargo.md, "Parsing responses: XML"), so numbers are
// compared through their float value there; in JSON mode GetString must work
// because the server has to return metadata values as JSON strings.
func metaString(t *testing.T, md *fargo.InstanceMetadata, key string, useJSON bool) string {
	t.Helper()
	s, err := md.GetString(key)
	if err == nil || useJSON {
		require.NoError(t, err, "metadata %q as string (raw %s)", key, md.Raw)
		return s
	}
	f, ferr := md.GetFloat64(key)
	require.NoError(t, ferr, "metadata %q (raw %s)", key, md.Raw)
	return fmt.Sprintf("%g", f)
}

func TestFargo(t *testing.T) {
	n := startNode(t)
	url := n.URL()

	for _, mode := range []struct {
		name    string
		useJSON bool
	}{{"json", true}, {"xml", false}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Run("lifecycle", func(t *testing.T) { testLifecycle(t, url, mode.name, mode.useJSON) })
			t.Run("eviction", func(t *testing.T) { testEviction(t, url, mode.name, mode.useJSON) })
		})
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, n.Stop(ctx))

	// fargo sends every request through its package-level fargo.HttpClient,
	// whose transport keeps keep-alive connections (a readLoop and a
	// writeLoop goroutine each) until they are closed. They belong to
	// net/http, not to the node; close them instead of ignoring them.
	fargo.HttpClient.CloseIdleConnections()
	if tr, ok := http.DefaultTransport.(*http.Transport); ok {
		tr.CloseIdleConnections()
	}
	// Nothing is ignored: after Stop and closing the idle client
	// connections, neither the node nor fargo may leave a goroutine behind.
	goleak.VerifyNone(t)
}

func testLifecycle(t *testing.T, url, mode string, useJSON bool) {
	conn := newConn(t, url, useJSON)
	app := "fargo-alpha-" + mode // lower case, as fargo users write it
	APP := strings.ToUpper(app)
	id := app + "-1"
	host := "alpha1-" + mode + ".fargo.test"
	const port = 18081

	// ---- RegisterInstance: GET (404) then POST (204), then reads back.
	reg := newInstance(app, id, host, port)
	require.NoError(t, conn.RegisterInstance(reg), "RegisterInstance")
	// fargo overwrote reg with the server's copy (its read-back error is
	// ignored, so check it really happened): app upper-cased, leaseInfo
	// zeros defaulted to 30/90.
	assert.Equal(t, APP, reg.App, "read-back instance app")
	assert.Equal(t, id, reg.Id())

	// Registering again is a no-op for fargo: its GET finds the instance.
	require.NoError(t, conn.RegisterInstance(newInstance(app, id, host, port)), "second RegisterInstance")

	// ---- GetInstance, by the lower-case app name.
	got, err := conn.GetInstance(app, id)
	require.NoError(t, err, "GetInstance")
	require.NotNil(t, got)
	assert.Equal(t, id, got.InstanceId)
	assert.Equal(t, host, got.HostName)
	assert.Equal(t, APP, got.App)
	assert.Equal(t, "127.0.0.11", got.IPAddr)
	assert.Equal(t, app+".vip", got.VipAddress)
	assert.Equal(t, app+".svip", got.SecureVipAddress)
	assert.Equal(t, fargo.UP, got.Status)
	assert.Equal(t, port, got.Port)
	assert.True(t, got.PortEnabled, "port enabled")
	assert.Equal(t, port+1000, got.SecurePort)
	assert.True(t, got.SecurePortEnabled, "secure port enabled")
	assert.Equal(t, fmt.Sprintf("http://%s:%d/health", host, port), got.HealthCheckUrl)
	assert.EqualValues(t, 1, got.CountryId)
	assert.Equal(t, fargo.MyOwn, got.DataCenterInfo.Name)
	assert.EqualValues(t, 30, got.LeaseInfo.RenewalIntervalInSecs, "zero renewal interval must default to 30")
	assert.EqualValues(t, 90, got.LeaseInfo.DurationInSecs, "zero duration must default to 90")
	assert.Positive(t, got.LeaseInfo.RegistrationTimestamp, "registrationTimestamp")
	assert.Equal(t, "1.2.3", metaString(t, &got.Metadata, "version", useJSON))
	assert.Equal(t, "10", metaString(t, &got.Metadata, "weight", useJSON))
	assert.Equal(t, "zone-a", metaString(t, &got.Metadata, "zone", useJSON))

	// ---- GetApp: lower- and upper-case names give the upper-cased app.
	for _, name := range []string{app, APP} {
		a, err := conn.GetApp(name)
		require.NoError(t, err, "GetApp(%s)", name)
		assert.Equal(t, APP, a.Name, "GetApp(%s).Name", name)
		require.Len(t, a.Instances, 1, "GetApp(%s) instances", name)
		ins := a.Instances[0]
		assert.Equal(t, id, ins.Id())
		assert.Equal(t, port, ins.Port)
		assert.Equal(t, "1.2.3", metaString(t, &ins.Metadata, "version", useJSON))
		assert.Equal(t, "10", metaString(t, &ins.Metadata, "weight", useJSON))
		if useJSON {
			// The metadata map must hold JSON strings only.
			for k, v := range ins.Metadata.GetMap() {
				assert.IsType(t, "", v, "metadata %q must be a JSON string", k)
			}
		}
	}

	// ---- GetApps: the app is keyed by its upper-cased name.
	apps, err := conn.GetApps()
	require.NoError(t, err, "GetApps")
	require.Contains(t, apps, APP)
	require.Len(t, apps[APP].Instances, 1)
	assert.Equal(t, id, apps[APP].Instances[0].Id())
	assert.Equal(t, fargo.UP, apps[APP].Instances[0].Status)
	assert.NotContains(t, apps, app, "no lower-case duplicate of the app")

	// ---- GetInstancesByVIPAddress: vips and svips, exact match.
	vipIns, err := conn.GetInstancesByVIPAddress(app+".vip", false)
	require.NoError(t, err, "vips")
	require.Len(t, vipIns, 1, "vips/%s.vip", app)
	assert.Equal(t, id, vipIns[0].Id())
	svipIns, err := conn.GetInstancesByVIPAddress(app+".svip", true)
	require.NoError(t, err, "svips")
	require.Len(t, svipIns, 1, "svips/%s.svip", app)
	assert.Equal(t, id, svipIns[0].Id())
	// The secure VIP is not a VIP, and an unknown VIP is 200 with no instances.
	none, err := conn.GetInstancesByVIPAddress(app+".svip", false)
	require.NoError(t, err, "vips with a secure VIP name")
	assert.Empty(t, none)
	none, err = conn.GetInstancesByVIPAddress("no-such-"+mode+".vip", false)
	require.NoError(t, err, "unknown VIP")
	assert.Empty(t, none)
	upIns, err := conn.GetInstancesByVIPAddress(app+".vip", false, fargo.ThatAreUp)
	require.NoError(t, err)
	assert.Len(t, upIns, 1, "ThatAreUp keeps the UP instance")

	// ---- HeartBeatInstance: exactly 200, with the lower-case app in the
	// URL and with the upper-case one fargo read back.
	handle := newInstance(app, id, host, port)
	require.NoError(t, conn.HeartBeatInstance(handle), "heartbeat (lower-case app)")
	require.NoError(t, conn.HeartBeatInstance(reg), "heartbeat (read-back instance)")

	// ---- UpdateInstanceStatus OUT_OF_SERVICE; the override survives a
	// plain renew (which carries no status) and a re-registration as UP.
	require.NoError(t, conn.UpdateInstanceStatus(handle, fargo.OUTOFSERVICE), "UpdateInstanceStatus")
	got, err = conn.GetInstance(app, id)
	require.NoError(t, err)
	assert.Equal(t, fargo.OUTOFSERVICE, got.Status, "status after override")
	assert.Equal(t, fargo.OUTOFSERVICE, got.Overriddenstatus, "overriddenstatus after override")

	require.NoError(t, conn.HeartBeatInstance(handle), "heartbeat while OUT_OF_SERVICE")
	got, err = conn.GetInstance(app, id)
	require.NoError(t, err)
	assert.Equal(t, fargo.OUTOFSERVICE, got.Status, "override must survive a plain renew")
	a, err := conn.GetApp(app)
	require.NoError(t, err)
	require.Len(t, a.Instances, 1)
	assert.Equal(t, fargo.OUTOFSERVICE, a.Instances[0].Status, "GetApp status after renew")
	upIns, err = conn.GetInstancesByVIPAddress(app+".vip", false, fargo.ThatAreUp)
	require.NoError(t, err)
	assert.Empty(t, upIns, "ThatAreUp drops the OUT_OF_SERVICE instance")

	require.NoError(t, conn.ReregisterInstance(newInstance(app, id, host, port)), "re-register as UP")
	got, err = conn.GetInstance(app, id)
	require.NoError(t, err)
	assert.Equal(t, fargo.OUTOFSERVICE, got.Status, "override must survive a re-registration as UP")

	// Replacing the override with UP brings it back.
	require.NoError(t, conn.UpdateInstanceStatus(handle, fargo.UP), "UpdateInstanceStatus UP")
	got, err = conn.GetInstance(app, id)
	require.NoError(t, err)
	assert.Equal(t, fargo.UP, got.Status, "status after override UP")
	require.NoError(t, conn.HeartBeatInstance(handle))

	// ---- AddMetadataString merges: a new key is added, an existing one
	// overwritten, the others kept.
	require.NoError(t, conn.AddMetadataString(handle, "owner", "team-"+mode), "AddMetadataString owner")
	require.NoError(t, conn.AddMetadataString(handle, "zone", "zone-b"), "AddMetadataString zone")
	got, err = conn.GetInstance(app, id)
	require.NoError(t, err)
	assert.Equal(t, "team-"+mode, metaString(t, &got.Metadata, "owner", useJSON), "new key")
	assert.Equal(t, "zone-b", metaString(t, &got.Metadata, "zone", useJSON), "overwritten key")
	assert.Equal(t, "1.2.3", metaString(t, &got.Metadata, "version", useJSON), "old key kept")
	assert.Equal(t, "10", metaString(t, &got.Metadata, "weight", useJSON), "old key kept")
	a, err = conn.GetApp(app)
	require.NoError(t, err)
	require.Len(t, a.Instances, 1)
	assert.Equal(t, "team-"+mode, metaString(t, &a.Instances[0].Metadata, "owner", useJSON), "GetApp sees new metadata")
	assert.Equal(t, "1.2.3", metaString(t, &a.Instances[0].Metadata, "version", useJSON), "GetApp keeps old metadata")
	require.NoError(t, conn.HeartBeatInstance(handle), "heartbeat after metadata update")

	// ---- DeregisterInstance, then the app and the instance are gone.
	require.NoError(t, conn.DeregisterInstance(handle), "DeregisterInstance")

	_, err = conn.GetApp(app)
	var notFound fargo.AppNotFoundError
	require.ErrorAs(t, err, &notFound, "GetApp after the last instance left")

	_, err = conn.GetInstance(app, id)
	require.Error(t, err, "GetInstance after deregistration")
	assert.Equal(t, http.StatusNotFound, statusCode(err), "GetInstance after deregistration: %v", err)

	err = conn.HeartBeatInstance(handle)
	require.Error(t, err, "heartbeat after deregistration")
	assert.Equal(t, http.StatusNotFound, statusCode(err), "heartbeat after deregistration: %v", err)

	err = conn.DeregisterInstance(handle)
	require.Error(t, err, "second DeregisterInstance")
	assert.Equal(t, http.StatusNotFound, statusCode(err), "second DeregisterInstance: %v", err)

	apps, err = conn.GetApps()
	require.NoError(t, err, "GetApps after deregistration")
	assert.NotContains(t, apps, APP)

	vipIns, err = conn.GetInstancesByVIPAddress(app+".vip", false)
	require.NoError(t, err, "vips after deregistration")
	assert.Empty(t, vipIns)
}

// testEviction registers two instances with a 1 s / 3 s lease. One is never
// renewed and must be evicted; its sibling is renewed every 500 ms and must
// survive.
func testEviction(t *testing.T, url, mode string, useJSON bool) {
	conn := newConn(t, url, useJSON)
	app := "fargo-evict-" + mode
	APP := strings.ToUpper(app)

	lease := func(ins *fargo.Instance) *fargo.Instance {
		ins.LeaseInfo = fargo.LeaseInfo{RenewalIntervalInSecs: 1, DurationInSecs: 3}
		return ins
	}
	doomed := lease(newInstance(app, app+"-doomed", "doomed-"+mode+".fargo.test", 18201))
	kept := lease(newInstance(app, app+"-kept", "kept-"+mode+".fargo.test", 18202))
	doomedID, keptID := doomed.Id(), kept.Id()

	start := time.Now()
	require.NoError(t, conn.RegisterInstance(doomed), "register doomed")
	require.NoError(t, conn.RegisterInstance(kept), "register kept")

	for _, id := range []string{doomedID, keptID} {
		got, err := conn.GetInstance(app, id)
		require.NoError(t, err, "GetInstance %s right after registration", id)
		assert.EqualValues(t, 1, got.LeaseInfo.RenewalIntervalInSecs, "%s renewal interval", id)
		assert.EqualValues(t, 3, got.LeaseInfo.DurationInSecs, "%s lease duration", id)
	}

	// Renew the sibling every 500 ms until the check is over.
	var (
		mu       sync.Mutex
		renewErr error
		renewals int
	)
	// The renewer has its own connection value: fargo's EurekaConnection
	// lazily initialises a field on use, so it is not shared across goroutines.
	renewConn := newConn(t, url, useJSON)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func(done <-chan struct{}) {
		defer wg.Done()
		handle := lease(newInstance(app, keptID, kept.HostName, 18202))
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
			}
			err := renewConn.HeartBeatInstance(handle)
			mu.Lock()
			renewals++
			if err != nil && renewErr == nil {
				renewErr = fmt.Errorf("renewal %d at %v: %w", renewals, time.Since(start).Round(time.Millisecond), err)
			}
			mu.Unlock()
		}
	}(done)
	var stopOnce sync.Once
	stopRenewing := func() {
		stopOnce.Do(func() {
			close(done)
			wg.Wait()
		})
	}
	defer stopRenewing()

	// keptPresent checks that the renewed sibling is served by GetInstance
	// and listed by GetApps (apps as returned by GetApps).
	keptPresent := func(c assert.TestingT, apps map[string]*fargo.Application) {
		_, err := conn.GetInstance(app, keptID)
		assert.NoError(c, err, "GetInstance(kept) at %v", time.Since(start).Round(time.Millisecond))
		if assert.Contains(c, apps, APP, "GetApps must keep the renewed sibling's app") {
			var ids []string
			for _, ins := range apps[APP].Instances {
				ids = append(ids, ins.Id())
			}
			assert.Contains(c, ids, keptID, "GetApps instances of %s", APP)
		}
	}

	// The unrenewed instance goes: GetInstance 404 and absent from GetApps.
	// Meanwhile the renewed sibling must be there at every poll.
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		apps, err := conn.GetApps()
		if !assert.NoError(c, err, "GetApps") {
			return
		}
		keptPresent(t, apps) // a vanished sibling fails the test, not just this poll
		_, err = conn.GetInstance(app, doomedID)
		assert.Equal(c, http.StatusNotFound, statusCode(err), "GetInstance(doomed) must be 404, got err=%v", err)
		if a, ok := apps[APP]; ok {
			for _, ins := range a.Instances {
				assert.NotEqual(c, doomedID, ins.Id(), "doomed still listed by GetApps")
			}
		}
	}, 30*time.Second, 100*time.Millisecond, "the unrenewed instance was not evicted")
	gone := time.Since(start)
	// It cannot be gone before its 3 s lease ran out (measured from before
	// its registration, so this bound is safe).
	assert.GreaterOrEqual(t, gone, 3*time.Second-50*time.Millisecond, "evicted before its lease expired")

	// The sibling's lease would have run out with the doomed one's; keep
	// checking it through ten more eviction rounds.
	for i := 0; i < 10; i++ {
		apps, err := conn.GetApps()
		require.NoError(t, err, "GetApps")
		keptPresent(t, apps)
		<-time.After(200 * time.Millisecond)
	}
	got, err := conn.GetInstance(app, keptID)
	require.NoError(t, err, "renewed sibling must survive")
	assert.Equal(t, fargo.UP, got.Status)
	apps, err := conn.GetApps()
	require.NoError(t, err)
	require.Contains(t, apps, APP)
	require.Len(t, apps[APP].Instances, 1, "only the renewed sibling is left")
	assert.Equal(t, keptID, apps[APP].Instances[0].Id())

	stopRenewing()
	mu.Lock()
	assert.NoError(t, renewErr, "renewing the sibling")
	assert.GreaterOrEqual(t, renewals, 8, "renewals sent")
	mu.Unlock()

	require.NoError(t, conn.DeregisterInstance(kept), "deregister the sibling")
	_, err = conn.GetApp(app)
	var notFound fargo.AppNotFoundError
	assert.True(t, errors.As(err, &notFound), "GetApp after cleanup: %v", err)
}
