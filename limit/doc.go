// Package limit keeps the calls of every process sharing a state directory
// (or every host sharing Redis) under a provider's rate limits by giving
// each call a slot in time and making it wait for it, instead of letting
// calls run into the provider's 429.
//
// # Algorithm
//
// Each bucket is the generic cell rate algorithm (GCRA, from ATM networks;
// the throttled and redis-cell libraries use it, and x/time/rate's
// Reservation is the same idea) with zero burst tolerance. A bucket is one
// value, its theoretical arrival time TAT. A Rate of Limit units per Per
// gives each unit an emission interval of Per/Limit. A reservation of cost
// units not before notBefore takes the slot at = max(TAT, now, notBefore)
// and moves the TAT to at + cost·Per/Limit; if at is more than the call's
// maximum wait away it is refused and takes nothing (Step, a pure
// function; Store runs it atomically).
//
// With zero tolerance, slots never overlap: the units started in any
// window of length Per are at most Limit (Limit+1 when a start falls on
// each closed end of the window, and a single call dearer than Limit runs
// alone). So a provider is never exceeded whatever it counts with: a fixed
// window (any window of length Per holds at most Limit), a sliding window
// (the same statement), or a token bucket refilling Limit per Per (each
// slot comes after the units the one before it spent were refilled, so a
// bucket that holds one call's cost never runs dry). The price is that idle time is
// never banked: after a quiet minute calls are still spaced Per/Limit
// apart, they do not burst.
//
// Slots are handed out in the order of the Store's atomic steps, so calls
// are served first come, first served across processes and hosts.
//
// # Calls in flight
//
// A Limit with Concurrent > 0 also caps the calls in flight at once under
// each value of its scope, in everything sharing the Store. A call takes
// an in-flight slot once its slot in time is due (so that calls queued for
// a rate do not hold in-flight slots while they wait), and done gives it
// back, once. A call that finds every slot taken queues: in this process,
// a FIFO per key whose head alone asks the Store, at once, again the
// moment a slot is given back in this process, and else by polling every
// 2 ms doubling to 50 ms, each wait drawn between half and all of that;
// across processes and hosts, whichever head polls first after a slot is
// given back takes it. The queue is left when the call's maximum wait ends
// (an *Error, Wait a fixed hint of 1 s) or its context does (its cause, at
// once); either takes nothing.
//
// The Stores count slots so that the limit is never exceeded, and give
// back those of a holder that died:
//
//   - Memory: a count per key; its holders die with it.
//   - File: an entry per process (its pid, a tag of its start time, its
//     count) among the record's 28 counters. A call adds one to its
//     process's entry, then sums the entries and takes its one back if
//     the sum is over the limit: two calls racing for the last slot may
//     both back out, never both get in. The entries of dead processes
//     (kill(pid, 0) answers ESRCH, /proc says zombie, or the pid's start
//     time differs: a pid given again) are freed by the first call that
//     finds the key full, so a crashed process's slots come back at the
//     next call that needs them. An entry is held only while its process
//     has calls in flight under the key; with all 28 held by live
//     processes, a 29th process's calls queue as for a full key until one
//     of those has none.
//   - Redis (package redislimit): a sorted set of leases, expiring
//     Limiter.Lease (10 minutes unless set) after they are taken; one
//     script drops the expired, counts and adds. A host that dies holding
//     slots gives them back when their leases expire.
//
// When the Store fails, the slot is taken in this process's own memory,
// where the limit then holds for this process alone (OnError is told), and
// the Store rests: for a second the calls are not asked of it, so that a
// Redis that hangs costs one call a second its timeout, not every call.
//
// # Keys
//
// A limit's buckets are "limit:<name>:<scope value>:requests" and
// ":tokens", its concurrency key "limit:<name>:<scope value>:concurrent"
// (scope value: the provider, "<provider>/<model>", the client id, or
// "all"); a model's pause is "pause:<provider>/<model>". A call falls
// under every bucket and concurrency key of every Limit that covers its
// provider, and under its model's pause; it takes the same instant in all
// the buckets, and the in-flight slots in the order of the Limits.
//
// # Use
//
// Limiter.Wait is called before each attempt: it takes the call's slots,
// waits for them (or refuses at once with an *Error when they are further
// than the call may wait) and returns done, which settles the token
// buckets with what the call used and gives back its in-flight slots. Limiter.Learn is told each answer: a
// rate-limit 429's Retry-After, or headers saying a window is spent,
// pause the model for everything sharing the Store.
//
// # Stores
//
// Memory keeps buckets in one process; File in a state directory, one
// record of counters per key, a reservation being one CompareAndSwap loop
// with no file lock; package redislimit in Redis, one Lua script per
// reservation on Redis's clock. Records idle for a minute (TAT and pause both that far
// in the past) limit nothing, and are swept, so that thousands of client
// ids or models do not grow memory or the directory without bound.
package limit
