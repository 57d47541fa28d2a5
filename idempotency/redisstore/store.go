// Package redisstore is an idempotency.Store kept in Redis, for answers
// shared by processes on many hosts.
//
// An ID has at most two keys, sharing one hash slot through the hash tag
// on the ID (so every script runs on one node of a Redis Cluster):
// "<prefix>idem:{<id>}:mark", the in-flight mark (its holder's token and
// the request's fingerprint), set with PX to the lease, and
// "<prefix>idem:{<id>}:answer", the kept answer (the fingerprint and the
// encoded answer, content headers only), set with PX to the ttl. Every key
// has a TTL: Redis expires marks and answers itself, so a holder that dies
// wedges its key only until its lease ends, and the store needs no sweep.
// Begin, Keep and Release are each one Lua script, run atomically: Begin
// reads the answer, else the mark, else takes the mark (SET NX PX); Keep
// checks the mark's token, writes the answer and deletes the mark.
//
// Leases and ttls are measured on the Redis clock; the now given to Begin
// and Keep only dates a Mark's Until, an InFlight result's Until and the
// answer's Kept. MaxBytes has no meaning here: what bounds the kept answers
// is their ttl and the server's maxmemory (with maxmemory-policy
// volatile-ttl, Redis drops the answers expiring first).
//
// Every call is bounded by Options.Timeout and fails when Redis cannot be
// reached: the caller then runs its call without deduplication.
package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/idempotency"
)

// Options configures a Store. The zero value is usable.
type Options struct {
	// Prefix starts every key the store writes. If empty, "sluice:".
	Prefix string

	// Timeout bounds every call to Redis; an answer can be megabytes. If
	// zero, 1s.
	Timeout time.Duration

	// MaxAnswer is the largest answer body Keep keeps, in bytes. If zero,
	// idempotency.DefaultMaxAnswer (8 MiB).
	MaxAnswer int64
}

// Store is an idempotency.Store kept in Redis. It is safe for concurrent
// use.
type Store struct {
	client redis.Scripter
	opts   Options
}

// New returns a store kept in the Redis server that client talks to. Share
// the client with the breaker store and the spend ledger to use one pool
// of connections; closing the client is the caller's.
func New(client redis.Scripter, opts Options) *Store {
	if opts.Prefix == "" {
		opts.Prefix = "sluice:"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = time.Second
	}
	if opts.MaxAnswer <= 0 {
		opts.MaxAnswer = idempotency.DefaultMaxAnswer
	}
	return &Store{client: client, opts: opts}
}

// keys returns the answer's and the mark's key of id, in one hash slot.
func (s *Store) keys(id string) []string {
	base := s.opts.Prefix + "idem:{" + id + "}:"
	return []string{base + "answer", base + "mark"}
}

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.Timeout)
}

// tokenLen is the length of a mark's token (idempotency.NewToken's hex);
// a mark's value is the token, then the 32 bytes of the fingerprint.
const tokenLen = 32

// beginScript: KEYS answer, mark; ARGV the new mark's value, lease (ms).
// It answers {1, answer} for a kept answer, {2, mark, pttl} for a live
// mark, {0} when it took the mark.
var beginScript = redis.NewScript(`
local a = redis.call('GET', KEYS[1])
if a then return {1, a} end
local m = redis.call('GET', KEYS[2])
if m then return {2, m, redis.call('PTTL', KEYS[2])} end
redis.call('SET', KEYS[2], ARGV[1], 'NX', 'PX', ARGV[2])
return {0}
`)

// keepScript: KEYS answer, mark; ARGV token, encoded answer, ttl (ms). It
// keeps the mark's fingerprint and the answer and deletes the mark, if
// the mark is the token's: 1, else 0.
var keepScript = redis.NewScript(`
local m = redis.call('GET', KEYS[2])
if not m or string.sub(m, 1, 32) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], string.sub(m, 33) .. ARGV[2], 'PX', ARGV[3])
redis.call('DEL', KEYS[2])
return 1
`)

// releaseScript: KEYS answer, mark; ARGV token. It deletes the mark if it
// is the token's.
var releaseScript = redis.NewScript(`
local m = redis.call('GET', KEYS[2])
if m and string.sub(m, 1, 32) == ARGV[1] then redis.call('DEL', KEYS[2]) end
return 1
`)

// Begin implements idempotency.Store.
func (s *Store) Begin(id string, fp [32]byte, lease time.Duration, now time.Time) (idempotency.Result, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	token := idempotency.NewToken()
	res, err := beginScript.Run(ctx, s.client, s.keys(id), token+string(fp[:]), max(1, lease.Milliseconds())).Slice()
	if err != nil {
		return idempotency.Result{}, fmt.Errorf("idempotency: redis begin: %w", err)
	}
	switch code, _ := res[0].(int64); code {
	case 0:
		return idempotency.Result{Verdict: idempotency.Run, Mark: idempotency.Mark{ID: id, Token: token, Until: now.Add(lease)}}, nil
	case 1:
		v, _ := res[1].(string)
		if len(v) < 32 {
			return idempotency.Result{}, errDamaged
		}
		if v[:32] != string(fp[:]) {
			return idempotency.Result{Verdict: idempotency.Conflict}, nil
		}
		a := new(idempotency.Answer)
		if err := a.UnmarshalBinary([]byte(v[32:])); err != nil {
			return idempotency.Result{}, err
		}
		return idempotency.Result{Verdict: idempotency.Replay, Answer: a}, nil
	default:
		v, _ := res[1].(string)
		pttl, _ := res[2].(int64)
		r := idempotency.Result{Verdict: idempotency.InFlight, Until: now.Add(time.Duration(max(pttl, 0)) * time.Millisecond)}
		if len(v) != tokenLen+32 || v[tokenLen:] != string(fp[:]) {
			r.Verdict = idempotency.Conflict
		}
		return r, nil
	}
}

var errDamaged = errors.New("idempotency: damaged answer in redis")

// Keep implements idempotency.Store.
func (s *Store) Keep(m idempotency.Mark, a *idempotency.Answer, ttl time.Duration, now time.Time) error {
	if a.Size() > s.opts.MaxAnswer {
		if err := s.Release(m); err != nil {
			return err
		}
		return idempotency.ErrTooLarge
	}
	k := *a
	k.Kept = now
	enc, _ := k.MarshalBinary()
	ctx, cancel := s.ctx()
	defer cancel()
	ok, err := keepScript.Run(ctx, s.client, s.keys(m.ID), m.Token, enc, max(1, ttl.Milliseconds())).Int()
	if err != nil {
		return fmt.Errorf("idempotency: redis keep: %w", err)
	}
	if ok != 1 {
		return idempotency.ErrMarkLost
	}
	return nil
}

// Release implements idempotency.Store.
func (s *Store) Release(m idempotency.Mark) error {
	ctx, cancel := s.ctx()
	defer cancel()
	if err := releaseScript.Run(ctx, s.client, s.keys(m.ID), m.Token).Err(); err != nil {
		return fmt.Errorf("idempotency: redis release: %w", err)
	}
	return nil
}

var _ idempotency.Store = (*Store)(nil)
