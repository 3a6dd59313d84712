// Package reference_test is the differential test of Heureka against the
// reference Eureka server: Spring Cloud Netflix Eureka Server, built by
// `make javadeps` as clients/java/reference/target/reference-server.jar.
//
// The test starts the reference server once for the package (a JVM takes
// seconds) and a Heureka node in-process, sends both the same sequence of
// requests (cases_test.go) and compares the answers (compare_test.go):
// status codes exactly, media types, Content-Encoding, and bodies parsed
// into generic JSON or XML trees. It ignores the timestamps the servers
// generate, the delta's version counter, and the order of applications and
// of instances, which Eureka does not define.
//
// Every difference Heureka makes on purpose is a row of the table in
// README.md's section "Eureka compatibility, and where Heureka differs on
// purpose", keyed by the id in its first column. differences_test.go says,
// per id, how the difference shows in an answer. A difference no row
// explains fails the test with the request, both answers and the diff; a
// row whose difference the run no longer sees fails it too; rows this test
// cannot observe (timing, clustering) are logged.
//
// Without java or the jar the test fails and says to run `make javadeps`.
package reference_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/internal/freeport"
	"github.com/heureka/heureka/node"
)

// jarPath is the reference server, relative to this package.
var jarPath = filepath.Join("..", "java", "reference", "target", "reference-server.jar")

// referenceArgs are the Spring properties the reference server runs with.
var referenceArgs = []string{
	// Loopback only, like the Heureka node.
	"--server.address=127.0.0.1",
	// Eureka's read-only response cache serves reads up to 30 s old; the
	// read-write cache behind it is invalidated by every write. Heureka
	// reads are never stale (README row read-cache); without this the
	// reference would answer a read after a write with the state before it.
	"--eureka.server.use-read-only-response-cache=false",
	// The lone server expects renewals from 1 client it never hears from;
	// off, its lease expiry is on like the Heureka node's (neither evicts
	// in this test's short run: leases last 300 s).
	"--eureka.server.enable-self-preservation=false",
	// Nothing from the server's own logs is needed unless it fails to
	// start (then the log tail is reported).
	"--logging.level.root=WARN",
}

// cachingArgs run a second reference server with Eureka's read-only cache
// on, as it ships: TestReadCacheLag checks README row read-cache on it.
var cachingArgs = []string{
	"--server.address=127.0.0.1",
	"--eureka.server.enable-self-preservation=false",
	"--logging.level.root=WARN",
}

// trace logs every exchange (HEUREKA_DIFF_TRACE=1), to see what led to a
// difference.
var trace = os.Getenv("HEUREKA_DIFF_TRACE") == "1"

// startTimeout bounds the reference server's start (~10 s on the 2-CPU
// machine; the JVM is slower under -race builds running beside it).
const startTimeout = 90 * time.Second

// referenceServer is the running reference Eureka server.
type referenceServer struct {
	cmd  *exec.Cmd
	url  string // http://127.0.0.1:port/eureka
	log  *syncBuffer
	done chan struct{} // closed when the process exits
}

var (
	refOnce            sync.Once
	ref, cachingRef    *referenceServer
	refErr, cachingErr error
)

// TestMain stops the reference servers after the tests.
func TestMain(m *testing.M) {
	code := m.Run()
	for _, r := range []*referenceServer{ref, cachingRef} {
		if r != nil {
			r.stop()
		}
	}
	os.Exit(code)
}

// startReferences starts both reference servers side by side (each JVM
// takes seconds to start).
func startReferences() {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		ref, refErr = startReference(referenceArgs)
	}()
	go func() {
		defer wg.Done()
		cachingRef, cachingErr = startReference(cachingArgs)
	}()
	wg.Wait()
}

// reference returns the shared reference server, starting it on first use;
// the test fails if it cannot start.
func reference(t *testing.T) *referenceServer {
	t.Helper()
	refOnce.Do(startReferences)
	require.NoError(t, refErr, "the reference Eureka server did not start (run `make javadeps` to build it)")
	return ref
}

// cachingReference returns the reference server with the read-only cache
// on (cachingArgs).
func cachingReference(t *testing.T) *referenceServer {
	t.Helper()
	refOnce.Do(startReferences)
	require.NoError(t, cachingErr, "the reference Eureka server did not start (run `make javadeps` to build it)")
	return cachingRef
}

// startReference starts the reference server jar with the given Spring
// properties and waits until GET /eureka/apps answers 200.
func startReference(springArgs []string) (*referenceServer, error) {
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("no java on PATH (a JDK 17 or later is needed; `make javadeps` builds the jar): %w", err)
	}
	if _, err := os.Stat(jarPath); err != nil {
		return nil, fmt.Errorf("reference server jar missing: %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"-XX:TieredStopAtLevel=1", "-Xshare:auto", "-jar", jarPath,
		fmt.Sprintf("--server.port=%d", port)}, springArgs...)
	cmd := exec.Command(java, args...)
	// The JVM dies with the test binary, even when a panic skips TestMain's
	// stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	log := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", java, err)
	}
	r := &referenceServer{cmd: cmd, url: fmt.Sprintf("http://127.0.0.1:%d/eureka", port), log: log,
		done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(r.done)
	}()
	deadline := time.Now().Add(startTimeout)
	for {
		resp, err := http.Get(r.url + "/apps")
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return r, nil
			}
		}
		select {
		case <-r.done:
			return nil, fmt.Errorf("reference server exited (%v); its log:\n%s", cmd.ProcessState, log.tail())
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			r.stop()
			return nil, fmt.Errorf("reference server did not answer GET /eureka/apps with 200 within %v; its log:\n%s",
				startTimeout, log.tail())
		}
	}
}

// stop ends the JVM: SIGTERM, then SIGKILL after 10 s.
func (r *referenceServer) stop() {
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		_ = r.cmd.Process.Kill()
		<-r.done
	}
}

// freePort returns a loopback port for a server started later, never one
// handed out before in this test binary.
func freePort() (int, error) { return freeport.Port("127.0.0.1", false) }

// syncBuffer collects the JVM's output.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) tail() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return s
}

// startHeureka starts a single node configured like the reference server.
func startHeureka(t *testing.T) *node.Node {
	t.Helper()
	cfg := node.DefaultConfig("differential")
	cfg.HTTPAddr = "127.0.0.1:0"
	cfg.Logger = slog.New(slog.DiscardHandler)
	// As the reference runs: self-preservation off, and Java's doubled
	// lease duration (README row lease-doubling), so that lease figures
	// mean the same on both.
	cfg.Registry.SelfPreservation = false
	cfg.Registry.LeaseDurationDoubling = true
	n, err := node.Start(cfg)
	require.NoError(t, err)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		assert.NoError(t, n.Stop(ctx))
	})
	return n
}

// client sees the raw answers: no transparent gunzip, no redirects.
var client = &http.Client{
	Timeout:       10 * time.Second,
	Transport:     &http.Transport{DisableCompression: true},
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// send sends s to the server whose Eureka base URL is base.
func send(base string, s step) (answer, error) {
	url := base + s.path
	var body io.Reader
	if s.body != "" {
		body = strings.NewReader(s.body)
	}
	req, err := http.NewRequest(s.method, url, body)
	if err != nil {
		return answer{}, err
	}
	for k, v := range s.header {
		req.Header.Set(k, v)
	}
	resp, err := client.Do(req)
	if err != nil {
		return answer{}, err
	}
	return readAnswer(resp)
}

// compare compares the answers to s and explains their differences by the
// known differences whose ids are in rows.
func compare(cmp comparison, s step, refA, heuA answer, rows map[string]bool) (explained []string, unexplained string) {
	d := cmp.diff(refA, heuA)
	if len(d) == 0 {
		return nil, ""
	}
	for _, k := range knownDiffs {
		if !rows[k.id] || (k.onlyExpected && !slices.Contains(s.expect, k.id)) {
			continue
		}
		if k.explain(s, &refA, &heuA) {
			explained = append(explained, k.id)
		}
	}
	rest := cmp.diff(refA, heuA)
	if len(rest) == 0 {
		return explained, ""
	}
	return explained, fmt.Sprintf("%s %s (%s): an undocumented difference\n  request headers %v, body %s\n"+
		"  reference: %d %s %s\n  heureka:   %d %s %s\n  diff (after rows %v):\n    %s",
		s.method, s.path, s.kind, s.header, clip(s.body),
		refA.Status, refA.Media, clip(string(refA.Body)), heuA.Status, heuA.Media, clip(string(heuA.Body)),
		explained, strings.Join(rest, "\n    "))
}

// clip shortens a body for a message.
func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "…"
	}
	if s == "" {
		return "(empty)"
	}
	return s
}

// TestDifferential sends the catalogue to both servers and compares.
func TestDifferential(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	rows, err := tableIDs(string(readme))
	require.NoError(t, err)
	rowSet := map[string]bool{}
	for _, id := range rows {
		rowSet[id] = true
	}
	for _, id := range unlistedDiffs(rows) {
		t.Errorf("differences_test.go explains %q, which is no row of README.md's table", id)
	}
	if t.Failed() {
		return
	}

	r := reference(t)
	n := startHeureka(t)
	// Requests the reference rejects and Heureka accepts on purpose go to
	// a scratch node, so that the two registries compared stay the same.
	scratch := startHeureka(t)
	start := time.Now()
	cmp := comparison{since: start.Add(-time.Minute), until: start.Add(24 * time.Hour)}

	kinds := map[string]bool{}
	seen := map[string]int{}
	var unexplained []string
	requests := 0
	previous := map[string]answer{} // the reference's last answer per request
	run := func(s step) {
		kinds[s.kind] = true
		requests++
		refA, err := send(r.url, s)
		require.NoError(t, err, "reference: %s %s", s.method, s.path)
		heuURL := n.URL()
		if s.scratch {
			heuURL = scratch.URL()
		}
		heuA, err := send(heuURL, s)
		require.NoError(t, err, "heureka: %s %s", s.method, s.path)
		if trace {
			t.Logf("%s %s (%s): reference %d %s, heureka %d %s", s.method, s.path, s.kind,
				refA.Status, clip(string(refA.Body)), heuA.Status, clip(string(heuA.Body)))
		}
		key := fmt.Sprint(s.method, s.path, s.header, s.body)
		if p, ok := previous[key]; ok {
			s.refBefore = &p
		}
		previous[key] = refA
		c := cmp
		c.ignoreVersionDelta = strings.Contains(s.path, "/apps/delta")
		explained, msg := compare(c, s, refA, heuA, rowSet)
		for _, id := range explained {
			seen[id]++
		}
		if s.scratch && len(explained) == 0 {
			msg += fmt.Sprintf("%s %s (%s): sent to a scratch node, but no README row explains a difference\n", s.method, s.path, s.kind)
		}
		if msg != "" {
			unexplained = append(unexplained, msg)
		}
	}
	for _, s := range catalogue() {
		run(s)
		if s.method != http.MethodGet && s.method != http.MethodHead && !s.scratch && !s.noAfter {
			for _, after := range afterWrite() {
				run(after)
			}
		}
	}

	t.Logf("%d requests of %d distinct kinds sent to both servers", requests, len(kinds))
	assert.GreaterOrEqual(t, len(kinds), 60, "too few request kinds")
	for _, msg := range unexplained {
		t.Error(msg)
	}
	errs, notes := auditRows(rows, seen)
	for _, n := range notes {
		t.Log(n)
	}
	for _, e := range errs {
		t.Error(e)
	}
}

// unlistedDiffs returns the ids of the known differences that are no row
// of the README table.
func unlistedDiffs(rows []string) []string {
	var out []string
	for _, k := range knownDiffs {
		if !slices.Contains(rows, k.id) {
			out = append(out, k.id)
		}
	}
	return out
}

// auditRows checks the README rows against what a run saw: a row whose
// difference this test knows how to see but did not see is an error (the
// row may no longer be true); a row it cannot observe is a note.
func auditRows(rows []string, seen map[string]int) (errs, notes []string) {
	for _, id := range rows {
		switch {
		case observedBy[id] != "":
			notes = append(notes, fmt.Sprintf("README row %q: checked by %s", id, observedBy[id]))
		case knownDiffByID(id) == nil:
			notes = append(notes, fmt.Sprintf("README row %q: not observable in this test (timing, clustering or "+
				"input the reference takes differently); no explanation in differences_test.go", id))
		case seen[id] == 0:
			errs = append(errs, fmt.Sprintf("README row %q: the difference it documents was not observed; "+
				"is the row still true?", id))
		default:
			notes = append(notes, fmt.Sprintf("README row %q: observed in %d answers", id, seen[id]))
		}
	}
	return errs, notes
}

// tableIDs returns the ids (first column) of the rows of the table in
// README.md's compatibility section.
func tableIDs(readme string) ([]string, error) {
	const heading = "## Eureka compatibility, and where Heureka differs on purpose"
	i := strings.Index(readme, heading)
	if i < 0 {
		return nil, errors.New("README.md has no section " + heading)
	}
	sc := bufio.NewScanner(strings.NewReader(readme[i+len(heading):]))
	idCell := regexp.MustCompile("^`([a-z0-9-]+)`$")
	var ids []string
	inTable := false
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "## ") {
			break
		}
		if !strings.HasPrefix(line, "|") {
			if inTable {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		first := strings.TrimSpace(cells[0])
		if !inTable { // the header row
			inTable = true
			if first != "id" {
				return nil, fmt.Errorf("the compatibility table's first column is %q, want id", first)
			}
			continue
		}
		if strings.Trim(first, "-: ") == "" { // the separator row
			continue
		}
		m := idCell.FindStringSubmatch(first)
		if m == nil {
			return nil, fmt.Errorf("compatibility table row %q: the first cell must be an id like `some-id`", line)
		}
		if slices.Contains(ids, m[1]) {
			return nil, fmt.Errorf("compatibility table: id %q twice", m[1])
		}
		ids = append(ids, m[1])
	}
	if len(ids) == 0 {
		return nil, errors.New("README.md's compatibility section has no table rows")
	}
	return ids, nil
}
