package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/memberlist"
)

// DefaultPort is the default gossip port, for both UDP and TCP (memberlist
// uses the same number for both). A Join address without a port uses it.
const DefaultPort = 7946

// ErrInvalidConfig is wrapped by every error Config.Validate returns.
var ErrInvalidConfig = errors.New("cluster: invalid config")

// Resolver looks up the addresses of a host name, the way
// net.Resolver.LookupHost does. An entry may also be a "host:port" pair, which
// lets a resolver (for example an SRV lookup, or a fake one in a test) pin the
// port of each address.
type Resolver func(ctx context.Context, host string) ([]string, error)

// Config configures a Membership. Start from DefaultConfig (production) or
// DefaultLocalConfig (tests, simulations) and change what you need; a zero
// Config is not valid.
type Config struct {
	// NodeName is this node's unique name in the cluster. It is the tie-breaker
	// of every record version the node writes, so it must be stable across
	// restarts of the same node and unique among live nodes. Default: the
	// host name.
	NodeName string

	// BindAddr and BindPort are where the real transport listens, UDP and TCP
	// on the same port (the --gossip-addr flag, default ":7946"; see
	// ParseGossipAddr). Port 0 picks a free port, for tests. Ignored when
	// Transport is set.
	BindAddr string
	BindPort int

	// AdvertiseAddr and AdvertisePort are the address peers use to reach this
	// node, when it differs from the bind address (NAT, containers). Empty
	// AdvertiseAddr lets memberlist pick: the bind address, or the first
	// private IP when bound to 0.0.0.0. AdvertisePort 0 means BindPort; it is
	// honoured only together with AdvertiseAddr.
	AdvertiseAddr string
	AdvertisePort int

	// Join lists the seeds to join at start: "host:port", "host" (port
	// DefaultPort), an IP or a DNS name. Every address a name resolves to is
	// tried, and names are resolved again on every attempt, so one DNS name
	// listing all nodes (a Kubernetes headless service) is enough. Entries that
	// resolve to this node itself are skipped; with nothing left there is
	// nothing to join. Empty: this node starts alone and waits to be joined.
	Join []string

	// GossipKey encrypts and authenticates all gossip (memberlist's
	// SecretKey): 16, 24 or 32 bytes for AES-128/192/256. Every node must use
	// the same key; a node with another key cannot join. Empty: no encryption
	// (use only on a trusted network). It is short for GossipKeys with one
	// key; set one or the other.
	GossipKey []byte

	// GossipKeys is the gossip keyring (memberlist's Keyring), for rotating
	// the key without downtime: the first key encrypts what this node sends,
	// and every key is tried on what it receives. Each key is 16, 24 or 32
	// bytes. A node can talk to another only if the other holds its first
	// key, so a new key is rolled out in three steps, each a rolling restart
	// of every node that completes before the next step begins:
	//
	//  1. Add: GossipKeys = [old, new]. Every node still sends with old,
	//     which everyone holds; restarted nodes can also read new.
	//  2. Promote: GossipKeys = [new, old]. Restarted nodes send with new,
	//     which every node read since step 1; they still read old from the
	//     nodes not restarted yet.
	//  3. Drop: GossipKeys = [new]. Nobody sends with old any more.
	//
	// Skipping or overlapping a step splits the cluster: a node that sends
	// with new cannot join a node that holds only old. Encryption cannot be
	// turned on or off this way: a node with keys and one without never
	// talk. Empty (and GossipKey empty): no encryption.
	GossipKeys [][]byte

	// JoinRetryMin and JoinRetryMax bound the exponential backoff between
	// attempts to join the seeds: the first retry waits about JoinRetryMin, each
	// next one twice as long up to JoinRetryMax, each with random jitter.
	// Nodes can thus start in any order. Defaults: 500ms and 30s.
	JoinRetryMin time.Duration
	JoinRetryMax time.Duration

	// ReconnectInterval is how often the node tries to reach again a member
	// it has seen fail, or its seeds when it finds itself alone, so that both
	// sides of a healed partition merge again even after memberlist has
	// stopped gossiping to the dead. Default 10s.
	ReconnectInterval time.Duration

	// ReconnectTimeout is how long a failed ("dead") member is kept in
	// Members and retried before it is forgotten. Default 24h.
	ReconnectTimeout time.Duration

	// TombstoneTimeout is how long a member that left gracefully is kept in
	// Members (State "left") before it is forgotten. Default 1h.
	TombstoneTimeout time.Duration

	// LeaveTimeout bounds how long Shutdown waits for the leave announcement
	// to be gossiped (and Leave, when given no timeout). Default 5s.
	LeaveTimeout time.Duration

	// StreamTimeout bounds the writing of every stream this node dials, so
	// SendReliable (and every reliable message of the replication layer)
	// fails instead of blocking forever on a peer that accepted the
	// connection but does not read, or died mid-transfer. It is a write
	// deadline set when the stream is dialled: the whole message must be
	// written within it. memberlist replaces it with its own TCPTimeout on
	// the streams of its push/pull and TCP probes. Raise it when reliable
	// messages are large and links slow. Default 10s.
	StreamTimeout time.Duration

	// DeadNodeReclaimTime is how long a member must have been dead before
	// a node with its name but another address (a rescheduled pod, a VM
	// with a new IP) may take the name over; 0 never (memberlist's
	// DeadNodeReclaimTime). Default 30s.
	DeadNodeReclaimTime time.Duration

	// Logger receives membership changes and memberlist's own log lines, with
	// component=cluster and node=NodeName. Nil means slog.Default().
	Logger *slog.Logger

	// Transport carries gossip. Nil means memberlist's NetTransport (UDP +
	// TCP on BindAddr:BindPort). Tests and simulations pass a transport from
	// memnet.Network.NewTransport to inject faults. Either way Membership wraps
	// it to bound stream writes (StreamTimeout), and shuts it down with the
	// memberlist.
	Transport memberlist.NodeAwareTransport

	// Resolver resolves Join host names. Nil means
	// net.DefaultResolver.LookupHost. Tests pass a fake DNS.
	Resolver Resolver

	// Delegate receives the node's user messages and takes part in push/pull
	// state exchange and broadcasts (memberlist.Delegate): the replication
	// layer plugs in here. Its NodeMeta may return up to
	// memberlist.MetaMaxSize-3 bytes (509); Membership prefixes it with its
	// own header (the wire protocol version). User messages whose first byte
	// is 0 are Membership's own and never reach NotifyMsg (wire frames start
	// with the protocol version, never 0). Nil: membership only.
	Delegate memberlist.Delegate

	// Events, if set, is told of joins, leaves and updates, like
	// Membership.Subscribe callbacks: in order, from one goroutine, never from
	// inside memberlist, so it may take its time (but not forever: Shutdown
	// waits for it).
	Events memberlist.EventDelegate

	// Alive, if set, is asked about every peer that passed the protocol
	// version check; returning an error keeps the peer out of the cluster.
	// It is called with memberlist's locks held: be quick, and do not call
	// back into the Membership.
	Alive memberlist.AliveDelegate

	// MemberlistConfig, if set, may adjust the memberlist configuration (for
	// example timings) after Membership has filled it in from this Config and
	// before the memberlist is created. Membership then sets, and so
	// overrides, the fields it owns: Name, Transport, Delegate, Events,
	// Alive, Merge, Ping, Logger and LogOutput.
	MemberlistConfig func(*memberlist.Config)

	// local selects memberlist.DefaultLocalConfig timings instead of
	// DefaultLANConfig; set by DefaultLocalConfig.
	local bool

	// protocolVersion, when non-zero, replaces wire.ProtocolVersion in the
	// advertised node meta. TEST ONLY: it lets a test play a peer from
	// another release without a second build.
	protocolVersion uint8
	// noStreams, for tests, makes the node behave as one of the release
	// before peer streams: it neither advertises nor accepts them.
	noStreams bool
	// noSessionExchanges, for tests, makes the node behave as one of the
	// release before exchanges on peer streams: it has streamMagic
	// sessions only and dials an exchange per pull.
	noSessionExchanges bool
}

// DefaultConfig returns a complete production configuration: memberlist's
// LAN timings, gossip on 0.0.0.0:7946, the host name as NodeName.
func DefaultConfig() Config {
	hostname, _ := os.Hostname()
	return Config{
		NodeName:          hostname,
		BindAddr:          "0.0.0.0",
		BindPort:          DefaultPort,
		JoinRetryMin:      500 * time.Millisecond,
		JoinRetryMax:      30 * time.Second,
		ReconnectInterval: 10 * time.Second,
		ReconnectTimeout:  24 * time.Hour,
		TombstoneTimeout:  time.Hour,
		LeaveTimeout:      5 * time.Second,
		StreamTimeout:     10 * time.Second,

		DeadNodeReclaimTime: 30 * time.Second,
	}
}

// DefaultLocalConfig returns a configuration for tests and simulations on one
// machine: memberlist's local timings (faster failure detection), loopback,
// a free port, short retry and leave timeouts. Set NodeName.
func DefaultLocalConfig() Config {
	c := DefaultConfig()
	c.local = true
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.JoinRetryMin = 50 * time.Millisecond
	c.JoinRetryMax = time.Second
	c.ReconnectInterval = time.Second
	c.ReconnectTimeout = 5 * time.Minute
	c.TombstoneTimeout = time.Minute
	c.LeaveTimeout = time.Second
	return c
}

// Validate reports the first problem with c, wrapped in ErrInvalidConfig.
func (c *Config) Validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: "+format, append([]any{ErrInvalidConfig}, args...)...)
	}
	switch {
	case c.NodeName == "":
		return bad("NodeName is empty")
	case c.Transport == nil && c.BindAddr == "":
		return bad("BindAddr is empty (use 0.0.0.0 for all interfaces)")
	case c.Transport == nil && net.ParseIP(c.BindAddr) == nil:
		return bad("BindAddr %q is not an IP address", c.BindAddr)
	case c.BindPort < 0 || c.BindPort > 65535:
		return bad("BindPort %d out of range 0-65535", c.BindPort)
	case c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil:
		return bad("AdvertiseAddr %q is not an IP address", c.AdvertiseAddr)
	case c.AdvertisePort < 0 || c.AdvertisePort > 65535:
		return bad("AdvertisePort %d out of range 0-65535", c.AdvertisePort)
	case len(c.GossipKey) != 0 && len(c.GossipKey) != 16 && len(c.GossipKey) != 24 && len(c.GossipKey) != 32:
		return bad("GossipKey is %d bytes, want 16, 24 or 32", len(c.GossipKey))
	case len(c.GossipKey) != 0 && len(c.GossipKeys) != 0:
		return bad("GossipKey and GossipKeys are both set; put the key first in GossipKeys")
	case c.JoinRetryMin <= 0:
		return bad("JoinRetryMin %v must be positive", c.JoinRetryMin)
	case c.JoinRetryMax < c.JoinRetryMin:
		return bad("JoinRetryMax %v is less than JoinRetryMin %v", c.JoinRetryMax, c.JoinRetryMin)
	case c.ReconnectInterval <= 0:
		return bad("ReconnectInterval %v must be positive", c.ReconnectInterval)
	case c.ReconnectTimeout <= 0:
		return bad("ReconnectTimeout %v must be positive", c.ReconnectTimeout)
	case c.TombstoneTimeout <= 0:
		return bad("TombstoneTimeout %v must be positive", c.TombstoneTimeout)
	case c.LeaveTimeout <= 0:
		return bad("LeaveTimeout %v must be positive", c.LeaveTimeout)
	case c.StreamTimeout <= 0:
		return bad("StreamTimeout %v must be positive", c.StreamTimeout)
	case c.DeadNodeReclaimTime < 0:
		return bad("DeadNodeReclaimTime %v must not be negative", c.DeadNodeReclaimTime)
	}
	for i, k := range c.GossipKeys {
		if len(k) != 16 && len(k) != 24 && len(k) != 32 {
			return bad("GossipKeys[%d] is %d bytes, want 16, 24 or 32", i, len(k))
		}
	}
	for _, j := range c.Join {
		host, _, err := splitJoinAddr(j)
		if err == nil && host == "" {
			err = errors.New("no host")
		}
		if err != nil {
			return bad("Join entry %q: %v", j, err)
		}
	}
	return nil
}

// memberlistConfig builds the memberlist configuration from c, minus the
// fields Membership owns (set by the caller afterwards).
func (c *Config) memberlistConfig() *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	if c.local {
		mc = memberlist.DefaultLocalConfig()
	}
	mc.Name = c.NodeName
	mc.BindAddr = c.BindAddr
	mc.BindPort = c.BindPort
	mc.AdvertiseAddr = c.AdvertiseAddr
	mc.AdvertisePort = c.AdvertisePort
	if mc.AdvertisePort == 0 {
		mc.AdvertisePort = c.BindPort
	}
	if len(c.GossipKey) > 0 {
		mc.SecretKey = append([]byte(nil), c.GossipKey...)
	}
	if len(c.GossipKeys) > 0 {
		keys := make([][]byte, len(c.GossipKeys))
		for i, k := range c.GossipKeys {
			keys[i] = append([]byte(nil), k...)
		}
		kr, err := memberlist.NewKeyring(keys[1:], keys[0])
		if err != nil {
			panic(fmt.Sprintf("cluster: keyring of a validated config: %v", err)) // Validate checks the sizes
		}
		mc.Keyring = kr
	}
	mc.DeadNodeReclaimTime = c.DeadNodeReclaimTime
	if c.MemberlistConfig != nil {
		c.MemberlistConfig(mc)
	}
	return mc
}

// ParseGossipAddr splits a --gossip-addr value into the bind address and port:
// ":7946" binds every interface, "10.0.0.5" uses DefaultPort, "[::1]:7000"
// is IPv6.
func ParseGossipAddr(s string) (host string, port int, err error) {
	host, port, err = splitJoinAddr(s)
	if err != nil {
		return "", 0, fmt.Errorf("cluster: gossip address %q: %w", s, err)
	}
	if host == "" {
		host = "0.0.0.0"
	}
	if net.ParseIP(host) == nil {
		return "", 0, fmt.Errorf("cluster: gossip address %q: %q is not an IP address", s, host)
	}
	return host, port, nil
}

// splitJoinAddr splits "host:port", "[v6]:port", "host" or a bare IPv6
// address into host and port, using DefaultPort when none is given. The host
// may be empty (":7946").
func splitJoinAddr(s string) (string, int, error) {
	if s == "" {
		return "", 0, errors.New("empty address")
	}
	if ip := net.ParseIP(s); ip != nil { // bare IP, including IPv6 "::1"
		return s, DefaultPort, nil
	}
	host, portStr, err := net.SplitHostPort(s)
	if err != nil {
		var ae *net.AddrError
		if errors.As(err, &ae) && ae.Err == "missing port in address" {
			if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
				s = s[1 : len(s)-1] // "[::1]"
			}
			return s, DefaultPort, nil
		}
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("bad port %q", portStr)
	}
	return host, port, nil
}
