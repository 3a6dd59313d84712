package httpapi

import "net/http"

// SetDirectHook makes f run before the handler of every request served
// directly on an answered parked connection (watch_direct.go), as part of
// it, until the returned function undoes it.
func SetDirectHook(f func(*http.Request)) (undo func()) {
	directHook.Store(&f)
	return func() { directHook.Store(nil) }
}
