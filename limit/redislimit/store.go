// Package redislimit is a limit.Store in Redis, for limits shared by many
// hosts: each reservation is one EVALSHA of a Lua twin of limit.Step on
// Redis's clock (TIME), so calls are served first come, first served in
// the order Redis runs them. A key expires a minute after the later of its
// TAT and its pause: idle buckets and pauses sweep themselves.
//
// A pause key's hash holds its pause (ps, pn), the TAT of the bucket
// learned from the provider's answers (ts, tn) and that bucket's rate (rl,
// the limit; rp, the period in nanoseconds): one run of the learn script
// keeps what an answer tells, one HMGET reads the pause and the rate.
//
// A concurrency key is a sorted set of leases, one per call in flight:
// member a unique id, score when the lease expires (Redis time in ms). One
// script drops the expired leases, counts the others and adds the call's
// if they are fewer than the limit; Release removes it (ZREM). A host that
// dies holding slots gives them back when their leases expire
// (limit.Limiter.Lease, 10 minutes unless set).
//
// The Redis key of a limiter key k is "<prefix>{k}" (prefix "sluice:" by
// default): k is the hash tag, so every script runs on one node of a Redis
// Cluster and the buckets spread over its nodes. A key that goes with k in
// one script must be "<prefix>{k}:<suffix>", in the same slot.
//
// A call's admission is one pipeline (Store.Admit, a limit.Admitter): the
// pause read and the reserve and acquire scripts of its buckets and
// concurrency keys, each on its own key. They are not one script: their
// keys are in different slots (one hash tag for them all would put every
// limit of a provider on one node of a Cluster), and a pipeline costs the
// same one round trip; on a Cluster, go-redis sends each node its part at
// once.
//
// Slots are Redis times; a Limiter waits for them on its host's clock, so
// the hosts' clocks should agree (NTP) to well under a slot's interval.
package redislimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/limit"
)

// idleMarginMS is how long, in milliseconds, a key outlives the later of
// its TAT and its pause: limit's idle margin.
const idleMarginMS = 60_000

// Store is a limit.Store in Redis. It is safe for concurrent use.
type Store struct {
	id      string        // names this Store's leases: random
	leases  atomic.Uint64 // the last lease token handed out
	client  redis.Cmdable
	prefix  string
	timeout time.Duration
	now     func() time.Time // if nil, Redis TIME; tests set it
}

// Options configures a Store. The zero value of each field takes the
// default written in its doc.
type Options struct {
	// Prefix is put before every key. If "", "sluice:" is used.
	Prefix string

	// Timeout bounds each Redis call. If zero, 2s is used.
	Timeout time.Duration
}

// New returns a Store on client: a *redis.Client, a failover client
// (Sentinel) or a *redis.ClusterClient (each script touches one slot). Share the client with the breaker store
// (redisstore.Store.Client) to use one pool of connections; closing the
// client is the caller's.
func New(client redis.Cmdable, opts Options) (*Store, error) {
	if client == nil {
		return nil, errors.New("limit: redislimit.New needs a Redis client; make one with redis.NewClient")
	}
	if opts.Prefix == "" {
		opts.Prefix = "sluice:"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 2 * time.Second
	}
	var id [8]byte
	rand.Read(id[:])
	return &Store{id: hex.EncodeToString(id[:]), client: client, prefix: opts.Prefix, timeout: opts.Timeout}, nil
}

// parts returns ns as seconds and nanoseconds, both ≥ 0 for ns ≥ 0.
func parts(ns int64) (string, string) {
	return strconv.FormatInt(ns/1e9, 10), strconv.FormatInt(ns%1e9, 10)
}

// join returns the time whose seconds and nanoseconds are s and n.
func join(s, n int64) int64 { return s*1e9 + n }

// clock returns the now arguments: "" "" for Redis TIME.
func (s *Store) clock() (string, string) {
	if s.now == nil {
		return "", ""
	}
	return parts(s.now().UnixNano())
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.timeout)
}

// Reserve implements limit.Store.
func (s *Store) Reserve(key string, r limit.Rate, cost int64, notBefore time.Time, maxWait time.Duration) (time.Time, bool, error) {
	ok, at, _, err := s.step(key, r, cost, unixNano(notBefore), int64(max(maxWait, 0)))
	return time.Unix(0, at), ok, err
}

// step runs the reserve script and returns ok, at and the TAT.
func (s *Store) step(key string, r limit.Rate, cost, notBefore, maxWait int64) (ok bool, at, tat int64, err error) {
	return s.reserved(s.run(reserveScript, key, s.reserveArgs(r, cost, notBefore, maxWait)...))
}

// reserveArgs returns the reserve script's arguments.
func (s *Store) reserveArgs(r limit.Rate, cost, notBefore, maxWait int64) []any {
	limits := "0"
	if !r.IsZero() {
		limits = "1"
	}
	is, in := parts(r.Interval(cost))
	bs, bn := parts(max(notBefore, 0))
	ws, wn := parts(maxWait)
	ns, nn := s.clock()
	tls, tln := parts(r.Tolerance(cost))
	return []any{limits, is, in, bs, bn, ws, wn, ns, nn, idleMarginMS, tls, tln}
}

// reserved returns the reserve script's answer: ok, at and the TAT.
func (s *Store) reserved(cmd *redis.Cmd) (ok bool, at, tat int64, err error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return false, 0, 0, err
	}
	if len(v) != 5 {
		return false, 0, 0, errors.New("limit: redislimit: the reserve script answered badly")
	}
	return v[0] == 1, join(v[1], v[2]), join(v[3], v[4]), nil
}

// Cancel implements limit.Store.
func (s *Store) Cancel(key string, r limit.Rate, at time.Time, cost int64) error {
	if r.IsZero() {
		return nil
	}
	as, an := parts(at.UnixNano())
	is, in := parts(r.Interval(cost))
	tls, tln := parts(r.Tolerance(cost))
	return s.run(cancelScript, key, as, an, is, in, tls, tln).Err()
}

// Learn implements limit.Store: one run of the learn script.
func (s *Store) Learn(key string, r limit.Rate, used int64) error {
	if r.IsZero() {
		return nil
	}
	_, err := s.learn(key, r, used)
	return err
}

// learn runs the learn script and returns the TAT it left.
func (s *Store) learn(key string, r limit.Rate, used int64) (int64, error) {
	us, un := parts(r.Units(used))
	ns, nn := s.clock()
	v, err := s.run(learnScript, key, r.Limit, int64(r.Per), us, un, ns, nn, idleMarginMS).Int64Slice()
	if err != nil {
		return 0, err
	}
	if len(v) != 2 {
		return 0, errors.New("limit: redislimit: the learn script answered badly")
	}
	return join(v[0], v[1]), nil
}

// Learned implements limit.Store: one HMGET of the pause, the rate and
// the pace.
func (s *Store) Learned(key string) (limit.Learned, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	return learned(key, s.client.HMGet(ctx, s.rkey(key), learnedFields...))
}

// learnedFields are the fields of a pause key that Learned reads: its
// pause, its learned rate and when, and its pace.
var learnedFields = []string{"ps", "pn", "rl", "rp", "la", "vi", "va", "vk", "vs", "vl"}

// learned returns the answer of the HMGET of a pause key's learnedFields.
func learned(key string, cmd *redis.SliceCmd) (limit.Learned, error) {
	v, err := cmd.Result()
	if err != nil || len(v) != len(learnedFields) {
		return limit.Learned{}, err
	}
	var f [10]int64
	for i, x := range v {
		if x == nil {
			continue
		}
		n, err := strconv.ParseInt(fmt.Sprint(x), 10, 64)
		if err != nil {
			return limit.Learned{}, fmt.Errorf("limit: redislimit: key %s holds %v: not a pause, a rate and a pace", key, v)
		}
		f[i] = n
	}
	var l limit.Learned
	if t := join(f[0], f[1]); t > 0 {
		l.Until = time.Unix(0, t)
	}
	if r := (limit.Rate{Limit: f[2], Per: time.Duration(f[3]), Burst: f[2]}); !r.IsZero() {
		l.Rate = r
		if f[4] > 0 {
			l.RateAt = time.UnixMilli(f[4])
		}
	}
	l.Pace = limit.Pace{Interval: f[5], At: f[6], OK: f[7], Steady: f[8] != 0, Last: f[9]}
	return l, nil
}

// Pace implements limit.Store: one run of the pace script.
func (s *Store) Pace(key string, e limit.PaceEvent) (limit.Pace, error) {
	ns, nn := s.clock()
	lim := "0"
	if e.Limited {
		lim = "1"
	}
	v, err := s.run(paceScript, key, e.Sent, lim, e.RetryAfter, strconv.FormatFloat(e.Ceiling, 'g', -1, 64), ns, nn, idleMarginMS).StringSlice()
	if err != nil {
		return limit.Pace{}, err
	}
	var f [5]int64
	for i := range f {
		if len(v) != len(f) {
			break
		}
		if f[i], err = strconv.ParseInt(v[i], 10, 64); err != nil {
			break
		}
	}
	if len(v) != len(f) || err != nil {
		return limit.Pace{}, fmt.Errorf("limit: redislimit: the pace script answered %q", v)
	}
	return limit.Pace{Interval: f[0], At: f[1], OK: f[2], Steady: f[3] != 0, Last: f[4]}, nil
}

// Settle implements limit.Store.
func (s *Store) Settle(key string, r limit.Rate, delta int64) error {
	if r.IsZero() || delta == 0 {
		return nil
	}
	sign, d := "+", r.Interval(delta)
	if delta < 0 {
		sign, d = "-", r.IntervalDown(-max(delta, -math.MaxInt64))
	}
	ds, dn := parts(d)
	ns, nn := s.clock()
	return s.run(settleScript, key, sign, ds, dn, ns, nn, idleMarginMS).Err()
}

// Pause implements limit.Store.
func (s *Store) Pause(key string, until time.Time) error {
	if until.IsZero() {
		return nil
	}
	us, un := parts(until.UnixNano())
	return s.run(pauseScript, key, us, un, idleMarginMS).Err()
}

// Resume implements limit.Store.
func (s *Store) Resume(key string) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.client.HDel(ctx, s.rkey(key), "ps", "pn").Err()
}

// PausedUntil implements limit.Store.
func (s *Store) PausedUntil(key string) (time.Time, error) { return s.load(key, "ps", "pn") }

// FreeAt implements limit.Store.
func (s *Store) FreeAt(key string) (time.Time, error) { return s.load(key, "ts", "tn") }

func (s *Store) load(key, fs, fn string) (time.Time, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	v, err := s.client.HMGet(ctx, s.rkey(key), fs, fn).Result()
	if err != nil || len(v) != 2 || v[0] == nil {
		return time.Time{}, err
	}
	sec, err1 := strconv.ParseInt(fmt.Sprint(v[0]), 10, 64)
	ns, err2 := strconv.ParseInt(fmt.Sprint(v[1]), 10, 64)
	if err1 != nil || err2 != nil {
		return time.Time{}, fmt.Errorf("limit: redislimit: key %s holds %v: not a time", key, v)
	}
	if t := join(sec, ns); t > 0 {
		return time.Unix(0, t), nil
	}
	return time.Time{}, nil
}

// Acquire implements limit.Store: one run of the acquire script, on
// Redis's clock, with a lease until now + lease (rounded up to the
// millisecond).
func (s *Store) Acquire(key string, limit int64, lease time.Duration) (uint64, bool, error) {
	token := s.leases.Add(1)
	ok, err := acquired(s.run(acquireScript, key, s.acquireArgs(limit, lease, token)...))
	return token, ok, err
}

// acquireArgs returns the acquire script's arguments.
func (s *Store) acquireArgs(limit int64, lease time.Duration, token uint64) []any {
	ns, nn := s.clock()
	ms := (max(lease, 0) + time.Millisecond - 1) / time.Millisecond
	return []any{limit, int64(ms), s.member(token), ns, nn}
}

// acquired returns the acquire script's answer: whether the slot was taken.
func acquired(cmd *redis.Cmd) (bool, error) {
	v, err := cmd.Int64Slice()
	if err != nil {
		return false, err
	}
	if len(v) != 2 {
		return false, errors.New("limit: redislimit: the acquire script answered badly")
	}
	return v[0] == 1, nil
}

// Release implements limit.Store: the lease is removed.
func (s *Store) Release(key string, token uint64) error {
	ctx, cancel := s.ctx()
	defer cancel()
	return s.client.ZRem(ctx, s.rkey(key), s.member(token)).Err()
}

// InFlight implements limit.Store: the leases not expired.
func (s *Store) InFlight(key string) (int64, error) {
	ns, nn := s.clock()
	return s.run(inFlightScript, key, ns, nn).Int64()
}

// rkey returns the Redis key of the limiter's key: "<prefix>{<key>}", the
// whole key the hash tag, so each bucket, gate and pause is in one slot of
// a Redis Cluster and different ones spread over its nodes. A key that
// belongs with key (one script touching both) is rkey(key) + ":<suffix>":
// the same tag, the same slot.
func (s *Store) rkey(key string) string { return s.prefix + "{" + key + "}" }

// member returns the name of the lease of token.
func (s *Store) member(token uint64) string { return s.id + ":" + strconv.FormatUint(token, 10) }

// run runs script on key with args, within the Store's timeout.
func (s *Store) run(script *redis.Script, key string, args ...any) *redis.Cmd {
	ctx, cancel := s.ctx()
	defer cancel()
	return script.Run(ctx, s.client, []string{s.rkey(key)}, args...)
}

// unixNano returns t in Unix nanoseconds, 0 for the zero Time.
func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}
