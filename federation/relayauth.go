package federation

// Authenticating relay requests
//
// With HTTP basic auth on, GET /admin/regions/{region}/relay needs the read
// role like every /admin/ read, and the nodes hold no credentials. They
// share a secret already: the gossip keyring (every member holds the key
// the others send with, or it could not join). A follower signs its relay
// request with it, and the relay checks the signature instead of basic
// credentials (httpapi's protect asks AuthenticateRelay first):
//
//	Heureka-Relay-Auth: v1 t=<unix seconds> s=<base64url HMAC-SHA256>
//
// over "heureka-relay-v1\n" + method + "\n" + escaped path + "\n" + t,
// keyed by HMAC-SHA256(gossip key, "heureka relay auth") (so the gossip
// key itself is used by one algorithm only). The follower signs with the
// first key of the keyring; the relay tries every key, so a keyring
// rotated in memberlist's three steps (cluster.Config.GossipKeys) keeps
// relays working throughout. t must be within RelayAuthWindow of the
// relay's clock either way.
//
// What it does not do: a signature is checked when the stream opens, not
// per event; over plain HTTP anyone who captures a signed request may
// replay it within the window, to read the same region's relay stream
// (which they could read off the wire anyway). The relay route accepts a
// signature and nothing more: every other route, and a relay request
// without the header, are judged by basic auth as before.
//
// A cluster with auth on and no gossip key has no shared secret: its
// nodes cannot pass each other's relay route, so each follows the WAN
// itself (ViaFallback), says so at start (a warning) and in Status
// (ViaReason), instead of trying relays that answer 401.

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RelayAuthHeader carries a relay request's signature.
const RelayAuthHeader = "Heureka-Relay-Auth"

// RelayAuthWindow is how far a signed relay request's time may be from
// the relay's clock, either way: nodes of one datacenter keep their
// clocks within this by NTP.
const RelayAuthWindow = 2 * time.Minute

// reasonNoSharedKey is the ViaReason of every region while relays cannot
// be authenticated.
const reasonNoSharedKey = "relays off: HTTP basic auth is on and the cluster has no gossip key to sign relay requests with (set --gossip-key); this node follows the WAN itself"

// Relay authentication failures, as the caller is told (401).
var (
	errRelayAuthMalformed = errors.New("relay signature refused: malformed " + RelayAuthHeader + " header (want \"v1 t=<unix seconds> s=<base64url>\")")
	errRelayAuthNoKey     = errors.New("relay signature refused: this node has no gossip key to check it with (set the same --gossip-key on every node)")
	errRelayAuthWrong     = errors.New("relay signature refused: it matches no key of this node's gossip keyring (do the nodes share --gossip-key?)")
)

// relayKey derives the signing key from a gossip key.
func relayKey(gossipKey []byte) []byte {
	m := hmac.New(sha256.New, gossipKey)
	m.Write([]byte("heureka relay auth"))
	return m.Sum(nil)
}

// relayMAC is the signature of (method, path, t) under key.
func relayMAC(key []byte, method, path string, t int64) []byte {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "heureka-relay-v1\n%s\n%s\n%d", method, path, t)
	return m.Sum(nil)
}

// relayAuth signs and checks relay requests with a keyring.
type relayAuth struct {
	keys [][]byte // derived from Config.RelayKeys; the first signs
	now  func() time.Time
}

func newRelayAuth(keys [][]byte, now func() time.Time) *relayAuth {
	a := &relayAuth{now: now}
	for _, k := range keys {
		if len(k) > 0 {
			a.keys = append(a.keys, relayKey(k))
		}
	}
	return a
}

// sign sets req's signature; without a key it does nothing.
func (a *relayAuth) sign(req *http.Request) {
	if len(a.keys) == 0 {
		return
	}
	t := a.now().Unix()
	s := base64.RawURLEncoding.EncodeToString(relayMAC(a.keys[0], req.Method, req.URL.EscapedPath(), t))
	req.Header.Set(RelayAuthHeader, "v1 t="+strconv.FormatInt(t, 10)+" s="+s)
}

// check verifies r's signature: nil when one key of the keyring made it
// within the window.
func (a *relayAuth) check(r *http.Request) error {
	h := r.Header.Get(RelayAuthHeader)
	v, rest, _ := strings.Cut(strings.TrimSpace(h), " ")
	ts, sig, _ := strings.Cut(strings.TrimSpace(rest), " ")
	tv, okT := strings.CutPrefix(ts, "t=")
	sv, okS := strings.CutPrefix(strings.TrimSpace(sig), "s=")
	t, errT := strconv.ParseInt(tv, 10, 64)
	mac, errS := base64.RawURLEncoding.DecodeString(sv)
	if v != "v1" || !okT || !okS || errT != nil || errS != nil || len(mac) != sha256.Size {
		return errRelayAuthMalformed
	}
	if len(a.keys) == 0 {
		return errRelayAuthNoKey
	}
	if d := a.now().Sub(time.Unix(t, 0)); d > RelayAuthWindow || d < -RelayAuthWindow {
		return fmt.Errorf("relay signature refused: signed at %s, %s from this node's clock (at most %s either way; are the nodes' clocks synchronised?)",
			time.Unix(t, 0).UTC().Format(time.RFC3339), d.Round(time.Second), RelayAuthWindow)
	}
	for _, k := range a.keys {
		if hmac.Equal(mac, relayMAC(k, r.Method, r.URL.EscapedPath(), t)) {
			return nil
		}
	}
	return errRelayAuthWrong
}

// AuthenticateRelay implements httpapi.RelayAuthenticator: signed reports
// whether r carries a relay signature (RelayAuthHeader), and err whether
// it was refused. A request without one is left to basic auth.
func (f *Federation) AuthenticateRelay(r *http.Request) (signed bool, err error) {
	if r.Header.Get(RelayAuthHeader) == "" {
		return false, nil
	}
	return true, f.relayAuth.check(r)
}

// relaysBlocked reports whether relays cannot be used at all: the relay
// route asks for credentials and there is no key to sign with.
func (f *Federation) relaysBlocked() bool {
	return f.cfg.RelayNeedsAuth && len(f.relayAuth.keys) == 0
}
