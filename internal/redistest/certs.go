package redistest

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

// WriteCert writes a certificate signed by ca (self-signed when ca is nil)
// and its key as PEM files in dir (name.pem, name.key), for 127.0.0.1, as
// a server and as a client, and returns them.
func WriteCert(t testing.TB, dir, name string, ca *x509.Certificate, caKey *ecdsa.PrivateKey) (*x509.Certificate, *ecdsa.PrivateKey, string, string) {
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

// NewSecure writes a private CA, the certificate every server presents
// and a client's, in a directory of the test's, and returns the servers'
// settings (the ACL user and password given) and the client's
// certificate and key files.
func NewSecure(t testing.TB, user, password string) (sec *Secure, clientCert, clientKey string) {
	t.Helper()
	dir := t.TempDir()
	ca, caKey, caFile, _ := WriteCert(t, dir, "ca", nil, nil)
	_, _, srvCert, srvKey := WriteCert(t, dir, "server", ca, caKey)
	_, _, clientCert, clientKey = WriteCert(t, dir, "client", ca, caKey)
	return &Secure{CAFile: caFile, CertFile: srvCert, KeyFile: srvKey, User: user, Password: password}, clientCert, clientKey
}
