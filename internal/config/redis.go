package config

import (
	"cmp"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/sluice-llm/sluice/internal/redisconn"
)

// Redis says how the redis backend reaches Redis beyond one server: a
// master watched by Sentinel or a Redis Cluster, the ACL user, the
// password's variable and TLS.
type Redis struct {
	// Mode is single, sentinel or cluster. Default single.
	Mode string `yaml:"mode"`

	// Addrs are the sentinels (sentinel) or the seed nodes (cluster),
	// each host:port.
	Addrs []string `yaml:"addrs"`

	// Master is the master's name among the sentinels (sentinel).
	Master string `yaml:"master"`

	// Username is the ACL user. Default none (Redis's default user).
	Username string `yaml:"username"`

	// PasswordEnv names the variable holding the password. Default none.
	PasswordEnv string `yaml:"password_env"`

	// TLS, when set (even empty), turns TLS on. Default nil.
	TLS *redisconn.TLS `yaml:"tls"`
}

// checkRedis checks state.redis, and state.url against its mode.
func (c *Config) checkRedis() error {
	r := c.State.Redis
	if c.State.Backend != BackendRedis {
		return refuse(r.Mode != "" || len(r.Addrs) > 0 || r.Master != "" || r.Username != "" || r.PasswordEnv != "" || r.TLS != nil,
			"state.redis", "only the redis backend uses it; set state.backend: redis or remove state.redis")
	}
	var err error
	switch r.Mode {
	case "", redisconn.Single:
		err = cmp.Or(refuse(len(r.Addrs) > 0, "state.redis.addrs",
			"mode single reaches one server at state.url; set state.redis.mode: sentinel or cluster, or remove state.redis.addrs"),
			refuse(r.Master != "", "state.redis.master",
				"only mode sentinel names a master; set state.redis.mode: sentinel or remove state.redis.master"),
			checkRedisURL(c.State.URL))
	case redisconn.Sentinel, redisconn.Cluster:
		what := map[string]string{redisconn.Sentinel: "the sentinels", redisconn.Cluster: "the seed nodes"}[r.Mode]
		err = cmp.Or(refuse(c.State.URL != "", "state.url", "mode %s reaches Redis through state.redis.addrs; remove state.url", r.Mode),
			refuse(len(r.Addrs) == 0, "state.redis.addrs", "mode %s needs %s, e.g. addrs: [10.0.0.1:26379, 10.0.0.2:26379]", r.Mode, what),
			hostPorts("state.redis.addrs", r.Addrs),
			refuse(r.Mode == redisconn.Sentinel && r.Master == "", "state.redis.master",
				"mode sentinel needs the master's name as the sentinels know it, e.g. master: mymaster"),
			refuse(r.Mode == redisconn.Cluster && r.Master != "", "state.redis.master", "only mode sentinel names a master; remove state.redis.master"))
	default:
		err = oneOf("state.redis.mode", "mode", r.Mode, redisconn.Single, redisconn.Sentinel, redisconn.Cluster)
	}
	return cmp.Or(err, envName("state.redis.password_env", r.PasswordEnv, "SLUICE_REDIS_PASSWORD"), checkRedisTLS(r.TLS))
}

// checkRedisTLS checks state.redis.tls, when given: a client certificate
// and its key both or neither, and every file readable.
func checkRedisTLS(t *redisconn.TLS) error {
	if t == nil {
		return nil
	}
	file := func(name, path string) error {
		if path == "" {
			return nil
		}
		_, err := os.Stat(path)
		return refuse(err != nil, "state.redis.tls."+name, "cannot read %s: %v", path, pathErr(err))
	}
	return cmp.Or(refuse((t.CertFile == "") != (t.KeyFile == ""), "state.redis.tls",
		"give both cert_file and key_file (the client certificate and its key), or neither"),
		file("ca_file", t.CAFile), file("cert_file", t.CertFile), file("key_file", t.KeyFile))
}

// hostPorts refuses the first of addrs that is not host:port.
func hostPorts(path string, addrs []string) error {
	return each(addrs, func(i int, a string) error {
		_, port, err := net.SplitHostPort(a)
		return refuse(err != nil || port == "", index(path, i), "%s is not host:port, e.g. 10.0.0.1:6379", quote(a))
	})
}

// checkRedisURL checks the URL without ever showing it: it may hold a
// password.
func checkRedisURL(s string) error {
	u, err := url.Parse(s)
	switch {
	case s == "":
		return errf("state.url", "the redis backend needs a URL; add state.url, e.g. redis://127.0.0.1:6379/0")
	case err != nil:
		return errf("state.url", "is not a URL; write e.g. redis://127.0.0.1:6379/0")
	case strings.EqualFold(u.Scheme, "unix"):
		return refuse(u.Path == "", "state.url", "has no socket path; write e.g. unix:///run/redis.sock")
	case !strings.EqualFold(u.Scheme, "redis") && !strings.EqualFold(u.Scheme, "rediss"):
		return errf("state.url", "must be a redis://, rediss:// or unix:// URL, e.g. redis://127.0.0.1:6379/0")
	}
	return refuse(u.Host == "", "state.url", "has no host; write e.g. redis://127.0.0.1:6379/0")
}

// pathErr is err without the path it repeats.
func pathErr(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// RedisConn returns how to reach the state's Redis, the password read
// from the variable state.redis.password_env names; an error when that
// variable is unset or empty.
func (c *Config) RedisConn() (redisconn.Config, error) {
	rc := c.redisConn()
	if name := c.State.Redis.PasswordEnv; name != "" {
		if rc.Password = os.Getenv(name); rc.Password == "" {
			return redisconn.Config{}, errf("state.redis.password_env", "the environment variable %s is unset or empty; export the Redis password in it", name)
		}
	}
	return rc, nil
}

// StateWhere names the state store, for a start line, a listing or the
// status page: "memory", "file:/var/lib/sluice" (or "file (dir unknown:
// …)"), or the state's Redis as redisconn.Config.Where names it: the
// URL without its password, or the Sentinel master and the sentinels, or
// the cluster's seed nodes.
func (c *Config) StateWhere() string {
	switch c.State.Backend {
	case BackendMemory:
		return "memory"
	case BackendRedis:
		return c.redisConn().Where()
	}
	dir, err := c.StateDir()
	if err != nil {
		return "file (dir unknown: " + err.Error() + ")"
	}
	return "file:" + dir
}

// redisConn is how to reach the state's Redis, without the password.
func (c *Config) redisConn() redisconn.Config {
	r := c.State.Redis
	return redisconn.Config{Mode: r.Mode, URL: c.State.URL, Addrs: r.Addrs, Master: r.Master, Username: r.Username, TLS: r.TLS}
}
