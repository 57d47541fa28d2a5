package redistest

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Secure makes the servers of StartSentinelSecure and StartClusterSecure
// speak TLS only and, when User is set, refuse the default user.
type Secure struct {
	// CAFile, CertFile and KeyFile are PEM files: the CA that signs every
	// certificate, and the certificate and key each server presents, as a
	// server and as a client of the others (replication, the sentinels,
	// the cluster bus). Clients must present a certificate the CA signed
	// (tls-auth-clients yes).
	CAFile, CertFile, KeyFile string

	// User and Password, when User is set, are the one ACL user of the
	// data nodes (the default user is off); replicas and sentinels log in
	// as it. Sentinels themselves take no password.
	User, Password string
}

// tlsArgs are the arguments that make a server on port listen with TLS
// only, and speak TLS to the other servers.
func (s *Secure) tlsArgs(port int) []string {
	return []string{"--port", "0", "--tls-port", strconv.Itoa(port),
		"--tls-cert-file", s.CertFile, "--tls-key-file", s.KeyFile, "--tls-ca-cert-file", s.CAFile,
		"--tls-auth-clients", "yes", "--tls-replication", "yes", "--tls-cluster", "yes"}
}

// aclArgs are the arguments of a data node: the default user off, User
// on with every right.
func (s *Secure) aclArgs() []string {
	if s.User == "" {
		return nil
	}
	return []string{"--user", "default", "off", "--user", s.User, "on", ">" + s.Password, "~*", "&*", "+@all"}
}

// ClientTLS is the tls.Config of a client of the servers: the CA, and the
// certificate every server presents.
func (s *Secure) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	pem, err := os.ReadFile(s.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cert, err := tls.LoadX509KeyPair(s.CertFile, s.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
}

// secureNode returns a data node not started yet, with args, speaking
// TLS and with the ACL user of sec; sec nil is a plain node.
func secureNode(t testing.TB, sec *Secure, args ...string) *Server {
	t.Helper()
	s := newServer(t, "", args...)
	if sec != nil {
		s.args = append(append(s.args, sec.tlsArgs(s.port)...), sec.aclArgs()...)
		s.copts.TLSConfig = sec.ClientTLS(t)
		s.copts.Username, s.copts.Password = sec.User, sec.Password
	}
	return s
}

// SkipWithoutTLS skips the test when the installed redis-server was
// built without TLS (or is not installed): it asks one with a TLS port and
// no certificate files, which a build with TLS refuses for the missing
// files, and one without for TLS itself.
func SkipWithoutTLS(t testing.TB) {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found: apt-get install -y redis-server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, path, "--port", "0", "--tls-port", strconv.Itoa(FreePort(t)),
		"--save", "", "--dir", t.TempDir()).CombinedOutput()
	if !strings.Contains(string(out), "tls-ca-cert-file") && !strings.Contains(string(out), "Failed to configure TLS") {
		t.Skipf("redis-server lacks TLS support (built without BUILD_TLS=yes): %s", lastLine(string(out)))
	}
}

// lastLine is the last line of out that is not empty.
func lastLine(out string) string {
	lines := strings.Split(strings.TrimSpace(out), "\n")
	return lines[len(lines)-1]
}
