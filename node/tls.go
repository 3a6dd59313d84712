package node

// TLS and the other HTTP security settings of a node.
//
// With Config.TLSCertFile and TLSKeyFile the node serves HTTPS (TLS 1.2 or
// later, HTTP/2 offered) on HTTPAddr. The key pair is read at Start, which
// fails if it cannot be loaded, and again by ReloadTLS: certificates are
// renewed on disk (cert-manager, certbot) and the running node picks them up
// without a restart or a dropped connection. The heureka command calls
// ReloadTLS on SIGHUP. A reload that fails (a half-written file, a key that
// does not match) keeps the certificate in use and returns the error, so a
// bad renewal never takes the node off the air. Connections that are open
// keep the certificate they were made with; new handshakes get the new one
// (tls.Config.GetCertificate reads an atomic pointer).

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"
)

// defaultMaxHeaderBytes is Config.MaxHeaderBytes when zero: 64 KiB, well
// above any Eureka client's headers and far below net/http's 1 MiB.
const defaultMaxHeaderBytes = 64 << 10

// checkSecurity validates the security settings of cfg and fills in their
// defaults.
func checkSecurity(cfg *Config) error {
	switch {
	case cfg.MaxHeaderBytes < 0:
		return fmt.Errorf("node: MaxHeaderBytes %d must not be negative", cfg.MaxHeaderBytes)
	case cfg.MaxHeaderBytes == 0:
		cfg.MaxHeaderBytes = defaultMaxHeaderBytes
	}
	if (cfg.TLSCertFile == "") != (cfg.TLSKeyFile == "") {
		return errors.New("node: TLS needs both a certificate file and a key file")
	}
	if err := cfg.Auth.Validate(); err != nil {
		return fmt.Errorf("node: auth: %w", err)
	}
	if err := cfg.RateLimit.Validate(); err != nil {
		return fmt.Errorf("node: rate limit: %w", err)
	}
	return nil
}

// certReloader holds the certificate the node presents, read from its files
// at creation and on reload.
type certReloader struct {
	certFile, keyFile string
	cert              atomic.Pointer[tls.Certificate]
}

// newCertReloader loads the key pair; it returns nil for no TLS (both
// names empty).
func newCertReloader(certFile, keyFile string) (*certReloader, error) {
	if certFile == "" && keyFile == "" {
		return nil, nil
	}
	c := &certReloader{certFile: certFile, keyFile: keyFile}
	if _, err := c.reload(); err != nil {
		return nil, err
	}
	return c, nil
}

// reload reads the key pair again and, if it loads, puts it in use.
func (c *certReloader) reload() (*x509.Certificate, error) {
	pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
	if err != nil {
		// The error names the files and what is wrong with them, never
		// the key's bytes.
		return nil, fmt.Errorf("node: TLS key pair %s, %s: %w", c.certFile, c.keyFile, err)
	}
	c.cert.Store(&pair)
	return pair.Leaf, nil
}

// tlsConfig is the server's TLS configuration.
func (c *certReloader) tlsConfig() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return c.cert.Load(), nil
		},
	}
}

// ReloadTLS reads the node's TLS certificate and key files again and serves
// new connections with them. If they do not load, the node keeps the
// certificate it has and ReloadTLS returns why. Without TLS it does nothing.
// It is safe to call at any time, from any goroutine (the heureka command
// calls it on SIGHUP).
func (n *Node) ReloadTLS() error {
	if n.certs == nil {
		return nil
	}
	leaf, err := n.certs.reload()
	if err != nil {
		n.log.Error("TLS certificate not reloaded; still serving the previous one", "err", err)
		return err
	}
	if leaf != nil {
		n.log.Info("TLS certificate reloaded", "subject", leaf.Subject.String(),
			"serial", leaf.SerialNumber.String(), "notAfter", leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return nil
}

// serverErrorLog is the HTTP server's ErrorLog: its lines go to l at warn,
// except failed TLS handshakes, which go at debug. Load balancers' TCP
// checks, port scanners and clients that speak plain HTTP to the HTTPS port
// cause them by the thousand, and the client learns of its error from its
// own side (plain HTTP gets a 400 that says so).
func serverErrorLog(l *slog.Logger) *log.Logger {
	return log.New(serverLogWriter{l}, "", 0)
}

// serverLogWriter turns the server's log lines into records of l.
type serverLogWriter struct{ l *slog.Logger }

func (w serverLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		level = slog.LevelDebug
	}
	w.l.Log(context.Background(), level, msg)
	return len(p), nil
}
