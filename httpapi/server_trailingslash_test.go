package httpapi_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestTrailingSlash: every Eureka resource answers with a trailing slash as
// without one, as Jersey does (the differential test against the
// reference server found GET apps/{app}/ answered 404).
func TestTrailingSlash(t *testing.T) {
	h := startNode(t)
	inst := javaInstance("SLASH-SERVICE", 1)
	res := h.do(http.MethodPost, "/eureka/apps/SLASH-SERVICE/", inst.json(), "Content-Type", ctJSON)
	assert.Equal(t, http.StatusNoContent, res.code, "register: %s", res)
	path := "/eureka/apps/SLASH-SERVICE/" + inst.id()
	for _, c := range []struct {
		method, path string
		want         int
	}{
		{http.MethodGet, "/eureka/apps/SLASH-SERVICE/", http.StatusOK},
		{http.MethodGet, path + "/", http.StatusOK},
		{http.MethodGet, "/eureka/instances/" + inst.id() + "/", http.StatusOK},
		{http.MethodGet, "/eureka/vips/slash-service/", http.StatusOK},
		{http.MethodGet, "/eureka/svips/slash-service/", http.StatusOK},
		{http.MethodPut, path + "/", http.StatusOK},
		{http.MethodPut, path + "/metadata/?k=v", http.StatusOK},
		{http.MethodPut, path + "/status/?value=OUT_OF_SERVICE", http.StatusOK},
		{http.MethodDelete, path + "/status/?value=UP", http.StatusOK},
		{http.MethodDelete, path + "/", http.StatusOK},
		{http.MethodGet, path + "/", http.StatusNotFound},
	} {
		res := h.do(c.method, c.path, nil, "Accept", ctJSON)
		assert.Equal(t, c.want, res.code, "%s %s: %s", c.method, c.path, res)
	}
}
