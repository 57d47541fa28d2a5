package redisconn_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/redisconn"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// secureFiles returns the servers' settings and the client's TLS.
func secureFiles(t *testing.T) (*redistest.Secure, *redisconn.TLS) {
	t.Helper()
	sec, cert, key := redistest.NewSecure(t, "sluice", "s3cret-pw")
	return sec, &redisconn.TLS{CAFile: sec.CAFile, CertFile: cert, KeyFile: key}
}

// Sentinel mode over TLS: a master, two replicas and three sentinels
// speaking TLS only (replication and the sentinels' links included), a
// client certificate asked of every client, an ACL user on the data
// nodes. The client reaches the master through the sentinels, follows a
// failover (the master killed) to the promoted replica, and a wrong
// password is refused at start in one line that never shows it.
func TestTLSSentinelMode(t *testing.T) {
	sec, tlsFiles := secureFiles(t)
	h := redistest.StartSentinelSecure(t, time.Second, sec)
	cfg := redisconn.Config{Mode: redisconn.Sentinel, Addrs: h.Addrs(), Master: redistest.MasterName,
		Username: "sluice", Password: "s3cret-pw", TLS: tlsFiles, Timeout: 2 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := redisconn.Probe(ctx, cfg); err != nil {
		t.Fatalf("probe over TLS: %v", err)
	}
	c, err := redisconn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("over TLS through the sentinels: %v", err)
	}

	bad := cfg
	bad.Password = "wrong-pw"
	if _, err := redisconn.Probe(ctx, bad); err == nil || !strings.Contains(err.Error(), "refused the credentials") || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("sentinel mode, a wrong password: %v; want refused at start, the password not shown", err)
	}
	plain := cfg
	plain.TLS = nil
	if _, err := redisconn.Probe(ctx, plain); err == nil {
		t.Error("sentinel mode without TLS reached TLS-only sentinels")
	}

	old := h.MasterAddr()
	h.Master.Kill()
	promoted := h.WaitPromotion(old, 20*time.Second)
	for {
		err := c.Set(ctx, "k2", "v2", 0).Err()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("no write over TLS on the promoted %s: %v", promoted, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
		t.Errorf("after the failover: k = %q, %v; want v, replicated over TLS", v, err)
	}
}

// Cluster mode over TLS: three masters speaking TLS only (the cluster bus
// too), a client certificate asked of every client, an ACL user. From
// one seed the client finds every node, writes keys that spread over all
// three, and a wrong password is refused at start.
func TestTLSClusterMode(t *testing.T) {
	sec, tlsFiles := secureFiles(t)
	cl := redistest.StartClusterSecure(t, 3, sec)
	cfg := redisconn.Config{Mode: redisconn.Cluster, Addrs: cl.Addrs()[:1],
		Username: "sluice", Password: "s3cret-pw", TLS: tlsFiles, Timeout: 2 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := redisconn.Probe(ctx, cfg); err != nil {
		t.Fatalf("probe over TLS: %v", err)
	}
	c, err := redisconn.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for i := range 30 {
		if err := c.Eval(ctx, "return redis.call('SET', KEYS[1], ARGV[1])", []string{fmt.Sprintf("sluice:{k%d}", i)}, i).Err(); err != nil {
			t.Fatalf("a script over TLS in the cluster: %v", err)
		}
	}
	for i, n := range cl.Nodes {
		if size, err := n.Client().DBSize(ctx).Result(); err != nil || size == 0 {
			t.Errorf("node %d holds %d keys (%v); want some of the 30, written over TLS", i, size, err)
		}
	}

	bad := cfg
	bad.Password = "wrong-pw"
	if _, err := redisconn.Probe(ctx, bad); err == nil || !strings.Contains(err.Error(), "refused the credentials") || strings.Contains(err.Error(), "wrong-pw") {
		t.Errorf("cluster mode, a wrong password: %v; want refused at start, the password not shown", err)
	}
	noCert := cfg
	noCert.TLS = &redisconn.TLS{CAFile: tlsFiles.CAFile}
	nc, _ := redisconn.New(noCert)
	defer nc.Close()
	if err := nc.Set(ctx, "x", "y", 0).Err(); err == nil {
		t.Error("a client without a certificate wrote to the cluster; want refused (tls-auth-clients yes)")
	}
}
