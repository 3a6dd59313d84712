//go:build linux

package netns

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The lab's network, all of it inside namespaces of its own (nothing is
// added to the root namespace):
//
//	hk-<run>-br   bridge br0; one port v<i> per node, and vc for the clients
//	hk-<run>-c    eth0 10.77.0.2/24: the Eureka clients and the observer
//	hk-<run>-n<i> eth0 10.77.0.<10+i>/24: one heureka process
//
// Every eth0 is a veth whose peer is the bridge port. Faults act on the
// bridge ports, in hk-<run>-br: a link down is `ip link set v<i> down`
// (carrier lost on the node's eth0); loss and partitions are classic BPF
// filters on the ports' clsact egress hooks (see bpf.go), that is on what
// the bridge delivers to a host. Loss on every port, the clients' included,
// drops that share of the packets on every path between two hosts, each
// way once. (A filter on the sending interface's own egress hook would
// report the drop to the sending socket, ENOBUFS: ping resends, TCP
// retransmits at once. That is not what a lossy wire does, so the filters
// sit on the bridge side.)

// Prefix starts the name of every namespace a lab creates.
const Prefix = "hk-"

const (
	subnet   = "10.77.0"
	clientIP = subnet + ".2"
	// Filter preferences on a bridge port: loss runs first, then the
	// partition; both return "no verdict" for what they do not drop.
	prefLoss      = "10"
	prefPartition = "20"
)

// Lab is one run's namespaces, veths and bridge.
type Lab struct {
	// Run names the run: every namespace is hk-<Run>-….
	Run   string
	Nodes []string

	mu        sync.Mutex
	loss      map[string]int // part → percent
	partition bool
	down      map[string]bool
}

// NodeIP returns the address of node i.
func NodeIP(i int) string { return fmt.Sprintf("%s.%d", subnet, 10+i) }

// NS returns the name of the namespace of part ("br", "c", "n0", …).
func (l *Lab) NS(part string) string { return Prefix + l.Run + "-" + part }

// NSPath is where `ip netns` keeps the namespace of part.
func (l *Lab) NSPath(part string) string { return "/var/run/netns/" + l.NS(part) }

// IP returns the address of the named node.
func (l *Lab) IP(node string) string { return NodeIP(l.index(node)) }

func (l *Lab) index(node string) int {
	i := slices.Index(l.Nodes, node)
	if i < 0 {
		panic("netns: unknown node " + node)
	}
	return i
}

// port is the bridge-side name of the veth of part: a node, or "c".
func (l *Lab) port(part string) string {
	if part == "c" {
		return "vc"
	}
	return "v" + strconv.Itoa(l.index(part))
}

// run runs a command and returns its error with its output.
func runCmd(ctx context.Context, name string, args ...string) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, bytes.TrimSpace(out))
	}
	return nil
}

// NewLab creates the namespaces of run for the named nodes, and the bridge,
// veths and addresses between them. On failure it removes what it made.
func NewLab(ctx context.Context, run string, nodes []string) (lab *Lab, err error) {
	if len(nodes) > 200 {
		return nil, fmt.Errorf("netns: %d nodes: at most 200", len(nodes))
	}
	l := &Lab{Run: run, Nodes: nodes, loss: map[string]int{}, down: map[string]bool{}}
	defer func() {
		if err != nil {
			_ = l.Close()
		}
	}()
	br := l.NS("br")
	steps := [][]string{
		{"netns", "add", br},
		{"-n", br, "link", "set", "lo", "up"},
		{"-n", br, "link", "add", "br0", "type", "bridge"},
		{"-n", br, "link", "set", "br0", "up"},
	}
	attach := func(part, port, ip string) {
		ns := l.NS(part)
		steps = append(steps,
			[]string{"netns", "add", ns},
			[]string{"-n", ns, "link", "set", "lo", "up"},
			[]string{"-n", ns, "link", "add", "eth0", "type", "veth", "peer", "name", port, "netns", br},
			[]string{"-n", ns, "addr", "add", ip + "/24", "dev", "eth0"},
			[]string{"-n", ns, "link", "set", "eth0", "up"},
			[]string{"-n", br, "link", "set", port, "master", "br0", "up"},
		)
	}
	attach("c", "vc", clientIP)
	for i, n := range nodes {
		attach(n, "v"+strconv.Itoa(i), NodeIP(i))
	}
	for _, s := range steps {
		if err := runCmd(ctx, "ip", s...); err != nil {
			return nil, err
		}
	}
	for _, part := range append([]string{"c"}, nodes...) {
		if err := runCmd(ctx, "ip", "netns", "exec", br, "tc", "qdisc", "add", "dev", l.port(part), "clsact"); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// tc runs tc in the bridge namespace.
func (l *Lab) tc(ctx context.Context, args ...string) error {
	return runCmd(ctx, "ip", append([]string{"netns", "exec", l.NS("br"), "tc"}, args...)...)
}

// LinkDown takes node's bridge port down: its eth0 loses carrier and no
// packet reaches it or leaves it, from peers or clients.
func (l *Lab) LinkDown(ctx context.Context, node string) error {
	l.mu.Lock()
	l.down[node] = true
	l.mu.Unlock()
	return runCmd(ctx, "ip", "-n", l.NS("br"), "link", "set", l.port(node), "down")
}

// LinkUp brings node's bridge port back.
func (l *Lab) LinkUp(ctx context.Context, node string) error {
	l.mu.Lock()
	delete(l.down, node)
	l.mu.Unlock()
	return runCmd(ctx, "ip", "-n", l.NS("br"), "link", "set", l.port(node), "up")
}

// SetLoss drops pct percent of the packets the bridge delivers to part (a
// node, or "c" for the clients' namespace), at random; 0 removes the
// filter.
func (l *Lab) SetLoss(ctx context.Context, part string, pct int) error {
	l.mu.Lock()
	had := l.loss[part] > 0
	if pct > 0 {
		l.loss[part] = pct
	} else {
		delete(l.loss, part)
	}
	l.mu.Unlock()
	port := l.port(part)
	if had {
		if err := l.tc(ctx, "filter", "del", "dev", port, "egress", "pref", prefLoss); err != nil {
			return err
		}
	}
	if pct > 0 {
		return l.tc(ctx, "filter", "add", "dev", port, "egress", "pref", prefLoss, "bpf", "da", "bytecode", LossProgram(pct))
	}
	return nil
}

// Partition cuts the nodes into groups: on every node's bridge port, the
// egress filter drops IPv4 packets from the nodes of the other groups. The
// client namespace still reaches every node (clients keep to their side by
// themselves, see Topology).
func (l *Lab) Partition(ctx context.Context, groups ...[]string) error {
	if err := l.Heal(ctx); err != nil {
		return err
	}
	side := map[string]int{}
	for gi, g := range groups {
		for _, n := range g {
			side[n] = gi
		}
	}
	for _, n := range l.Nodes {
		gi, ok := side[n]
		if !ok {
			continue
		}
		var others []netip.Addr
		for _, m := range l.Nodes {
			if gj, ok := side[m]; ok && gj != gi {
				others = append(others, netip.MustParseAddr(l.IP(m)))
			}
		}
		if len(others) == 0 {
			continue
		}
		if err := l.tc(ctx, "filter", "add", "dev", l.port(n), "egress", "pref", prefPartition, "bpf", "da", "bytecode", DropFromProgram(others)); err != nil {
			return err
		}
		l.mu.Lock()
		l.partition = true
		l.mu.Unlock()
	}
	return nil
}

// Heal removes the partition filters.
func (l *Lab) Heal(ctx context.Context) error {
	l.mu.Lock()
	had := l.partition
	l.partition = false
	l.mu.Unlock()
	if !had {
		return nil
	}
	var errs []error
	for _, n := range l.Nodes {
		// A node alone in no group has no filter: ignore "not found".
		if err := l.tc(ctx, "filter", "del", "dev", l.port(n), "egress", "pref", prefPartition); err != nil &&
			!strings.Contains(err.Error(), "not find") && !strings.Contains(err.Error(), "No such file") {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Ping sends count pings from the namespace of part to ip, interval apart,
// and returns how many were sent and answered (ping from iputils).
func (l *Lab) Ping(ctx context.Context, part, ip string, count int, interval time.Duration) (sent, received int, err error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(count)*interval+10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", l.NS(part), "ping", "-q", "-n",
		"-c", strconv.Itoa(count), "-i", fmt.Sprintf("%.3f", interval.Seconds()), "-W", "1", ip).CombinedOutput()
	// ping exits 1 when some replies were lost: read its summary anyway.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "packets transmitted") {
			if _, serr := fmt.Sscanf(line, "%d packets transmitted, %d received", &sent, &received); serr == nil {
				return sent, received, nil
			}
		}
	}
	if err == nil {
		err = errors.New("no summary line")
	}
	return 0, 0, fmt.Errorf("ping %s from %s: %w: %s", ip, l.NS(part), err, bytes.TrimSpace(out))
}

// TCPCounters reads the TCP counters of the namespace of part (nstat:
// TcpActiveOpens, TcpOutSegs, TcpRetransSegs, TcpExtTCPSynRetrans), as
// absolute values since the namespace was made.
func (l *Lab) TCPCounters(ctx context.Context, part string) (map[string]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", "netns", "exec", l.NS(part), "nstat", "-asz",
		"TcpActiveOpens", "TcpOutSegs", "TcpRetransSegs", "TcpExtTCPSynRetrans").Output()
	if err != nil {
		return nil, fmt.Errorf("nstat in %s: %w", l.NS(part), err)
	}
	m := map[string]int64{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && !strings.HasPrefix(f[0], "#") {
			if v, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				m[f[0]] = v
			}
		}
	}
	return m, nil
}

// Close kills every process left in the run's namespaces and deletes them.
func (l *Lab) Close() error { return CleanupRun(l.Run) }

// Namespaces lists the namespaces of run that exist.
func Namespaces(run string) ([]string, error) {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil, fmt.Errorf("ip netns list: %w", err)
	}
	var names []string
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], Prefix+run+"-") {
			names = append(names, f[0])
		}
	}
	return names, nil
}

// CleanupRun removes everything of run: it lists `ip netns list` for
// hk-<run>-…, SIGKILLs every process in each (`ip netns pids`), waits for
// them to go and deletes the namespace, which destroys its veths and
// bridge. It is safe to call any number of times, from another process too
// (make chaos-netns does the same in shell after the test).
func CleanupRun(run string) error {
	names, err := Namespaces(run)
	if err != nil {
		return err
	}
	var errs []error
	for _, ns := range names {
		pids := nsPids(ns)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		deadline := time.Now().Add(5 * time.Second)
		for _, pid := range pids {
			for alive(pid) && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
		}
		if err := runCmd(context.Background(), "ip", "netns", "del", ns); err != nil {
			errs = append(errs, err)
		}
	}
	if left, _ := Namespaces(run); len(left) > 0 {
		errs = append(errs, fmt.Errorf("netns: namespaces left after cleanup: %s", strings.Join(left, " ")))
	}
	return errors.Join(errs...)
}

// nsPids lists the processes in a namespace.
func nsPids(ns string) []int {
	out, _ := exec.Command("ip", "netns", "pids", ns).Output()
	var pids []int
	for _, f := range strings.Fields(string(out)) {
		if pid, err := strconv.Atoi(f); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// alive reports whether pid still exists and is not a zombie we could
// ignore: a zombie has exited and holds no namespace.
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 && i+2 < len(s) {
		return s[i+2] != 'Z'
	}
	return true
}

// Preflight reports why this machine cannot run the lab, or nil: it needs
// root, ip, tc and ping, and must be able to create a namespace.
func Preflight(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return errors.New("not root: creating network namespaces needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN)")
	}
	for _, tool := range []string{"ip", "tc", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("no %s command (iproute2 has ip and tc, iputils-ping has ping)", tool)
		}
	}
	probe := fmt.Sprintf("%spreflight-%d", Prefix, os.Getpid())
	if err := runCmd(ctx, "ip", "netns", "add", probe); err != nil {
		return fmt.Errorf("cannot create a network namespace: %w", err)
	}
	return runCmd(ctx, "ip", "netns", "del", probe)
}
