// Command heureka runs one node of the Heureka service registry: a Netflix
// Eureka–compatible registry whose nodes find each other by gossip.
//
// Usage:
//
//	heureka [serve] [flags]   start a node (the default command)
//	heureka version           print the version
//	heureka help              print the flags
//
// Every flag can also be set as HEUREKA_<FLAG> in the environment or in the
// YAML file named by --config; see Usage.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/heureka/heureka/cmd/heureka/node"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "0.1.0-dev"

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is main without the process exit, for tests.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	cmd := "serve"
	if len(args) > 0 && len(args[0]) > 0 && args[0][0] != '-' {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "version":
		fmt.Fprintf(stdout, "heureka %s\n", version)
		return 0
	case "help":
		Usage(stdout)
		return 0
	case "serve":
	default:
		fmt.Fprintf(stderr, "heureka: unknown command %q\n\n", cmd)
		Usage(stderr)
		return 2
	}
	cfg, warnings, err := LoadConfig(args, getenv)
	if errors.Is(err, flag.ErrHelp) {
		Usage(stdout)
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "heureka: %v\n", err)
		return 2
	}
	log, err := NewLogger(stderr, cfg.LogLevel, cfg.LogFormat, "") // node.Start adds the node attribute
	if err != nil {
		fmt.Fprintf(stderr, "heureka: %v\n", err)
		return 2
	}
	for _, w := range warnings {
		log.Warn("configuration", "warning", w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	nc, err := nodeConfig(cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "heureka: %v\n", err)
		return 2
	}
	n, err := node.Start(nc)
	if err != nil {
		log.Error("cannot start", "err", err)
		return 1
	}
	<-ctx.Done()
	stop()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := n.Stop(sctx); err != nil {
		log.Error("unclean shutdown", "err", err)
		return 1
	}
	return 0
}
