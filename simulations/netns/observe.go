package netns

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/heureka/heureka/simulations"
)

// What the harness records, through the simulations package's own
// recorder (simulations.Recorder) and in its own types, so that its
// checkers (simulations.CheckNoMissingRenewer, CheckConvergence,
// CheckNoResurrection, CheckMembership) judge these runs exactly as they
// judge the in-process ones. Everything comes over HTTP from the client
// namespace:
//
//   - Samples: one GET /eureka/apps per node per round, split into one
//     Sample per application the clients use (an application missing from
//     the document is an empty sample). A 403 (initial sync not done) is a
//     sample of a node that is not ready.
//   - Probes: per round, every running node's readiness, fingerprint (from
//     the same document) and live members (GET /cluster/members: alive or
//     suspect, as LiveMembers counts them).
//
// The fingerprint is the apps hashcode and, per instance,
// "|APP/ID@lastUpdatedTimestamp-lastDirtyTimestamp-STATUS". The HTTP API
// does not show the records' HLC versions (the in-process fingerprint has
// "@clock.node"), so the checks that read versions out of the fingerprint
// (no-resurrection's re-publication check, renewer-kept) find none and
// stay silent; the fingerprint has no '.', so they cannot misread it.

// Registry is one node's GET /eureka/apps, reduced to what the checkers use.
type Registry struct {
	// Fingerprint is the registry as the convergence check compares it.
	Fingerprint string
	// IDs are the instance ids per application.
	IDs map[string]map[string]bool
}

type instanceDoc struct {
	InstanceID string          `json:"instanceId"`
	Status     string          `json:"status"`
	Updated    json.RawMessage `json:"lastUpdatedTimestamp"`
	Dirty      json.RawMessage `json:"lastDirtyTimestamp"`
}

type appDoc struct {
	Name     string          `json:"name"`
	Instance json.RawMessage `json:"instance"`
}

// oneOrMany decodes a JSON value that is an object or an array of them
// (Eureka's JSON writes a lone element either way, depending on the codec).
func oneOrMany[T any](raw json.RawMessage) ([]T, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] == '[' {
		var out []T
		return out, json.Unmarshal(raw, &out)
	}
	var one T
	if err := json.Unmarshal(raw, &one); err != nil {
		return nil, err
	}
	return []T{one}, nil
}

// ParseApps reads a GET /eureka/apps JSON document.
func ParseApps(body []byte) (*Registry, error) {
	var doc struct {
		Applications struct {
			Hashcode    string          `json:"apps__hashcode"`
			Application json.RawMessage `json:"application"`
		} `json:"applications"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, fmt.Errorf("apps document: %w", err)
	}
	apps, err := oneOrMany[appDoc](doc.Applications.Application)
	if err != nil {
		return nil, fmt.Errorf("apps document: %w", err)
	}
	reg := &Registry{IDs: map[string]map[string]bool{}}
	var entries []string
	for _, a := range apps {
		ins, err := oneOrMany[instanceDoc](a.Instance)
		if err != nil {
			return nil, fmt.Errorf("apps document, %s: %w", a.Name, err)
		}
		ids := reg.IDs[a.Name]
		if ids == nil {
			ids = map[string]bool{}
			reg.IDs[a.Name] = ids
		}
		for _, in := range ins {
			ids[in.InstanceID] = true
			entries = append(entries, fmt.Sprintf("|%s/%s@%s-%s-%s", a.Name, in.InstanceID,
				scalar(in.Updated), scalar(in.Dirty), in.Status))
		}
	}
	sort.Strings(entries)
	reg.Fingerprint = doc.Applications.Hashcode + strings.Join(entries, "")
	return reg, nil
}

// scalar renders a JSON string or number without quotes (and without '.').
func scalar(raw json.RawMessage) string {
	s := strings.Trim(string(bytes.TrimSpace(raw)), `"`)
	return strings.ReplaceAll(s, ".", "_")
}

// ParseMembers reads GET /cluster/members and returns the live members'
// names (alive or suspect), sorted.
func ParseMembers(body []byte) ([]string, error) {
	var rows []struct {
		Name  string `json:"name"`
		State string `json:"state"`
	}
	if err := json.Unmarshal(body, &rows); err != nil {
		return nil, fmt.Errorf("members document: %w", err)
	}
	var live []string
	for _, r := range rows {
		if r.State == "alive" || r.State == "suspect" {
			live = append(live, r.Name)
		}
	}
	sort.Strings(live)
	return live, nil
}

// Reading is what one node answered in one round.
type Reading struct {
	Node        string
	Incarnation int
	// At is when the apps request was sent.
	At time.Time
	// Status is the apps request's HTTP status; 0 without an answer (or
	// when the node was not asked: paused, link down).
	Status int
	// Registry is the parsed apps document (Status 200).
	Registry *Registry
	// Live are the live members (nil without an answer).
	Live []string
}

// roundOf turns one round of readings into Samples (one per node and
// application) and a Probe. up lists the running nodes (sorted): a node
// not running has no reading; one running but not answered is in the
// probe, not ready.
func roundOf(at time.Time, up []string, apps []string, topo *simulations.Topology, rs []Reading) ([]simulations.Sample, simulations.Probe) {
	p := simulations.Probe{At: at, Up: slices.Clone(up), Topo: topo,
		Ready: map[string]bool{}, Fingerprint: map[string]string{}, Live: map[string][]string{}}
	var samples []simulations.Sample
	for _, rd := range rs {
		if !slices.Contains(up, rd.Node) {
			continue
		}
		ready := rd.Status == 200 && rd.Registry != nil
		p.Ready[rd.Node] = ready
		if ready {
			p.Fingerprint[rd.Node] = rd.Registry.Fingerprint
		}
		if rd.Live != nil {
			p.Live[rd.Node] = rd.Live
		}
		if rd.Status == 0 {
			continue // not asked, or no answer: a gap in the samples
		}
		for _, app := range apps {
			s := simulations.Sample{At: rd.At, Node: rd.Node, App: app, Incarnation: rd.Incarnation, Ready: ready, Topo: topo}
			if ready {
				s.IDs = maps.Clone(rd.Registry.IDs[app])
				if s.IDs == nil {
					s.IDs = map[string]bool{}
				}
			}
			samples = append(samples, s)
		}
	}
	return samples, p
}
