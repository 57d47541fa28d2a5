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

	"github.com/sluice-llm/sluice/internal/redistest"
)

// A Redis that cannot serve the stores is refused at start, by sluice
// serve and sluice check alike, in one line and within a bound: sentinels
// or seeds that do not answer, a master the sentinels do not know, a
// cluster whose state is fail, one server that is a cluster node.
func TestServeAndCheckRefuseUnusableRedis(t *testing.T) {
	cl := redistest.StartCluster(t, 3)
	sen := redistest.StartSentinel(t, time.Second)
	dead := fmt.Sprintf("127.0.0.1:%d", redistest.FreePort(t))
	cases := []struct{ name, state, want string }{
		{"sentinels unreachable", fmt.Sprintf(`{backend: redis, redis: {mode: sentinel, addrs: ["%s"], master: m}}`, dead),
			`state.redis: no sentinel in state.redis.addrs knows master "m"`},
		{"unknown master", fmt.Sprintf(`{backend: redis, redis: {mode: sentinel, addrs: ["%s"], master: nosuch}}`, sen.Addrs()[0]),
			`no master named nosuch`},
		{"seeds unreachable", fmt.Sprintf(`{backend: redis, redis: {mode: cluster, addrs: ["%s"]}}`, dead),
			"state.redis: no seed node in state.redis.addrs answered"},
		{"not a cluster", fmt.Sprintf(`{backend: redis, redis: {mode: cluster, addrs: ["%s"]}}`, sen.Master.Addr()),
			"is not a cluster node: set state.redis.mode: single"},
		{"single on a cluster node", fmt.Sprintf(`{backend: redis, url: "redis://%s/0"}`, cl.Addrs()[0]),
			"state.url: redis at state.url is a cluster node: set state.redis.mode: cluster"},
		{"single on a replica", fmt.Sprintf(`{backend: redis, url: "redis://%s/0"}`, sen.Replicas[0].Addr()),
			"state.url: redis at state.url is a replica (writes get READONLY)"},
		{"password unset", fmt.Sprintf(`{backend: redis, url: "redis://%s/0", redis: {password_env: SLUICE_TEST_NO_SUCH_PW}}`, dead),
			"state.redis.password_env: the environment variable SLUICE_TEST_NO_SUCH_PW is unset or empty"},
	}
	refuse := func(t *testing.T, state, want string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "sluice.yaml")
		os.WriteFile(path, []byte("listen: 127.0.0.1:0\nlog: {attempts: \"-\"}\nstate: "+state+"\n"), 0o600)
		for _, cmd := range []string{"serve", "check"} {
			// The real command in its own process: all it writes is seen,
			// go-redis's own log lines included.
			c := exec.Command(os.Args[0], cmd, "--config", path)
			c.Env = append(os.Environ(), "SLUICE_TEST_MAIN=1")
			start := time.Now()
			out, _ := c.CombinedOutput()
			took := time.Since(start)
			code := c.ProcessState.ExitCode()
			msg := strings.TrimSpace(string(out))
			if code != exitUsage || !strings.Contains(msg, want) || strings.Contains(msg, "\n") || took > 6*time.Second {
				t.Errorf("sluice %s: exit %d after %v, output %q; want exit 2 within 6s and one line with %q", cmd, code, took.Round(time.Millisecond), msg, want)
			}
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { refuse(t, tc.state, tc.want) })
	}
	t.Run("cluster_state fail", func(t *testing.T) {
		cl.Nodes[2].Kill()
		end := time.Now().Add(20 * time.Second)
		for !strings.Contains(cl.Nodes[0].Client().ClusterInfo(context.Background()).Val(), "cluster_state:fail") {
			if time.Now().After(end) {
				t.Fatal("the cluster did not report cluster_state:fail within 20s of losing a master")
			}
			time.Sleep(100 * time.Millisecond)
		}
		refuse(t, fmt.Sprintf(`{backend: redis, redis: {mode: cluster, addrs: ["%s", "%s"]}}`, cl.Addrs()[0], cl.Addrs()[1]),
			"the redis cluster reports cluster_state:fail")
	})
}
