package config

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/redisconn"
)

func TestRedisModesParse(t *testing.T) {
	c, err := Parse([]byte(`state:
  backend: redis
  redis:
    mode: sentinel
    addrs: [10.0.0.1:26379, "[::1]:26380"]
    master: mymaster
    username: sluice
    password_env: SLUICE_REDIS_PASSWORD
    tls: {}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := Redis{Mode: "sentinel", Addrs: []string{"10.0.0.1:26379", "[::1]:26380"}, Master: "mymaster",
		Username: "sluice", PasswordEnv: "SLUICE_REDIS_PASSWORD", TLS: &redisconn.TLS{}}
	if !reflect.DeepEqual(c.State.Redis, want) {
		t.Fatalf("got %+v, want %+v", c.State.Redis, want)
	}
	if _, err := Parse([]byte("state: {backend: redis, redis: {mode: cluster, addrs: [\"127.0.0.1:7000\"]}}\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := Parse([]byte("state: {backend: redis, url: \"rediss://h:6380/0\", redis: {mode: single, username: u}}\n")); err != nil {
		t.Fatal(err)
	}
}

func TestRedisRefuses(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "ca.pem")
	for _, tc := range []struct{ name, yaml, want string }{
		{"sentinel without addrs", "state: {backend: redis, redis: {mode: sentinel, master: m}}\n",
			"state.redis.addrs: mode sentinel needs the sentinels"},
		{"sentinel without master", "state: {backend: redis, redis: {mode: sentinel, addrs: [\"h:26379\"]}}\n",
			"state.redis.master: mode sentinel needs the master's name"},
		{"cluster without addrs", "state: {backend: redis, redis: {mode: cluster}}\n",
			"state.redis.addrs: mode cluster needs the seed nodes"},
		{"cluster with master", "state: {backend: redis, redis: {mode: cluster, addrs: [\"h:7000\"], master: m}}\n",
			"state.redis.master: only mode sentinel names a master"},
		{"cluster with url", "state: {backend: redis, url: \"redis://h:1\", redis: {mode: cluster, addrs: [\"h:7000\"]}}\n",
			"state.url: mode cluster reaches Redis through state.redis.addrs"},
		{"addr without port", "state: {backend: redis, redis: {mode: cluster, addrs: [h]}}\n",
			`state.redis.addrs[0]: "h" is not host:port, e.g. 10.0.0.1:6379`},
		{"unknown mode", "state: {backend: redis, redis: {mode: clustr, addrs: [\"h:7000\"]}}\n",
			`state.redis.mode: unknown mode "clustr" (did you mean cluster?)`},
		{"single with addrs", "state: {backend: redis, url: \"redis://h:1\", redis: {addrs: [\"h:2\"]}}\n",
			"state.redis.addrs: mode single reaches one server at state.url"},
		{"single without url", "state: {backend: redis, redis: {mode: single}}\n", "state.url: the redis backend needs a URL"},
		{"redis section on file", "state: {backend: file, redis: {mode: cluster}}\n", "state.redis: only the redis backend uses it"},
		{"bad password_env", "state: {backend: redis, url: \"redis://h:1\", redis: {password_env: \"$P\"}}\n",
			`state.redis.password_env: "$P" is not an environment variable name`},
		{"cert without key", "state: {backend: redis, url: \"redis://h:1\", redis: {tls: {cert_file: c.pem}}}\n",
			"state.redis.tls: give both cert_file and key_file"},
		{"missing ca", "state: {backend: redis, url: \"redis://h:1\", redis: {tls: {ca_file: \"" + missing + "\"}}}\n",
			"state.redis.tls.ca_file: cannot read " + missing + ": no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Count(err.Error(), "\n") > 0 {
				t.Fatalf("got %v, want one line with %q", err, tc.want)
			}
		})
	}
}

func TestRedisPasswordFromEnvOnly(t *testing.T) {
	c, err := Parse([]byte("state: {backend: redis, url: \"redis://h:1\", redis: {password_env: SLUICE_TEST_REDIS_PW, tls: {}}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_TEST_REDIS_PW", "")
	if _, err := c.RedisConn(); err == nil || !strings.Contains(err.Error(), "SLUICE_TEST_REDIS_PW is unset or empty") {
		t.Fatalf("unset: %v", err)
	}
	t.Setenv("SLUICE_TEST_REDIS_PW", "hunter2")
	want := redisconn.Config{URL: "redis://h:1", Password: "hunter2", TLS: &redisconn.TLS{}}
	if rc, err := c.RedisConn(); !reflect.DeepEqual(rc, want) || err != nil {
		t.Fatalf("RedisConn() = %+v, %v; want %+v", rc, err, want)
	}
	if _, err := Parse([]byte("state: {backend: redis, url: \"redis://h:1\", redis: {password: hunter2}}\n")); err == nil ||
		strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("a password in the file: %v; want refused without repeating it", err)
	}
}
