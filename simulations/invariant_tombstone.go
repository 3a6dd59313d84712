package simulations

// Property 3, what it costs: tombstones are collected after the TTL
// (tombstone-ttl).

import (
	"fmt"
	"sort"
	"time"
)

// CheckTombstoneTTL checks the mechanism of property 3 that bounds its
// cost: tombstones are collected once their deletion is TombstoneTTL old,
// by the deletion's HLC time, on every node alike. In the census the
// prober takes once a second (the tombstones a node's registry would send
// a peer), no tombstone may be older than the TTL plus
// Thresholds.TombstoneSlack. A node that ages tombstones by their local
// receipt keeps those it learned late (at a heal, an initial sync) for
// longer, and nodes re-seed each other with tombstones the others have
// already collected, so some never go.
func CheckTombstoneTTL(o *Observations, th Thresholds) Verdict {
	ttl := o.Timers.TombstoneTTL
	bound := ttl + th.TombstoneSlack
	v := Verdict{Invariant: InvTombstoneGC, Property: 3,
		Threshold: fmt.Sprintf("no node serves a tombstone older than the TTL %s + %s by its deletion's HLC time", secs(ttl), secs(th.TombstoneSlack)),
		Key:       noKey("oldest tombstone", "s")}
	if ttl <= 0 {
		v.Measured = "no tombstone TTL in these observations"
		return v
	}
	censuses, readings := 0, 0
	var oldest time.Duration
	type over struct {
		node, id string
		at       time.Time
		age      time.Duration
	}
	worst := map[string]over{} // by node+id: the oldest reading
	for i := range o.Probes {
		p := &o.Probes[i]
		if p.Tombstones == nil {
			continue
		}
		censuses++
		for n, c := range p.Tombstones {
			readings += c.Count
			oldest = max(oldest, c.Oldest)
			if c.Oldest > bound {
				k := n + " " + c.OldestID
				if w, ok := worst[k]; !ok || c.Oldest > w.age {
					worst[k] = over{node: n, id: c.OldestID, at: p.At, age: c.Oldest}
				}
			}
		}
	}
	if censuses == 0 {
		v.Measured = "no tombstone census was taken"
		return v
	}
	v.Pass = len(worst) == 0
	v.Key = keySecs("oldest tombstone", oldest)
	v.Measured = fmt.Sprintf("oldest tombstone served %s old (TTL %s), %d (node, tombstone) over the bound, in %d censuses (%d tombstone readings)",
		secs(oldest), secs(ttl), len(worst), censuses, readings)
	var ws []over
	for _, w := range worst {
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].age > ws[j].age })
	for i, w := range ws {
		if i == maxDetails {
			break
		}
		v.Details = append(v.Details, fmt.Sprintf("%s still served %s's tombstone at %s, %s after the deletion", w.node, w.id, o.offset(w.at), secs(w.age)))
	}
	return v
}
