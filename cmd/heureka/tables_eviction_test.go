package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/httpapi"
)

// fixedHolds is a cluster layer with fixed holds on eviction.
type fixedHolds []httpapi.EvictionHold

func (f fixedHolds) EvictionHolds() []httpapi.EvictionHold { return f }

// startHeldAPI serves the real HTTP API over a real registry, with holds
// the test gives, on loopback; self-preservation is off, so that only the
// given holds hold.
func startHeldAPI(t *testing.T, holds fixedHolds) string {
	t.Helper()
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	rc := actors.DefaultConfig("held")
	rc.SelfPreservation = false
	rc.Sinks = []actors.Sink{v}
	reg, err := actors.NewRegistry(rc)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		v.Run(ctx)
	}()
	srv := httptest.NewServer(httpapi.New(httpapi.Config{Registry: reg, View: v, NodeName: "held", Version: "test", EvictionHolds: holds}))
	t.Cleanup(func() {
		srv.Close()
		cancel()
		<-done
		reg.Close()
	})
	return srv.URL
}

// heureka status prints a row per hold on eviction: its reason, its detail
// in plain words, since when and until when at the latest; with none, it
// says eviction runs.
func TestStatusPrintsEvictionHolds(t *testing.T) {
	now := time.Now()
	base := startHeldAPI(t, fixedHolds{
		{Reason: httpapi.HoldSilentMember, Members: []string{"c"}, Since: now.Add(-40 * time.Second), Until: now.Add(80 * time.Second),
			Detail: "eviction held: no report from c for 40s (renewals it forwards may be lost on the way)"},
		{Reason: httpapi.HoldViewsDisagree, Members: []string{"d"}, Since: now, Until: now.Add(2 * time.Minute),
			Detail: "eviction held: d still report(s) but are not alive in this node's view (it may be cut off one way) for 0s; " +
				"held at most 2m0s, then this node evicts only the applications that its view and every reporting member's name it the owner of"},
	})
	code, out, errOut := runCmd(t, nil, "status", "--addr", base)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^eviction\s+held by 2 hold\(s\); expired leases are kept until each ends$`, out)
	assert.Regexp(t, `(?m)^  silent-member\s+eviction held: no report from c for 40s \(renewals it forwards may be lost on the way\) `+
		`\(since 4\ds ago, ends within 1m\d+s\)$`, out)
	assert.Regexp(t, `(?m)^  views-disagree\s+eviction held: d still report\(s\) .* \(since \d+s ago, ends within (1m\d+s|2m0s)\)$`, out)

	base = startHeldAPI(t, nil)
	code, out, errOut = runCmd(t, nil, "status", "--addr", base)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^eviction\s+runs: nothing holds it$`, out)
	assert.NotRegexp(t, `(?m)^  (silent-member|deaf|views-disagree|self-preservation)\s`, out)
}

// A node from before the eviction element gets no eviction rows, and the
// rest of the status prints as before.
func TestStatusOfAnOldNode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"generalStats":{"server-uptime":"00:01"},"applicationStats":{},` +
			`"instanceInfo":{"instanceId":"old"},"isHeathly":true,` +
			`"selfPreservation":{"enabled":true,"engaged":false,"reason":"not engaged: fine"}}`))
	}))
	defer srv.Close()
	code, out, errOut := runCmd(t, nil, "status", "--addr", srv.URL)
	require.Equal(t, 0, code, errOut)
	assert.Regexp(t, `(?m)^node\s+old$`, out)
	assert.Regexp(t, `(?m)^self-preservation\s+not engaged$`, out)
	assert.False(t, regexp.MustCompile(`(?m)^eviction\s`).MatchString(out), "%s", out)
}
