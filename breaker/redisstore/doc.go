// Package redisstore is a breaker.Store kept in Redis, for breakers shared
// by processes on many hosts.
//
// Each breaker is one Redis hash, "<prefix>breaker:{<name>}" (prefix
// "sluice:" by default; the name is the hash tag, so the scripts run on
// one node of a Redis Cluster and breakers spread over its nodes), with the fields s (state), f (failures), u (until),
// p (probe token), r (reason), c (changed), n (transitions), w (the slow
// attempts' times, comma-separated) and v (a version bumped by every
// write). Times are Redis-clock microseconds. A key expires after IdleTTL
// without a change (plus the time its cool or lease still has to run).
//
// List finds the breakers in a registry, the sorted set
// "<prefix>breakers" (one key, on one node of a cluster): each name with
// the Redis time until which it is kept, at least its key's expiry. A
// store adds a name after an Apply, at most once a minute per breaker
// unless the record is new or outlives its entry; each addition and each
// List drop the names whose time has passed, and List those whose key it
// finds gone (expired, evicted, deleted). Nothing the store runs walks the keys of the
// database: List costs one pipelined read of the registry and one of the
// breakers it names (and of those in this store's cache), however
// many other keys the database holds.
//
// Every change is one Lua script, run atomically by Redis: it reads the
// record, takes the time from Redis TIME, applies the same rules as
// breaker.Settings.Next (a test runs a table of cases through both), writes
// the record and returns it with the state it was in. The half-open probe
// is a lease with an expiry: the record holds the probe's token and the
// Redis time its lease ends, so a probe holder that dies is replaced once
// that time passes, on whichever host asks first.
//
// Clock skew between hosts does not matter: cool periods and leases are
// measured on the Redis clock, and the store converts the times it returns
// into the local clock using the offset between the two clocks, measured
// at every round trip (its error is at most half the round trip).
//
// Reads never wait for Redis. The store caches the record of every breaker
// it has been asked about in the last minute and refreshes all of them
// every Refresh (250 ms by default) in one pipelined round trip; Load
// answers from that cache, so a closed breaker whose calls succeed costs
// no Redis round trip at all. A breaker unused for a minute leaves the
// cache, and its next Load waits for Redis as a first one does: the
// refresh reads the breakers in use, however many names were ever asked
// about.
// Changes made here are in the cache at once; a change made by another
// process or host is seen here within Refresh plus one round trip, 250 ms
// and a little by default. Only changes (failures, transitions, probes)
// go to Redis.
//
// The store runs on any go-redis client (Options.Client): one server, a
// failover client that follows Sentinel to the promoted master, or a
// cluster client. Scripts run with EVALSHA and fall back to EVAL when a
// server (a promoted replica, a restarted node) answers NOSCRIPT.
//
// Every Redis call is bounded by Timeout (100 ms by default), connection
// included; a client the store builds itself never retries. When a call fails or times out, the
// store says so once in the log ("redis unreachable, using local
// breakers"), Degraded reports true, FallbacksTotal counts the switch, and
// decisions are made by local, in-process breakers that start from the
// last shared records seen. The refresher keeps trying Redis every Refresh;
// once it answers, the store logs that, drops the local breakers and uses
// the shared records again. A breaker can thus still open during an
// outage, on each host for itself.
//
// Slow.Count is capped at breaker.MaxStoredSlow (16) for this store.
package redisstore
