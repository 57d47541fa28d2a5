package redisconn

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Probe asks Redis, within ctx, whether c's deployment can serve the
// stores. It returns an error, one clear sentence, when it cannot (the
// gateway refuses to start):
//
//   - Sentinel: no sentinel of Addrs answers, none knows Master, or the
//     master they name refuses the credentials.
//   - Cluster: no seed node answers, a seed is not a cluster node, or the
//     cluster reports cluster_state:fail.
//   - Single: the server is a sentinel (it keeps no data: every call
//     would fail), a cluster node (every script would get MOVED) or a
//     replica (every write would get READONLY), or it refuses the
//     credentials.
//
// It returns warnings, each one sentence, for what lets the gateway start
// but leaves it on local state or closer to it: a sentinel that does not
// answer or does not know Master, sentinels that disagree on where the
// master is, a master (or the single server) that does not answer, a
// cluster's seed node that does not answer while another does. The
// stores start on their local fallbacks and find Redis when it answers.
func Probe(ctx context.Context, c Config) (warnings []string, err error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = time.Second
	}
	tc, err := c.TLS.config()
	if err != nil {
		return nil, err
	}
	switch c.Mode {
	case Sentinel:
		return probeSentinels(ctx, c, tc, timeout)
	case Cluster:
		return probeSeeds(ctx, c, tc, timeout)
	}
	o, err := parseURL(c.URL)
	if err != nil {
		return nil, err
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
	inf, err := serverInfo(ctx, o)
	if err != nil && isAuth(err) && (o.Username != "" || o.Password != "") {
		// A sentinel has no password: asked with one, it refuses it.
		anon := *o
		anon.Username, anon.Password = "", ""
		if i, e := serverInfo(ctx, &anon); e == nil && field(i, "redis_mode") == "sentinel" {
			inf, err = i, nil
		}
	}
	switch {
	case err != nil && isAuth(err):
		return nil, fmt.Errorf("redis refused the credentials: %v", err)
	case err != nil:
		return []string{fmt.Sprintf("redis at state.url (%s) does not answer (%v): the gateway starts on local state, shared with no other gateway, until it does", o.Addr, err)}, nil
	case field(inf, "redis_mode") == "sentinel":
		return nil, sentinelAtURL(ctx, o)
	case field(inf, "redis_mode") == "cluster" || field(inf, "cluster_enabled") == "1":
		return nil, errors.New("redis at state.url is a cluster node: set state.redis.mode: cluster and list the seed nodes in state.redis.addrs")
	case field(inf, "role") == "slave":
		return nil, errors.New("redis at state.url is a replica (writes get READONLY): point state.url at the master, or use state.redis.mode: sentinel")
	}
	return nil, nil
}

// serverInfo asks the server o names for its INFO (the default sections, which
// every version and a sentinel answer).
func serverInfo(ctx context.Context, o *redis.Options) (string, error) {
	cl := redis.NewClient(o)
	defer cl.Close()
	return cl.Info(ctx).Result()
}

// sentinelAtURL is the error for a state.url that names a sentinel, with
// the config to write instead: the sentinel's address and the masters it
// watches.
func sentinelAtURL(ctx context.Context, o *redis.Options) error {
	anon := *o
	anon.Username, anon.Password, anon.DB = "", "", 0
	s := redis.NewSentinelClient(&anon)
	defer s.Close()
	master := "<the master's name>"
	if names := masterNames(s.Masters(ctx).Val()); len(names) > 0 {
		master = strings.Join(names, " or ")
	}
	return fmt.Errorf("redis at state.url (%s) is a sentinel, which keeps no data: remove state.url and set state.redis: {mode: sentinel, master: %s, addrs: [%s, the other sentinels]}",
		o.Addr, master, o.Addr)
}

// masterNames reads the names out of SENTINEL MASTERS' answer, RESP2 (a
// list of flat field, value lists) or RESP3 (a list of maps).
func masterNames(v []any) []string {
	var out []string
	for _, m := range v {
		switch m := m.(type) {
		case []any:
			for i := 0; i+1 < len(m); i += 2 {
				if m[i] == "name" {
					out = append(out, fmt.Sprint(m[i+1]))
				}
			}
		case map[any]any:
			if n, ok := m["name"]; ok {
				out = append(out, fmt.Sprint(n))
			}
		case map[string]any:
			if n, ok := m["name"]; ok {
				out = append(out, fmt.Sprint(n))
			}
		}
	}
	slices.Sort(out)
	return out
}

// probeSentinels asks every sentinel, at once, where the master is; then
// asks the master the first answer names.
func probeSentinels(ctx context.Context, c Config, tc *tls.Config, timeout time.Duration) ([]string, error) {
	type answer struct {
		addr []string
		err  error
	}
	answers := make([]answer, len(c.Addrs))
	var wg sync.WaitGroup
	for i, a := range c.Addrs {
		wg.Go(func() {
			o := &redis.Options{Addr: a, TLSConfig: tc}
			bound(o, timeout, -1)
			s := redis.NewSentinelClient(o)
			defer s.Close()
			answers[i].addr, answers[i].err = s.GetMasterAddrByName(ctx, c.Master).Result()
		})
	}
	wg.Wait()
	var errs, named []string
	var missing [][2]string        // per sentinel that does not serve: what, and the fix
	where := map[string][]string{} // master address → the sentinels naming it
	for i, a := range c.Addrs {
		switch r := answers[i]; {
		case r.err == nil && len(r.addr) == 2:
			m := r.addr[0] + ":" + r.addr[1]
			if len(where[m]) == 0 {
				named = append(named, m)
			}
			where[m] = append(where[m], a)
		case errors.Is(r.err, redis.Nil):
			errs = append(errs, a+": no master named "+c.Master)
			missing = append(missing, [2]string{fmt.Sprintf("sentinel %s does not know master %q", a, c.Master),
				"have it monitor the master, or take it out of state.redis.addrs"})
		case r.err != nil:
			errs = append(errs, a+": "+r.err.Error())
			missing = append(missing, sentinelFailed(a, r.err))
		default:
			errs = append(errs, fmt.Sprintf("%s: answered %q", a, r.addr))
			missing = append(missing, [2]string{fmt.Sprintf("sentinel %s answered %q for master %q, not an address", a, r.addr, c.Master),
				"check it is a sentinel"})
		}
	}
	if len(named) == 0 {
		return nil, fmt.Errorf("no sentinel in state.redis.addrs knows master %q (%s)", c.Master, strings.Join(errs, "; "))
	}
	var warnings []string
	for _, m := range missing {
		warnings = append(warnings, fmt.Sprintf("%s: %d of the %d sentinels in state.redis.addrs know master %q (a failover needs a majority of those watching it); %s",
			m[0], len(c.Addrs)-len(missing), len(c.Addrs), c.Master, m[1]))
	}
	if len(named) > 1 {
		var says []string
		for _, m := range named {
			says = append(says, strings.Join(where[m], ", ")+" say "+m)
		}
		warnings = append(warnings, fmt.Sprintf("the sentinels disagree on where master %q is (%s): a failover may be under way, or they do not watch the same master", c.Master, strings.Join(says, "; ")))
	}
	w, err := probeMaster(ctx, c, named[0], tc, timeout)
	if w != "" {
		warnings = append(warnings, w)
	}
	return warnings, err
}

// sentinelFailed says how the sentinel at a failed to answer where the
// master is, and the fix: no answer, or an error reply (a data node given
// as a sentinel answers "unknown command").
func sentinelFailed(a string, err error) [2]string {
	var re redis.Error
	switch {
	case errors.As(err, &re) && strings.Contains(err.Error(), "unknown command"):
		return [2]string{fmt.Sprintf("%s in state.redis.addrs is not a sentinel (%v)", a, err),
			"list the sentinels (port 26379 by default), not the data nodes"}
	case errors.As(err, &re):
		return [2]string{fmt.Sprintf("sentinel %s answered an error (%v)", a, err), "see its log"}
	}
	return [2]string{fmt.Sprintf("sentinel %s does not answer (%v)", a, err), "start it, or take it out of state.redis.addrs"}
}

// probeMaster asks the master the sentinels named whether it takes c's
// credentials: the sentinels are asked without them, so a wrong password
// would otherwise show only at the first call. A master that does not
// answer is a warning, not an error: a failover may be under way.
func probeMaster(ctx context.Context, c Config, addr string, tc *tls.Config, timeout time.Duration) (string, error) {
	o := &redis.Options{Addr: addr, Username: c.Username, Password: c.Password, TLSConfig: tc}
	bound(o, timeout, -1)
	cl := redis.NewClient(o)
	defer cl.Close()
	err := cl.Ping(ctx).Err()
	switch {
	case err != nil && isAuth(err):
		return "", fmt.Errorf("redis master %q at %s refused the credentials: %v", c.Master, addr, err)
	case err != nil:
		return fmt.Sprintf("master %q at %s, where the sentinels say it is, does not answer (%v): the gateway runs on local state, shared with no other gateway, until it answers or the sentinels promote a replica", c.Master, addr, err), nil
	}
	return "", nil
}

// probeSeeds asks every seed node, at once, for CLUSTER INFO: a seed that
// is not a cluster node or refuses the credentials, or a cluster whose
// state is fail, is refused; a seed that does not answer while another
// does is a warning.
func probeSeeds(ctx context.Context, c Config, tc *tls.Config, timeout time.Duration) ([]string, error) {
	type answer struct {
		info string
		err  error
	}
	answers := make([]answer, len(c.Addrs))
	var wg sync.WaitGroup
	for i, a := range c.Addrs {
		wg.Go(func() {
			o := &redis.Options{Addr: a, Username: c.Username, Password: c.Password, TLSConfig: tc}
			bound(o, timeout, -1)
			cl := redis.NewClient(o)
			defer cl.Close()
			answers[i].info, answers[i].err = cl.ClusterInfo(ctx).Result()
		})
	}
	wg.Wait()
	var errs []string
	ok := 0
	for i, a := range c.Addrs {
		switch r := answers[i]; {
		case r.err != nil && strings.Contains(r.err.Error(), "cluster support disabled"):
			return nil, fmt.Errorf("redis at %s is not a cluster node: set state.redis.mode: single (or sentinel), or list only the cluster's nodes", a)
		case r.err != nil && isAuth(r.err):
			return nil, fmt.Errorf("redis at %s refused the credentials: %v", a, r.err)
		case r.err != nil:
			errs = append(errs, a+": "+r.err.Error())
		case field(r.info, "cluster_state") != "ok":
			return nil, fmt.Errorf("the redis cluster reports cluster_state:%s (asked %s): its slots are not all served", field(r.info, "cluster_state"), a)
		default:
			ok++
		}
	}
	if ok == 0 {
		return nil, fmt.Errorf("no seed node in state.redis.addrs answered (%s)", strings.Join(errs, "; "))
	}
	var warnings []string
	for _, e := range errs {
		a, err, _ := strings.Cut(e, ": ")
		warnings = append(warnings, fmt.Sprintf("seed node %s does not answer (%s): %d of the %d seeds in state.redis.addrs answer; start it, or take it out of state.redis.addrs",
			a, err, ok, len(c.Addrs)))
	}
	return warnings, nil
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
