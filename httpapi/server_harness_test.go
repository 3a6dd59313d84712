package httpapi_test

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/httpapi"
)

// apiNodeName is the NodeName of startAPI's server.
const apiNodeName = "api-node"

// startAPI serves the real handler over a real actors.Registry and view on
// a loopback port, without node.Start, so that a test can set the Config
// fields a node fills itself (Ready, Cluster) or wrap the registry (wrap
// may be nil). Everything stops when the test ends.
func startAPI(t *testing.T, wrap func(*actors.Registry) httpapi.Registry, mutate func(*httpapi.Config)) (*harness, *actors.Registry) {
	t.Helper()
	logs := &logBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	v := view.New(view.DefaultConfig(eureka.Encoders()))
	rc := actors.DefaultConfig(apiNodeName)
	rc.Logger = log
	rc.Sinks = []actors.Sink{v}
	reg, err := actors.NewRegistry(rc)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	viewDone := make(chan struct{})
	go func() {
		defer close(viewDone)
		v.Run(ctx)
	}()
	cfg := httpapi.Config{Registry: reg, View: v, NodeName: apiNodeName, Version: "test", Logger: log}
	if wrap != nil {
		cfg.Registry = wrap(reg)
	}
	if mutate != nil {
		mutate(&cfg)
	}
	srv := httptest.NewServer(httpapi.New(cfg))
	tr := &http.Transport{DisableCompression: true}
	h := &harness{t: t, base: srv.URL, client: &http.Client{Transport: tr, Timeout: 30 * time.Second}, logs: logs}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		srv.Close()
		cancel()
		<-viewDone
		reg.Close()
		if t.Failed() {
			t.Logf("log:\n%s", logs.String())
		}
	})
	return h, reg
}
