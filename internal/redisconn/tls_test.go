package redisconn_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/redisconn"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// TLS with a private CA and a client certificate, and an ACL user whose
// password comes from the caller: the client reaches the server; a wrong
// password is refused at start in one line that never shows it.
func TestTLSClientCertAndACLUser(t *testing.T) {
	dir := t.TempDir()
	ca, caKey, caFile, _ := redistest.WriteCert(t, dir, "ca", nil, nil)
	_, _, srvCert, srvKey := redistest.WriteCert(t, dir, "server", ca, caKey)
	_, _, cliCert, cliKey := redistest.WriteCert(t, dir, "client", ca, caKey)
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
	_, err = redisconn.Probe(ctx, redisconn.Config{URL: url, Username: "sluice", Password: "wrong-pw", TLS: tlsFiles, Timeout: 2 * time.Second})
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
