package redisstore

import (
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/breaker"
)

// The registry: the names of the breakers that have a record, in one
// sorted set, "<prefix>breakers", so that List reads them without walking
// the keys of the database (SCAN visits every key, the breakers' few among
// a million kept answers, at every call). A member's score is the Redis
// time (ms) until which it is kept: at least when its breaker's key
// expires. The stores keep it so:
//
//   - after an Apply, a store adds the name with its key's expiry plus
//     registerEvery, unless it did so less than registerEvery ago for the
//     same record (same epoch) and that score still covers the expiry: one
//     command a minute for a breaker that keeps changing, none for one
//     that does not; a score only ever rises (registerScript);
//   - every addition and every List drop the members whose score has
//     passed (their keys expired); List also drops those whose key it
//     finds missing (evicted, deleted, lost in a failover), unless a store
//     has added them again since (pruneScript compares the score it read).
//
// Its size is thus the breakers written within the idle TTL, and every
// command on it costs what that size does. A failover that loses a member
// loses it until the breaker's next Apply on a store that saw the outage
// (or the record go back), or whose entry is older than registerEvery;
// meanwhile the breaker still decides from its own key, and the stores
// using it still list it.

// registerEvery is how often a store adds again the name of a breaker it
// keeps writing, and how far past its key's expiry a member is kept.
const registerEvery = time.Minute

// registration is a name's last entry in the registry made by this store,
// or its last failed try.
type registration struct {
	epoch  uint64    // of the record it was made for
	score  int64     // the score given (Redis ms)
	at     time.Time // local time it was made, or tried
	failed bool
}

// registerScript sets member ARGV[1]'s score to ARGV[2] unless it is
// higher already (ZADD GT, for any Redis version), and drops the members
// whose time has passed, so that the registry stays bounded where nothing
// lists it (a library's store).
var registerScript = redis.NewScript(`
local old = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not old or tonumber(old) < tonumber(ARGV[2]) then
  redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
end
local t = redis.call('TIME')
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)))
return 1
`)

// pruneScript removes each member ARGV[2i-1] whose score is still
// ARGV[2i], the one read when its key was found missing.
var pruneScript = redis.NewScript(`
local n = 0
for i = 1, #ARGV, 2 do
  local s = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if s and tonumber(s) == tonumber(ARGV[i + 1]) then
    n = n + redis.call('ZREM', KEYS[1], ARGV[i])
  end
end
return n
`)

// registry returns the registry's key.
func (s *Store) registry() string { return s.opts.Prefix + "breakers" }

// register adds name to the registry after an Apply that left its record
// of epoch expiring at expiry (Redis ms), unless this store did so
// recently enough. A failure is not an outage: the record was written;
// a change at least Refresh later tries again, and only the first failure
// of a streak is logged.
func (s *Store) register(name string, e *entry, epoch uint64, expiry int64) {
	now := s.clock.now()
	r := e.reg.Load()
	switch {
	case r == nil:
	case r.failed && now.Sub(r.at) < s.opts.Refresh:
		return
	case !r.failed && r.epoch == epoch && expiry <= r.score && now.Sub(r.at) < s.opts.register:
		return
	}
	score := expiry + s.opts.register.Milliseconds()
	ctx, cancel := s.ctx()
	defer cancel()
	if err := registerScript.Run(ctx, s.client, []string{s.registry()}, name, score).Err(); err != nil {
		e.reg.Store(&registration{at: now, failed: true})
		if r == nil || !r.failed {
			s.log.Warn("redisstore: a breaker could not be added to the registry, so other processes may not list it; its next change tries again",
				"breaker", name, "err", err)
		}
		return
	}
	e.reg.Store(&registration{epoch: epoch, score: score, at: now})
}

// list reads the registry, then the records of its members and of the
// names this store has in use, in one round trip; it prunes the members
// whose key is gone.
func (s *Store) list() (map[string]breaker.Record, error) {
	// One pipeline, no script: a first call costs no NOSCRIPT round trip.
	// The Redis time is the clock's estimate, off by half a round trip at
	// most, which the members' minute past their keys' expiry covers.
	ctx, cancel := s.ctx()
	var members *redis.ZSliceCmd
	_, err := s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRemRangeByScore(ctx, s.registry(), "-inf", strconv.FormatInt(s.clock.redisMillis(), 10))
		members = p.ZRangeWithScores(ctx, s.registry(), 0, -1)
		return nil
	})
	cancel()
	if err != nil {
		return nil, err
	}
	scores := make(map[string]string, len(members.Val()))
	names := make([]string, 0, len(members.Val()))
	for _, z := range members.Val() {
		n, _ := z.Member.(string)
		scores[n] = strconv.FormatFloat(z.Score, 'f', -1, 64)
		names = append(names, n)
	}
	for _, n := range s.names() {
		if _, ok := scores[n]; !ok {
			names = append(names, n)
		}
	}
	entries := make([]*entry, len(names))
	for i, n := range names {
		entries[i] = s.entry(n)
	}
	missing, err := s.read(names, entries)
	if err != nil {
		return nil, err
	}
	out := make(map[string]breaker.Record, len(names))
	var gone []any
	for i, n := range names {
		if !missing[i] {
			out[n] = entries[i].cur.Load().rec
		} else if score, ok := scores[n]; ok {
			gone = append(gone, n, score)
		}
	}
	if len(gone) > 0 {
		s.prune(gone)
	}
	return out, nil
}

// prune removes the registry's members whose key was found missing, as
// name, score pairs.
func (s *Store) prune(gone []any) {
	ctx, cancel := s.ctx()
	defer cancel()
	if err := pruneScript.Run(ctx, s.client, []string{s.registry()}, gone...).Err(); err != nil {
		s.log.Warn("redisstore: the registry's members whose breaker is gone could not be removed; the next list tries again", "err", err)
	}
}

// forgetRegistrations makes the next Apply of every cached breaker add it
// to the registry again: after an outage, which a failover that lost the
// last additions would have been.
func (s *Store) forgetRegistrations() {
	s.cache.Range(func(_, v any) bool {
		v.(*entry).reg.Store(nil)
		return true
	})
}
