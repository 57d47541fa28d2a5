package redisconn_test

import (
	"context"
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
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/redisconn"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// writeCert writes a certificate signed by ca (self-signed when ca is nil)
// and its key as PEM files in dir, and returns them.
func writeCert(t *testing.T, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	parent, signer := tmpl, key
	if ca == nil {
		tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	} else {
		parent, signer = ca, caKey
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	kb, _ := x509.MarshalECPrivateKey(key)
	cf, kf := filepath.Join(dir, name+".pem"), filepath.Join(dir, name+".key")
	os.WriteFile(cf, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(kf, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kb}), 0o600)
	return cert, key, cf, kf
}

// TLS with a private CA and a client certificate, and an ACL user whose
// password comes from the caller: the client reaches the server; a wrong
// password is refused at start in one line that never shows it.
func TestTLSClientCertAndACLUser(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, caFile, _ := writeCert(t, dir, "ca", nil, nil)
	_, _, srvCert, srvKey := writeCert(t, dir, "server", ca, caKey)
	_, _, cliCert, cliKey := writeCert(t, dir, "client", ca, caKey)
	port := redistest.FreePort(t)
	srv := redistest.StartWith(t, "--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", srvCert, "--tls-key-file", srvKey, "--tls-ca-cert-file", caFile, "--tls-auth-clients", "yes",
		"--user", "default", "off", "--user", "sluice", "on", ">s3cret-pw", "~*", "&*", "+@all")
	_ = srv
	url := "rediss://127.0.0.1:" + strconv.Itoa(port) + "/0"
	tlsFiles := &redisconn.TLS{CAFile: caFile, CertFile: cliCert, KeyFile: cliKey}
	c, err := redisconn.New(redisconn.Config{URL: url, Username: "sluice", Password: "s3cret-pw", TLS: tlsFiles, Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(context.Background(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("over TLS as sluice: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = redisconn.Probe(ctx, redisconn.Config{URL: url, Username: "sluice", Password: "wrong-pw", TLS: tlsFiles, Timeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "refused the credentials") || strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("a wrong password: %v; want refused, the password not shown", err)
	}
	noCert := &redisconn.TLS{CAFile: caFile}
	nc, _ := redisconn.New(redisconn.Config{URL: url, Username: "sluice", Password: "s3cret-pw", TLS: noCert, Timeout: 2 * time.Second})
	defer nc.Close()
	if err := nc.Ping(context.Background()).Err(); err == nil {
		t.Fatal("a client without a certificate got in; want refused (tls-auth-clients yes)")
	}
}
