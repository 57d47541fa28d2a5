// Package redisconn builds the one Redis client every Redis store of a
// gateway shares, in any of the three ways Redis is run: one server
// (single), a master watched by Sentinel (sentinel), or a Redis Cluster
// (cluster). It uses go-redis's own clients — redis.NewClient,
// redis.NewFailoverClient and redis.NewClusterClient — which find the
// master after a failover and follow MOVED and ASK themselves.
//
// Every client has the same bounds: dialing, reading and writing each take
// at most Timeout, and a call's own context deadline replaces the read and
// write timeouts. Replies that go-redis's docs say to retry (LOADING,
// READONLY, CLUSTERDOWN, TRYAGAIN, MASTERDOWN, a dropped connection) are
// retried up to MaxRetries times with a short backoff, within the
// call's deadline; past it the error reaches the store, which treats it as
// Redis being unreachable, never as a provider failure.
package redisconn

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// The modes.
const (
	Single   = "single"
	Sentinel = "sentinel"
	Cluster  = "cluster"
)

// Config says how to reach Redis. The zero value of each field takes the
// default written in its doc.
type Config struct {
	// Mode is Single, Sentinel or Cluster. If "", Single.
	Mode string

	// URL names the one server in Single mode:
	// redis://[user:password@]host:port/db, rediss:// for TLS, or
	// unix://path. Unused by the other modes.
	URL string

	// Addrs are the sentinels (Sentinel) or the cluster's seed nodes
	// (Cluster), each host:port. Unused in Single mode.
	Addrs []string

	// Master is the name the sentinels know the master by. Sentinel mode
	// only.
	Master string

	// Username is the ACL user. If "", the URL's user, else none (the
	// default user).
	Username string

	// Password is the password of the user. If "", the URL's password,
	// else none. Callers read it from the environment, never from a file.
	Password string

	// TLS, when set, turns TLS on for every connection to Redis (the
	// sentinels included) and names the files that configure it. A
	// rediss:// URL turns TLS on too, with the system's CAs.
	TLS *TLS

	// Timeout bounds dialing, each read and each write. If zero, 100ms.
	Timeout time.Duration

	// MaxRetries is how many times a retryable reply is retried. If zero,
	// 2; negative means never.
	MaxRetries int
}

// TLS names the files of a TLS connection. Every field may be empty. It
// is also the config's state.redis.tls, whose keys are its fields' names
// in snake_case (ca_file, cert_file, key_file).
type TLS struct {
	// CAFile is a PEM file of the CAs that sign the servers'
	// certificates. If "", the system's CAs.
	CAFile string

	// CertFile and KeyFile are the client's certificate and key (PEM),
	// for servers that ask for one (tls-auth-clients). Both or neither.
	CertFile, KeyFile string
}

// New returns the client c describes. It fails only on a bad config or an
// unreadable TLS file; it does not reach Redis (see Probe).
func New(c Config) (redis.UniversalClient, error) {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = 100 * time.Millisecond
	}
	retries := c.MaxRetries
	if retries == 0 {
		retries = 2
	}
	tc, err := c.TLS.config()
	if err != nil {
		return nil, err
	}
	switch c.Mode {
	case "", Single:
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
			if o.TLSConfig != nil {
				tc.ServerName = o.TLSConfig.ServerName
			}
			o.TLSConfig = tc
		}
		bound(o, timeout, retries)
		return redis.NewClient(o), nil
	case Sentinel:
		if len(c.Addrs) == 0 || c.Master == "" {
			return nil, errors.New("redis: sentinel mode needs the sentinels' addrs and the master's name")
		}
		o := &redis.Options{Username: c.Username, Password: c.Password, TLSConfig: tc}
		bound(o, timeout, retries)
		return redis.NewFailoverClient(&redis.FailoverOptions{
			MasterName: c.Master, SentinelAddrs: c.Addrs, Username: o.Username, Password: o.Password,
			TLSConfig: tc, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolTimeout: o.PoolTimeout, ContextTimeoutEnabled: true, MaxRetries: o.MaxRetries,
			MinRetryBackoff: o.MinRetryBackoff, MaxRetryBackoff: o.MaxRetryBackoff, DialerRetries: 1,
			DisableIdentity: true,
		}), nil
	case Cluster:
		if len(c.Addrs) == 0 {
			return nil, errors.New("redis: cluster mode needs the seed nodes' addrs")
		}
		o := &redis.Options{}
		bound(o, timeout, retries)
		return redis.NewClusterClient(&redis.ClusterOptions{
			Addrs: c.Addrs, Username: c.Username, Password: c.Password, TLSConfig: tc,
			DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolTimeout: o.PoolTimeout, ContextTimeoutEnabled: true, MaxRetries: o.MaxRetries,
			MinRetryBackoff: o.MinRetryBackoff, MaxRetryBackoff: o.MaxRetryBackoff, DialerRetries: 1,
			DisableIdentity: true, MaintNotificationsConfig: o.MaintNotificationsConfig,
		}), nil
	}
	return nil, fmt.Errorf("redis: unknown mode %q: use single, sentinel or cluster", c.Mode)
}

// parseURL parses a Single mode URL without ever repeating it: it may hold
// a password.
func parseURL(s string) (*redis.Options, error) {
	if s == "" {
		return nil, errors.New("redis: empty url: give the redis server as redis://host:port/db")
	}
	o, err := redis.ParseURL(s)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // url.Error repeats the URL, password included
		}
		return nil, fmt.Errorf("redis: bad url (%v): want redis://[user:password@]host:port/db", err)
	}
	return o, nil
}

// bound sets o's waits: each at most timeout, a call's context deadline
// first, retries within it.
func bound(o *redis.Options, timeout time.Duration, retries int) {
	o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolTimeout = timeout, timeout, timeout, timeout
	o.ContextTimeoutEnabled = true
	o.MaxRetries, o.DialerRetries = retries, 1
	o.MinRetryBackoff, o.MaxRetryBackoff = 4*time.Millisecond, 32*time.Millisecond
	o.DisableIdentity = true
	o.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
}

// config returns the tls.Config t describes; nil for a nil t.
func (t *TLS) config() (*tls.Config, error) {
	if t == nil {
		return nil, nil
	}
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if t.CAFile != "" {
		pem, err := os.ReadFile(t.CAFile)
		if err != nil {
			return nil, fmt.Errorf("redis: tls ca_file: %v", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("redis: tls ca_file %s holds no PEM certificate", t.CAFile)
		}
	}
	if (t.CertFile == "") != (t.KeyFile == "") {
		return nil, errors.New("redis: tls needs both cert_file and key_file, or neither")
	}
	if t.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("redis: tls client certificate: %v", strings.TrimPrefix(err.Error(), "tls: "))
		}
		tc.Certificates = []tls.Certificate{cert}
	}
	return tc, nil
}

// Where names the deployment c reaches, for a start line or a listing,
// never with a password: the URL of the one server with its password left
// out (Single), "redis-sentinel master=NAME sentinels=ADDR,ADDR"
// (Sentinel) or "redis-cluster nodes=ADDR,ADDR" (Cluster), then " user=U"
// for the ACL user Username names and " tls" when TLS is on beyond what
// the URL says.
func (c Config) Where() string {
	var b strings.Builder
	switch c.Mode {
	case Sentinel:
		fmt.Fprintf(&b, "redis-sentinel master=%s sentinels=%s", c.Master, strings.Join(c.Addrs, ","))
	case Cluster:
		fmt.Fprintf(&b, "redis-cluster nodes=%s", strings.Join(c.Addrs, ","))
	default:
		u, err := url.Parse(c.URL)
		if err != nil {
			return "redis (state.url unreadable)"
		}
		if u.User != nil {
			u.User = url.User(u.User.Username())
		}
		b.WriteString(u.String())
		if u.Scheme == "rediss" {
			c.TLS = nil // the URL says it
		}
	}
	if c.Username != "" {
		b.WriteString(" user=" + c.Username)
	}
	if c.TLS != nil {
		b.WriteString(" tls")
	}
	return b.String()
}
