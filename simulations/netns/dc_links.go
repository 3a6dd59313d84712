//go:build linux

package netns

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// WAN links in the datacenter runs: each datacenter follows a remote
// region over the WAN from DCScenario.Links of its nodes only (the
// cluster's choice, --region-wan-links); the others follow one of those
// over the local network (a relay, docs/federation.md). The run checks it
// from both ends, before the changes and again after the WAN cut has
// healed:
//
//   - the remote's end: in the namespace of every node of the remote
//     datacenter, `ss` lists the established TCP connections to its HTTP
//     port; those whose peer is a node of the following datacenter are
//     that datacenter's WAN links (the harness's reads come from the
//     client namespace, gossip stays inside a datacenter), and they must
//     come from exactly Links distinct nodes (a connection that has sent
//     nothing for wanIdle is an idle one in a client's pool, left by a
//     poll before the node's stream or relay was up: counted apart, as
//     idle);
//   - the followers' end: every node's /admin/regions says `via: wan` on
//     exactly those nodes and `via: relay` (from one of them) on the
//     others, none on `fallback`.
//
// The same sockets measure the WAN bytes of the propagation phase: the
// payload bytes each connection carried (ss's bytes_sent and
// bytes_received, per connection, after minus before; a connection opened
// meanwhile counts from 0, one closed meanwhile is lost and counted in
// WANBytes.Closed), summed over every (following, remote) pair and divided
// by the changes made.

// WANSock is one established connection from a node of a following
// datacenter to the HTTP port of a node of the remote one, as seen by the
// remote (ss in its namespace).
type WANSock struct {
	Remote, Follower string // nodes
	Local, Peer      string // addresses
	Sent, Received   int64  // payload bytes, by the remote
	// LastSend is the time since the remote last sent on it.
	LastSend time.Duration
}

// wanIdle: a WAN connection the remote has sent nothing on for this long
// carries no stream (a followed stream gets a keep-alive every third of
// the stale bound, under 7 s here).
const wanIdle = 10 * time.Second

// wanSocks lists the WAN connections into the nodes of the remote
// datacenter dc from the nodes of follower datacenter fdc ("" for any
// other datacenter).
func (d *dcRun) wanSocks(dc, fdc string) ([]WANSock, error) {
	byIP := map[string]string{}
	for _, n := range d.lab.Nodes {
		byIP[d.lab.IP(n)] = n
	}
	var out []WANSock
	for _, m := range d.nodes[dc] {
		ctx, cancel := context.WithTimeout(d.ctx, 10*time.Second)
		b, err := exec.CommandContext(ctx, "ip", "netns", "exec", d.lab.NS(m), "ss", "-Htni", "state", "established",
			"( sport = :"+strconv.Itoa(HTTPPort)+" )").Output()
		cancel()
		if err != nil {
			return nil, fmt.Errorf("ss in %s: %w", d.lab.NS(m), err)
		}
		var cur *WANSock
		for _, line := range strings.Split(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			if line[0] != ' ' && line[0] != '\t' { // a socket: Recv-Q Send-Q local peer
				cur = nil
				if len(f) < 4 {
					continue
				}
				host, _, _ := strings.Cut(f[3], ":")
				n, ok := byIP[host]
				if !ok || d.dcOf[n] == dc || (fdc != "" && d.dcOf[n] != fdc) {
					continue
				}
				out = append(out, WANSock{Remote: m, Follower: n, Local: f[2], Peer: f[3]})
				cur = &out[len(out)-1]
				continue
			}
			if cur == nil {
				continue
			}
			for _, kv := range f {
				k, v, ok := strings.Cut(kv, ":")
				if !ok {
					continue
				}
				switch k {
				case "bytes_sent":
					cur.Sent, _ = strconv.ParseInt(v, 10, 64)
				case "bytes_received":
					cur.Received, _ = strconv.ParseInt(v, 10, 64)
				case "lastsnd":
					msec, _ := strconv.ParseInt(v, 10, 64)
					cur.LastSend = time.Duration(msec) * time.Millisecond
				}
			}
		}
	}
	return out, nil
}

// viaRow is a remote region's row of /admin/regions, for the link check.
type viaRow struct {
	Name      string   `json:"name"`
	Via       string   `json:"via"`
	Relay     string   `json:"relay"`
	ViaReason string   `json:"viaReason"`
	Links     []string `json:"links"`
}

func (d *dcRun) vias(node string) ([]viaRow, error) {
	code, body, err := d.getJSON(node, "/admin/regions")
	if err != nil {
		return nil, err
	}
	if code != http.StatusOK {
		return nil, fmt.Errorf("%s /admin/regions: %d", node, code)
	}
	var doc struct {
		Remotes []viaRow `json:"remotes"`
	}
	err = json.Unmarshal(body, &doc)
	return doc.Remotes, err
}

// LinkCheck is one look at who follows a remote datacenter over the WAN.
type LinkCheck struct {
	When             string
	Follower, Remote string // datacenters
	Want             int    // WAN links wanted: min(Links, nodes)
	// Holders are the follower's nodes with an active connection at the
	// remote, Conns how many active connections they hold, Idle how many
	// idle ones (nothing sent for wanIdle) any node holds.
	Holders     []string
	Conns, Idle int
	// ViaWAN, Relayed and Fallback are the follower's nodes by their
	// /admin/regions via; BadRelay those relayed from a non-link.
	ViaWAN, Relayed, Fallback, BadRelay []string
	Reasons                             []string // viaReason of the nodes on fallback
	// Waited is how long the check polled before it held (or gave up);
	// FirstLook is the first look when it did not hold at once.
	Waited    time.Duration
	FirstLook string
	Pass      bool
}

func (c LinkCheck) String() string {
	s := fmt.Sprintf("%s←%s: active connections from %s (%d; %d idle), via wan %s, %d relayed", c.Follower, c.Remote,
		nodesOrNone(c.Holders), c.Conns, c.Idle, nodesOrNone(c.ViaWAN), len(c.Relayed))
	if len(c.Fallback) > 0 {
		s += fmt.Sprintf(", on fallback %s (%s)", strings.Join(c.Fallback, ","), strings.Join(c.Reasons, "; "))
	}
	if len(c.BadRelay) > 0 {
		s += ", relayed from a non-link " + strings.Join(c.BadRelay, ",")
	}
	return s
}

func nodesOrNone(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

// links looks at every (following, remote) pair until each holds Want
// links from both ends, for at most within, and records the last look.
func (d *dcRun) links(when string, within time.Duration) error {
	t0 := time.Now()
	first := map[string]string{}
	for {
		var checks []LinkCheck
		all := true
		for _, fdc := range d.dcs {
			for _, r := range d.sc.Follows[fdc] {
				c, err := d.linkCheck(fdc, r)
				if err != nil {
					return err
				}
				c.When, c.Waited = when, time.Since(t0)
				k := fdc + "←" + r
				if _, seen := first[k]; !seen {
					first[k] = ""
					if !c.Pass {
						first[k] = c.String()
					}
				}
				c.FirstLook = first[k]
				all = all && c.Pass
				checks = append(checks, c)
			}
		}
		if all || time.Since(t0) > within {
			d.res.Links = append(d.res.Links, checks...)
			for _, c := range checks {
				if c.FirstLook != "" {
					d.logf("links %s: %v in %v (first look: %s)", when, c, ms(c.Waited), c.FirstLook)
				} else {
					d.logf("links %s: %v in %v", when, c, ms(c.Waited))
				}
			}
			return nil
		}
		if !sleepCtx(d.ctx, 500*time.Millisecond) {
			return d.ctx.Err()
		}
	}
}

func (d *dcRun) linkCheck(fdc, r string) (LinkCheck, error) {
	c := LinkCheck{Follower: fdc, Remote: r, Want: min(d.sc.links(), len(d.nodes[fdc]))}
	socks, err := d.wanSocks(r, fdc)
	if err != nil {
		return c, err
	}
	for _, s := range socks {
		if s.LastSend >= wanIdle {
			c.Idle++
			continue
		}
		c.Conns++
		if !slices.Contains(c.Holders, s.Follower) {
			c.Holders = append(c.Holders, s.Follower)
		}
	}
	sort.Strings(c.Holders)
	for _, n := range d.nodes[fdc] {
		rows, err := d.vias(n)
		if err != nil {
			return c, err
		}
		for _, row := range rows {
			if row.Name != r {
				continue
			}
			switch row.Via {
			case "wan":
				c.ViaWAN = append(c.ViaWAN, n)
			case "relay":
				c.Relayed = append(c.Relayed, n)
				if !slices.Contains(row.Links, row.Relay) {
					c.BadRelay = append(c.BadRelay, n)
				}
			default:
				c.Fallback = append(c.Fallback, n)
				c.Reasons = append(c.Reasons, n+": "+row.ViaReason)
			}
		}
	}
	c.Pass = len(c.Holders) == c.Want && slices.Equal(c.Holders, c.ViaWAN) &&
		len(c.Relayed) == len(d.nodes[fdc])-c.Want && len(c.Fallback) == 0 && len(c.BadRelay) == 0
	return c, nil
}

// WANBytes are the payload bytes the WAN connections carried during the
// propagation phase.
type WANBytes struct {
	Changes        int   // registrations and cancels, each followed by one datacenter
	Down, Up       int64 // remote → follower, follower → remote
	Conns, Closed  int   // connections measured, and those gone before the end
	PerChange      int64 // (Down+Up)/Changes
	PerChangeLinks int   // WAN links per (following, remote) pair
}

type sockKey struct{ remote, local, peer string }

// wanSample is every WAN connection of the run, by key.
func (d *dcRun) wanSample() (map[sockKey]WANSock, error) {
	out := map[sockKey]WANSock{}
	for _, dc := range d.dcs {
		socks, err := d.wanSocks(dc, "")
		if err != nil {
			return nil, err
		}
		for _, s := range socks {
			out[sockKey{s.Remote, s.Local, s.Peer}] = s
		}
	}
	return out, nil
}

// wanBytes is what the connections carried between two samples.
func wanBytes(before, after map[sockKey]WANSock, changes, links int) WANBytes {
	w := WANBytes{Changes: changes, PerChangeLinks: links}
	for k, a := range after {
		b := before[k] // zero: opened meanwhile
		w.Down += a.Sent - b.Sent
		w.Up += a.Received - b.Received
		w.Conns++
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			w.Closed++
		}
	}
	if changes > 0 {
		w.PerChange = (w.Down + w.Up) / int64(changes)
	}
	return w
}

func (w WANBytes) String() string {
	return fmt.Sprintf("%d B per change (%d changes: %d B remote→follower, %d B follower→remote, over %d connections, %d closed meanwhile)",
		w.PerChange, w.Changes, w.Down, w.Up, w.Conns, w.Closed)
}
