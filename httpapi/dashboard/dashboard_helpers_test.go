package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/httpapi/dashboard"
	"github.com/heureka/heureka/node"
)

// startNode starts a single node on loopback with the production wiring
// and stops it when the test ends.
func startNode(t *testing.T, tweak func(*node.Config)) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig("dash-test")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Version = "1.2.3-test"
	cfg.Logger = slog.New(slog.DiscardHandler)
	if tweak != nil {
		tweak(&cfg)
	}
	nd, err := node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { stopNode(nd) })
	return nd
}

func stopNode(nd *node.Node) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = nd.Stop(ctx)
	http.DefaultClient.CloseIdleConnections()
}

// base is the node's root URL, without a trailing slash.
func base(nd *node.Node) string { return "http://" + nd.Addr() }

// instance describes a registration.
type instance struct {
	app, id, zone string
	// aws registers with an AmazonInfo data center whose
	// availability-zone is zone, instead of metadata "zone".
	aws bool
	// metadata is extra metadata.
	metadata map[string]string
}

// body is the instance's Eureka JSON registration, with a 90 s lease
// renewed every second (the browser test renews it).
func (in instance) body() string {
	md := map[string]string{}
	for k, v := range in.metadata {
		md[k] = v
	}
	dc := map[string]any{"@class": "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", "name": "MyOwn"}
	if in.aws {
		dc = map[string]any{"@class": "com.netflix.appinfo.AmazonInfo", "name": "Amazon",
			"metadata": map[string]string{"availability-zone": in.zone, "instance-id": in.id}}
	} else if in.zone != "" {
		md["zone"] = in.zone
	}
	doc := map[string]any{"instance": map[string]any{
		"instanceId": in.id, "hostName": in.id + ".internal", "app": in.app, "ipAddr": "10.0.0.7",
		"status": "UP", "port": map[string]any{"$": 8080, "@enabled": "true"},
		"vipAddress": strings.ToLower(in.app), "dataCenterInfo": dc, "metadata": md,
		"leaseInfo": map[string]any{"renewalIntervalInSecs": 1, "durationInSecs": 90},
	}}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// call makes one request and returns the status and body.
func call(t *testing.T, method, url, body string, hdr ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

// register registers in with the node at root and requires 204.
func register(t *testing.T, root string, in instance) {
	t.Helper()
	code, body := call(t, http.MethodPost, root+"/eureka/apps/"+in.app, in.body())
	require.Equal(t, http.StatusNoContent, code, "register %s/%s: %s", in.app, in.id, body)
}

// state fetches the dashboard's state document.
func state(t *testing.T, root, known string) *dashboard.State {
	t.Helper()
	url := root + "/dashboard/api/state"
	if known != "" {
		url += "?known=" + known
	}
	code, body := call(t, http.MethodGet, url, "")
	require.Equal(t, http.StatusOK, code, body)
	var st dashboard.State
	require.NoError(t, json.Unmarshal([]byte(body), &st), body)
	return &st
}

// eurekaStatus reads one instance through the Eureka API (a live lookup)
// and returns its status and overridden status; ok is false on 404. It
// does not fail the test, so that require.Eventually can call it.
func eurekaStatus(root, app, id string) (status, overridden string, ok bool, err error) {
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("%s/eureka/apps/%s/%s", root, app, id), nil)
	if err != nil {
		return "", "", false, err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", "", false, err
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return "", "", false, nil
	default:
		return "", "", false, fmt.Errorf("GET %s: %s", req.URL, resp.Status)
	}
	var doc struct {
		Instance struct {
			Status           string `json:"status"`
			OverriddenStatus string `json:"overriddenStatus"`
		} `json:"instance"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil {
		return "", "", false, err
	}
	return doc.Instance.Status, doc.Instance.OverriddenStatus, true, nil
}

// findInstance returns the instance app/id of a state document, or nil.
func findInstance(st *dashboard.State, app, id string) *dashboard.InstanceInfo {
	for _, a := range st.Applications {
		if a.Name != app {
			continue
		}
		for i := range a.Instances {
			if a.Instances[i].ID == id {
				return &a.Instances[i]
			}
		}
	}
	return nil
}
