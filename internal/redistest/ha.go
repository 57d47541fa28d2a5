package redistest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// MasterName is the name the sentinels of StartSentinel know the master by.
const MasterName = "sluicemaster"

// Sentinels is a master, its replicas and the sentinels watching them, all
// started by a test.
type Sentinels struct {
	t         testing.TB
	Master    *Server
	Replicas  []*Server
	Sentinels []*Server
}

// StartSentinel starts a master, two replicas of it and three sentinels
// (quorum 2, master down after downAfter), and waits until both replicas
// hold the master's data (master_link_status:up: redis-server's default
// diskless sync waits 5 s before it starts, so a master killed sooner
// would leave replicas with nothing) and every sentinel knows the two
// replicas and the two other sentinels, so a failover can happen. It skips
// the test when redis-server is not installed.
func StartSentinel(t testing.TB, downAfter time.Duration) *Sentinels {
	t.Helper()
	return startSentinel(t, downAfter, nil)
}

// StartSentinelSecure is StartSentinel with every server, sentinels
// included, speaking TLS only, and the data nodes' ACL user, as sec says.
// It skips the test when redis-server is not installed or lacks TLS.
func StartSentinelSecure(t testing.TB, downAfter time.Duration, sec *Secure) *Sentinels {
	t.Helper()
	SkipWithoutTLS(t)
	return startSentinel(t, downAfter, sec)
}

func startSentinel(t testing.TB, downAfter time.Duration, sec *Secure) *Sentinels {
	t.Helper()
	m := secureNode(t, sec, "--repl-diskless-sync-delay", "0")
	m.Start()
	h := &Sentinels{t: t, Master: m}
	for range 2 {
		args := []string{"--replicaof", "127.0.0.1", strconv.Itoa(h.Master.port)}
		if sec != nil && sec.User != "" {
			args = append(args, "--masteruser", sec.User, "--masterauth", sec.Password)
		}
		r := secureNode(t, sec, args...)
		r.Start()
		h.Replicas = append(h.Replicas, r)
	}
	wait(t, 30*time.Second, "the replicas to sync with the master", func() bool {
		for _, r := range h.Replicas {
			info, err := r.Client().Info(context.Background(), "replication").Result()
			if err != nil || !strings.Contains(info, "master_link_status:up") {
				return false
			}
		}
		return true
	})
	dir := t.TempDir()
	for i := range 3 {
		conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", i))
		body := fmt.Sprintf("sentinel monitor %s 127.0.0.1 %d 2\nsentinel down-after-milliseconds %s %d\n"+
			"sentinel failover-timeout %s 10000\nsentinel parallel-syncs %s 2\n",
			MasterName, h.Master.port, MasterName, downAfter.Milliseconds(), MasterName, MasterName)
		if sec != nil && sec.User != "" {
			body += fmt.Sprintf("sentinel auth-user %s %s\nsentinel auth-pass %s %s\n", MasterName, sec.User, MasterName, sec.Password)
		}
		if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		s := newServer(t, "+monitor master", conf, "--sentinel")
		if sec != nil {
			s.args = append(s.args, sec.tlsArgs(s.port)...)
			s.copts.TLSConfig = sec.ClientTLS(t)
		}
		s.Start()
		h.Sentinels = append(h.Sentinels, s)
	}
	wait(t, 30*time.Second, "the sentinels to find the replicas and each other", func() bool {
		for _, s := range h.Sentinels {
			m, err := s.Client().Do(context.Background(), "SENTINEL", "MASTER", MasterName).Result()
			if err != nil || pairs(m)["num-slaves"] != "2" || pairs(m)["num-other-sentinels"] != "2" {
				return false
			}
		}
		return true
	})
	return h
}

// Addrs are the sentinels' host:port.
func (h *Sentinels) Addrs() []string {
	var out []string
	for _, s := range h.Sentinels {
		out = append(out, s.Addr())
	}
	return out
}

// MasterAddr asks the first sentinel that answers where the master is.
func (h *Sentinels) MasterAddr() string {
	for _, s := range h.Sentinels {
		a, err := s.Client().Do(context.Background(), "SENTINEL", "GET-MASTER-ADDR-BY-NAME", MasterName).StringSlice()
		if err == nil && len(a) == 2 {
			return a[0] + ":" + a[1]
		}
	}
	return ""
}

// WaitPromotion waits until the sentinels name a master other than old,
// and returns it.
func (h *Sentinels) WaitPromotion(old string, within time.Duration) string {
	h.t.Helper()
	var now string
	wait(h.t, within, "a replica to be promoted", func() bool {
		now = h.MasterAddr()
		return now != "" && now != old
	})
	return now
}

// Cluster is a Redis Cluster of masters without replicas, started by a
// test.
type Cluster struct {
	Nodes []*Server
}

// StartCluster starts a cluster of n masters (n ≥ 3) and waits until
// every node reports cluster_state:ok. It skips the test when redis-server
// or redis-cli is not installed.
func StartCluster(t testing.TB, n int) *Cluster {
	t.Helper()
	return startCluster(t, n, nil)
}

// StartClusterSecure is StartCluster with every node speaking TLS only,
// the cluster bus included, and the nodes' ACL user, as sec says. It
// skips the test when redis-server is not installed or lacks TLS.
func StartClusterSecure(t testing.TB, n int, sec *Secure) *Cluster {
	t.Helper()
	SkipWithoutTLS(t)
	return startCluster(t, n, sec)
}

func startCluster(t testing.TB, n int, sec *Secure) *Cluster {
	t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if _, serr := exec.LookPath("redis-server"); serr == nil && err != nil {
		t.Skip("redis-cli not found: apt-get install -y redis-tools")
	}
	dir := t.TempDir()
	c := &Cluster{}
	addrs := []string{"--cluster", "create"}
	for i := range n {
		s := secureNode(t, sec, "--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(dir, fmt.Sprintf("nodes-%d.conf", i)),
			"--cluster-port", strconv.Itoa(FreePort(t)), "--cluster-node-timeout", "2000")
		s.Start()
		c.Nodes = append(c.Nodes, s)
		addrs = append(addrs, s.Addr())
	}
	addrs = append(addrs, "--cluster-yes")
	if sec != nil {
		addrs = append(addrs, "--tls", "--cacert", sec.CAFile, "--cert", sec.CertFile, "--key", sec.KeyFile)
		if sec.User != "" {
			addrs = append(addrs, "--user", sec.User, "--pass", sec.Password, "--no-auth-warning")
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, cli, addrs...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	wait(t, 30*time.Second, "cluster_state:ok on every node", func() bool {
		for _, s := range c.Nodes {
			info, err := s.Client().ClusterInfo(context.Background()).Result()
			if err != nil || !strings.Contains(info, "cluster_state:ok") {
				return false
			}
		}
		return true
	})
	return c
}

// Addrs are the nodes' host:port.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, s := range c.Nodes {
		out = append(out, s.Addr())
	}
	return out
}

// wait polls ok every 50ms until it holds, failing the test after within.
func wait(t testing.TB, within time.Duration, what string, ok func() bool) {
	t.Helper()
	end := time.Now().Add(within)
	for !ok() {
		if time.Now().After(end) {
			t.Fatalf("waited %v for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// pairs reads a RESP2 flat list (or a RESP3 map) of field, value.
func pairs(v any) map[string]string {
	out := map[string]string{}
	switch m := v.(type) {
	case []any:
		for i := 0; i+1 < len(m); i += 2 {
			out[fmt.Sprint(m[i])] = fmt.Sprint(m[i+1])
		}
	case map[any]any:
		for k, x := range m {
			out[fmt.Sprint(k)] = fmt.Sprint(x)
		}
	}
	return out
}

// ClusterClient returns a go-redis cluster client of c, for checks.
func (c *Cluster) ClusterClient(t testing.TB) *redis.ClusterClient {
	o := c.Nodes[0].copts // the TLS and the user of a secure cluster
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs(), TLSConfig: o.TLSConfig, Username: o.Username, Password: o.Password})
	t.Cleanup(func() { cc.Close() })
	return cc
}

// StartWith starts a private redis-server with args after the defaults
// (a later --port replaces the default one), or skips the test when there
// is none installed.
func StartWith(t testing.TB, args ...string) *Server {
	t.Helper()
	s := newServer(t, "", args...)
	s.Start()
	return s
}
