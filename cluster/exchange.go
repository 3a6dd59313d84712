package cluster

// Exchanges: a request and its answers on a stream the asker opens.
//
// memberlist's SendReliable dials a stream, writes one message and closes
// it, so every answer travels on a stream the answering node dials. In an
// asymmetric partition (A cannot dial B, B can dial A) B's anti-entropy then
// never gets A's records: A's digest reply and A's sync transfers are both
// dialled by A and refused (BUG-7 of the simulations). An exchange carries
// the answers back on the asker's own stream, so a pull works whenever the
// puller can dial.
//
// An exchange is a yamux stream of its own on the asker's peer session
// (stream.go), opened with kindExchange, when the peer advertises it
// (metaSessionExchanges); the asker dialled the session, so the answers
// still need no connection from the answerer. To a peer of the release
// before, it is a stream dialled through the node's transport (so it has
// the StreamTimeout write deadline of deadlineTransport) that starts with
// exchangeMagic, a byte memberlist never starts a stream with; the
// transport hands such streams to the exchange handler instead of
// memberlist. Then the asker writes one frame (the request) and reads
// frames until the answerer closes the stream. A frame is a uvarint length
// and that many bytes; with a gossip key, each frame is sealed with
// AES-GCM under the primary key (a random nonce first) and opened with any
// key of the keyring, as memberlist does with its own streams. Every read
// and write has a StreamTimeout deadline, so a stalled peer costs one
// timeout, and at most maxExchanges answers run at once (beyond, the
// stream is closed unanswered and the asker falls back to the old path).

import (
	"bufio"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/memberlist"

	"github.com/heureka/heureka/internal/sabotage"
)

const (
	// exchangeMagic starts an exchange stream. memberlist's streams start
	// with a message type (small numbers), its label header (244) or, with
	// encryption, its encrypt message type; 0xE7 is none of them.
	exchangeMagic byte = 0xE7
	// maxExchangeFrame bounds one frame (a request or a batch of records).
	maxExchangeFrame = 64 << 20
	// maxExchanges bounds the exchanges this node answers at once.
	maxExchanges = 16
)

// errNoExchange: the peer closed the stream without answering (an older
// node, or one answering too many exchanges already).
var errNoExchange = errors.New("cluster: peer did not answer the exchange")

// exchangeHandler answers one exchange: req is the asker's request; reply
// writes one answer frame. The stream closes when it returns.
type exchangeHandler func(req []byte, reply func([]byte) error)

// exchanger is what the Replicator uses to pull on its own streams; the
// Membership gives itself to a Config.Delegate that wants it
// (exchangeUser).
type exchanger interface {
	exchange(node string, req []byte, onReply func([]byte)) error
}

// exchangeUser is a Config.Delegate that asks and answers exchanges.
type exchangeUser interface {
	useExchanger(exchanger)
	answerExchange(req []byte, reply func([]byte) error)
}

// exchange sends req to the live member called node on a stream this node
// dials and calls onReply with each answer frame, in order, until the peer
// closes the stream. It returns errNoExchange if no answer came.
func (m *Membership) exchange(node string, req []byte, onReply func([]byte)) error {
	_, n, err := m.target(node)
	if err != nil {
		return err
	}
	m.mu.Lock()
	tr := m.transport
	sp := m.streams
	m.mu.Unlock()
	addr := memberlist.Address{Addr: net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port))), Name: n.Name}
	var c net.Conn
	onSession := sp != nil && !m.cfg.noStreams && m.kindsFor(n) && !sabotage.On(sabotage.DialPerMessage)
	if onSession {
		s, err := sp.openExchange(addr)
		if err != nil {
			return fmt.Errorf("cluster: exchange with %s: %w", node, err)
		}
		c = s
	} else {
		dc, err := tr.DialAddressTimeout(addr, m.cfg.StreamTimeout)
		if err != nil {
			return fmt.Errorf("cluster: exchange with %s: %w", node, err)
		}
		c = dc
	}
	defer c.Close()
	bw := bufio.NewWriter(c)
	if onSession {
		_ = c.SetWriteDeadline(time.Now().Add(m.cfg.StreamTimeout))
		_ = bw.WriteByte(kindExchange)
	} else {
		_ = bw.WriteByte(exchangeMagic)
	}
	if err := m.writeFrame(bw, req); err != nil {
		return fmt.Errorf("cluster: exchange with %s: %w", node, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("cluster: exchange with %s: %w", node, err)
	}
	br := bufio.NewReader(c)
	answered := false
	for {
		_ = c.SetReadDeadline(time.Now().Add(m.cfg.StreamTimeout))
		b, err := m.readFrame(br)
		if errors.Is(err, io.EOF) {
			if !answered {
				return errNoExchange
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("cluster: exchange with %s: %w", node, err)
		}
		answered = true
		onReply(b)
	}
}

// serveExchange answers one exchange stream (its magic byte already read)
// with the Config.Delegate's answerExchange, then closes it.
func (m *Membership) serveExchange(c net.Conn, r io.Reader) {
	defer c.Close()
	u, ok := m.cfg.Delegate.(exchangeUser)
	if !ok {
		return
	}
	_ = c.SetReadDeadline(time.Now().Add(m.cfg.StreamTimeout))
	req, err := m.readFrame(bufio.NewReader(r))
	if err != nil {
		m.log.Debug("cluster: bad exchange request", "from", c.RemoteAddr(), "err", err)
		return
	}
	bw := bufio.NewWriter(c)
	u.answerExchange(req, func(b []byte) error {
		_ = c.SetWriteDeadline(time.Now().Add(m.cfg.StreamTimeout))
		if err := m.writeFrame(bw, b); err != nil {
			return err
		}
		return bw.Flush()
	})
}

// keys returns the gossip keyring, primary first (none: no encryption).
func (m *Membership) keys() [][]byte {
	if len(m.cfg.GossipKey) > 0 {
		return [][]byte{m.cfg.GossipKey}
	}
	return m.cfg.GossipKeys
}

// writeFrame writes b as one exchange frame, sealed under the primary key
// if any.
func (m *Membership) writeFrame(w *bufio.Writer, b []byte) error {
	return m.writeFrameAD(w, b, exchangeMagic)
}

// readFrame reads one exchange frame (see readFrameAD).
func (m *Membership) readFrame(r *bufio.Reader) ([]byte, error) {
	return m.readFrameAD(r, exchangeMagic)
}

// writeFrameAD writes b as one frame, sealed under the primary key if any
// with kind (the magic byte of the connection) as additional data, so a
// frame of one kind of connection does not open on another.
func (m *Membership) writeFrameAD(w *bufio.Writer, b []byte, kind byte) error {
	if ks := m.keys(); len(ks) > 0 {
		aead, err := newAEAD(ks[0])
		if err != nil {
			return err
		}
		nonce := make([]byte, aead.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return err
		}
		b = aead.Seal(nonce, nonce, b, []byte{kind})
	}
	if len(b) > maxExchangeFrame {
		return fmt.Errorf("exchange frame of %d bytes over the limit", len(b))
	}
	var hdr [binary.MaxVarintLen64]byte
	if _, err := w.Write(hdr[:binary.PutUvarint(hdr[:], uint64(len(b)))]); err != nil {
		return err
	}
	_, err := w.Write(b)
	return err
}

// readFrameAD reads one frame and opens it with any key of the keyring,
// kind as additional data. A clean end of stream before a frame is io.EOF.
func (m *Membership) readFrameAD(r *bufio.Reader, kind byte) ([]byte, error) {
	n, err := binary.ReadUvarint(r)
	if err != nil {
		return nil, err
	}
	if n > maxExchangeFrame {
		return nil, fmt.Errorf("exchange frame of %d bytes over the limit", n)
	}
	b := make([]byte, n)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, err
	}
	ks := m.keys()
	if len(ks) == 0 {
		return b, nil
	}
	for _, k := range ks {
		aead, err := newAEAD(k)
		if err != nil || len(b) < aead.NonceSize() {
			continue
		}
		if out, err := aead.Open(nil, b[:aead.NonceSize()], b[aead.NonceSize():], []byte{kind}); err == nil {
			return out, nil
		}
	}
	return nil, errors.New("exchange frame opens with no gossip key")
}

// newAEAD returns AES-GCM under key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// exchangeTransport hands the exchange streams other nodes dial to this
// node to the Membership, their peer stream sessions to its streamPeers
// (stream.go), and every other stream to memberlist, unchanged but for
// the first byte, which it reads to tell them apart.
type exchangeTransport struct {
	memberlist.NodeAwareTransport
	m       *Membership
	timeout time.Duration // bounds the wait for a stream's first byte

	streams   chan net.Conn
	stop      chan struct{}
	startOnce sync.Once
	stopOnce  sync.Once
	sem       chan struct{} // bounds the exchanges answered at once
	peers     *streamPeers  // peer streams (stream.go), both ways
}

func newExchangeTransport(t memberlist.NodeAwareTransport, m *Membership, timeout time.Duration) *exchangeTransport {
	sem := make(chan struct{}, maxExchanges)
	return &exchangeTransport{
		NodeAwareTransport: t, m: m, timeout: timeout,
		streams: make(chan net.Conn), stop: make(chan struct{}), sem: sem,
		peers: newStreamPeers(m, timeout, sem),
	}
}

// StreamCh returns the streams for memberlist.
func (t *exchangeTransport) StreamCh() <-chan net.Conn {
	t.startOnce.Do(func() { go t.sortStreams() })
	return t.streams
}

// Shutdown stops sorting streams and shuts the wrapped transport down.
//
// memberlist's NetTransport hands each accepted stream over an unbuffered
// channel and its Shutdown waits for its listener: a stream accepted just
// before the listener closed would block that hand-over, and Shutdown,
// forever, once nobody reads the channel. So until the wrapped Shutdown
// returns, streams that still arrive are closed here.
func (t *exchangeTransport) Shutdown() error {
	t.stopSorting()
	t.peers.close()
	if sabotage.On(sabotage.ShutdownLeavesStreamHandOver) {
		return t.NodeAwareTransport.Shutdown()
	}
	in := t.NodeAwareTransport.StreamCh()
	done := make(chan struct{})
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case c := <-in:
				_ = c.Close()
			case <-done:
				return
			}
		}
	}()
	err := t.NodeAwareTransport.Shutdown()
	close(done)
	<-drained
	return err
}

// stopSorting ends sortStreams (idempotent).
func (t *exchangeTransport) stopSorting() { t.stopOnce.Do(func() { close(t.stop) }) }

// sortStreams reads the wrapped transport's streams until Shutdown.
func (t *exchangeTransport) sortStreams() {
	in := t.NodeAwareTransport.StreamCh()
	for {
		select {
		case c := <-in:
			go t.sort(c)
		case <-t.stop:
			return
		}
	}
}

// sort reads c's first byte and hands c on.
func (t *exchangeTransport) sort(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(t.timeout))
	var first [1]byte
	if _, err := io.ReadFull(c, first[:]); err != nil {
		_ = c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	if first[0] == streamMagic || first[0] == sessionMagic {
		if t.m.cfg.noStreams || (first[0] == sessionMagic && t.m.cfg.noSessionExchanges) {
			_ = c.Close() // as a node of a previous release
			return
		}
		t.peers.serve(c, first[0] == sessionMagic)
		return
	}
	if first[0] == exchangeMagic {
		select {
		case t.sem <- struct{}{}:
			defer func() { <-t.sem }()
			t.m.serveExchange(c, c)
		default:
			_ = c.Close() // too many at once: the asker falls back
		}
		return
	}
	select {
	case t.streams <- &prefixConn{Conn: c, first: first[0], pending: true}:
	case <-t.stop:
		_ = c.Close()
	}
}

// prefixConn is a stream whose first byte was read already: Read returns
// it first.
type prefixConn struct {
	net.Conn
	first   byte
	pending bool
}

// Read returns the byte read ahead first, then reads the stream.
func (c *prefixConn) Read(b []byte) (int, error) {
	if c.pending && len(b) > 0 {
		b[0] = c.first
		c.pending = false
		return 1, nil
	}
	return c.Conn.Read(b)
}
