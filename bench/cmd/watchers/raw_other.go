//go:build !linux

package main

import "errors"

// rawLoops are the raw watchers' event loops: Linux only (epoll).
type rawLoops struct{ w *watchers }

func (w *watchers) addRaw(int) { w.fail(errors.New("-raw-blocking: Linux only (epoll)")) }
