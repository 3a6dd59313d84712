package httpapi

// A repair by digest
//
// POST …/stream is the change stream of a watcher that holds a copy
// already (a federated region's follower, after a break its Last-Event-ID
// cannot resume, or after its copy diverged): the body is the digest of
// its copy (package appdigest: one line per application, its name and a
// hash of its instances' ids, statuses and timestamps; Content-Encoding:
// gzip allowed), and every other parameter and header is GET's. When the
// Last-Event-ID resumes, the digest is not used. Otherwise the first
// event is a repair instead of a snapshot:
//
//	id: 5f1c…-41
//	event: repair
//	data: {"removed":["OLDAPP"],"applications":{"versions__delta":"1","apps__hashcode":"UP_3_",…}}
//
// that is, the /apps document of the published snapshot restricted to the
// applications whose digest differs from the watcher's (each in full, as
// the filter shows it), with the full registry's apps__hashcode, and under
// "removed" the names of the applications the watcher holds that the
// snapshot has none of. The watcher replaces each of those applications
// with what the repair carries, removes the named ones, and then holds
// exactly the snapshot; the events after it follow as after a snapshot. So
// a repair costs what differs, not the registry. A server of the release
// before answers POST with 405 (or 403 under basic auth, as a write), and
// the watcher falls back to GET.

import (
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/internal/appdigest"
)

// maxDigestBytes bounds a repair digest's body, inflated.
const maxDigestBytes = 32 << 20

// isStreamPath reports whether path is the change stream's under one of
// BasePaths.
func isStreamPath(path string) bool {
	for _, b := range BasePaths {
		if path == b+"/stream" {
			return true
		}
	}
	return false
}

// readDigest reads a POST …/stream's digest.
func readDigest(r *http.Request) (appdigest.Digest, error) {
	var body io.Reader = r.Body
	switch ce := strings.ToLower(strings.TrimSpace(r.Header.Get("Content-Encoding"))); ce {
	case "", "identity":
	case "gzip":
		zr, err := gzip.NewReader(io.LimitReader(r.Body, maxDigestBytes))
		if err != nil {
			return nil, badRequest("digest: " + err.Error())
		}
		defer zr.Close()
		body = zr
	default:
		return nil, &httpError{code: http.StatusUnsupportedMediaType, msg: fmt.Sprintf("digest: Content-Encoding %q: want gzip or none", ce)}
	}
	lr := &io.LimitedReader{R: body, N: maxDigestBytes + 1}
	d, err := appdigest.Decode(lr)
	if err != nil {
		return nil, badRequest(err.Error())
	}
	if lr.N <= 0 {
		return nil, badRequest(fmt.Sprintf("digest: more than %d bytes", maxDigestBytes))
	}
	return d, nil
}

// repairFrame builds the repair event of base for a watcher with filter f
// whose copy has digest d: the applications that differ, in full, and
// those it holds that base has none of.
func repairFrame(base *snapshotFrames, f *filter, enc view.Encoder, d appdigest.Digest) []byte {
	snap := base.snap
	doc := enc.AppendApplicationsOpen(nil, view.FullVersionDelta, snap.HashCode())
	first := true
	seen := make(map[string]bool, len(d))
	var insts []*actors.Instance
	snap.Apps(func(a *view.App) bool {
		insts = insts[:0]
		var sum uint64
		for inst := range a.All() {
			if f.shows(a.Name(), inst) {
				insts = append(insts, inst)
				sum += appdigest.Instance(inst)
			}
		}
		if len(insts) == 0 {
			return true
		}
		seen[a.Name()] = true
		if held, ok := d[a.Name()]; ok && held == sum {
			return true
		}
		if !first {
			doc = enc.AppendApplicationsSeparator(doc)
		}
		first = false
		doc = enc.AppendApplication(doc, a.Name(), insts)
		return true
	})
	doc = enc.AppendApplicationsClose(doc)
	var removed []string
	for name := range d {
		if !seen[name] {
			removed = append(removed, name)
		}
	}
	var data []byte
	if len(removed) > 0 {
		slices.Sort(removed)
		names, _ := json.Marshal(removed)
		data = append(append(append([]byte(`{"removed":`), names...), ','), doc[1:]...)
	} else {
		data = doc
	}
	return appendFrame(nil, "repair", base.id, data)
}
