package simulations

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWANFaultDegrades: behind a wanLink, the proxy lets requests through
// at once when clean, delays them when degraded, fails them when every
// chunk resets the connection, and is clean again after Degrade(zero).
func TestWANFaultDegrades(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	f, err := newWANFault(1, []string{strings.TrimPrefix(srv.URL, "http://")})
	require.NoError(t, err)
	defer f.Close()
	l, err := newWANLink()
	require.NoError(t, err)
	defer l.Close()
	l.SetTargets([]string{f.Addr()})
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 2 * time.Second}
	defer hc.CloseIdleConnections()
	get := func() (string, time.Duration, error) {
		at := time.Now()
		res, err := hc.Get(l.URL() + "apps/")
		if err != nil {
			return "", time.Since(at), err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return string(b), time.Since(at), err
	}

	body, _, err := get()
	require.NoError(t, err)
	assert.Equal(t, "ok", body)

	// Two chunks at least (the request, the answer), each held 50–60 ms.
	f.Degrade(wanDegrade{DelayLo: 50 * time.Millisecond, DelayHi: 60 * time.Millisecond})
	body, took, err := get()
	require.NoError(t, err)
	assert.Equal(t, "ok", body)
	assert.GreaterOrEqual(t, took, 100*time.Millisecond)
	assert.Positive(t, f.chunks.Load())

	f.Degrade(wanDegrade{ResetP: 1})
	_, _, err = get()
	assert.Error(t, err)
	assert.Positive(t, f.resets.Load())

	f.Degrade(wanDegrade{})
	body, _, err = get()
	require.NoError(t, err)
	assert.Equal(t, "ok", body)
}
