package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/heureka/heureka/bench"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/node"
)

// pinSelf pins every thread of this process to cpus (taskset -c list)
// and sets GOMAXPROCS to their count.
func pinSelf(cpus string) error {
	out, err := exec.Command("taskset", "-a", "-p", "-c", cpus, strconv.Itoa(os.Getpid())).CombinedOutput()
	if err != nil {
		return fmt.Errorf("taskset %s: %v: %s", cpus, err, out)
	}
	n := 0
	for _, r := range strings.Split(cpus, ",") {
		lo, hi, isRange := strings.Cut(r, "-")
		a, err1 := strconv.Atoi(lo)
		b, err2 := a, error(nil)
		if isRange {
			b, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || b < a {
			return fmt.Errorf("CPU list %q: give numbers and ranges, e.g. 0 or 0-1,3", cpus)
		}
		n += b - a + 1
	}
	runtime.GOMAXPROCS(n)
	return nil
}

// serveConfig is the child's: what -serve-* say.
type serveConfig struct {
	instances  int
	coalesce   time.Duration
	maxStreams int
	handler    bool   // blocking reads wait in their handlers (PushConfig.BlockingHijack off)
	handback   bool   // next requests on parked connections go back to net/http (PushConfig.BlockingDirect off)
	cpuProfile string // where "profile start" … "profile stop" write a CPU profile
}

// serve runs the measured node: it loads the registry, prints "ready
// <base>" and then answers the lines of its standard input: "mem" with
// "mem <heap in use> <stack in use> <goroutines>" after a collection;
// "profile start" and "profile stop" (with -serve-cpuprofile) start and
// stop a CPU profile written to that file, and answer "ok"; at the stop
// the allocation profile (every allocation since the start of the
// process, the loading included) goes beside it, to FILE.allocs. It stops the
// node and returns when its input ends.
func serve(s serveConfig) error {
	push := httpapi.DefaultPushConfig()
	push.StreamCoalesce = s.coalesce
	if s.maxStreams > 0 {
		push.MaxStreams = s.maxStreams
	}
	push.BlockingHijack = !s.handler
	push.BlockingDirect = !s.handback
	f, err := bench.NewFixtureWith(s.instances, func(c *node.Config) {
		c.Push = &push
		c.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	})
	if err != nil {
		return err
	}
	defer f.Stop()
	fmt.Printf("ready %s\n", f.Base)
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		switch sc.Text() {
		case "mem":
			runtime.GC()
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			fmt.Printf("mem %d %d %d\n", ms.HeapInuse, ms.StackInuse, runtime.NumGoroutine())
		case "profile start":
			if err := startProfile(s.cpuProfile); err != nil {
				fmt.Printf("error %v\n", err)
				continue
			}
			fmt.Println("ok")
		case "profile stop":
			if err := writeAllocs(s.cpuProfile + ".allocs"); err != nil {
				fmt.Printf("error %v\n", err)
				continue
			}
			if err := stopProfile(); err != nil {
				fmt.Printf("error %v\n", err)
				continue
			}
			fmt.Println("ok")
		default:
			fmt.Printf("error unknown command %q\n", sc.Text())
		}
	}
	return sc.Err()
}

// profileFile is the file of the CPU profile running, if any.
var profileFile *os.File

// startProfile starts a CPU profile of this process written to path;
// stopProfile ends it.
func startProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return err
	}
	profileFile = f
	return nil
}

// stopProfile ends the profile startProfile started (nothing if none).
func stopProfile() error {
	if profileFile == nil {
		return nil
	}
	pprof.StopCPUProfile()
	err := profileFile.Close()
	profileFile = nil
	return err
}

// writeAllocs writes the allocation profile of this process to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// profile starts or stops the node's CPU profile (-node-cpuprofile).
func (c *child) profile(cmd string) error {
	if _, err := io.WriteString(c.in, "profile "+cmd+"\n"); err != nil {
		return err
	}
	l, err := c.out.ReadString('\n')
	if err != nil {
		return err
	}
	if strings.TrimSpace(l) != "ok" {
		return fmt.Errorf("node process answered %q to profile %s", l, cmd)
	}
	return nil
}

// child is the measured node, a child process running serve.
type child struct {
	base  string
	pid   int
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	start time.Time
}

// startChild runs this program with -serve and waits for it to be ready
// (loading 100k instances takes seconds; 10 minutes at most).
func startChild(cfg Config, instances, maxStreams int) (*child, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	args := []string{exe, "-serve", "-serve-instances", strconv.Itoa(instances),
		"-serve-coalesce", cfg.Coalesce.String(), "-serve-max-streams", strconv.Itoa(maxStreams),
		"-serve-blocking-handler=" + strconv.FormatBool(cfg.BlockingHandler),
		"-serve-blocking-handback=" + strconv.FormatBool(cfg.BlockingHandback), "-serve-cpuprofile", cfg.NodeCPUProfile}
	if cfg.NodeCPUs != "" {
		args = append([]string{"taskset", "-c", cfg.NodeCPUs}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outp, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	c := &child{cmd: cmd, in: in, out: bufio.NewReader(outp), pid: cmd.Process.Pid, start: time.Now()}
	type result struct {
		line string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		l, err := c.out.ReadString('\n')
		got <- result{l, err}
	}()
	select {
	case r := <-got:
		base, ok := strings.CutPrefix(strings.TrimSpace(r.line), "ready ")
		if r.err != nil || !ok {
			c.stop()
			return nil, fmt.Errorf("node process: %q, %v", r.line, r.err)
		}
		c.base = base
		return c, nil
	case <-time.After(10 * time.Minute):
		c.stop()
		return nil, errors.New("node process: not ready after 10 minutes")
	}
}

// memory is the node's memory after a collection.
type memory struct {
	heap, stack, rss int64 // bytes
	goroutines       int
}

func (m memory) heapStack() int64 { return m.heap + m.stack }

// mem asks the node for its memory.
func (c *child) mem() (memory, error) {
	if _, err := io.WriteString(c.in, "mem\n"); err != nil {
		return memory{}, err
	}
	l, err := c.out.ReadString('\n')
	if err != nil {
		return memory{}, err
	}
	var m memory
	if _, err := fmt.Sscanf(l, "mem %d %d %d", &m.heap, &m.stack, &m.goroutines); err != nil {
		return memory{}, fmt.Errorf("node process answered %q: %v", l, err)
	}
	m.rss, err = bench.ProcRSS(c.pid)
	return m, err
}

// cpu returns the CPU time the node has used.
func (c *child) cpu() time.Duration {
	d, err := bench.ProcCPU(c.pid)
	if err != nil {
		return 0
	}
	return d
}

// stop ends the node: its input is closed (it stops itself), then SIGKILL
// after 30 s.
func (c *child) stop() {
	c.in.Close()
	done := make(chan struct{})
	go func() {
		_ = c.cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = c.cmd.Process.Signal(syscall.SIGKILL)
		<-done
	}
}

// raiseFileLimit raises this process's open-file limit to its hard limit;
// the node, a child, inherits it. It returns the soft limit now in force.
func raiseFileLimit() (uint64, error) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0, err
	}
	if l.Cur < l.Max {
		l.Cur = l.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
			return 0, err
		}
	}
	return l.Cur, nil
}
