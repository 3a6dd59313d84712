package main

// Which address a node gives its peers, and which URL it gives clients.
//
// A node that listens for gossip on every interface (":7946", the default)
// must tell its peers one address to dial. Left to itself, memberlist takes
// the first "private" address of the host, and an IPv6 unique local address
// such as fd00::2 counts: on a host whose IPv4 address is not RFC 1918, every
// node then advertises [fd00::2], even when all of them join over 127.0.0.1,
// and /eureka/status lists replica URLs nobody expects. chooseAdvertise
// instead takes the address that matches how the node joins: the local
// address the kernel routes to a seed (a node that joins 127.0.0.1 advertises
// 127.0.0.1; one that joins 10.0.0.5 advertises its own 10.x address), and
// without seeds the first address of the listen address's family (IPv4 for
// ":7946" and "0.0.0.0", IPv6 for "[::]"). --advertise-addr overrides it all.

import (
	"context"
	"net"
	"strconv"
	"time"

	"github.com/heureka/heureka/cluster"
)

// Lookups that tests replace.
var (
	// interfaceAddrs lists the unicast addresses of the host's up
	// interfaces, in interface order.
	interfaceAddrs = func() ([]net.IP, error) {
		ifs, err := net.Interfaces()
		if err != nil {
			return nil, err
		}
		var out []net.IP
		for _, ifc := range ifs {
			if ifc.Flags&net.FlagUp == 0 {
				continue
			}
			addrs, err := ifc.Addrs()
			if err != nil {
				continue
			}
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok {
					out = append(out, ipn.IP)
				}
			}
		}
		return out, nil
	}
	// routeTo returns the local address the kernel would send from to reach
	// ip. Connecting a UDP socket sends nothing; it only picks the route.
	routeTo = func(ip net.IP) (net.IP, error) {
		c, err := net.DialUDP("udp", nil, &net.UDPAddr{IP: ip, Port: cluster.DefaultPort})
		if err != nil {
			return nil, err
		}
		defer c.Close()
		return c.LocalAddr().(*net.UDPAddr).IP, nil
	}
	// lookupHost resolves a seed's DNS name.
	lookupHost = net.DefaultResolver.LookupHost
)

// seedLookupTimeout bounds the resolution of DNS seeds when choosing the
// advertised address (joining resolves them again, and retries).
const seedLookupTimeout = 2 * time.Second

// chooseAdvertise returns the IP this node should advertise for gossip when
// it listens on bindHost and joins seeds, or "" when memberlist's own choice
// is right (bindHost is a specific address, which memberlist advertises).
// See the file comment for the order of preference.
func chooseAdvertise(bindHost string, seeds []string) string {
	bind := net.ParseIP(bindHost)
	if bind != nil && !bind.IsUnspecified() {
		return ""
	}
	for _, s := range seeds {
		for _, ip := range resolveSeed(s) {
			if local, err := routeTo(ip); err == nil && local != nil && !local.IsUnspecified() {
				return local.String()
			}
		}
	}
	return firstAddress(bind == nil || bind.To4() != nil)
}

// firstAddress returns the first global unicast address of the host, of the
// IPv4 family first when preferV4 (else IPv6 first), then of the other;
// failing those a loopback address of the preferred family; "" if there is
// nothing at all.
func firstAddress(preferV4 bool) string {
	addrs, err := interfaceAddrs()
	if err != nil {
		return ""
	}
	isV4 := func(ip net.IP) bool { return ip.To4() != nil }
	for _, wantV4 := range []bool{preferV4, !preferV4} {
		for _, ip := range addrs {
			if isV4(ip) == wantV4 && ip.IsGlobalUnicast() {
				return ip.String()
			}
		}
	}
	for _, ip := range addrs {
		if ip.IsLoopback() && isV4(ip) == preferV4 {
			return ip.String()
		}
	}
	return ""
}

// resolveSeed returns the IPs of one --join element (host:port, host, or a
// bare IPv6 address): the literal, or what its name resolves to within
// seedLookupTimeout (nothing if it does not resolve yet).
func resolveSeed(seed string) []net.IP {
	host := seed
	if ip := net.ParseIP(seed); ip == nil {
		if h, _, err := net.SplitHostPort(seed); err == nil {
			host = h
		}
	}
	if ip := net.ParseIP(host); ip != nil {
		return []net.IP{ip}
	}
	ctx, cancel := context.WithTimeout(context.Background(), seedLookupTimeout)
	defer cancel()
	names, err := lookupHost(ctx, host)
	if err != nil {
		return nil
	}
	var out []net.IP
	for _, n := range names {
		if ip := net.ParseIP(n); ip != nil {
			out = append(out, ip)
		}
	}
	return out
}

// clientURL is the Eureka service URL to give clients of a node whose HTTP
// API listens on listenAddr: http://host:port/eureka/, where host is the
// listen host, or, when that is every interface, the host the node
// advertises to its peers (advertised), or the first address of the host.
func clientURL(listenAddr, advertised string) string {
	host, port, err := splitHost(listenAddr)
	if err != nil {
		return "http://" + listenAddr + "/eureka/"
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = advertised
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = firstAddress(true)
		}
		if host == "" {
			host = "localhost"
		}
	}
	return "http://" + net.JoinHostPort(host, port) + "/eureka/"
}

// splitHost is net.SplitHostPort.
func splitHost(addr string) (host, port string, err error) {
	host, port, err = net.SplitHostPort(addr)
	if err == nil {
		if _, perr := strconv.Atoi(port); perr != nil {
			err = perr
		}
	}
	return host, port, err
}
