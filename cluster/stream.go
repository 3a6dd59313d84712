package cluster

// Peer streams: one long-lived, multiplexed connection per peer.
//
// memberlist's SendReliable dials a stream per message. At one forwarded
// renewal set per owner per flush and one load report per member per
// window, every node dialled N−1 streams per second, and a lost SYN (a
// second's retransmit, then three) held the message, and everything the
// link sent after it, for seconds. Instead, a node dials each peer once,
// through the memberlist transport (so memnet.Network and TCP alike, with the
// StreamTimeout of deadlineTransport on the dial), and keeps the
// connection: it starts with streamMagic, which exchangeTransport sorts to
// serveStreams, and then carries a hashicorp/yamux session. Each message
// class (streamClass) has a yamux stream of its own, with its own flow
// control window, so a record transfer the peer reads slowly never holds
// renewals or control messages, and a class's write that times out closes
// only its own stream.
//
// Framing: each message is one frame, a uvarint length and that many
// bytes (writeFrame); with a gossip key each frame is sealed with AES-GCM
// under the primary key and opened with any key of the keyring, as
// memberlist seals its own streams (its SendReliable encrypts the whole
// message when a key is set) — registry data never travels in the clear
// when a key is configured. yamux's own headers (stream ids, windows,
// pings) are plain; a forged one can disturb a session, as a forged TCP
// reset can, but it cannot deliver or read a message.
//
// The receiver hands each frame to the same place as a reliable memberlist
// message (hooks.NotifyMsg). A session that fails (peer restarted, reset,
// keepalive timeout, write error) is dropped and dialled again on the next
// send, after a backoff that doubles from streamBackoffMin to
// streamBackoffMax (StreamTimeout at most) while dials keep failing.
//
// Exchanges (exchange.go: a pull and its answers) ride on the session too,
// each on a yamux stream of its own that lives for the exchange: a node
// dials each peer once, whatever it sends or asks. Such a session starts
// with sessionMagic instead of streamMagic, and each of its streams with a
// kind byte (kindFrames: a class's frames; kindExchange: one exchange).
//
// Compatibility: a node advertises peer streams with metaStreams in its
// node meta, and exchanges on them with metaSessionExchanges; a peer
// without the first (an older release, which ignores the bits) is sent
// messages the old way, by SendReliable, and a peer without the second
// gets a streamMagic session and an exchange dialled per pull, as that
// release expects. Sessions of both kinds are served. The dial-per-message
// sabotage switch sends everything the old way.

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/hashicorp/yamux"

	"github.com/heureka/heureka/internal/sabotage"
)

const (
	// streamMagic starts a peer stream connection: like exchangeMagic,
	// none of the bytes memberlist starts a stream with.
	streamMagic byte = 0xE8
	// sessionMagic starts a peer stream connection whose streams each
	// start with a kind byte (kindFrames, kindExchange).
	sessionMagic byte = 0xE9
	// The kinds of stream on a sessionMagic connection.
	kindFrames   byte = 0
	kindExchange byte = 1
	// maxInboundSessions bounds the peer sessions this node serves.
	maxInboundSessions = 1024
	// maxStreamsPerSession bounds the yamux streams one peer may open:
	// its classes' (twice, for a stream replaced while the old one
	// closes) and its exchanges.
	maxStreamsPerSession = 2*int(numStreamClasses) + maxExchanges
	streamBackoffMin     = 50 * time.Millisecond
	streamBackoffMax     = 2 * time.Second
)

// streamClass is a class of messages with a yamux stream of its own.
type streamClass uint8

// The classes, as the peer link sends them (peerlink.go).
const (
	classControl streamClass = iota
	classRenewals
	classRecords
	classTransfers
	numStreamClasses
)

// errNoStream: the peer does not speak peer streams (or they are off);
// send the old way.
var errNoStream = errors.New("cluster: peer has no stream support")

// errStreamBackoff: the last dials to the peer failed; the next is not due.
var errStreamBackoff = errors.New("cluster: peer stream down, redial not due yet")

// streamSender is what a Peers implementation offers to send on peer
// streams (Membership does).
type streamSender interface {
	SendStream(name string, class streamClass, msg []byte) error
}

// streamPeers holds the sessions a node dialled and the ones it serves.
type streamPeers struct {
	m         *Membership
	timeout   time.Duration
	exchanges chan struct{} // bounds the exchanges answered at once (shared with dialled ones)

	mu     sync.Mutex
	closed bool
	out    map[string]*outSession
	// joined is when memberlist last saw each member come (back) alive:
	// a dial that failed before that says nothing about the peer now.
	joined map[string]time.Time
	in     map[*yamux.Session]struct{}
	inWG   sync.WaitGroup
}

func newStreamPeers(m *Membership, timeout time.Duration, exchanges chan struct{}) *streamPeers {
	return &streamPeers{m: m, timeout: timeout, exchanges: exchanges, out: map[string]*outSession{}, in: map[*yamux.Session]struct{}{}}
}

// yamuxConfig returns the sessions' configuration: keepalives and writes
// bounded by the stream timeout, yamux's own logging off (failures are
// logged here, at debug: a peer restart is not an error).
func (p *streamPeers) yamuxConfig() *yamux.Config {
	c := yamux.DefaultConfig()
	c.LogOutput = io.Discard
	c.EnableKeepAlive = true
	c.KeepAliveInterval = p.timeout
	c.ConnectionWriteTimeout = p.timeout
	c.StreamOpenTimeout = p.timeout
	c.StreamCloseTimeout = p.timeout
	c.AcceptBacklog = maxStreamsPerSession
	return c
}

// outSession is the connection this node dialled to one peer.
type outSession struct {
	mu       sync.Mutex // held while dialling
	addr     string
	sess     *yamux.Session
	kinds    bool // the session started with sessionMagic
	streams  [numStreamClasses]*classStream
	failures int
	retryAt  time.Time
	failedAt time.Time // the last failed dial
}

// classStream is one class's yamux stream; its mutex orders the frames.
type classStream struct {
	mu sync.Mutex
	s  *yamux.Stream
	bw *bufio.Writer
}

// streamsCapable reports whether a node's meta advertises peer streams.
func streamsCapable(meta []byte) bool {
	_, flags, _, ok := parseMeta(meta)
	return ok && flags&metaStreams != 0
}

// sessionExchangesCapable reports whether a node's meta advertises
// exchanges on peer streams (and so serves sessionMagic sessions).
func sessionExchangesCapable(meta []byte) bool {
	_, flags, _, ok := parseMeta(meta)
	return ok && flags&metaStreams != 0 && flags&metaSessionExchanges != 0
}

// SendStream sends msg to the live member called node on this node's
// stream of class to it, dialling it if there is none. It fails with
// errNoStream when the member does not speak peer streams (send it with
// SendReliable instead), and returns within about two StreamTimeouts
// (a dial, a write).
func (m *Membership) SendStream(node string, class streamClass, msg []byte) error {
	if sabotage.On(sabotage.DialPerMessage) || m.cfg.noStreams || class >= numStreamClasses {
		return errNoStream
	}
	_, n, err := m.target(node)
	if err != nil {
		return err
	}
	if !streamsCapable(n.Meta) {
		return errNoStream
	}
	m.mu.Lock()
	sp := m.streams
	m.mu.Unlock()
	if sp == nil {
		return errNoStream
	}
	addr := net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
	return sp.send(memberlist.Address{Addr: addr, Name: n.Name}, m.kindsFor(n), class, msg)
}

// kindsFor reports whether this node dials n sessionMagic sessions.
func (m *Membership) kindsFor(n *memberlist.Node) bool {
	return !m.cfg.noSessionExchanges && sessionExchangesCapable(n.Meta)
}

// StreamSessions returns how many peer sessions this node has dialled and
// how many it serves, for tests and status.
func (m *Membership) StreamSessions() (out, in int) {
	m.mu.Lock()
	sp := m.streams
	m.mu.Unlock()
	if sp == nil {
		return 0, 0
	}
	sp.mu.Lock()
	defer sp.mu.Unlock()
	for _, o := range sp.out {
		o.mu.Lock()
		if o.sess != nil && !o.sess.IsClosed() {
			out++
		}
		o.mu.Unlock()
	}
	return out, len(sp.in)
}

// Dials returns how many streams this node has dialled (every dial of its
// transport: memberlist's messages, push/pulls and probes, exchanges and
// peer sessions).
func (m *Membership) Dials() uint64 {
	m.mu.Lock()
	tr := m.transport
	m.mu.Unlock()
	if tr == nil {
		return 0
	}
	return tr.dials.Load()
}

// session returns the session to a, dialling it if there is none (kinds:
// a sessionMagic one). Called with o.mu held.
func (p *streamPeers) session(a memberlist.Address, o *outSession, kinds bool) (*yamux.Session, error) {
	if o.sess != nil && (o.sess.IsClosed() || o.addr != a.Addr || o.kinds != kinds) {
		_ = o.sess.Close() // dead, or the peer came back elsewhere or upgraded
		o.sess, o.streams = nil, [numStreamClasses]*classStream{}
	}
	if o.sess != nil {
		return o.sess, nil
	}
	if time.Now().Before(o.retryAt) && !p.joinedSince(a.Name, o.failedAt) {
		return nil, errStreamBackoff
	}
	sess, err := p.dial(a, kinds)
	if err != nil {
		o.failures++
		o.failedAt = time.Now()
		o.retryAt = o.failedAt.Add(streamBackoff(o.failures, p.timeout))
		return nil, err
	}
	p.mu.Lock()
	closed := p.closed
	p.mu.Unlock()
	if closed {
		_ = sess.Close()
		return nil, ErrShutdown
	}
	o.sess, o.addr, o.kinds, o.failures, o.retryAt = sess, a.Addr, kinds, 0, time.Time{}
	return sess, nil
}

// rejoined records that memberlist sees name alive again (it joined, or
// came back from dead): the redial backoff its failed dials built up, up
// to streamBackoffMax while it was cut off, no longer applies, so the
// first message after a heal dials at once instead of waiting it out (the
// renewal reports it would drop meanwhile are what self-preservation
// counts). Called from memberlist's event delegate: takes p.mu only.
func (p *streamPeers) rejoined(name string) {
	if sabotage.On(sabotage.StreamBackoffSurvivesRejoin) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.joined == nil {
		p.joined = make(map[string]time.Time)
	}
	p.joined[name] = time.Now()
}

// joinedSince reports whether name came alive again after t.
func (p *streamPeers) joinedSince(name string, t time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.joined[name]
	return ok && j.After(t)
}

// outFor returns the outSession record of a, made on first use.
func (p *streamPeers) outFor(a memberlist.Address) (*outSession, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrShutdown
	}
	o := p.out[a.Name]
	fresh := o == nil
	if fresh {
		o = &outSession{}
		p.out[a.Name] = o
	}
	p.mu.Unlock()
	if fresh { // a new peer: close the sessions to members gone since
		p.prune(func(name string) bool { _, _, err := p.m.target(name); return err == nil || name == a.Name })
	}
	return o, nil
}

// stream returns the class stream to a, dialling the session or opening
// the stream if needed.
func (p *streamPeers) stream(a memberlist.Address, kinds bool, class streamClass) (*classStream, error) {
	o, err := p.outFor(a)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	sess, err := p.session(a, o, kinds)
	if err != nil {
		return nil, err
	}
	cs := o.streams[class]
	if cs == nil {
		s, err := sess.OpenStream()
		if err == nil && kinds {
			_ = s.SetWriteDeadline(time.Now().Add(p.timeout))
			_, err = s.Write([]byte{kindFrames})
		}
		if err != nil {
			_ = sess.Close()
			o.sess, o.streams = nil, [numStreamClasses]*classStream{}
			return nil, fmt.Errorf("cluster: open stream to %s: %w", a.Name, err)
		}
		cs = &classStream{s: s, bw: bufio.NewWriter(s)}
		o.streams[class] = cs
	}
	return cs, nil
}

// openExchange opens a stream for one exchange on the sessionMagic
// session to a, dialling the session if needed.
func (p *streamPeers) openExchange(a memberlist.Address) (*yamux.Stream, error) {
	o, err := p.outFor(a)
	if err != nil {
		return nil, err
	}
	o.mu.Lock()
	sess, err := p.session(a, o, true)
	o.mu.Unlock()
	if err != nil {
		return nil, err
	}
	s, err := sess.OpenStream()
	if err != nil {
		return nil, fmt.Errorf("cluster: open exchange stream to %s: %w", a.Name, err)
	}
	return s, nil
}

// dropStream forgets cs (its write failed) so the next send opens another.
func (p *streamPeers) dropStream(name string, class streamClass, cs *classStream) {
	_ = cs.s.Close()
	p.mu.Lock()
	o := p.out[name]
	p.mu.Unlock()
	if o == nil {
		return
	}
	o.mu.Lock()
	if o.streams[class] == cs {
		o.streams[class] = nil
	}
	o.mu.Unlock()
}

// streamBackoff is the wait before the next dial after n failed ones.
func streamBackoff(n int, timeout time.Duration) time.Duration {
	d := streamBackoffMin
	for i := 1; i < n && d < streamBackoffMax; i++ {
		d *= 2
	}
	return min(d, streamBackoffMax, timeout)
}

// dial opens a session to a through the node's transport.
func (p *streamPeers) dial(a memberlist.Address, kinds bool) (*yamux.Session, error) {
	p.m.mu.Lock()
	tr := p.m.transport
	p.m.mu.Unlock()
	if tr == nil {
		return nil, ErrNotStarted
	}
	c, err := tr.DialAddressTimeout(a, p.timeout)
	if err != nil {
		return nil, fmt.Errorf("cluster: dial stream to %s: %w", a.Name, err)
	}
	magic := streamMagic
	if kinds {
		magic = sessionMagic
	}
	if _, err := c.Write([]byte{magic}); err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("cluster: dial stream to %s: %w", a.Name, err)
	}
	// Long-lived: yamux bounds its writes itself (ConnectionWriteTimeout).
	_ = c.SetDeadline(time.Time{})
	sess, err := yamux.Client(c, p.yamuxConfig())
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("cluster: stream session to %s: %w", a.Name, err)
	}
	p.m.log.Debug("cluster: peer stream connected", "peer", a.Name)
	return sess, nil
}

// send writes msg as one frame on a's class stream within the timeout.
func (p *streamPeers) send(a memberlist.Address, kinds bool, class streamClass, msg []byte) error {
	cs, err := p.stream(a, kinds, class)
	if err != nil {
		return err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	_ = cs.s.SetWriteDeadline(time.Now().Add(p.timeout))
	err = p.m.writeFrameAD(cs.bw, msg, streamMagic)
	if err == nil {
		err = cs.bw.Flush()
	}
	if err != nil {
		// A frame may be half written: this stream is done for.
		p.dropStream(a.Name, class, cs)
		return fmt.Errorf("cluster: stream send to %s: %w", a.Name, err)
	}
	return nil
}

// forget closes the session to a member that is gone.
func (p *streamPeers) forget(name string) {
	p.mu.Lock()
	o := p.out[name]
	delete(p.out, name)
	delete(p.joined, name)
	p.mu.Unlock()
	if o == nil {
		return
	}
	o.mu.Lock()
	if o.sess != nil {
		_ = o.sess.Close()
	}
	o.mu.Unlock()
}

// prune closes the sessions to nodes that are no longer live members.
func (p *streamPeers) prune(live func(string) bool) {
	p.mu.Lock()
	var gone []string
	for name := range p.out {
		if !live(name) {
			gone = append(gone, name)
		}
	}
	p.mu.Unlock()
	for _, name := range gone {
		p.forget(name)
	}
}

// serve runs a session another node dialled (its magic byte already read)
// until it fails or the node shuts down.
func (p *streamPeers) serve(c net.Conn, kinds bool) {
	_ = c.SetDeadline(time.Time{})
	sess, err := yamux.Server(c, p.yamuxConfig())
	if err != nil {
		_ = c.Close()
		return
	}
	p.mu.Lock()
	if p.closed || len(p.in) >= maxInboundSessions {
		p.mu.Unlock()
		_ = sess.Close()
		return
	}
	p.in[sess] = struct{}{}
	p.inWG.Add(1)
	p.mu.Unlock()
	defer func() {
		_ = sess.Close()
		p.mu.Lock()
		delete(p.in, sess)
		p.mu.Unlock()
		p.inWG.Done()
	}()
	h := &hooks{p.m}
	var wg sync.WaitGroup
	defer wg.Wait()
	open := make(chan struct{}, maxStreamsPerSession)
	for {
		s, err := sess.AcceptStream()
		if err != nil {
			return
		}
		select {
		case open <- struct{}{}:
		default:
			_ = s.Close() // more than a peer ever opens
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-open }()
			defer s.Close()
			br := bufio.NewReader(s)
			if kinds {
				_ = s.SetReadDeadline(time.Now().Add(p.timeout))
				kind, err := br.ReadByte()
				_ = s.SetReadDeadline(time.Time{})
				if err != nil {
					return
				}
				if kind == kindExchange {
					p.serveExchange(s, br)
					return
				}
				if kind != kindFrames {
					p.m.log.Debug("cluster: peer stream of an unknown kind", "from", c.RemoteAddr(), "kind", kind)
					return
				}
			}
			for {
				b, err := p.m.readFrameAD(br, streamMagic)
				if err != nil {
					if !errors.Is(err, io.EOF) && !sess.IsClosed() {
						p.m.log.Debug("cluster: peer stream read failed", "from", c.RemoteAddr(), "err", err)
					}
					return
				}
				h.NotifyMsg(b)
			}
		}()
	}
}

// serveExchange answers the exchange on s (its kind byte read from br)
// within the node's bound on exchanges answered at once; beyond it, s is
// closed unanswered and the asker falls back, as with a dialled exchange.
func (p *streamPeers) serveExchange(s *yamux.Stream, br *bufio.Reader) {
	select {
	case p.exchanges <- struct{}{}:
		defer func() { <-p.exchanges }()
		p.m.serveExchange(s, br)
	default:
	}
}

// close closes every session and waits for the served ones to end.
func (p *streamPeers) close() {
	p.mu.Lock()
	p.closed = true
	out := p.out
	p.out = map[string]*outSession{}
	in := make([]*yamux.Session, 0, len(p.in))
	for s := range p.in {
		in = append(in, s)
	}
	p.mu.Unlock()
	for _, o := range out {
		o.mu.Lock()
		if o.sess != nil {
			_ = o.sess.Close()
		}
		o.mu.Unlock()
	}
	for _, s := range in {
		_ = s.Close()
	}
	p.inWG.Wait()
}
