package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// The gateway over TLS in sentinel and cluster modes, configured as an
// operator would: a tls: section with a private CA and a client
// certificate, an ACL user, its password from password_env. Every server
// speaks TLS only and asks for a client certificate. sluice serve shares
// a breaker through Redis (two failures open it, and the record is in
// Redis); sluice check with a wrong password exits 2 in one line that
// never shows it.
func TestServeOverTLSSentinelAndCluster(t *testing.T) {
	sec, cert, key := redistest.NewSecure(t, "sluice", "s3cret-pw")
	cl := redistest.StartClusterSecure(t, 3, sec)
	sen := redistest.StartSentinelSecure(t, time.Second, sec)
	up := fake.NewServer("200")
	defer up.Close()
	modes := []struct {
		name, redis string
		client      redis.Cmdable
	}{
		{"cluster", fmt.Sprintf("mode: cluster, addrs: [%s]", cl.Addrs()[0]), cl.ClusterClient(t)},
		{"sentinel", fmt.Sprintf("mode: sentinel, addrs: [%s], master: %s", strings.Join(sen.Addrs(), ", "), redistest.MasterName), sen.Master.Client()},
	}
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			cfg := filepath.Join(t.TempDir(), "sluice.yaml")
			os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state:
  backend: redis
  redis: {%s, username: sluice, password_env: SLUICE_TEST_REDIS_PW,
          tls: {ca_file: %s, cert_file: %s, key_file: %s}}
log: {attempts: "-"}
providers:
  openai: {kind: openai, base_url: %s}
routes:
  - {prefix: /openai, provider: openai}
policies:
  interactive: {retry: {max_attempts: 1}, breaker: {failures: 2, cool: 1h}}
`, m.redis, sec.CAFile, cert, key, up.URL)), 0o600)

			c := exec.Command(os.Args[0], "check", "--config", cfg)
			c.Env = append(os.Environ(), "SLUICE_TEST_MAIN=1", "SLUICE_TEST_REDIS_PW=wrong-pw")
			out, _ := c.CombinedOutput()
			msg := strings.TrimSpace(string(out))
			if c.ProcessState.ExitCode() != exitUsage || !strings.Contains(msg, "refused the credentials") || strings.Contains(msg, "wrong-pw") || strings.Contains(msg, "\n") {
				t.Errorf("sluice check, a wrong password: exit %d, %q; want exit 2, one line, refused, the password not shown", c.ProcessState.ExitCode(), msg)
			}

			g := startSluice(t, []string{"SLUICE_TEST_REDIS_PW=s3cret-pw"}, "serve", "--config", cfg)
			waitShared(t, g)
			// Two failures open the breaker, in Redis. A Redis call that
			// outlasts its 100 ms bound (a TLS round trip on a busy host)
			// counts on local state until Redis answers again; a round that
			// saw one is played again.
			for round := 1; ; round++ {
				before := metricValue(g, "sluice_state_store_fallbacks_total")
				postScript(t, g, "500")
				postScript(t, g, "500")
				code := postScript(t, g, "200")
				if metricValue(g, "sluice_state_store_fallbacks_total") == before {
					if code != 503 {
						t.Fatalf("after 2 failures: %d, want 503 (breaker open)", code)
					}
					break
				}
				if round == 5 {
					t.Fatalf("Redis outlasted its bound in each of 5 rounds:\n%s", g.stderr.String())
				}
				t.Logf("round %d: Redis outlasted its bound; again", round)
				waitShared(t, g)
			}
			var s string
			var err error
			for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				s, err = m.client.HGet(context.Background(), "sluice:breaker:{openai}", "s").Result()
				if s == "1" || time.Now().After(deadline) {
					break
				}
			}
			if err != nil || s != "1" {
				t.Fatalf("the breaker in Redis over TLS: state %q, %v; want 1 (open):\n%s", s, err, g.stderr.String())
			}
		})
	}
}

// waitShared waits until g's breakers are on the shared state (a first
// dial that took past its bound, as a TLS handshake may on a busy host,
// starts it on local state).
func waitShared(t *testing.T, g *proc) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !metricIs(g, "sluice_state_store_degraded", "0"); {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway not on the shared state over TLS within 5 s:\n%s", g.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// metricValue returns the value of g's metric name, "" when it has none.
func metricValue(g *proc, name string) string {
	resp, err := http.Get("http://" + g.addr + "/metrics")
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == name {
			return f[1]
		}
	}
	return ""
}
