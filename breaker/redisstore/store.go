package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/redisconn"
)

// Options configures a Store. Client or URL is required.
type Options struct {
	// Client is the Redis client to use: a *redis.Client, a failover
	// client (Sentinel) or a *redis.ClusterClient, built by the caller
	// with its own bounds; the store does not close it. If nil, the store
	// builds a client of the one server at URL and closes it on Close.
	Client redis.UniversalClient

	// URL names the Redis server when Client is nil:
	// redis://[user:password@]host:port/db, or rediss:// for TLS. Timeouts
	// given in the URL are replaced by Timeout.
	URL string

	// Prefix starts every key the store writes. If empty, "sluice:" is used.
	Prefix string

	// Timeout bounds every call to Redis, connecting included; a call that
	// takes longer counts as Redis being unreachable. If zero, 100ms is
	// used.
	Timeout time.Duration

	// Refresh is how often the cached records are read again from Redis;
	// it bounds how late this store sees a change made by another process
	// or host. If zero, 250ms is used.
	Refresh time.Duration

	// IdleTTL is how long a breaker's key lives after its last change
	// (plus whatever its cool period or lease still has to run). If zero,
	// 24h is used.
	IdleTTL time.Duration

	// Logger receives the switches to and from local breakers. If nil,
	// slog.Default() is used.
	Logger *slog.Logger

	now      func() time.Time // the local clock; tests move it
	idle     time.Duration    // how long an unused name stays cached; if zero, cacheIdle
	register time.Duration    // how often a name is added to the registry again; if zero, registerEvery
}

// cacheIdle is how long the store keeps refreshing a breaker nobody asked
// about: past it the name leaves the cache, and its next Load reads Redis
// again, as a first Load does. It bounds the refresh's round trip to the
// breakers in use, however many names (models, under scope model) were
// ever asked about.
const cacheIdle = time.Minute

// Store is a breaker.Store kept in Redis. It is safe for concurrent use.
// Create one with New and Close it when done.
type Store struct {
	opts   Options
	client redis.UniversalClient
	owned  bool // the store built client and closes it
	log    *slog.Logger
	clock  clock
	cache  sync.Map      // name → *entry
	tick   atomic.Uint64 // orders cache writes against refreshes
	turns  atomic.Uint64 // the refreshes so far: the cache's clock of use
	idle   uint64        // the refreshes an unused name stays cached

	mode      sync.Mutex // serialises switching to and from local breakers
	why       error      // what Redis answered when the store went local; under mode
	degraded  atomic.Bool
	fallbacks atomic.Uint64
	local     atomic.Pointer[fallback]

	stop chan struct{}
	done chan struct{}
}

// entry is the cached record of one breaker.
type entry struct {
	mu   sync.Mutex // serialises the first fetch
	cur  atomic.Pointer[cached]
	used atomic.Uint64                // Store.turns when last asked about
	reg  atomic.Pointer[registration] // the name's last entry in the registry made here
}

// touch notes that the entry was asked about at refresh turn n.
func (e *entry) touch(n uint64) {
	if e.used.Load() < n {
		e.used.Store(n)
	}
}

// cached is a record in local-clock times, with what orders it.
type cached struct {
	epoch, ver uint64 // from Redis: newer records have larger (epoch, ver)
	stamp      uint64 // Store.tick when cached
	rec        breaker.Record
}

// offer caches c unless the entry holds a newer record. A read from Redis
// sent at tick since is also taken if nothing was cached after since, so a
// key that vanished (expired, Redis restarted) reads as closed again.
func (e *entry) offer(c *cached, since uint64) {
	for {
		old := e.cur.Load()
		newer := old == nil || c.epoch > old.epoch || c.epoch == old.epoch && c.ver > old.ver
		if !newer && (since == 0 || old.stamp >= since) {
			return
		}
		if e.cur.CompareAndSwap(old, c) {
			return
		}
	}
}

// New returns a store using opts.Client, or the Redis server at opts.URL.
// It fails only on a bad URL: an unreachable Redis starts the store on
// local breakers.
func New(opts Options) (*Store, error) {
	setDefaults(&opts)
	client, owned := opts.Client, false
	if client == nil {
		c, err := redisconn.New(redisconn.Config{URL: opts.URL, Timeout: opts.Timeout, MaxRetries: -1})
		if err != nil {
			return nil, fmt.Errorf("redisstore: %s", strings.TrimPrefix(err.Error(), "redis: "))
		}
		client, owned = c, true
	}
	s := &Store{
		opts: opts, client: client, owned: owned, log: opts.Logger,
		clock: clock{now: opts.now}, stop: make(chan struct{}), done: make(chan struct{}),
		idle: uint64(max(1, (opts.idle+opts.Refresh-1)/opts.Refresh)),
	}
	s.local.Store(&fallback{seed: s.seed})
	s.ping()
	go s.run()
	return s, nil
}

// setDefaults fills in opts' defaults.
func setDefaults(opts *Options) {
	if opts.Prefix == "" {
		opts.Prefix = "sluice:"
	}
	opts.Timeout = orDefault(opts.Timeout, 100*time.Millisecond)
	opts.Refresh = orDefault(opts.Refresh, 250*time.Millisecond)
	opts.IdleTTL = orDefault(opts.IdleTTL, 24*time.Hour)
	opts.idle = orDefault(opts.idle, cacheIdle)
	opts.register = orDefault(opts.register, registerEvery)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.now == nil {
		opts.now = time.Now
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Load returns name's record from the local cache; only the first Load of
// a name waits for Redis (at most Timeout).
func (s *Store) Load(name string) (breaker.Record, error) {
	if s.degraded.Load() {
		return s.local.Load().load(name), nil
	}
	if v, ok := s.cache.Load(name); ok {
		e := v.(*entry)
		e.touch(s.turns.Load())
		if c := e.cur.Load(); c != nil {
			return c.rec, nil
		}
	}
	return s.fetch(name), nil
}

// Apply applies e to name's record in Redis with one script, or to the
// local breaker while Redis is unreachable. Slow.Count is capped at
// breaker.MaxStoredSlow.
func (s *Store) Apply(name string, set breaker.Settings, e breaker.Event) (breaker.State, breaker.Record, error) {
	set.Slow.Count = min(max(set.Slow.Count, 0), breaker.MaxStoredSlow)
	if !s.degraded.Load() {
		c, from, expiry, err := s.eval(name, set, e, "")
		if err == nil {
			en := s.entry(name)
			en.offer(c, 0)
			s.register(name, en, c.epoch, expiry)
			return from, c.rec, nil
		}
		s.degrade(err)
	}
	from, rec := s.local.Load().apply(name, set, e, s.clock.now())
	return from, rec, nil
}

// List returns every breaker's record in Redis, by name: the breakers of
// the registry and those this store has in use; while Redis is
// unreachable, the local breakers' records. Its cost grows with the
// breakers, not with the keys of the database.
func (s *Store) List() (map[string]breaker.Record, error) {
	if !s.degraded.Load() {
		out, err := s.list()
		if err == nil {
			return out, nil
		}
		s.degrade(err)
	}
	return s.local.Load().list(s.names()), nil
}

// Client returns the store's Redis client, to share its connections with
// another user of the same server (the spend ledger of package
// spend/redisledger). It is closed by Close when the store built it.
func (s *Store) Client() redis.UniversalClient { return s.client }

// Degraded reports whether the store is using local breakers because
// Redis is unreachable.
func (s *Store) Degraded() bool { return s.degraded.Load() }

// FallbacksTotal returns how many times the store has switched to local
// breakers.
func (s *Store) FallbacksTotal() uint64 { return s.fallbacks.Load() }

// Close stops the refresher and closes the connections to Redis.
func (s *Store) Close() error {
	select {
	case <-s.stop:
		return nil
	default:
	}
	close(s.stop)
	<-s.done
	if !s.owned {
		return nil
	}
	return s.client.Close()
}

// key returns name's key: "<prefix>breaker:{<name>}", its hash tag the
// name, so a script on it runs on one node of a cluster and different
// breakers spread over the nodes.
func (s *Store) key(name string) string { return s.opts.Prefix + "breaker:{" + name + "}" }

func (s *Store) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), s.opts.Timeout)
}

func (s *Store) entry(name string) *entry {
	v, ok := s.cache.Load(name)
	if !ok {
		v, _ = s.cache.LoadOrStore(name, &entry{})
	}
	e := v.(*entry)
	e.touch(s.turns.Load())
	return e
}

// seed returns the last shared record seen for name: where a local
// breaker starts.
func (s *Store) seed(name string) breaker.Record {
	if v, ok := s.cache.Load(name); ok {
		if c := v.(*entry).cur.Load(); c != nil {
			return c.rec
		}
	}
	return breaker.Record{}
}

func (s *Store) names() []string {
	var names []string
	s.cache.Range(func(k, _ any) bool {
		names = append(names, k.(string))
		return true
	})
	return names
}

// eval runs the transition script for e on name's key, and returns the
// record, the state it was in before, and when the key now expires
// (Redis-clock ms). now is "" outside tests.
func (s *Store) eval(name string, set breaker.Settings, e breaker.Event, now string) (*cached, breaker.State, int64, error) {
	ctx, cancel := s.ctx()
	defer cancel()
	sent := s.clock.now()
	res, err := transition.Run(ctx, s.client, []string{s.key(name)}, scriptArgs(set, e, s.opts.IdleTTL, now)...).StringSlice()
	recv := s.clock.now()
	if err != nil {
		return nil, 0, 0, err
	}
	rr, t, from, err := parseResult(res)
	if err != nil {
		return nil, 0, 0, err
	}
	s.clock.observe(sent, recv, t)
	expiry := t/1000 + s.opts.IdleTTL.Milliseconds() // as the script's PEXPIRE: the idle TTL plus the time left
	if rr.rec.Until > t {
		expiry += (rr.rec.Until - t + 999) / 1000
	}
	return &cached{epoch: rr.epoch, ver: rr.ver, stamp: s.tick.Add(1), rec: s.clock.toLocal(rr.rec)}, from, expiry, nil
}

// fetch reads name's record from Redis the first time it is asked for.
func (s *Store) fetch(name string) breaker.Record {
	e := s.entry(name)
	e.mu.Lock()
	defer e.mu.Unlock()
	if c := e.cur.Load(); c != nil {
		return c.rec
	}
	if _, err := s.read([]string{name}, []*entry{e}); err != nil {
		s.degrade(err)
		return s.local.Load().load(name)
	}
	if c := e.cur.Load(); c != nil {
		return c.rec
	}
	return breaker.Record{}
}

// read reads the records of names from Redis, with the Redis time, in one
// round trip, and offers them to their entries. It reports, for each
// name, whether its key is missing.
func (s *Store) read(names []string, entries []*entry) (missing []bool, err error) {
	since := s.tick.Add(1)
	ctx, cancel := s.ctx()
	defer cancel()
	sent := s.clock.now()
	var tm *redis.TimeCmd
	gets := make([]*redis.SliceCmd, len(names))
	_, err = s.client.Pipelined(ctx, func(p redis.Pipeliner) error {
		tm = p.Time(ctx)
		for i, n := range names {
			gets[i] = p.HMGet(ctx, s.key(n), fields...)
		}
		return nil
	})
	recv := s.clock.now()
	if err != nil {
		return nil, err
	}
	s.clock.observe(sent, recv, tm.Val().UnixMicro())
	missing = make([]bool, len(names))
	for i, g := range gets {
		missing[i] = absent(g.Val())
		rr, err := parseRecord(strs(g.Val()))
		if err != nil {
			s.log.Warn("redisstore: damaged breaker record read as closed", "key", s.key(names[i]), "err", err)
		}
		if old := entries[i].cur.Load(); old != nil && old.stamp < since && wentBack(old, rr) {
			entries[i].reg.Store(nil) // the registry may have lost it too
			s.log.Warn("redisstore: a breaker's shared record went back: Redis lost its last writes (a failover, or a restart); the breaker counts again from what Redis has",
				"breaker", names[i], "was", old.rec.State.String(), "failures_were", old.rec.Failures,
				"now", rr.rec.State.String(), "failures_now", rr.rec.Failures)
		}
		entries[i].offer(&cached{epoch: rr.epoch, ver: rr.ver, stamp: since, rec: s.clock.toLocal(rr.rec)}, since)
	}
	return missing, nil
}

// wentBack reports whether r, read from Redis after old was cached, is
// older than old and old held something to lose (a failure counted, a
// breaker not closed): Redis lost writes this store had seen.
func wentBack(old *cached, r redisRecord) bool {
	older := r.epoch < old.epoch || r.epoch == old.epoch && r.ver < old.ver
	return older && (old.rec.State != breaker.Closed || old.rec.Failures > 0)
}

// absent reports whether HMGET answered no field at all: the key does not
// exist (a hash exists while it has a field).
func absent(vals []any) bool {
	for _, v := range vals {
		if v != nil {
			return false
		}
	}
	return true
}

func strs(vals []any) []string {
	out := make([]string, len(vals))
	for i, v := range vals {
		if str, ok := v.(string); ok {
			out[i] = str
		}
	}
	return out
}
