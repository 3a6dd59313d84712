package httpapi

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/heureka/heureka/actors"
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
	case errors.Is(err, ErrInvalidUTF8):
		// Before ErrBadBody, which it wraps: the client gets the byte and
		// its offset in plain text, not Eureka's generic parse error.
		writeText(w, http.StatusBadRequest, strings.TrimPrefix(err.Error(), "httpapi: "))
	case errors.Is(err, ErrBadBody):
		// Eureka's provider answers undecodable bodies in the request's
		// own format.
		if strings.TrimSpace(r.Header.Get("Content-Type")) == "application/json" {
			writeEntity(w, http.StatusBadRequest, 0, []byte(`{"error": "cannot parse request body"}`))
		} else {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`<error><message>cannot parse request body</message></error>`))
		}
	case errors.Is(err, ErrUnsupportedMediaType):
		writeText(w, http.StatusUnsupportedMediaType, err.Error())
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
