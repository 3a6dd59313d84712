// Package freeport hands out ports for the tests and benchmarks that start
// servers, never the same port twice in one process.
//
// A port is found by listening on it and closing the listener, so that the
// server under test can bind it. It is drawn at random from below the
// kernel's ephemeral range (net.ipv4.ip_local_port_range): a port of that
// range, the kernel's answer to port 0, may be taken between the check and
// the server's bind by any process's outgoing connection (a CI run lost a
// gossip port that way while other packages' tests ran beside it). The
// package also remembers what it handed out and skips it: two nodes of one
// test cluster once got the same port.
package freeport

import (
	"errors"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// listen listens on a candidate port of host (a variable so that tests can
// offer the same port twice).
var listen = func(host string) (net.Listener, error) {
	return net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(candidate())))
}

// spread is how many ports below the ephemeral range Port draws from.
const spread = 12000

// ephemeralLow is the first port of the kernel's ephemeral range (32768,
// Linux's default, where the kernel does not say).
var ephemeralLow = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if lo, err := strconv.Atoi(f[0]); err == nil && lo > spread+1024 {
				return lo
			}
		}
	}
	return 32768
})

// candidate returns a random port below the ephemeral range.
func candidate() int { return ephemeralLow() - 1 - rand.IntN(spread) }

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// claim reports whether port was not handed out before, and marks it.
func claim(port int) bool {
	handedOut.Lock()
	defer handedOut.Unlock()
	if handedOut.ports[port] {
		return false
	}
	handedOut.ports[port] = true
	return true
}

// Port returns a port free for TCP on host ("127.0.0.1", or "" for every
// interface) and, if udp, for UDP too (memberlist's gossip uses both on one
// number), that this process has not been given before.
func Port(host string, udp bool) (int, error) {
	var lastErr error
	for range 200 {
		l, err := listen(host)
		if err != nil {
			lastErr = err // taken, most likely: draw another
			continue
		}
		port := l.Addr().(*net.TCPAddr).Port
		ok := true
		if udp {
			pc, err := net.ListenPacket("udp", net.JoinHostPort(host, strconv.Itoa(port)))
			if ok = err == nil; ok {
				_ = pc.Close()
			}
		}
		_ = l.Close()
		if ok && claim(port) {
			return port, nil
		}
	}
	return 0, errors.Join(errors.New("freeport: no free port in 200 tries"), lastErr)
}
