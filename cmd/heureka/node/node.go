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
	"github.com/heureka/heureka/httpapi"
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
	// Version is reported by /eureka/status.
	Version string
	// Logger receives all logs. Default: discard.
	Logger *slog.Logger
}

// DefaultConfig returns a node on ":8761" with Eureka's defaults.
func DefaultConfig(name string) Config {
	return Config{
		Name:         name,
		HTTPAddr:     ":8761",
		Registry:     actors.DefaultConfig(name),
		View:         view.DefaultConfig(httpapi.Encoders()),
		MaxBodyBytes: 1 << 20,
		Version:      "dev",
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

	cancel   context.CancelFunc
	wg       sync.WaitGroup
	stopOnce sync.Once
	stopErr  error
}

// Start starts a node and returns once it serves HTTP.
func Start(cfg Config) (*Node, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	log := cfg.Logger.With("node", cfg.Name)
	cfg.View.Encoders = httpapi.Encoders()
	v := view.New(cfg.View)

	rc := cfg.Registry
	rc.NodeName = cfg.Name
	rc.Logger = log
	rc.Sinks = append([]actors.Sink{v}, rc.Sinks...)
	reg, err := actors.NewRegistry(rc)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.HTTPAddr)
	if err != nil {
		reg.Close()
		return nil, fmt.Errorf("node: listen on %s: %w", cfg.HTTPAddr, err)
	}
	n := &Node{cfg: cfg, log: log, registry: reg, view: v, listener: ln}
	n.api = httpapi.New(httpapi.Config{
		Registry:     reg,
		View:         v,
		NodeName:     cfg.Name,
		Version:      cfg.Version,
		MaxBodyBytes: cfg.MaxBodyBytes,
		Logger:       log,
		Metrics:      prometheus.NewRegistry(),
	})
	n.server = &http.Server{
		Handler:           n.api,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
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
		if err := n.server.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("http server stopped", "err", err)
		}
	}()
	log.Info("heureka node started", "http", ln.Addr().String())
	return n, nil
}

// Addr returns the address the HTTP API listens on.
func (n *Node) Addr() string { return n.listener.Addr().String() }

// URL returns the Eureka service URL of the node ("http://addr/eureka").
func (n *Node) URL() string { return "http://" + n.Addr() + "/eureka" }

// Registry returns the node's registry.
func (n *Node) Registry() *actors.Registry { return n.registry }

// View returns the node's read view.
func (n *Node) View() *view.View { return n.view }

// Handler returns the node's HTTP handler.
func (n *Node) Handler() http.Handler { return n.api }

// Stop shuts the node down: HTTP first (in-flight requests finish within
// ctx), then the actors. It is idempotent.
func (n *Node) Stop(ctx context.Context) error {
	n.stopOnce.Do(func() {
		n.stopErr = n.server.Shutdown(ctx)
		n.cancel()
		n.wg.Wait()
		n.registry.Close()
		n.log.Info("heureka node stopped")
	})
	return n.stopErr
}
