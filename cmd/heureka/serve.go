package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/pflag"

	"github.com/heureka/heureka/internal/buildinfo"
	"github.com/heureka/heureka/node"
)

// serve runs a node configured by the serve flags fs (already parsed), the
// environment and the configuration file, logging to logOut, until ctx is
// done or the process gets SIGINT or SIGTERM.
func serve(ctx context.Context, fs *pflag.FlagSet, getenv func(string) string, logOut io.Writer) error {
	cfg, warnings, err := loadConfig(fs, getenv)
	if err != nil {
		return usageError(err)
	}
	base, err := NewLogger(logOut, cfg.LogLevel, cfg.LogFormat, "") // node.Start adds the node attribute to its own records
	if err != nil {
		return usageError(err)
	}
	log := base.With("node", cfg.NodeName)
	bi := buildinfo.Get()
	log.Info("heureka starting", "version", bi.Release, "commit", bi.ShortCommit(), "wireProtocols", bi.Protocols(),
		"go", runtime.Version(), "pid", os.Getpid())
	log.Info("effective configuration", configAttr(cfg))
	for _, w := range warnings {
		log.Warn("configuration", "warning", w)
	}

	nc, err := nodeConfig(cfg, base)
	if err != nil {
		return usageError(err)
	}
	// A node started by the command lists itself as an instance of
	// application HEUREKA (node/selfreg.go), so clients can find the servers.
	nc.SelfRegister = true
	events := newEventLog(log)
	nc.Registry.Sinks = append(nc.Registry.Sinks, events)
	defer events.Flush()
	n, err := node.Start(nc)
	if err != nil {
		log.Error("cannot start", "err", err)
		return &exitError{code: exitFail}
	}
	url := clientURL(n.Addr(), advertisedHost(n, nc))
	if n.Scheme() == "https" {
		url = "https" + strings.TrimPrefix(url, "http")
	}
	log.Info("clients: use this Eureka service URL", "url", url, "auth", nc.Auth.Enabled())

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	// SIGHUP reloads the TLS certificate and key files (and would otherwise
	// end the process).
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go reloadOnHangup(ctx, hup, n, log)
	<-ctx.Done()
	stop()
	log.Info("shutting down")
	sctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := n.Stop(sctx); err != nil {
		log.Error("unclean shutdown", "err", err)
		return &exitError{code: exitFail}
	}
	return nil
}

// configAttr is the effective configuration as one log attribute, a group
// with a member per option, secrets masked.
func configAttr(c Config) slog.Attr {
	attrs := make([]any, 0, len(options))
	for _, o := range options {
		v := o.get(c)
		if o.masked() && v != "" {
			v = "(set, not shown)"
		}
		attrs = append(attrs, slog.String(o.name, v))
	}
	return slog.Group("config", attrs...)
}

// advertisedHost is the host the node advertises to its peers: the gossip
// address memberlist settled on, else the configured or derived one.
func advertisedHost(n *node.Node, nc node.Config) string {
	if m := n.Members(); m != nil {
		if host, _, err := splitHost(m.LocalNode().Address); err == nil && host != "" {
			return host
		}
	}
	if nc.Cluster != nil {
		return nc.Cluster.AdvertiseAddr
	}
	return ""
}
