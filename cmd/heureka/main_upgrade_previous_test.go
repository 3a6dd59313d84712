//go:build upgrade

package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/heureka/heureka/wire"
)

// protocolConst matches the declaration of wire.ProtocolVersion in any
// version of the wire package.
var protocolConst = regexp.MustCompile(`(?m)^const ProtocolVersion(?: uint8)? *= *([0-9]+)`)

// repoRoot is the top of the repository that holds this test ("" until
// previousCommit finds it).
var repoRoot string

// git runs git at the top of the repository that holds this test.
func git(args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, bytes.TrimSpace(stderr))
	}
	return strings.TrimSpace(string(out)), nil
}

// protocolAt returns wire.ProtocolVersion as declared at commit c.
func protocolAt(c string) (int, error) {
	out, err := git("grep", "-h", "-E", "^const ProtocolVersion", c, "--", "wire/")
	if err != nil {
		return 0, err
	}
	m := protocolConst.FindStringSubmatch(out)
	if m == nil {
		return 0, fmt.Errorf("no ProtocolVersion in wire/ at %s", c)
	}
	return strconv.Atoi(m[1])
}

// previousCommit returns the newest commit of HEAD's history whose wire
// protocol is wire.MinProtocolVersion: the parent of the oldest commit of
// the unbroken run, from HEAD back, that declares a newer one.
func previousCommit() (string, error) {
	top, err := git("rev-parse", "--show-toplevel")
	if err != nil {
		return "", fmt.Errorf("%w (the upgrade test needs the repository's history: a clone, not an archive)", err)
	}
	repoRoot = top
	out, err := git("rev-list", "HEAD", "--", "wire/")
	if err != nil {
		return "", fmt.Errorf("%w (the upgrade test needs the repository's history: a clone, not an archive)", err)
	}
	want := int(wire.MinProtocolVersion)
	var newer string // oldest commit so far that declares a newer protocol
	for _, c := range strings.Fields(out) {
		v, err := protocolAt(c)
		if err != nil {
			return "", err
		}
		if v > want {
			newer = c
			continue
		}
		if newer == "" {
			return "", fmt.Errorf("HEAD declares protocol %d, not above MinProtocolVersion %d", v, want)
		}
		prev, err := git("rev-parse", newer+"^")
		if err != nil {
			return "", err
		}
		if pv, err := protocolAt(prev); err != nil || pv != want {
			return "", fmt.Errorf("%s^ declares protocol %d, want %d (%v)", newer, pv, want, err)
		}
		return prev, nil
	}
	return "", fmt.Errorf("no commit in the history declares protocol %d", want)
}

// buildPrevious builds the previous release's heureka binary into dir.
func buildPrevious(dir string) (string, error) {
	c, err := previousCommit()
	if err != nil {
		return "", err
	}
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		return "", err
	}
	archive := exec.Command("git", "archive", c)
	archive.Dir = repoRoot
	untar := exec.Command("tar", "-x", "-C", src)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		return "", err
	}
	untar.Stdin = pipe
	if err := untar.Start(); err != nil {
		return "", err
	}
	if err := archive.Run(); err != nil {
		return "", fmt.Errorf("git archive %s: %w", c, err)
	}
	if err := untar.Wait(); err != nil {
		return "", fmt.Errorf("untar %s: %w", c, err)
	}
	bin := filepath.Join(dir, "heureka-"+c[:12])
	build := exec.Command("go", "build", "-o", bin, "./cmd/heureka")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build at %s: %w: %s", c, err, out)
	}
	previousRelease.early404 = !hasSwitch(src, "renew-not-found-before-ready")
	return bin, nil
}

// hasSwitch reports whether the sources in src declare the sabotage switch
// name: each switch puts back a bug its release fixed, so a release without
// it still has that bug.
func hasSwitch(src, name string) bool {
	b, err := os.ReadFile(filepath.Join(src, "internal", "sabotage", "sabotage.go"))
	return err == nil && bytes.Contains(b, []byte(`"`+name+`"`))
}
