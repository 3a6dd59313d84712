package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/heureka/heureka/internal/freeport"
)

// Process is a server under measurement running as a process of its own on
// loopback (a heureka binary or the reference Eureka server): the same
// loads reach it over HTTP, its CPU time and RSS come from /proc/PID.
type Process struct {
	// Name labels the process in reports.
	Name string
	// Base is its HTTP root, "http://127.0.0.1:port".
	Base string
	// PID is its process id.
	PID int

	cmd  *exec.Cmd
	done chan struct{}
	err  error // cmd.Wait's result, valid after done
	log  string
}

// freePort returns a loopback TCP port that was free a moment ago and that
// this process has not been given before (internal/freeport).
func freePort() (int, error) { return freeport.Port("127.0.0.1", false) }

// startProcess runs name with args (its output in logDir/<label>.log) and
// waits up to ready for GET base/eureka/apps to answer 200.
func startProcess(label, logDir string, port int, ready time.Duration, name string, args ...string) (*Process, error) {
	logPath := filepath.Join(logDir, label+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = lf, lf
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, err
	}
	p := &Process{Name: label, Base: fmt.Sprintf("http://127.0.0.1:%d", port), PID: cmd.Process.Pid,
		cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		lf.Close()
		close(p.done)
	}()
	c := NewClient(1)
	defer c.CloseIdleConnections()
	deadline := time.Now().Add(ready)
	for {
		resp, err := c.Do(newRequest(http.MethodGet, hostOf(p.Base), "/eureka/apps", "", javaHeaders("application/json", false), nil))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("bench: %s exited before it was ready (%v); log in %s", label, p.err, logPath)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			p.Stop()
			return nil, fmt.Errorf("bench: %s not ready after %v; log in %s", label, ready, logPath)
		}
	}
}

// Stop ends the process: SIGTERM, then SIGKILL after 15 s.
func (p *Process) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// BuildHeureka builds cmd/heureka into dir and returns the binary's path.
// It must run inside the module.
func BuildHeureka(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "heureka")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/heureka/heureka/cmd/heureka")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("bench: go build ./cmd/heureka: %v\n%s", err, out)
	}
	return bin, nil
}

// StartHeurekaProcess runs bin (a heureka binary) as a lone node on free
// loopback ports with its defaults, logging into logDir.
func StartHeurekaProcess(bin, logDir string) (*Process, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	gossip, err := freePort()
	if err != nil {
		return nil, err
	}
	return startProcess("heureka", logDir, port, 30*time.Second, bin, "serve",
		"--node-name", "bench",
		"--http-addr", "127.0.0.1:"+strconv.Itoa(port),
		"--gossip-addr", "127.0.0.1:"+strconv.Itoa(gossip),
		"--log-level", "warn")
}

// ReferenceJar is where `make javadeps` builds the reference Eureka server
// (Spring Cloud Netflix Eureka Server), relative to the module root.
const ReferenceJar = "clients/java/reference/target/reference-server.jar"

// StartReference runs the reference Eureka server jar on a free loopback
// port with its defaults; with cache false its read-only response cache is
// turned off (--eureka.server.use-read-only-response-cache=false).
func StartReference(jar, logDir string, cache bool) (*Process, error) {
	if _, err := os.Stat(jar); err != nil {
		return nil, fmt.Errorf("bench: reference server: %w (make javadeps builds it)", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, errors.New("bench: reference server: no java on PATH")
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	label, args := "reference-cache-on", []string{"-jar", jar, "--server.port=" + strconv.Itoa(port)}
	if !cache {
		label = "reference-cache-off"
		args = append(args, "--eureka.server.use-read-only-response-cache=false")
	}
	return startProcess(label, logDir, port, 90*time.Second, java, args...)
}
