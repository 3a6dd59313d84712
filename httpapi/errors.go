package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/eureka"
)

// httpError is an error with the status code and plain-text message the
// client gets.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

// badRequest is a 400 with a plain-text message (Eureka's validation errors
// are plain text even for JSON requests).
func badRequest(msg string) error {
	return &httpError{code: http.StatusBadRequest, msg: msg}
}

// fail writes err as an HTTP error. It is the one place that maps errors to
// status codes.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	switch {
	case errors.As(err, &he):
		writeText(w, he.code, he.msg)
	case errors.Is(err, eureka.ErrBadBody):
		// Plain text like every other 400, saying what is wrong (for
		// invalid UTF-8, the byte and its offset). Eureka's provider
		// answers {"error": …} or <error>…</error> in the request's format,
		// but only when the Content-Type is exactly application/json, and
		// no client reads it.
		writeText(w, http.StatusBadRequest, clientMessage(err))
	case errors.Is(err, eureka.ErrUnsupportedMediaType):
		writeText(w, http.StatusUnsupportedMediaType, clientMessage(err)+"; send application/json or application/xml")
	case errors.Is(err, actors.ErrClosed), errors.Is(err, context.DeadlineExceeded):
		s.log.Warn("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeText(w, http.StatusServiceUnavailable, "registry unavailable: "+err.Error())
	case errors.Is(err, context.Canceled):
		// The client went away; nobody reads the answer.
		w.WriteHeader(499)
	default:
		s.log.Error("request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeText(w, http.StatusInternalServerError, "internal error")
	}
}

// clientMessage is err's message for a client: without the package prefix
// of the sentinel it wraps ("eureka: "), which names our code, not the
// client's mistake.
func clientMessage(err error) string {
	return strings.TrimPrefix(err.Error(), "eureka: ")
}
