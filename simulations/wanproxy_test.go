package simulations

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWANLinkCutAndHeal: requests cross the link to its targets; a cut
// breaks an open stream and fails new requests; a heal lets them through.
func TestWANLinkCutAndHeal(t *testing.T) {
	streaming := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/eureka/stream" {
			_, _ = io.WriteString(w, "first\n")
			w.(http.Flusher).Flush()
			close(streaming)
			<-r.Context().Done()
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()
	l, err := newWANLink()
	require.NoError(t, err)
	defer l.Close()
	l.SetTargets([]string{strings.TrimPrefix(srv.URL, "http://")})
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	defer hc.CloseIdleConnections()

	get := func(path string) (string, error) {
		res, err := hc.Get(l.URL() + path)
		if err != nil {
			return "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return string(b), err
	}
	body, err := get("apps/")
	require.NoError(t, err)
	assert.Equal(t, "ok", body)

	res, err := hc.Get(l.URL() + "stream")
	require.NoError(t, err)
	defer res.Body.Close()
	rd := bufio.NewReader(res.Body)
	line, err := rd.ReadString('\n')
	require.NoError(t, err)
	assert.Equal(t, "first\n", line)
	<-streaming

	l.Cut()
	_, err = rd.ReadString('\n')
	assert.Error(t, err, "the cut breaks the open stream")
	_, err = get("apps/")
	assert.Error(t, err, "a request across a cut link fails")
	assert.Positive(t, l.refused.Load())

	l.Heal()
	body, err = get("apps/")
	require.NoError(t, err)
	assert.Equal(t, "ok", body)
	assert.Positive(t, l.bytes.Load())
}
