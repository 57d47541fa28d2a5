package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Probe asks Redis, within ctx, whether c's deployment can serve the
// stores, and returns one clear sentence when it cannot:
//
//   - Sentinel: no sentinel of Addrs answers, none knows Master, or the
//     master they name refuses the credentials.
//   - Cluster: no seed node answers, a seed is not a cluster node, or the
//     cluster reports cluster_state:fail.
//   - Single: the server is a cluster node (every script would get MOVED)
//     or a replica (every write would get READONLY).
//
// A single server that does not answer is not an error: the stores start
// on their local fallbacks and find Redis when it comes back.
func Probe(ctx context.Context, c Config) error {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	tc, err := c.TLS.config()
	if err != nil {
		return err
	}
	switch c.Mode {
	case Sentinel:
		return probeSentinels(ctx, c, timeout)
	case Cluster:
		return probeSeeds(ctx, c, timeout)
	}
	o, err := parseURL(c.URL)
	if err != nil {
		return err
	}
	if c.Username != "" {
		o.Username = c.Username
	}
	if c.Password != "" {
		o.Password = c.Password
	}
	if tc != nil {
		o.TLSConfig = tc
	}
	bound(o, timeout, -1)
	cl := redis.NewClient(o)
	defer cl.Close()
	info, err := cl.Info(ctx, "cluster", "replication").Result()
	if err != nil {
		if isAuth(err) {
			return fmt.Errorf("redis refused the credentials: %v", err)
		}
		return nil
	}
	if field(info, "cluster_enabled") == "1" {
		return errors.New("redis at state.url is a cluster node: set state.redis.mode: cluster and list the seed nodes in state.redis.addrs")
	}
	if field(info, "role") == "slave" {
		return errors.New("redis at state.url is a replica (writes get READONLY): point state.url at the master, or use state.redis.mode: sentinel")
	}
	return nil
}

// probeSentinels asks each sentinel for the master's address.
func probeSentinels(ctx context.Context, c Config, timeout time.Duration) error {
	tc, _ := c.TLS.config()
	var errs []string
	for _, a := range c.Addrs {
		o := &redis.Options{Addr: a, TLSConfig: tc}
		bound(o, timeout, -1)
		s := redis.NewSentinelClient(o)
		addr, err := s.GetMasterAddrByName(ctx, c.Master).Result()
		s.Close()
		switch {
		case err == nil && len(addr) == 2:
			return probeMaster(ctx, c, addr[0]+":"+addr[1], tc, timeout)
		case errors.Is(err, redis.Nil):
			errs = append(errs, a+": no master named "+c.Master)
		case err != nil:
			errs = append(errs, a+": "+err.Error())
		}
	}
	return fmt.Errorf("no sentinel in state.redis.addrs knows master %q (%s)", c.Master, strings.Join(errs, "; "))
}

// probeMaster asks the master the sentinels named whether it takes c's
// credentials: the sentinels are asked without them, so a wrong password
// would otherwise show only at the first call. A master that does not
// answer is not an error (a failover may be under way).
func probeMaster(ctx context.Context, c Config, addr string, tc *tls.Config, timeout time.Duration) error {
	o := &redis.Options{Addr: addr, Username: c.Username, Password: c.Password, TLSConfig: tc}
	bound(o, timeout, -1)
	cl := redis.NewClient(o)
	defer cl.Close()
	if err := cl.Ping(ctx).Err(); err != nil && isAuth(err) {
		return fmt.Errorf("redis master %q at %s refused the credentials: %v", c.Master, addr, err)
	}
	return nil
}

// probeSeeds asks each seed node for CLUSTER INFO; the first answer
// decides.
func probeSeeds(ctx context.Context, c Config, timeout time.Duration) error {
	tc, _ := c.TLS.config()
	var errs []string
	for _, a := range c.Addrs {
		o := &redis.Options{Addr: a, Username: c.Username, Password: c.Password, TLSConfig: tc}
		bound(o, timeout, -1)
		cl := redis.NewClient(o)
		info, err := cl.ClusterInfo(ctx).Result()
		cl.Close()
		switch {
		case err != nil && strings.Contains(err.Error(), "cluster support disabled"):
			return fmt.Errorf("redis at %s is not a cluster node: set state.redis.mode: single (or sentinel)", a)
		case err != nil && isAuth(err):
			return fmt.Errorf("redis at %s refused the credentials: %v", a, err)
		case err != nil:
			errs = append(errs, a+": "+err.Error())
		case field(info, "cluster_state") != "ok":
			return fmt.Errorf("the redis cluster reports cluster_state:%s (asked %s): its slots are not all served", field(info, "cluster_state"), a)
		default:
			return nil
		}
	}
	return fmt.Errorf("no seed node in state.redis.addrs answered (%s)", strings.Join(errs, "; "))
}

// isAuth reports whether err is Redis refusing the credentials.
func isAuth(err error) bool {
	s := err.Error()
	return strings.HasPrefix(s, "WRONGPASS") || strings.HasPrefix(s, "NOAUTH") || strings.Contains(s, "NOPERM") ||
		strings.Contains(s, "without any password configured")
}

// field returns the value of name in an INFO-style answer.
func field(info, name string) string {
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}
