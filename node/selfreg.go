package node

// Self-registration
//
// With Config.SelfRegister, a node registers itself in its own registry as
// an instance of application HEUREKA, so that clients, dashboards and
// operators can list the servers with the Eureka API they already use
// (GET /eureka/apps/HEUREKA). It behaves exactly like a client, through the
// registry's own Register, Renew and Cancel (never marked replicated), so
// the instance replicates to every member, its renewals count for
// self-preservation and are forwarded to the owner, and when the node dies
// without leaving, the owner evicts it once its lease runs out. A graceful
// Stop cancels it first.
//
// The instance: instanceId is the node name; hostName and ipAddr are the
// address that serves this node's HTTP API (the HTTP listener's IP when it
// is bound to one, otherwise the gossip address the node advertises to its
// peers, otherwise the first private IP of the host); port is the HTTP port;
// metadata carries the gossip address, the version and the Eureka service
// URL. With TLS the port is the secure port and the URLs are https. The lease is renewed every ExpectedClientRenewalInterval, as the
// registry expects of any client, and lasts three intervals (Eureka's 30 s
// and 90 s by default). A renewal answered "not found" (the instance was
// evicted while this node was cut off, or replaced by an older copy during
// an initial sync) registers again, as a Eureka client does.

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/heureka/heureka/actors"
)

// SelfApp is the application under which every node registers itself.
const SelfApp = "HEUREKA"

// Metadata keys of a node's own instance.
const (
	MetaGossipAddr = "gossipAddr" // host:port peers gossip with ("" for a single node)
	MetaVersion    = "version"    // the node's version
	MetaServiceURL = "serviceUrl" // the Eureka service URL clients use
)

// selfRegistration keeps this node's instance registered. It has one
// goroutine, started by startSelfRegistration and stopped by stop.
type selfRegistration struct {
	reg      *actors.Registry
	inst     *actors.Instance // the template registered; never modified
	interval time.Duration
	log      *slog.Logger

	stopOnce sync.Once
	ctx      context.Context // cancelled by stop: ends a call in progress
	cancel   context.CancelFunc
	done     chan struct{} // closed when run returns
}

// selfInstance returns the instance a node registers for itself.
func selfInstance(name, version, scheme, host string, httpPort int, gossip string, interval time.Duration) *actors.Instance {
	secs := max(1, int(math.Ceil(interval.Seconds())))
	base := scheme + "://" + net.JoinHostPort(host, strconv.Itoa(httpPort))
	meta := map[string]string{MetaVersion: version, MetaServiceURL: base + "/eureka/"}
	if gossip != "" {
		meta[MetaGossipAddr] = gossip
	}
	inst := &actors.Instance{
		InstanceID:     name,
		HostName:       host,
		App:            SelfApp,
		IPAddr:         host,
		Status:         actors.StatusUp,
		Port:           actors.Port{Number: httpPort, Enabled: scheme == "http"},
		SecurePort:     actors.Port{Number: httpPort, Enabled: scheme == "https"},
		DataCenterInfo: actors.DataCenterInfo{Class: "com.netflix.appinfo.InstanceInfo$DefaultDataCenterInfo", Name: "MyOwn"},
		LeaseInfo:      actors.LeaseInfo{RenewalIntervalSecs: secs, DurationSecs: 3 * secs},
		Metadata:       meta,
		HomePageURL:    base + "/",
		StatusPageURL:  base + "/eureka/status",
		HealthCheckURL: base + "/healthz",
		VIPAddress:     "heureka",
	}
	if scheme == "https" {
		inst.SecureVIPAddress = inst.VIPAddress
		inst.SecureHealthCheckURL, inst.HealthCheckURL = inst.HealthCheckURL, ""
	}
	inst.Normalize()
	return inst
}

// selfHost picks the address that reaches this node's HTTP API: the HTTP
// listener's IP when it is bound to one, else the host of the advertised
// gossip address, else the first private IPv4 of the host, else loopback.
func selfHost(httpAddr net.Addr, gossip string) string {
	if ta, ok := httpAddr.(*net.TCPAddr); ok && ta.IP != nil && !ta.IP.IsUnspecified() {
		return ta.IP.String()
	}
	if h, _, err := net.SplitHostPort(gossip); err == nil && h != "" {
		if ip := net.ParseIP(h); ip == nil || !ip.IsUnspecified() {
			return h
		}
	}
	if addrs, err := net.InterfaceAddrs(); err == nil {
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && ipn.IP.IsPrivate() {
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// startSelfRegistration starts keeping this node's own instance
// registered. It runs at the end of Start, once the HTTP listener and the
// membership (whose advertised address it reads) are up.
func (n *Node) startSelfRegistration() {
	gossip := ""
	if n.members != nil {
		gossip = n.members.LocalNode().Address
	}
	addr := n.listener.Addr()
	port := 0
	if ta, ok := addr.(*net.TCPAddr); ok {
		port = ta.Port
	}
	interval := n.cfg.Registry.ExpectedClientRenewalInterval
	if interval <= 0 {
		interval = actors.DefaultRenewalIntervalSecs * time.Second
	}
	inst := selfInstance(n.cfg.Name, n.cfg.Version, n.Scheme(), selfHost(addr, gossip), port, gossip, interval)
	n.selfReg = newSelfRegistration(n.registry, inst, interval, n.log)
}

// newSelfRegistration registers inst and keeps renewing it every interval
// until stop.
func newSelfRegistration(reg *actors.Registry, inst *actors.Instance, interval time.Duration, log *slog.Logger) *selfRegistration {
	ctx, cancel := context.WithCancel(context.Background())
	s := &selfRegistration{reg: reg, inst: inst, interval: interval, log: log.With("component", "self-registration"),
		ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go s.run()
	return s
}

// run registers, then renews every interval; a failed registration is
// retried at the next tick.
func (s *selfRegistration) run() {
	defer close(s.done)
	t := time.NewTicker(s.interval)
	defer t.Stop()
	registered := s.register()
	for {
		select {
		case <-s.ctx.Done():
			return
		case <-t.C:
		}
		if !registered {
			registered = s.register()
			continue
		}
		// The registry bounds the call by its RequestTimeout.
		res, err := s.reg.Renew(s.ctx, actors.RenewRequest{App: s.inst.App, ID: s.inst.ID()})
		switch {
		case errors.Is(err, actors.ErrClosed), s.ctx.Err() != nil:
			return
		case err != nil:
			s.log.Warn("renewing this node's own instance", "err", err)
		case res.Outcome == actors.RenewNotFound:
			s.log.Info("this node's own instance is gone from the registry; registering again")
			registered = s.register()
		}
	}
}

// register registers the instance and reports whether it succeeded.
func (s *selfRegistration) register() bool {
	// Register keeps the instance it is given: give it a copy, stamped now
	// so that it is newer than what an earlier run of this node left.
	inst := s.inst.Clone()
	inst.LastDirtyTimestamp = time.Now().UnixMilli()
	if err := s.reg.Register(s.ctx, inst, false); err != nil {
		if !errors.Is(err, actors.ErrClosed) && s.ctx.Err() == nil {
			s.log.Warn("registering this node's own instance", "err", err)
		}
		return false
	}
	s.log.Debug("registered this node's own instance", "app", inst.App, "id", inst.ID(), "url", inst.HomePageURL)
	return true
}

// stop ends the renewals and cancels the instance, so that the other
// members drop it at once instead of evicting it after its lease. It is
// idempotent.
func (s *selfRegistration) stop(ctx context.Context) {
	s.stopOnce.Do(func() {
		s.cancel()
		<-s.done
		if _, err := s.reg.Cancel(ctx, s.inst.App, s.inst.ID(), false); err != nil && !errors.Is(err, actors.ErrClosed) {
			s.log.Warn("cancelling this node's own instance", "err", err)
		}
	})
}
