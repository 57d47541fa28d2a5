package redisstore

import "time"

// The store's two modes: shared records in Redis, or local breakers while
// Redis cannot be reached, and the refresher that moves between them.

// degrade switches decisions to local breakers, once per outage.
func (s *Store) degrade(err error) {
	s.mode.Lock()
	defer s.mode.Unlock()
	if s.degraded.Load() {
		return
	}
	s.local.Store(&fallback{seed: s.seed})
	s.why = err
	s.degraded.Store(true)
	s.fallbacks.Add(1)
	s.log.Warn("redisstore: redis unreachable, using local breakers", "err", err)
}

// restore switches decisions back to the shared records.
func (s *Store) restore() {
	s.mode.Lock()
	defer s.mode.Unlock()
	if s.degraded.Load() {
		s.degraded.Store(false)
		s.why = nil
		s.forgetRegistrations() // a failover may have lost the last ones
		s.log.Info("redisstore: redis reachable again, using shared breakers")
	}
}

// ping reads the Redis time once: the first clock sample, and the first
// sign of an unreachable Redis.
func (s *Store) ping() {
	if _, err := s.read(nil, nil); err != nil {
		s.degrade(err)
	}
}

// run refreshes the cache every Refresh until Close.
func (s *Store) run() {
	defer close(s.done)
	t := time.NewTicker(s.opts.Refresh)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			s.refresh()
		}
	}
}

// refresh reads every cached record again in one round trip, after
// dropping the names nobody asked about for the last idle turns. While the
// store is degraded it is also the probe that finds Redis back.
func (s *Store) refresh() {
	turn := s.turns.Add(1)
	evict := !s.degraded.Load() // in an outage, the cache seeds the local breakers
	var names []string
	var entries []*entry
	s.cache.Range(func(k, v any) bool {
		e := v.(*entry)
		if evict && turn-min(turn, e.used.Load()) > s.idle {
			s.cache.CompareAndDelete(k, e)
			return true
		}
		names, entries = append(names, k.(string)), append(entries, e)
		return true
	})
	if len(names) == 0 && !s.degraded.Load() {
		return
	}
	if _, err := s.read(names, entries); err != nil {
		s.degrade(err)
		return
	}
	s.restore()
}

// Err returns the error that put the store on local breakers, as Redis
// gave it; nil while the breakers are shared.
func (s *Store) Err() error {
	s.mode.Lock()
	defer s.mode.Unlock()
	return s.why
}
