package springstarter_test

import (
	"testing"

	"github.com/heureka/heureka/clients/internal/javaharness"
	"github.com/heureka/heureka/internal/freeport"
)

// startEureka starts Spring Cloud Netflix's Eureka server (the reference
// server `make javadeps` builds, clients/java/reference) on a free loopback
// port, its read-only response cache off so that its reads follow its writes
// as Heureka's do, and returns its Eureka URL (…/eureka/) once it serves. It
// has no change stream: GET /eureka/stream answers 404. It may run on a
// goroutine of its own: it reports failures as errors.
func startEureka(t *testing.T) (string, error) {
	port, err := freeport.Port("127.0.0.1", false)
	if err != nil {
		return "", err
	}
	r, err := javaharness.StartReference(t, port)
	if err != nil {
		return "", err
	}
	return r.URL + "/", nil
}
