package main

import (
	"context"
	"fmt"
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
			// On shared state (a first dial that took past its bound, as a
			// TLS handshake may on a busy host, starts it on local state).
			for deadline := time.Now().Add(5 * time.Second); !metricIs(g, "sluice_state_store_degraded", "0"); {
				if time.Now().After(deadline) {
					t.Fatalf("the gateway not on the shared state over TLS within 5 s:\n%s", g.stderr.String())
				}
				time.Sleep(50 * time.Millisecond)
			}
			postScript(t, g, "500")
			postScript(t, g, "500")
			if code := postScript(t, g, "200"); code != 503 {
				t.Fatalf("after 2 failures: %d, want 503 (breaker open)", code)
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
