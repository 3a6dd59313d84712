package springstarter_test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// eurekaStartLimit bounds the reference server's start on a loaded machine.
const eurekaStartLimit = 3 * time.Minute

// startEureka starts Spring Cloud Netflix's Eureka server (the reference
// server `make javadeps` builds, clients/java/reference) on a free loopback
// port, its read-only response cache off so that its reads follow its writes
// as Heureka's do, and returns its Eureka URL (…/eureka/) once it serves. It
// has no change stream: GET /eureka/stream answers 404. It may run on a
// goroutine of its own: it reports failures as errors.
func startEureka(t *testing.T) (string, error) {
	jar, err := filepath.Abs("../java/reference/target/reference-server.jar")
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(jar); err != nil {
		return "", fmt.Errorf("the reference Eureka server is missing: run make javadeps to build %s (%v)", jar, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	logPath := filepath.Join(t.TempDir(), "eureka.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return "", err
	}
	cmd := exec.Command("java",
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m",
		"-jar", jar,
		fmt.Sprintf("--server.port=%d", port),
		"--server.address=127.0.0.1",
		"--eureka.server.enable-self-preservation=false",
		"--eureka.server.use-read-only-response-cache=false",
		"--eureka.server.wait-time-in-ms-when-sync-empty=0",
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("starting the reference Eureka server: %w", err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = logFile.Close()
		close(done)
	}()
	dumpLog := func() {
		if b, err := os.ReadFile(logPath); err == nil {
			t.Logf("reference Eureka server log:\n%s", b)
		}
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			dumpLog()
		}
	})
	base := fmt.Sprintf("http://127.0.0.1:%d/eureka/", port)
	start := time.Now()
	for time.Since(start) < eurekaStartLimit {
		select {
		case <-done:
			dumpLog()
			return "", fmt.Errorf("the reference Eureka server exited during startup")
		default:
		}
		if r, err := http.Get(base + "apps"); err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				t.Logf("reference Eureka server up at %s after %s", base, time.Since(start).Round(100*time.Millisecond))
				return base, nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return "", fmt.Errorf("the reference Eureka server did not serve within %s", eurekaStartLimit)
}
