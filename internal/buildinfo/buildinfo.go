// Package buildinfo says which build of Heureka is running: its release
// (set at link time), the commit it was built from (read from the Go
// toolchain's VCS stamp) and the range of wire protocols it speaks, so that
// two builds can be told apart in --version, the startup log,
// /eureka/status and the dashboard.
package buildinfo

import (
	"fmt"
	"runtime/debug"
	"sync"

	"github.com/heureka/heureka/wire"
)

// Release is the release name, set when linking:
//
//	go build -ldflags "-X github.com/heureka/heureka/internal/buildinfo.Release=1.2.0" ./cmd/heureka
var Release = "0.1.0-dev"

// Commit is the commit the binary was built from, when set at link time
// (make build does: the environment may turn the toolchain's VCS stamp
// off with GOFLAGS=-buildvcs=false); empty, the VCS stamp is read.
var Commit = ""

// Info describes this build.
type Info struct {
	// Release is the release name (Release).
	Release string `json:"release"`
	// Commit is the VCS revision the binary was built from, "unknown"
	// when it was neither set at link time nor stamped by the toolchain.
	Commit string `json:"commit"`
	// Modified is set when the working tree had uncommitted changes.
	Modified bool `json:"modified"`
	// MinProtocol and MaxProtocol are the wire protocols this build
	// speaks (wire.MinProtocolVersion, wire.ProtocolVersion).
	MinProtocol uint8 `json:"minProtocol"`
	MaxProtocol uint8 `json:"maxProtocol"`
}

var (
	once  sync.Once
	vcsID string
	dirty bool
)

// Get returns this build's Info.
func Get() Info {
	once.Do(func() {
		vcsID = "unknown"
		if Commit != "" {
			vcsID = Commit
			return
		}
		bi, ok := debug.ReadBuildInfo()
		if !ok {
			return
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				vcsID = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	})
	return Info{Release: Release, Commit: vcsID, Modified: dirty,
		MinProtocol: wire.MinProtocolVersion, MaxProtocol: wire.ProtocolVersion}
}

// ShortCommit is the commit's first 12 characters, with "+dirty" when the
// tree was modified.
func (i Info) ShortCommit() string {
	c := i.Commit
	if len(c) > 12 {
		c = c[:12]
	}
	if i.Modified {
		c += "+dirty"
	}
	return c
}

// Protocols is the wire protocol range, "2-3" (or "3" for one version).
func (i Info) Protocols() string {
	if i.MinProtocol == i.MaxProtocol {
		return fmt.Sprint(i.MaxProtocol)
	}
	return fmt.Sprintf("%d-%d", i.MinProtocol, i.MaxProtocol)
}

// String is the one line --version prints:
// "0.1.0-dev (commit 0123456789ab, wire protocol 2-3)".
func (i Info) String() string {
	return fmt.Sprintf("%s (commit %s, wire protocol %s)", i.Release, i.ShortCommit(), i.Protocols())
}
