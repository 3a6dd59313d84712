// Package testcert makes self-signed TLS certificates for tests: a node
// serves HTTPS with one, and its clients (Go, fargo, Node.js) trust it
// through a pool or a CA file. Nothing here is fit for production.
package testcert

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Cert is one self-signed certificate for 127.0.0.1, ::1 and localhost,
// valid for a day, and the files it was written to.
type Cert struct {
	// CertFile and KeyFile are PEM files, as a node's TLS settings take them;
	// CertFile is also the CA file clients trust (NODE_EXTRA_CA_CERTS).
	CertFile, KeyFile string
	// Leaf is the certificate.
	Leaf *x509.Certificate
	// Pool trusts the certificate (and nothing else).
	Pool *x509.CertPool
}

// New makes a certificate with the given common name (which tells
// certificates apart in a reload test) and writes it to dir as name.crt and
// name.key, replacing files of that name.
func New(t testing.TB, dir, name string) Cert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: name, Organization: []string{"heureka tests"}},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true, // self-signed: it is its own CA, as clients' trust stores want
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	c := Cert{CertFile: filepath.Join(dir, name+".crt"), KeyFile: filepath.Join(dir, name+".key"), Leaf: leaf, Pool: x509.NewCertPool()}
	c.Pool.AddCert(leaf)
	write(t, c.CertFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	write(t, c.KeyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return c
}

// write replaces path atomically, as a certificate manager would.
func write(t testing.TB, path string, data []byte) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}
