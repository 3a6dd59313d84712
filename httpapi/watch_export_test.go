package httpapi

import "net/http"

// SetDirectHook makes f run before the handler of every request served
// directly on an answered parked connection (watch_direct.go), as part of
// it, until the returned function undoes it.
func SetDirectHook(f func(*http.Request)) (undo func()) {
	directHook.Store(&f)
	return func() { directHook.Store(nil) }
}

// WaitingReaderGoroutines is how many goroutines a parked read's plain TCP
// connection holds while it waits for its client: none where the parker's
// poller runs (poll_linux.go), else its reader.
func WaitingReaderGoroutines() int {
	p := newConnPoller(func() {})
	if p == nil {
		return 1
	}
	p.close()
	return 0
}
