// Command watchers measures how a Heureka node pushes changes to
// applications (docs/push.md) and what the zero-dependency alternative,
// stock clients polling every second, costs. Its figures are in
// BENCHMARKS.md ("Push to applications"); `make bench-watchers` runs it.
//
// The node runs as a child process (this program, re-run with -serve), so
// that its CPU time and resident memory come from /proc/PID alone, apart
// from the load generator's. The child loads -instances instances (20 per
// application) straight into its registry and then serves HTTP on
// loopback; every watcher, write and poll below is a real HTTP request on
// one http.Transport of this process, watchers being goroutines.
//
// Phases (-phases):
//
//   - blocking, stream: -watchers gives increasing steps (1000, 5000,
//     10000). At each step the watchers of the mode are all waiting on
//     application -app: blocking reads of GET /eureka/apps/{app} with
//     If-None-Match and wait=60s, or change streams GET
//     /eureka/stream?app={app}. With none yet and then at each step the
//     node's memory is taken (after a collection: heap in use, goroutine
//     stacks, RSS), and -changes changes are made one after the other
//     (register a new instance of the application, then cancel it, …), the
//     next only when every watcher has the last one. Delivery latency is
//     timed from the write's response to each watcher's reading the 200 or
//     the stream event; the node's CPU time over the changes gives the CPU
//     per change and, less that of the changes with no watcher, per change
//     and watcher. After the last step -churn-for of churn replaces
//     -churn-fraction of the instances every -churn-every with every
//     watcher still connected, and the node's memory is taken before each
//     burst.
//   - poll: for each of -poll-sizes a fresh node holds that many instances,
//     changed -poll-churn times a second (a registration or a
//     cancellation), first with no client and then with -poll-clients
//     stock Java clients at registry-fetch-interval-seconds=1: one full
//     GET /eureka/apps at start, then GET /eureka/apps/delta every second
//     (JSON, gzip), the delta applied to the client's copy and its
//     reconcile hashcode compared with the delta's apps__hashcode, a full
//     fetch when they differ. The node's CPU time and the bytes the clients
//     read from their connections over -poll-for give the cost per 1,000
//     clients.
//
// Every ratio printed is followed by the figures it is computed from. The
// machine's load average is printed at the start and at the end, and
// beside every step. Timing is measured here only, never asserted in
// tests.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// Config is the command's configuration; its flags are named in the
// comments and their defaults are those of defaultConfig.
type Config struct {
	// Phases to run, in this order: blocking, stream, poll. -phases
	// (blocking,stream,poll).
	Phases []string
	// Instances is the watched node's registry size. -instances (10000).
	Instances int
	// App is the application the watchers watch; it must be one of the
	// loaded ones (SERVICE-00000 … ). -app (SERVICE-00000).
	App string
	// Watchers are the steps, strictly increasing, at most MaxWatchers.
	// -watchers (1000,5000,10000).
	Watchers []int
	// Changes is the number of changes timed at each step (and with no
	// watcher). -changes (20).
	Changes int
	// Coalesce is the node's PushConfig.StreamCoalesce. -coalesce (25ms,
	// the node's default).
	Coalesce time.Duration
	// BlockingHandler turns the node's PushConfig.BlockingHijack off:
	// blocking reads wait in their handlers, as before they were parked
	// (to compare on the same machine). -blocking-handler (false).
	BlockingHandler bool
	// BlockingHandback turns the node's PushConfig.BlockingDirect off:
	// the next request on an answered parked connection goes back to
	// net/http, as before it was served on the connection (to compare).
	// -blocking-handback (false).
	BlockingHandback bool
	// NodeCPUs and WatcherCPUs pin the node's process and this one (the
	// watchers) to CPU lists (taskset -c syntax, e.g. "0" and "1"), so
	// that the watchers' CPU does not take the node's; each process's
	// GOMAXPROCS is then its list's CPU count. "": not pinned.
	// -node-cpus, -watcher-cpus ("").
	NodeCPUs, WatcherCPUs string
	// NodeCPUProfile, if set, is where the node writes a CPU profile of
	// the changes of the last step of each phase (a later phase's
	// overwrites it), and beside it, at the end of those changes, its
	// allocation profile since it started (FILE.allocs).
	// -node-cpuprofile ("").
	NodeCPUProfile string
	// CPUProfile, if set, is where this process (the watchers and the
	// writer) writes a CPU profile over the same changes.
	// -cpuprofile ("").
	CPUProfile string
	// RawBlocking makes each blocking watcher one plain HTTP/1.1
	// connection served by epoll event loops (raw_linux.go), instead of a
	// request of the shared http.Client: the client's CPU then competes
	// less with the node's. -raw-blocking (false).
	RawBlocking bool
	// NextAfterChange makes each raw watcher send its next request once
	// every watcher has the change, not as soon as it has it. This one
	// process stands for N clients with one CPU for all of them: sending
	// each next request (a write(2) that runs the node's side of loopback
	// too) before reading the next answer makes the last delivery lag the
	// node's fan-out by the process's own serial work, where N clients of
	// their own would each read their answer at once. The node still
	// serves every next request, counted in its CPU; they no longer
	// overlap its fan-out. Needs -raw-blocking. -next-after-change (false).
	NextAfterChange bool
	// Settle is how long the watchers sit idle before the node's memory
	// is taken. -settle (3s).
	Settle time.Duration
	// ChurnFor is how long the churn after the last step lasts; 0: none.
	// -churn-for (60s).
	ChurnFor time.Duration
	// ChurnEvery is the churn's period. -churn-every (10s).
	ChurnEvery time.Duration
	// ChurnFraction of the instances is replaced (registered anew and
	// the old one cancelled) every ChurnEvery. -churn-fraction (0.1).
	ChurnFraction float64
	// PollSizes are the registry sizes of the poll phase.
	// -poll-sizes (1000,10000).
	PollSizes []int
	// PollClients is the number of polling clients. -poll-clients (1000).
	PollClients int
	// PollFor is how long each poll measurement lasts. -poll-for (30s).
	PollFor time.Duration
	// PollChurn is the number of changes a second during the poll phase.
	// -poll-churn (1).
	PollChurn float64
}

// MaxWatchers bounds -watchers: each watcher holds a connection, a file
// descriptor in this process and one in the node (the hard limit here is
// typically 20,000; see raiseFileLimit).
const MaxWatchers = 15000

func defaultConfig() Config {
	return Config{
		Phases:        []string{"blocking", "stream", "poll"},
		Instances:     10000,
		App:           "SERVICE-00000",
		Watchers:      []int{1000, 5000, 10000},
		Changes:       20,
		Coalesce:      25 * time.Millisecond,
		Settle:        3 * time.Second,
		ChurnFor:      60 * time.Second,
		ChurnEvery:    10 * time.Second,
		ChurnFraction: 0.1,
		PollSizes:     []int{1000, 10000},
		PollClients:   1000,
		PollFor:       30 * time.Second,
		PollChurn:     1,
	}
}

// validate refuses what cannot be measured; it never replaces a value.
func (c Config) validate() error {
	if len(c.Phases) == 0 {
		return errors.New("-phases: none given")
	}
	for _, p := range c.Phases {
		switch p {
		case "blocking", "stream", "poll":
		default:
			return fmt.Errorf("-phases: unknown phase %q (blocking, stream, poll)", p)
		}
	}
	switch {
	case c.Instances < 20:
		return fmt.Errorf("-instances %d: at least 20 (one application)", c.Instances)
	case !loadedApp(c.App, c.Instances):
		return fmt.Errorf("-app %q: not one of the %d loaded applications SERVICE-00000…", c.App, (c.Instances+19)/20)
	case len(c.Watchers) == 0:
		return errors.New("-watchers: no step")
	case c.Changes < 1:
		return fmt.Errorf("-changes %d: at least 1", c.Changes)
	case c.Coalesce < 0 || c.Coalesce > time.Second:
		return fmt.Errorf("-coalesce %v: 0 to 1s (the node's rule)", c.Coalesce)
	case c.NextAfterChange && !c.RawBlocking:
		return errors.New("-next-after-change: needs -raw-blocking")
	case c.Settle < 0:
		return fmt.Errorf("-settle %v: negative", c.Settle)
	case c.ChurnFor < 0:
		return fmt.Errorf("-churn-for %v: negative", c.ChurnFor)
	case c.ChurnFor > 0 && c.ChurnEvery <= 0:
		return fmt.Errorf("-churn-every %v: must be positive", c.ChurnEvery)
	case c.ChurnFor > 0 && (c.ChurnFraction <= 0 || c.ChurnFraction > 1):
		return fmt.Errorf("-churn-fraction %v: above 0, at most 1", c.ChurnFraction)
	case len(c.PollSizes) == 0:
		return errors.New("-poll-sizes: none given")
	case c.PollClients < 1 || c.PollClients > MaxWatchers:
		return fmt.Errorf("-poll-clients %d: 1 to %d", c.PollClients, MaxWatchers)
	case c.PollFor < time.Second:
		return fmt.Errorf("-poll-for %v: at least 1s", c.PollFor)
	case c.PollChurn < 0 || c.PollChurn > 1000:
		return fmt.Errorf("-poll-churn %v: 0 to 1000 changes a second", c.PollChurn)
	}
	prev := 0
	for _, n := range c.Watchers {
		if n <= prev || n > MaxWatchers {
			return fmt.Errorf("-watchers %v: strictly increasing, each 1 to %d", c.Watchers, MaxWatchers)
		}
		prev = n
	}
	for _, n := range c.PollSizes {
		if n < 20 {
			return fmt.Errorf("-poll-sizes %v: each at least 20", c.PollSizes)
		}
	}
	return nil
}

// loadedApp reports whether app is one of the applications a registry of
// instances instances holds (bench.AppName).
func loadedApp(app string, instances int) bool {
	num, ok := strings.CutPrefix(app, "SERVICE-")
	if !ok || len(num) != 5 {
		return false
	}
	a, err := strconv.Atoi(num)
	return err == nil && a >= 0 && a < (instances+19)/20
}

func parseFlags(args []string) (Config, serveConfig, bool, error) {
	c := defaultConfig()
	var s serveConfig
	fs := flag.NewFlagSet("watchers", flag.ContinueOnError)
	phases := fs.String("phases", strings.Join(c.Phases, ","), "phases to run: blocking, stream, poll (comma-separated)")
	fs.IntVar(&c.Instances, "instances", c.Instances, "instances in the watched node's registry (20 per application)")
	fs.StringVar(&c.App, "app", c.App, "the application watched")
	watchers := fs.String("watchers", joinInts(c.Watchers), "watcher counts, strictly increasing")
	fs.IntVar(&c.Changes, "changes", c.Changes, "changes timed per step")
	fs.DurationVar(&c.Coalesce, "coalesce", c.Coalesce, "the node's StreamCoalesce (0 to 1s)")
	fs.BoolVar(&c.BlockingHandler, "blocking-handler", c.BlockingHandler, "blocking reads wait in their handlers (PushConfig.BlockingHijack off), to compare")
	fs.BoolVar(&c.BlockingHandback, "blocking-handback", c.BlockingHandback, "the next blocking read on an answered parked connection goes back to net/http (PushConfig.BlockingDirect off), to compare")
	fs.StringVar(&c.NodeCPUs, "node-cpus", c.NodeCPUs, "pin the node's process to these CPUs (taskset -c list, e.g. 0)")
	fs.StringVar(&c.NodeCPUProfile, "node-cpuprofile", c.NodeCPUProfile, "write a CPU profile of the node's process over the changes of the last step to this file (and its allocation profile to FILE.allocs)")
	fs.StringVar(&c.CPUProfile, "cpuprofile", c.CPUProfile, "write a CPU profile of this process (the watchers) over the changes of the last step to this file")
	fs.StringVar(&c.WatcherCPUs, "watcher-cpus", c.WatcherCPUs, "pin this process (the watchers) to these CPUs (taskset -c list, e.g. 1)")
	fs.BoolVar(&c.RawBlocking, "raw-blocking", c.RawBlocking, "blocking watchers on plain HTTP/1.1 connections instead of an http.Client")
	fs.BoolVar(&c.NextAfterChange, "next-after-change", c.NextAfterChange, "raw watchers send their next request once every watcher has the change (needs -raw-blocking)")
	fs.DurationVar(&c.Settle, "settle", c.Settle, "idle time before the node's memory is taken")
	fs.DurationVar(&c.ChurnFor, "churn-for", c.ChurnFor, "churn after the last step (0: none)")
	fs.DurationVar(&c.ChurnEvery, "churn-every", c.ChurnEvery, "churn period")
	fs.Float64Var(&c.ChurnFraction, "churn-fraction", c.ChurnFraction, "fraction of the instances replaced every period")
	pollSizes := fs.String("poll-sizes", joinInts(c.PollSizes), "registry sizes of the poll phase")
	fs.IntVar(&c.PollClients, "poll-clients", c.PollClients, "polling clients")
	fs.DurationVar(&c.PollFor, "poll-for", c.PollFor, "length of each poll measurement")
	fs.Float64Var(&c.PollChurn, "poll-churn", c.PollChurn, "changes a second during the poll phase")
	serve := fs.Bool("serve", false, "internal: run as the measured node (the child process)")
	fs.IntVar(&s.instances, "serve-instances", 0, "internal: the child's registry size")
	fs.DurationVar(&s.coalesce, "serve-coalesce", 0, "internal: the child's StreamCoalesce")
	fs.IntVar(&s.maxStreams, "serve-max-streams", 0, "internal: the child's MaxStreams")
	fs.BoolVar(&s.handler, "serve-blocking-handler", false, "internal: the child's blocking reads wait in their handlers")
	fs.StringVar(&s.cpuProfile, "serve-cpuprofile", "", "internal: the child's CPU profile")
	fs.BoolVar(&s.handback, "serve-blocking-handback", false, "internal: the child's parked connections go back to net/http for every next request")
	if err := fs.Parse(args); err != nil {
		return c, s, false, err
	}
	if fs.NArg() > 0 {
		return c, s, false, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if *serve {
		return c, s, true, nil
	}
	c.Phases = splitList(*phases)
	var err error
	if c.Watchers, err = parseInts(*watchers); err != nil {
		return c, s, false, fmt.Errorf("-watchers: %w", err)
	}
	if c.PollSizes, err = parseInts(*pollSizes); err != nil {
		return c, s, false, fmt.Errorf("-poll-sizes: %w", err)
	}
	return c, s, false, c.validate()
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range splitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}

func main() {
	c, s, serving, err := parseFlags(os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "watchers:", err)
		os.Exit(2)
	}
	if serving {
		if err := serve(s); err != nil {
			fmt.Fprintln(os.Stderr, "watchers -serve:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "watchers:", err)
		os.Exit(1)
	}
}
