package httpapi

import (
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestClassifyFetch: Eureka's ^.*/apps(/[^/]*)?$ on GETs, under the base
// paths.
func TestClassifyFetch(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         fetchKind
	}{
		{"GET", "/eureka/apps", fullFetch},
		{"GET", "/eureka/apps/", fullFetch},
		{"GET", "/eureka/v2/apps", fullFetch},
		{"GET", "/eureka/v2/apps/", fullFetch},
		{"GET", "/eureka/apps/delta", deltaFetch},
		{"GET", "/eureka/apps/delta/", deltaFetch},
		{"GET", "/eureka/v2/apps/delta", deltaFetch},
		{"GET", "/eureka/apps/ORDERS", appFetch},
		{"GET", "/eureka/v2/apps/orders", appFetch},
		{"GET", "/eureka/apps/apps", appFetch},
		{"GET", "/eureka/apps/ORDERS/i-1", notAFetch},
		{"GET", "/eureka/apps/ORDERS/apps", notAFetch},
		{"GET", "/eureka/vips/orders", notAFetch},
		{"GET", "/eureka/appsx", notAFetch},
		{"GET", "/apps", notAFetch},
		{"HEAD", "/eureka/apps", notAFetch},
		{"POST", "/eureka/apps/ORDERS", notAFetch},
		{"PUT", "/eureka/apps/ORDERS/i-1", notAFetch},
	} {
		r := httptest.NewRequest(tc.method, tc.path, nil)
		assert.Equal(t, tc.want, classifyFetch(r), "%s %s", tc.method, tc.path)
	}
}
