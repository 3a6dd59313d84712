//go:build linux

package netns

import (
	"os"
	"os/signal"
	"syscall"
)

// Cleanup on signals: a harness interrupted by SIGINT, SIGTERM or SIGHUP
// removes its run's namespaces and processes before it exits.

// HandleSignals cleans run up and exits on SIGINT, SIGTERM or SIGHUP
// (status 128+signal). The returned function stops the handling.
func HandleSignals(run string, logf func(format string, args ...any)) (stop func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-ch:
			logf("netns: %v: removing every namespace and process of run %s", sig, run)
			if err := CleanupRun(run); err != nil {
				logf("netns: cleanup: %v", err)
			}
			code := 128
			if s, ok := sig.(syscall.Signal); ok {
				code += int(s)
			}
			os.Exit(code)
		case <-done:
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}
