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
// closed when that server shuts down, and the functions to call then.
type shutdowns struct {
	mu sync.Mutex
	m  map[*http.Server]*shutdown
}

// shutdown is one server's: its channel and what else to call.
type shutdown struct {
	ch  chan struct{}
	fns []func()
}

// of returns the channel closed when the server that serves r shuts down;
// nil (never ready) when r carries no server (a handler called directly).
func (s *shutdowns) of(r *http.Request) <-chan struct{} {
	if sd := s.entry(r); sd != nil {
		return sd.ch
	}
	return nil
}

// onShutdown calls fn when the server that serves r shuts down, right
// after its channel closes; never when r carries no server. Hijacked
// connections use it: http.Server does not track them.
func (s *shutdowns) onShutdown(r *http.Request, fn func()) {
	sd := s.entry(r)
	if sd == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sd.fns = append(sd.fns, fn)
}

// entry is the server's shutdown, made (and hooked) on first use.
func (s *shutdowns) entry(r *http.Request) *shutdown {
	srv, _ := r.Context().Value(http.ServerContextKey).(*http.Server)
	if srv == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sd, ok := s.m[srv]; ok {
		return sd
	}
	if s.m == nil {
		s.m = map[*http.Server]*shutdown{}
	}
	sd := &shutdown{ch: make(chan struct{})}
	s.m[srv] = sd
	srv.RegisterOnShutdown(func() {
		close(sd.ch)
		s.mu.Lock()
		fns := sd.fns
		sd.fns = nil
		s.mu.Unlock()
		for _, fn := range fns {
			fn()
		}
	})
	return sd
}
