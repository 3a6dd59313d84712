//go:build linux

package netns

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Ports every node listens on, at its own address.
const (
	HTTPPort   = 8761
	GossipPort = 7946
)

// ServerFlags are the timers every node runs with: Eureka's shrunk 30× as
// in the in-process simulations, and the cluster timers the simulations use
// (Timers, rendered by simulations.Timers.Flags; the lease is the clients'
// 3 s).
var ServerFlags = Timers().Flags()

// Proc is one heureka process: a node's incarnation, started with
// `ip netns exec <node's namespace> heureka …` (ip execs heureka, so the
// child is heureka itself and signals reach it directly).
type Proc struct {
	Node        string
	Incarnation int
	// Log is the file its standard output and error go to.
	Log string

	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// seeds returns the gossip addresses node i joins: the first two other
// nodes, so that a restarted seed still finds someone.
func seeds(lab *Lab, node string) string {
	var out []string
	for i, n := range lab.Nodes {
		if n != node && len(out) < 2 {
			out = append(out, fmt.Sprintf("%s:%d", NodeIP(i), GossipPort))
		}
	}
	return strings.Join(out, ",")
}

// StartNode starts node's process number incarnation in its namespace.
func StartNode(bin, logDir string, lab *Lab, node string, incarnation int) (*Proc, error) {
	return StartNodeWith(bin, logDir, lab, node, incarnation, append([]string{"--join", seeds(lab, node)}, ServerFlags...))
}

// StartNodeWith starts node's process number incarnation in its namespace
// with its name and addresses and flags (its join list and timers among
// them).
func StartNodeWith(bin, logDir string, lab *Lab, node string, incarnation int, flags []string) (*Proc, error) {
	ip := lab.IP(node)
	args := []string{"netns", "exec", lab.NS(node), bin,
		"--node-name", node,
		"--http-addr", fmt.Sprintf("%s:%d", ip, HTTPPort),
		"--gossip-addr", fmt.Sprintf("%s:%d", ip, GossipPort),
	}
	args = append(args, flags...)
	logPath := filepath.Join(logDir, fmt.Sprintf("%s-%s.%d.log", lab.Run, node, incarnation))
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("ip", args...)
	cmd.Stdout, cmd.Stderr = f, f
	// Its own process group (a ^C reaches the harness, which cleans up in
	// order), and killed if the harness dies without cleaning up.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", node, err)
	}
	p := &Proc{Node: node, Incarnation: incarnation, Log: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// Pid is the process id.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has ended.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Kill sends SIGKILL and waits for the process to end.
func (p *Proc) Kill() error {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) still running 10s after SIGKILL", p.Node, p.Pid())
	}
}

// Pause sends SIGSTOP: the process keeps its sockets, the kernel keeps
// accepting connections for it, and nothing answers.
func (p *Proc) Pause() error { return p.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume sends SIGCONT.
func (p *Proc) Resume() error { return p.cmd.Process.Signal(syscall.SIGCONT) }

// Stop ends the process gracefully (SIGCONT, SIGTERM), or with SIGKILL
// after grace.
func (p *Proc) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		_ = p.Kill()
	}
}

// ExitError is how the process ended (nil while it runs or after a clean
// exit).
func (p *Proc) ExitError() error {
	if !p.Exited() {
		return nil
	}
	return p.err
}
