package javaharness

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Maven returns the mvn executable, failing the test if Maven is not on
// PATH or if need (a path in the local Maven repository: $HOME/.m2/repository
// or $HEUREKA_MAVEN_REPO) is missing, which make javadeps fills; what names
// need in that message.
func Maven(t *testing.T, what string, need ...string) string {
	t.Helper()
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		t.Fatalf("mvn (Maven 3.8+, with a JDK 17+) is not on PATH: %v", err)
	}
	home, _ := os.UserHomeDir()
	repo := filepath.Join(home, ".m2", "repository")
	if v := os.Getenv("HEUREKA_MAVEN_REPO"); v != "" {
		repo = v
	}
	if _, err := os.Stat(filepath.Join(append([]string{repo}, need...)...)); err != nil {
		t.Fatalf("%s not in %s (%v): run `make javadeps` before the tests", what, repo, err)
	}
	return mvn
}

// RunMaven runs mvn offline in dir (-o -B -ntp, then args) with env added,
// within limit, streams Maven's output to the test log, and fails the test
// if Maven fails.
func RunMaven(t *testing.T, mvn, dir string, limit time.Duration, args []string, env ...string) {
	t.Helper()
	dir, err := filepath.Abs(dir)
	require.NoError(t, err)
	run := "mvn " + strings.Join(args, " ") + " in " + dir
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	args = append([]string{"-o", "-B", "-ntp"}, args...)
	if v := os.Getenv("HEUREKA_MAVEN_REPO"); v != "" {
		args = append(args, "-Dmaven.repo.local="+v)
	}
	cmd := exec.CommandContext(ctx, mvn, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 10 * time.Second
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	logged := make(chan struct{})
	var offlineMiss bool
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64*1024), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.Contains(line, "offline mode") {
				offlineMiss = true
			}
			t.Log(line)
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	t.Logf("running %s %s in %s", mvn, strings.Join(args, " "), dir)
	start := time.Now()
	err = cmd.Run()
	pw.Close()
	<-logged
	t.Logf("%s took %s", run, time.Since(start).Round(100*time.Millisecond))
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish within %s: %v", run, limit, err)
	}
	if offlineMiss {
		t.Fatalf("Maven misses a dependency offline: run `make javadeps` (its output is above)")
	}
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		t.Fatalf("%s failed (exit code %d); its output is above", run, exitErr.ExitCode())
	}
	require.NoError(t, err, "running %s", run)
}
