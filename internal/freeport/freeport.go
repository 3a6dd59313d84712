// Package freeport hands out ports for the tests and benchmarks that start
// servers, never the same port twice in one process.
//
// A port is found by listening on port 0 and closing the listener, so that
// the server under test can bind it. The kernel may then give the same
// number to the next listener on port 0: two nodes of one test cluster once
// got the same gossip port that way, and one could not start. The package
// remembers what it handed out and skips it.
package freeport

import (
	"errors"
	"net"
	"strconv"
	"sync"
)

// listen finds a port the kernel offers on host (a variable so that tests
// can offer the same port twice).
var listen = func(host string) (net.Listener, error) { return net.Listen("tcp", net.JoinHostPort(host, "0")) }

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
	for range 50 {
		l, err := listen(host)
		if err != nil {
			return 0, err
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
	return 0, errors.New("freeport: no free port in 50 tries")
}
