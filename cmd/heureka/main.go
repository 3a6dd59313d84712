// Command heureka runs one node of the Heureka service registry: a Netflix
// Eureka–compatible registry whose nodes find each other by gossip. It also
// asks a running node what it holds, for people at a terminal.
//
// Usage:
//
//	heureka [serve] [flags]   start a node (the default command)
//	heureka members           list the cluster's members
//	heureka apps [APP]        list applications, or one application's instances
//	heureka status            show a node's status, self-preservation and eviction holds
//	heureka version           print the version (also: heureka --version)
//	heureka help [command]    print the flags
//
// Every serve flag can also be set as HEUREKA_<FLAG> in the environment or in
// the YAML file named by --config; see Usage. The commands are cobra's, the
// flags pflag's, and the layering of defaults, file, environment and flags is
// koanf's (config.go); only the mapping of Spring Cloud properties is ours
// (springconfig.go).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/heureka/heureka/internal/buildinfo"
)

// version is this build's release, commit and wire protocol range (set the
// release and commit when linking: see internal/buildinfo and make build).
var version = buildinfo.Get().String()

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is main without the process exit, for tests.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, getenv, stdout, stderr)
}

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1 // the command ran and failed: a node that cannot start, a node that cannot be reached
	exitUsage = 2 // the command line or the configuration is wrong; nothing ran
)

// exitError ends the command with code; err, when not nil, is printed as
// "heureka: err" (nil: it has been reported already, in the log).
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// usageError is a wrong command line or configuration (exit status 2).
func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// failure is a command that ran and failed (exit status 1).
func failure(err error) error { return &exitError{code: exitFail, err: err} }

// runContext runs the command line args; serve stops when ctx is done (or on
// SIGINT or SIGTERM). It returns the exit status.
func runContext(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if getenv == nil {
		getenv = os.Getenv
	}
	root := newRootCmd(getenv, stdout, stderr)
	root.SetArgs(goStyleFlags(args, longFlagNames(root)))
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "heureka: %v\n", ee.err)
		}
		return ee.code
	}
	// cobra's own: an unknown command or flag, a missing flag value.
	fmt.Fprintf(stderr, "heureka: %v\n", err)
	return exitUsage
}
