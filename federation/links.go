package federation

// Who holds a region's WAN link
//
// Every node of a cluster serves every remote region, but only a few hold
// the WAN link to it: for each region, the Config.Links live members that
// rank highest by rendezvous (highest-random-weight) hashing of (region,
// member). Every node computes the same choice from its own view of the
// membership, without asking anyone: when a chosen member fails or leaves,
// the next one in rank takes its place as soon as the views say so, and a
// member that joins takes a link only from the member it outranks. The
// regions spread over the members, each with its own ranking.
//
// A node that is not chosen follows the region from one of the chosen ones
// (its relay, relay.go), picked by a second ranking of (region, itself,
// link) so that the followers spread over the links. A relay that breaks
// or serves a copy that stays other than ok is set aside for relayRetry;
// with no usable relay the node follows the WAN itself ("fallback"), and
// goes back to a relay once one is usable again. Views may disagree for a
// moment (a member joining): then a region may have one link more or less
// than Links, never none for longer than that moment, since a node that
// finds no usable relay follows the WAN.

import (
	"hash/fnv"
	"slices"
	"time"

	"github.com/heureka/heureka/internal/sabotage"
)

// Members is the local cluster as federation sees it; node adapts its
// membership to it. Every method is safe for concurrent use.
type Members interface {
	// LocalName is this node's member name.
	LocalName() string
	// AliveMembers lists the live members' names, this node included.
	AliveMembers() []string
	// MemberURL is the base URL of a member's HTTP API
	// ("http://host:port", no path), "" when unknown.
	MemberURL(name string) string
}

// RelaySecrets, when a Members implements it, fills in Config.RelayKeys
// and Config.RelayNeedsAuth where the Config leaves them unset (node's
// membership adapter does: the gossip keyring and whether basic auth is
// on).
type RelaySecrets interface {
	// RelayKeys is the cluster's shared secret (the gossip keyring, the
	// key this node sends with first); nil without one.
	RelayKeys() [][]byte
	// RelayNeedsAuth reports whether the relay route asks for
	// credentials (HTTP basic auth is on).
	RelayNeedsAuth() bool
}

// Via says how a node follows a region.
type Via string

// The ways a region is followed.
const (
	// ViaWAN: this node holds one of the region's WAN links (or there is
	// no cluster).
	ViaWAN Via = "wan"
	// ViaRelay: this node follows the region from a local member that
	// holds a WAN link.
	ViaRelay Via = "relay"
	// ViaFallback: this node is not chosen, but no relay was usable: it
	// follows the WAN itself until one is.
	ViaFallback Via = "fallback"
)

// source is where a puller follows its region from.
type source struct {
	via    Via
	member string // the relay (ViaRelay)
}

// rank hashes parts into a 64-bit score (FNV-1a, then a splitmix64
// finaliser so that names differing by a character spread).
func rank(parts ...string) uint64 {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p))
		_, _ = h.Write([]byte{0})
	}
	z := h.Sum64()
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// chooseLinks returns the k members of alive that hold region's WAN link,
// best first.
func chooseLinks(region string, alive []string, k int) []string {
	l := slices.Clone(alive)
	slices.Sort(l)
	l = slices.Compact(l)
	slices.SortFunc(l, func(a, b string) int {
		ra, rb := rank(region, a), rank(region, b)
		switch {
		case ra > rb:
			return -1
		case ra < rb:
			return 1
		}
		return 0
	})
	if len(l) > k {
		l = l[:k]
	}
	return l
}

// relayOrder returns links in the order self tries them as relays for
// region.
func relayOrder(region, self string, links []string) []string {
	l := slices.Clone(links)
	slices.SortFunc(l, func(a, b string) int {
		ra, rb := rank(region, self, a), rank(region, self, b)
		switch {
		case ra > rb:
			return -1
		case ra < rb:
			return 1
		}
		return 0
	})
	return l
}

// memberURL is where member's HTTP API is, "" when unknown.
func (f *Federation) memberURL(member string) string {
	if f.cfg.MemberURL != nil {
		return f.cfg.MemberURL(member)
	}
	return f.cfg.Members.MemberURL(member)
}

// pick decides where the puller follows its region from now: the WAN when
// this node is among the region's links (or there is no cluster), else its
// current relay while it stays a link and usable, else the first usable
// link in relayOrder, else the WAN (fallback). It also returns the links.
func (p *puller) pick(now time.Time) (source, []string) {
	m := p.f.cfg.Members
	if m == nil {
		return source{via: ViaWAN}, nil
	}
	self := m.LocalName()
	alive := m.AliveMembers()
	if !slices.Contains(alive, self) {
		alive = append(alive, self)
	}
	links := chooseLinks(p.remote.Name, alive, p.f.cfg.Links)
	if slices.Contains(links, self) || sabotage.On(sabotage.EveryNodeOnWAN) {
		return source{via: ViaWAN}, links
	}
	if p.f.relaysBlocked() {
		return source{via: ViaFallback}, links // no node could pass the relay route
	}
	usable := func(l string) bool { return !p.relayBad[l].After(now) && p.f.memberURL(l) != "" }
	if p.src.via == ViaRelay && slices.Contains(links, p.src.member) && usable(p.src.member) {
		return p.src, links
	}
	for _, l := range relayOrder(p.remote.Name, self, links) {
		if usable(l) {
			return source{via: ViaRelay, member: l}, links
		}
	}
	return source{via: ViaFallback}, links
}
