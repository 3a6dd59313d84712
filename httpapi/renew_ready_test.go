package httpapi_test

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/httpapi"
)

// renewBeforeReady renews an instance the node does not know while it is
// not ready, then, while that renewal is in flight, lets the instance
// arrive (as the initial sync brings it to a restarted node) and the node
// become ready; it returns the renewal's status code.
func renewBeforeReady(t *testing.T) int {
	var ready atomic.Bool
	h, _ := startAPI(t, nil, func(c *httpapi.Config) { c.Ready = ready.Load })
	a := javaInstance("ORDER-SERVICE", 1)
	code := make(chan int, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPut, h.base+"/eureka/v2/apps/ORDER-SERVICE/"+a.id()+"?status=UP", nil)
		if err != nil {
			code <- 0
			return
		}
		res, err := h.client.Do(req)
		if err != nil {
			code <- 0
			return
		}
		_ = res.Body.Close()
		code <- res.StatusCode
	}()
	select {
	case c := <-code:
		return c // answered before the instance arrived
	case <-time.After(200 * time.Millisecond):
	}
	h.register(a)
	ready.Store(true)
	return <-code
}

// A renewal of an instance that a not yet ready node does not know waits
// until the node is ready and is then answered by what the sync brought:
// 200, not a 404 that would make the client register again because the
// node restarted. Once ready, an unknown instance answers 404 at once.
func TestRenewWaitsForTheInitialSync(t *testing.T) {
	assert.Equal(t, http.StatusOK, renewBeforeReady(t))

	h, _ := startAPI(t, nil, func(c *httpapi.Config) { c.Ready = func() bool { return true } })
	res := h.renew("ORDER-SERVICE", "nobody", "status=UP")
	require.Equal(t, http.StatusNotFound, res.code, "%s", res)
}
