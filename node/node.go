// Package node assembles one Heureka node: the registry actors, the read
// view, the Eureka HTTP API and (when configured) cluster membership and
// replication. The heureka command, the tests and the simulations all start
// nodes through it, so they exercise the production wiring.
package node

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/heureka/heureka/actors"
	"github.com/heureka/heureka/actors/view"
	"github.com/heureka/heureka/cluster"
	"github.com/heureka/heureka/eureka"
	"github.com/heureka/heureka/eurekapeer"
	"github.com/heureka/heureka/federation"
	"github.com/heureka/heureka/httpapi"
	"github.com/heureka/heureka/httpapi/dashboard"
)

// Config configures a node.
type Config struct {
	// Name is the node's name, unique in its cluster.
	Name string
	// HTTPAddr is where the Eureka API listens (":8761"; "127.0.0.1:0"
	// picks a free port).
	HTTPAddr string
	// Registry configures the actors (its NodeName, Logger and Sinks are
	// filled in by the node).
	Registry actors.Config
	// View configures the read side (its Encoders are filled in).
	View view.Config
	// MaxBodyBytes limits request bodies. Default 1 MiB.
	MaxBodyBytes int64
	// WriteTimeout bounds the writing of one HTTP response, so that a client
	// that stops reading cannot hold a connection and its buffers forever.
	// Default 2m (a full registry of 1M instances in JSON is ~1 GB); must be
	// positive.
	WriteTimeout time.Duration
	// MaxHeaderBytes limits the size of a request's header lines, request
	// line included (http.Server.MaxHeaderBytes); a larger header gets 431.
	// Eureka clients send well under 2 KiB. Default 64 KiB; must not be
	// negative.
	MaxHeaderBytes int
	// Auth turns HTTP basic authentication on (httpapi.AuthConfig); nil or
	// no users: the API is open.
	Auth *httpapi.AuthConfig
	// RateLimit limits registry fetches like Eureka's RateLimitingFilter
	// (httpapi.RateLimitConfig); nil: no limit.
	RateLimit *httpapi.RateLimitConfig
	// TLSCertFile and TLSKeyFile are PEM files of the certificate (chain
	// first, as tls.LoadX509KeyPair reads them) and private key the node
	// serves HTTPS with; both empty: plain HTTP. They are read at Start and
	// again by ReloadTLS (see tls.go).
	TLSCertFile, TLSKeyFile string
	// Version is reported by /eureka/status.
	Version string
	// Logger receives all logs. Default: discard.
	Logger *slog.Logger
	// Cluster configures membership; nil runs a single node. Its NodeName,
	// Logger, Delegate and Events are filled in by the node.
	Cluster *cluster.Config
	// Replication configures replication (used with Cluster). Its Logger,
	// Clock and Meta are filled in.
	Replication cluster.ReplicatorConfig
	// SelfRegister registers the node in its own registry as an instance of
	// application HEUREKA, renewed every Registry.ExpectedClientRenewalInterval
	// like any client's and cancelled by Stop (see selfreg.go). Off in
	// DefaultConfig, so that tests and simulations count only their own
	// instances; the heureka command turns it on.
	SelfRegister bool
	// EurekaPeers, when set, replicates this node's client changes into
	// legacy Eureka servers (package eurekapeer; --eureka-peers). Its
	// Registry, Logger and Metrics are filled in by the node. nil: none.
	EurekaPeers *eurekapeer.Config
	// Push configures blocking reads and the change stream
	// (httpapi.PushConfig); nil: httpapi.DefaultPushConfig.
	Push *httpapi.PushConfig
	// Federation, when set with remote regions, pulls those regions and
	// serves them on ?regions= reads (package federation; --region,
	// --remote-region). Its Logger and Metrics are filled in by the node,
	// and with Cluster its Members (Links of the members then hold each
	// region's WAN link, the others follow them). nil or no remote region:
	// ?regions= is ignored.
	Federation *federation.Config
}

// DefaultConfig returns a node on ":8761" with Eureka's defaults.
func DefaultConfig(name string) Config {
	return Config{
		Name:           name,
		HTTPAddr:       ":8761",
		Registry:       actors.DefaultConfig(name),
		View:           view.DefaultConfig(eureka.Encoders()),
		MaxBodyBytes:   1 << 20,
		MaxHeaderBytes: defaultMaxHeaderBytes,
		WriteTimeout:   2 * time.Minute,
		Version:        "dev",
	}
}

// Node is one running Heureka node.
type Node struct {
	cfg      Config
	log      *slog.Logger
	registry *actors.Registry
	view     *view.View
	api      *httpapi.Server
	server   *http.Server
	listener net.Listener
	certs    *certReloader // nil: plain HTTP

	members     *cluster.Membership
	replicator  *cluster.Replicator
	unsubscribe func()

	metrics *prometheus.Registry   // served at /metrics (see metrics.go)
	eureka  *eurekapeer.Sender     // nil unless Config.EurekaPeers
	fed     *federation.Federation // nil unless Config.Federation has remotes
	selfReg *selfRegistration      // nil unless Config.SelfRegister

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopping chan struct{} // closed when Stop begins
	stopOnce sync.Once
	stopErr  error
}

// Start starts a node and returns once it serves HTTP.
func Start(cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.WriteTimeout <= 0 {
		return nil, fmt.Errorf("node: WriteTimeout %v must be positive", cfg.WriteTimeout)
	}
	if err := checkSecurity(&cfg); err != nil {
		return nil, err
	}
	certs, err := newCertReloader(cfg.TLSCertFile, cfg.TLSKeyFile)
	if err != nil {
		return nil, err
	}
	log := cfg.Logger.With("node", cfg.Name)
	cfg.View.Encoders = eureka.Encoders()
	v := view.New(cfg.View)

	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		return nil, fmt.Errorf("node: listen on %s: %w", cfg.HTTPAddr, err)
	}
	n := &Node{cfg: cfg, log: log, view: v, listener: ln, certs: certs, stopping: make(chan struct{})}

	rc := cfg.Registry
	rc.NodeName = cfg.Name
	rc.Logger = log
	events := httpapi.NewEventMetrics()
	rc.Sinks = append([]actors.Sink{v, events}, rc.Sinks...)
	rc.OnRenew = chainOnRenew(rc.OnRenew, events.OnRenew)
	if cfg.Cluster != nil {
		// The replicator is a sink and the ownership oracle of the
		// registry, and the registry is the replicator's store: build the
		// replicator first and attach the registry afterwards.
		repl := cfg.Replication
		repl.Logger = log
		repl.Clock = rc.Clock
		// Peers learn this node's HTTP port; its host is the one they
		// gossip with.
		_, httpPort, _ := net.SplitHostPort(ln.Addr().String())
		repl.Meta = []byte(httpPort)
		// Every member must hear every quarter of the renewal window (the
		// window self-preservation slides by): scaled with it, or refused.
		quarter := max(rc.RenewalWindow/4, time.Millisecond)
		switch {
		case repl.LoadInterval == 0:
			repl.LoadInterval = quarter
		case repl.LoadInterval > quarter:
			_ = ln.Close()
			return nil, fmt.Errorf("node: Replication.LoadInterval %v must be at most a quarter of Registry.RenewalWindow %v",
				repl.LoadInterval, rc.RenewalWindow)
		}
		r, err := cluster.NewReplicator(repl)
		if err != nil {
			_ = ln.Close()
			return nil, fmt.Errorf("node: %w", err)
		}
		n.replicator = r
		rc.Sinks = append(rc.Sinks, n.replicator)
		rc.Ownership = n.replicator
		rc.Peers = n.replicator
		rc.OnRenew = chainOnRenew(rc.OnRenew, n.replicator.OnRenew)
	}
	reg, err := actors.NewRegistry(rc)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	n.registry = reg
	n.metrics = newMetricsRegistry()
	n.metrics.MustRegister(events)
	var apiReg httpapi.Registry = reg
	if cfg.EurekaPeers != nil {
		// The API writes through an observer that queues its clients'
		// changes for the Eureka peers; the rest of the node (replication,
		// self-registration, the dashboard) uses the registry directly.
		ec := *cfg.EurekaPeers
		ec.Registry = reg
		ec.Logger = log
		ec.Metrics = n.metrics
		s, err := eurekapeer.New(ec)
		if err != nil {
			_ = ln.Close()
			reg.Close()
			return nil, fmt.Errorf("node: %w", err)
		}
		n.eureka = s
		apiReg = eurekapeer.Observe(reg, s)
	}
	if fc := cfg.Federation; fc != nil && len(fc.Remotes) > 0 {
		c := *fc
		c.Logger = log
		c.Metrics = n.metrics
		if cfg.Cluster != nil && c.Members == nil {
			c.Members = fedMembers{n} // a few members hold each WAN link
		}
		f, err := federation.New(c, eureka.Encoders())
		if err != nil {
			_ = ln.Close()
			if n.eureka != nil {
				_ = n.eureka.Close(context.Background())
			}
			reg.Close()
			return nil, fmt.Errorf("node: %w", err)
		}
		n.fed = f
	}
	apiCfg := httpapi.Config{
		Registry:     apiReg,
		View:         v,
		NodeName:     cfg.Name,
		Version:      cfg.Version,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Auth:         cfg.Auth,
		RateLimit:    cfg.RateLimit,
		Push:         cfg.Push,
		Logger:       log,
		Metrics:      n.metrics,
	}
	if n.fed != nil {
		apiCfg.Regions = n.fed
	}
	if cfg.Cluster != nil {
		if err := n.startCluster(log); err != nil {
			_ = ln.Close()
			if n.eureka != nil {
				_ = n.eureka.Close(context.Background())
			}
			reg.Close()
			return nil, err
		}
		apiCfg.Cluster = clusterView{n}
		apiCfg.EvictionHolds = evictionHolds{n.replicator}
		apiCfg.Ready = n.replicator.Ready
		apiCfg.ReadyReason = func() string { return n.replicator.Readiness().Reason }
	}
	// The dashboard reads what the API reads: the same view, registry,
	// members and holds on eviction.
	dc := dashboard.Config{View: v, Registry: reg, Cluster: apiCfg.Cluster,
		EvictionHolds: apiCfg.EvictionHolds, Ready: apiCfg.Ready, ReadyReason: apiCfg.ReadyReason, NodeName: cfg.Name, Version: cfg.Version}
	if n.fed != nil {
		dc.Regions = n.fed
	}
	apiCfg.Dashboard = dashboard.New(dc)
	n.api = httpapi.New(apiCfg)
	n.metrics.MustRegister(httpapi.NewClusterCollector(clusterStats{n}))
	n.server = &http.Server{
		Handler:           n.api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute, // a body that trickles in does not hold a connection forever
		WriteTimeout:      cfg.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    cfg.MaxHeaderBytes,
		ErrorLog:          serverErrorLog(log),
	}
	if certs != nil {
		n.server.TLSConfig = certs.tlsConfig()
	}
	if n.fed != nil {
		n.server.RegisterOnShutdown(n.fed.CloseRelays) // relay streams never end by themselves
	}
	ctx, cancel := context.WithCancel(context.Background())
	n.cancel = cancel
	n.wg.Add(2)
	go func() {
		defer n.wg.Done()
		v.Run(ctx)
	}()
	go func() {
		defer n.wg.Done()
		serve := n.server.Serve
		if certs != nil {
			// The files are in TLSConfig.GetCertificate, which ReloadTLS
			// swaps; ServeTLS adds HTTP/2.
			serve = func(ln net.Listener) error { return n.server.ServeTLS(ln, "", "") }
		}
		if err := serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "err", err)
		}
	}()
	if cfg.SelfRegister {
		n.startSelfRegistration()
	}
	if n.fed != nil {
		n.fed.Start()
	}
	log.Info("heureka node started", "http", ln.Addr().String(), "tls", certs != nil,
		"auth", cfg.Auth.Enabled(), "rateLimit", cfg.RateLimit != nil)
	return n, nil
}

// Addr returns the address the HTTP API listens on.
func (n *Node) Addr() string { return n.listener.Addr().String() }

// URL returns the Eureka service URL of the node ("http://addr/eureka", or
// "https://addr/eureka" with TLS).
func (n *Node) URL() string { return n.Scheme() + "://" + n.Addr() + "/eureka" }

// Scheme returns "https" when the node serves TLS, else "http".
func (n *Node) Scheme() string {
	if n.certs != nil {
		return "https"
	}
	return "http"
}

// EurekaPeers returns the sender to the legacy Eureka peers, nil when the
// node has none.
func (n *Node) EurekaPeers() *eurekapeer.Sender { return n.eureka }

// Registry returns the node's registry.
func (n *Node) Registry() *actors.Registry { return n.registry }

// View returns the node's read view.
func (n *Node) View() *view.View { return n.view }

// Federation returns the node's federation with remote regions, nil when
// it has none.
func (n *Node) Federation() *federation.Federation { return n.fed }

// Handler returns the node's HTTP handler.
func (n *Node) Handler() http.Handler { return n.api }

// Stop shuts the node down: HTTP first (in-flight requests finish within
// ctx), then it leaves the cluster gracefully, then the actors stop. It is
// idempotent.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		close(n.stopping)
		if n.selfReg != nil {
			n.selfReg.stop(ctx) // before leaving: the cancel must reach the members
		}
		n.stopErr = n.server.Shutdown(ctx)
		if n.eureka != nil {
			// No client request is left: send the last changes (the
			// clients' cancels) to the Eureka peers within ctx.
			if err := n.eureka.Close(ctx); err != nil {
				n.log.Warn("stopping replication to Eureka peers", "err", err)
			}
		}
		if n.members != nil {
			n.unsubscribe()
			// Hand the applications this node owns to their next owners
			// before leaving, so that they keep its lease clocks.
			hctx, hcancel := context.WithTimeout(context.Background(), n.cfg.Cluster.LeaveTimeout)
			n.replicator.HandOff(hctx)
			hcancel()
			if err := n.members.Leave(n.cfg.Cluster.LeaveTimeout); err != nil {
				n.log.Warn("leaving the cluster", "err", err)
			}
			n.replicator.Stop()
			_ = n.members.Shutdown()
		}
		if n.fed != nil {
			n.fed.Stop()
		}
		n.cancel()
		n.wg.Wait()
		n.registry.Close()
		n.log.Info("heureka node stopped")
	})
	return n.stopErr
}
