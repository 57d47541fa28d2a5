// Package idempotency keeps the answers of requests that carry an
// Idempotency-Key, so that a request sent again (a job restarted after a
// kill, a retry after a cut connection) is answered from what was kept
// instead of being sent upstream and paid for twice.
//
// A request is named by a Key: the route (or the library's provider), the
// caller and the client's key value. Key.ID hashes the three into the one
// name a store uses, on disk or in Redis, so a hostile key value can play
// no path or key tricks. Its payload is named by a Fingerprint: SHA-256 of
// the method, the path, the query without credential parameters, and the
// body.
//
// A Store holds, per ID, at most one in-flight mark and one kept answer:
//
//	r, err := s.Begin(id, fp, lease, now)
//	switch r.Verdict {
//	case Run:      // the mark is ours: call upstream, then
//	               // s.Keep(r.Mark, answer, ttl, now) on a whole 2xx answer,
//	               // s.Release(r.Mark) on every other way out
//	case Replay:   // r.Answer is the kept answer
//	case InFlight: // another call holds a live mark until r.Until: Wait, or 409
//	case Conflict: // the ID is taken by another payload: 422
//	}
//
// The mark carries a lease: once it has run out the mark counts as absent,
// so a holder killed with SIGKILL wedges its key only until its lease ends.
// A mark is never held across the call as a lock: it is a record, taken
// and cleared under a short lock (flock for File, one Redis command for the
// Redis store).
//
// Three stores: Memory (one process: the library's default and tests),
// File (one host, every process sharing a state directory) and
// redisstore.Store (every host sharing a Redis server).
//
// Bounds. An answer over the store's MaxAnswer (8 MiB by default) is
// refused by Keep with ErrTooLarge and its mark cleared: the store decides,
// so that no caller can fill it by forgetting to check. A caller that
// records an answer while relaying it should still stop recording once it
// has passed MaxAnswer (Answer.Size, the same measure) rather than hold the
// whole body, and then Release. Kept answers together over MaxBytes
// (512 MiB by default; for File, the bytes of its logs) drop those that
// expire first (with one ttl: the oldest) down to nine tenths of MaxBytes —
// never a mark. File and Memory sweep expired answers and marks in Sweep,
// which the owner calls periodically (the gateway: every minute); File's
// Keep also starts one in the background when its running estimate of the
// kept bytes passes MaxBytes (and at its first Keep), and Memory evicts in
// Keep. Redis expires its keys itself
// (every key has a TTL).
//
// Joining. A duplicate that arrives while the first call is in flight
// polls Begin through Wait, with a backoff from 10 ms doubling to 250 ms,
// until the verdict is no longer InFlight or its wait ends. Polling rather
// than a watcher (a file watch, Redis pub/sub) was chosen because a key
// nobody waits on then costs nothing at all: no watch, no subscription, no
// goroutine; only a waiting duplicate costs its few polls, which are the
// same cheap Begin as a first request.
//
// No credential reaches a store: Keep keeps only the content headers of an
// answer (ContentHeaders, an allowlist), never a request header, and the
// caller's identity enters only hashed, through Key.ID.
package idempotency
