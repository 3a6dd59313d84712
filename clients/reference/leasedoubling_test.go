package reference_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/node"
)

func init() { observedBy["lease-doubling"] = "TestLeaseDoubling" }

// TestLeaseDoubling checks README row lease-doubling through what the
// servers report. Eureka's renew() sets the lease's lastUpdate to now +
// duration, and expiry adds the duration again; the lastRenewalTimestamp
// it reports is that lastUpdate, a lease ahead of the renewal. A Heureka
// node with LeaseDurationDoubling, as the differential test runs it,
// reports the same; with its defaults it reports the renewal itself (its
// leases expire one duration after it). Heureka applies a renewal after
// answering it, so the test polls until the reported time has moved past
// the registration. The figures are compared with a tolerance of a tenth
// of the lease, far above the milliseconds between the requests.
func TestLeaseDoubling(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	ids, err := tableIDs(string(readme))
	require.NoError(t, err)
	require.Contains(t, ids, "lease-doubling", "README.md's table has no row lease-doubling")

	// The second reference server: TestDifferential's registry stays as
	// its catalogue leaves it.
	r := cachingReference(t)
	doubling := startHeureka(t)
	plain := startPlainHeureka(t)
	i := base("LEASE-SERVICE", "lease-1", 50)
	lease := time.Duration(i.duration) * time.Second

	// lastRenewal registers i, renews it and returns how far the reported
	// lastRenewalTimestamp lies after the renewal.
	lastRenewal := func(url string) time.Duration {
		a, err := send(url, registerJSON("register", i))
		require.NoError(t, err)
		require.Equal(t, http.StatusNoContent, a.Status, "register on %s", url)
		registered, ok := leaseTimes(url, i)
		require.True(t, ok, "GET instance on %s", url)
		// The renewal must fall in a later millisecond than the
		// registration, to tell the two apart.
		for time.Now().UnixMilli() <= registered.reg+1 {
			runtime.Gosched()
		}
		renewed := time.Now()
		a, err = send(url, put("renew", instPath(i)))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, a.Status, "renew on %s", url)
		var last int64
		require.Eventually(t, func() bool {
			lt, ok := leaseTimes(url, i)
			last = lt.last
			return ok && lt.last > registered.reg
		}, 5*time.Second, 10*time.Millisecond, "%s: the renewal never showed in lastRenewalTimestamp", url)
		return time.UnixMilli(last).Sub(renewed)
	}
	tolerance := lease / 10
	assert.InDelta(t, lease, lastRenewal(r.url), float64(tolerance), "the reference: a lease ahead of the renewal")
	assert.InDelta(t, lease, lastRenewal(doubling.URL()), float64(tolerance), "Heureka with LeaseDurationDoubling: as Eureka")
	assert.InDelta(t, 0, lastRenewal(plain.URL()), float64(tolerance),
		"Heureka by default: the renewal itself (README row lease-doubling)")
	t.Logf("README row lease-doubling: the reference reports lastRenewalTimestamp %d s after a renewal, Heureka by default the renewal",
		i.duration)
}

// leaseTime are an instance's registrationTimestamp and
// lastRenewalTimestamp (epoch ms).
type leaseTime struct{ reg, last int64 }

// leaseTimes reads them from GET instance.
func leaseTimes(url string, i inst) (leaseTime, bool) {
	a, err := send(url, get("GET instance", instPath(i), jsonAccept))
	if err != nil || a.Status != http.StatusOK {
		return leaseTime{}, false
	}
	var doc struct {
		Instance struct {
			LeaseInfo struct {
				Registration int64 `json:"registrationTimestamp"`
				LastRenewal  int64 `json:"lastRenewalTimestamp"`
			} `json:"leaseInfo"`
		} `json:"instance"`
	}
	if json.Unmarshal(a.Body, &doc) != nil {
		return leaseTime{}, false
	}
	return leaseTime{doc.Instance.LeaseInfo.Registration, doc.Instance.LeaseInfo.LastRenewal}, true
}

// startPlainHeureka starts a node with Heureka's defaults (but
// self-preservation, off as on the reference).
func startPlainHeureka(t *testing.T) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig("plain")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	cfg.Registry.SelfPreservation = false
	n, err := node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, n.Stop(ctx))
	})
	return n
}
