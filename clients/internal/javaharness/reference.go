package javaharness

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ReferenceStartLimit bounds the reference server's start on a loaded
// 2-CPU machine.
const ReferenceStartLimit = 3 * time.Minute

// Reference is one running reference Eureka server: Spring Cloud Netflix's
// Eureka server, as make javadeps builds it in clients/java/reference.
type Reference struct {
	// URL is its Eureka URL without the trailing slash:
	// http://127.0.0.1:port/eureka.
	URL string

	t    *testing.T
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	once sync.Once
}

// ReferenceJar is the reference server's jar, from the directory of a test
// package beside clients/java (clients/<name>).
func ReferenceJar() (string, error) {
	jar, err := filepath.Abs("../java/reference/target/reference-server.jar")
	if err != nil {
		return "", err
	}
	if _, err := exec.LookPath("java"); err != nil {
		return "", fmt.Errorf("java is not installed: the reference server needs a JDK 17+ (and make javadeps): %v", err)
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("the reference Eureka server is missing: run make javadeps to build %s (%v)", jar, err)
	}
	return jar, nil
}

// StartReference starts the reference server on loopback at port (from
// freeport, or reserved by the caller) with its self-preservation and its
// read-only response cache off and its read-write cache's entries expiring
// after 2 s (its reads follow its writes, as Heureka's do, within 2 s at
// worst) and no wait for an empty startup sync, then with the Spring Boot
// arguments args, and returns it once GET apps answers 200, within
// ReferenceStartLimit. It is stopped when the test ends, and the end of its
// log shown if the test failed. It reports failures as errors, so it may
// run on a goroutine of its own.
func StartReference(t *testing.T, port int, args ...string) (*Reference, error) {
	jar, err := ReferenceJar()
	if err != nil {
		return nil, err
	}
	logPath := filepath.Join(t.TempDir(), "eureka.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("java", append([]string{
		// Start fast on a small machine: C1 only, one GC thread.
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
		"-jar", jar,
		fmt.Sprintf("--server.port=%d", port),
		"--server.address=127.0.0.1",
		"--eureka.server.enable-self-preservation=false",
		"--eureka.server.use-read-only-response-cache=false",
		// The read-write cache (Guava) keeps a read that was being built
		// when a write invalidated it, until the entry expires (180 s by
		// default): a client polling while another registers can be
		// served the registry before that write for minutes. Two seconds
		// bound it.
		"--eureka.server.response-cache-auto-expiration-in-seconds=2",
		"--eureka.server.wait-time-in-ms-when-sync-empty=0",
	}, args...)...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		return nil, fmt.Errorf("starting the reference Eureka server: %w", err)
	}
	r := &Reference{URL: fmt.Sprintf("http://127.0.0.1:%d/eureka", port), t: t, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(r.done)
	}()
	t.Cleanup(func() {
		r.Stop()
		if t.Failed() {
			r.DumpLog()
		}
	})
	client := &http.Client{Timeout: 5 * time.Second}
	start := time.Now()
	for {
		select {
		case <-r.done:
			r.DumpLog()
			return nil, fmt.Errorf("the reference Eureka server exited during startup")
		default:
		}
		if resp, err := client.Get(r.URL + "/apps"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Logf("reference Eureka server up at %s after %s", r.URL, time.Since(start).Round(100*time.Millisecond))
				return r, nil
			}
		}
		if time.Since(start) > ReferenceStartLimit {
			r.DumpLog()
			return nil, fmt.Errorf("the reference Eureka server did not serve within %s", ReferenceStartLimit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// Stop ends the server (SIGTERM, then SIGKILL after 10 s) and waits for it.
func (r *Reference) Stop() {
	r.once.Do(func() {
		_ = r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			_ = r.cmd.Process.Kill()
			<-r.done
		}
	})
}

// DumpLog logs the last 60 lines of the server's log, stack frames left out.
func (r *Reference) DumpLog() {
	b, _ := os.ReadFile(r.log)
	var keep []string
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "at ") {
			keep = append(keep, l)
		}
	}
	if len(keep) > 60 {
		keep = keep[len(keep)-60:]
	}
	r.t.Logf("reference server log (%s), last lines:\n%s", r.log, strings.Join(keep, "\n"))
}
