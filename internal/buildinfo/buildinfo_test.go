package buildinfo

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/heureka/heureka/wire"
)

func TestInfoString(t *testing.T) {
	i := Info{Release: "1.2.0", Commit: "0123456789abcdef0123", Modified: true, MinProtocol: 2, MaxProtocol: 3}
	assert.Equal(t, "1.2.0 (commit 0123456789ab+dirty, wire protocol 2-3)", i.String())
	i = Info{Release: "1.2.0", Commit: "unknown", MinProtocol: 3, MaxProtocol: 3}
	assert.Equal(t, "1.2.0 (commit unknown, wire protocol 3)", i.String())
}

func TestGetSpeaksTheWireRange(t *testing.T) {
	i := Get()
	assert.Equal(t, wire.MinProtocolVersion, i.MinProtocol)
	assert.Equal(t, wire.ProtocolVersion, i.MaxProtocol)
	assert.Equal(t, Release, i.Release)
	assert.NotEmpty(t, i.Commit)
}

// A binary built in this clone carries the clone's commit, from the
// toolchain's VCS stamp or from the link-time Commit, and the release given
// at link time.
func TestBuiltBinaryCarriesCommitAndRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a binary")
	}
	out, err := exec.Command("git", "rev-parse", "HEAD").Output()
	require.NoError(t, err, "the test runs in a clone")
	head := strings.TrimSpace(string(out))
	// The main package sits inside the module, so that the VCS stamp applies.
	pkg := "testmain"
	require.NoError(t, os.MkdirAll(pkg, 0o755))
	t.Cleanup(func() { _ = os.RemoveAll(pkg) })
	require.NoError(t, os.WriteFile(filepath.Join(pkg, "main.go"), []byte(`package main

import (
	"fmt"

	"github.com/heureka/heureka/internal/buildinfo"
)

func main() { fmt.Print(buildinfo.Get().String()) }
`), 0o644))
	goTool := filepath.Join(runtime.GOROOT(), "bin", "go")
	run := func(flags ...string) string {
		bin := filepath.Join(t.TempDir(), "bi")
		args := append([]string{"build"}, flags...)
		out, err := exec.Command(goTool, append(args, "-o", bin, "./"+pkg)...).CombinedOutput()
		require.NoError(t, err, "%s", out)
		got, err := exec.Command(bin).Output()
		require.NoError(t, err)
		return string(got)
	}
	const pkgPath = "github.com/heureka/heureka/internal/buildinfo"
	got := run("-buildvcs=true", "-ldflags", "-X "+pkgPath+".Release=9.9.9")
	assert.True(t, strings.HasPrefix(got, "9.9.9 (commit "+head[:12]), "stamped by the toolchain: got %q", got)
	got = run("-buildvcs=false", "-ldflags", "-X "+pkgPath+".Release=9.9.9 -X "+pkgPath+".Commit="+head)
	assert.Equal(t, "9.9.9 (commit "+head[:12]+", wire protocol "+Get().Protocols()+")", got, "set at link time")
	got = run("-buildvcs=false")
	assert.Equal(t, Release+" (commit unknown, wire protocol "+Get().Protocols()+")", got, "neither")
}
