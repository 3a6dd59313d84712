package httpapi

// Shutdown of long requests
//
// http.Server.Shutdown waits for active requests to finish and cancels
// none of their contexts, so a blocking read would hold a node's shutdown
// for up to PushConfig.MaxWait and a stream for ever (until the shutdown's
// own deadline gave up on it). The API does not own the http.Server, but
// every request carries it (http.ServerContextKey): the first long request
// served by a server registers, with RegisterOnShutdown, a hook that
// closes that server's shutdown channel. Blocking reads then answer at
// once (304, or the new document) and streams end, so Shutdown returns as
// soon as they have written their last bytes.

import (
	"net/http"
	"sync"
)

// shutdowns holds one channel per http.Server that served a long request,
// closed when that server shuts down.
type shutdowns struct {
	mu sync.Mutex
	m  map[*http.Server]chan struct{}
}

// of returns the channel closed when the server that serves r shuts down;
// nil (never ready) when r carries no server (a handler called directly).
func (s *shutdowns) of(r *http.Request) <-chan struct{} {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.m[srv]; ok {
		return ch
	}
	if s.m == nil {
		s.m = map[*http.Server]chan struct{}{}
	}
	ch := make(chan struct{})
	s.m[srv] = ch
	srv.RegisterOnShutdown(func() { close(ch) })
	return ch
}
