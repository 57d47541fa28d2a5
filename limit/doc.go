// Package limit keeps the calls of every process sharing a state directory
// (or every host sharing Redis) under a provider's rate limits by giving
// each call a slot in time and making it wait for it, instead of letting
// calls run into the provider's 429.
//
// # Algorithm
//
// Each bucket of a configured limit is the generic cell rate algorithm
// (GCRA, from ATM networks; the throttled and redis-cell libraries use it,
// and x/time/rate's Reservation is the same idea) with zero burst
// tolerance (the buckets learned from providers have one: see Learned
// limits). A bucket is one
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
// of one priority are served first come, first served across processes
// and hosts (see Priorities).
//
// # Priorities
//
// A call is Interactive (a person waits on it) or Batch (nobody does):
// its caller says which (hook.Caller.Priority; none is Interactive). Wherever calls wait for a slot, a waiting Interactive call
// is admitted before any waiting Batch call, in every process and host
// sharing the Store; a Batch call that has waited Limiter.PromoteAfter
// (30 s unless set) is Interactive from then on, as if it came then, so a
// stream of Interactive calls never starves it. Each call has a rank, the
// instant from which it is Interactive: its start, or its start +
// PromoteAfter for a Batch call; waiting calls are ordered by rank.
//
//   - Slots in time (requests, tokens, a pause's learned bucket, a pause):
//     an Interactive call takes the first free slot however far it is, so
//     the bucket's schedule, its TAT, holds every Interactive call waiting
//     anywhere: the shared Store knows them without a count of its own, and
//     the slots of a process that dies with Interactive calls waiting pass
//     by themselves. A Batch call takes no slot more than 25 ms
//     (batchHorizon) ahead: it waits holding nothing, in this process's
//     queue of Batch calls (per its first bucket, by rank: first come,
//     first served), whose head sleeps until the first free slot is that
//     near (looking again at least once a second) and takes it. So an
//     Interactive call that comes finds at most 25 ms of Batch calls ahead
//     of it, however many wait. Between processes, the heads of their
//     queues take the slots in the order they ask for them. A pause with
//     no bucket (no learned rate, no configured limit) has no slots to
//     order: its calls all go when it ends.
//   - In-flight slots (Concurrent): the calls of a process queue per key by
//     rank; the head asks the Store. While it queues, a call is counted in
//     the Store as waiting at its priority, under
//     "<key>:waiting:interactive" or ":batch", held like an in-flight
//     slot: a File entry of its process (dropped when the process is found
//     dead, which every read of a count above zero checks), a Redis lease
//     until the call's deadline and a second, a Memory count. A Batch head
//     takes no slot while the Store counts an Interactive call waiting for
//     one anywhere.
//
// Limit.Reserve keeps a share of a limit from Batch calls: a Batch call
// also takes its slot in a bucket of its own, "<key>:batch", at the rate
// left (Limit·(1 − Reserve) per Per), at the same instant; of Concurrent
// slots it may take all but ⌊Reserve·Concurrent⌋. A call promoted after
// PromoteAfter is Interactive and may take the reserve.
//
// What priorities cost a call admitted at once (BenchmarkWaitPriority):
// an Interactive call nothing; a Batch call a look at this process's
// queue of Batch calls (a map under a mutex) and, under a Concurrent
// limit, one read of the Store's count of Interactive calls waiting for
// the key (Memory: a map lookup; File: the 28 counters of a mapped record,
// and a liveness check of each other process's entry only while the count
// is above zero; Redis: one more script run, a round trip); under a
// Reserve, one more reservation per bucket. A call that queues for an
// in-flight slot adds one count to the Store when it joins and takes it
// back when it leaves (two more on its promotion).
//
// # Learned limits
//
// With no limit configured, the limits a provider tells in its answers
// hold its calls (Limiter.Learn). The call's dialect reads them from the
// answer's header (dialect.Dialect.Windows): each window's size, what is
// left of it and when it is full again, whatever the provider's header
// names and reset formats. The providers' request limits are token
// buckets, continuously replenished up to the limit rather than reset at
// fixed intervals, whose reset is the time until the limit is back to its
// initial state: when the bucket is full again. So an answer with a
// requests window of L, r of them left and full again in R tells a bucket
// of L requests, L − r of them out, refilling L − r in R. r is a whole
// count of a bucket that holds
// fractions (or refills whole requests, the next in less than an
// interval), so between L − r − 1 and L − r requests refill in R; the
// learned rate takes the lower, L per R·L/(L − r − 1): never faster than
// the provider's, slower by 1/(L − r) at most (0.8% with 120 spent). It
// is learned only from windows at least half spent, where that bound is
// 2/L; a fuller window has room anyway.
//
// The learned bucket is a GCRA bucket like a configured limit's, under
// the model's pause key, with a tolerance: a Rate with Burst = L, whose
// slot is at = max(TAT − τ, now, notBefore) with τ = L·I − I (I the
// interval of one request) and whose TAT becomes max(TAT, at) + I. While
// it holds requests, calls start at once, as the provider's bucket lets
// them; once it is empty, one every I, first come first served across
// everything sharing the Store. Each answer of a window at least half
// spent raises its TAT to at least now + min(L − r + ⌈L/10⌉, L)·I: the
// provider counts the calls of other clients too, and calls that started
// before the bucket was learned; a tenth of the window is kept for the
// calls in flight it had not counted yet (which a raise drops from the
// TAT), while the window drains; once it is spent, the TAT says empty, not
// beyond, so the pace stays the provider's. An answer never lowers the
// TAT: the calls of this bucket in flight are in it. A rate-limit 429
// raises it to now + L·I: empty. A 429's
// Retry-After still pauses the model; when the pause ends, the calls
// waiting for it take the bucket's slots one by one, at the provider's
// pace, instead of all going at once into the next 429. A new rate scales
// a TAT in the future so that the requests it holds out stay as many
// (LearnStep). The bucket and its rate are kept in the Store (File: two
// more counters of the pause record; Redis: two more fields), so the
// processes and hosts sharing it, and the Limiter of a reloaded config,
// pace together; like a pause, a record idle for a minute is swept, and
// learned again from the next answers.
//
// Token windows are not learned as buckets: a spent one pauses until its
// next token as before, and the provider's 429 then pauses for the rest
// (and, for a model whose request bucket is learned, empties it, so that
// the pause too ends paced). A requests window without a size (some
// providers send none on some answers) or of size 1 pauses until its next
// request. A provider that tells no window at all (only a 429's retry
// delay) is paused by its 429s, and released together when the pause
// ends.
//
// # Paces learned from 429s
//
// Headers can be missing (Bedrock's ThrottlingException and Vertex AI's
// RESOURCE_EXHAUSTED carry at most a retry delay), or wrong (a provider
// that enforces its minute in bursts of a few seconds tells the minute's
// limit; another overstates what is left). So the 429s themselves teach a
// pace per pause key (Pace, Store.Pace): its calls leave one by one at
// it, in a bucket of their own without a burst ("pace:<provider>/<model>"),
// in everything sharing the Store. The control law is PaceStep, pure, with
// a Lua twin in redislimit proven equal to it:
//
//   - A rate-limit 429 of a call sent after the last cut, while Sluice
//     believed there was room, cuts the pace (multiplicative decrease). It
//     measures the provider's rate first: between two 429s the provider's
//     bucket went from empty to empty, so the calls it let through since
//     the last cut (OK, the answers of the calls sent after it) over the
//     time since is what it refilled. The cut takes that, at most 90% of
//     the pace; with too few answers to measure by, half of it or the
//     lower bound one answer more gives; with nothing known at all, one
//     call per Retry-After. A 429 of a call sent before the last cut is
//     one of the calls in flight when it came: it cuts nothing again. A
//     first 429 whose own headers teach the bucket is the provider's first
//     word, not a belief proved wrong: it cuts nothing.
//   - Each other answer of a call sent after the cut raises the pace
//     (additive increase per answer): by half a call a second while it
//     probes (after a cut that could not measure: doubling in about 1.4 s
//     of full use, as TCP's slow start), by a hundredth once measured (1% a
//     second, doubling in about 70 s), so that it probes above the
//     provider's rate seldom, by little, and one call at a time.
//   - The pace a call is held to is the slowest of the learned bucket
//     (headers), the pace (429s) and the configured limits (which apply
//     as their own buckets, and cap where a cut starts from): a learned
//     pace never lets more through than a configured limit.
//   - A call of a paced scope takes its slot at most a second ahead
//     (paceHorizon), so that a pace that rises is not held back by slots
//     taken far ahead at a lower one; a Retry-After still pauses the scope,
//     and when the pause ends its waiters leave at the pace.
//   - With Limiter.Scout, the calls of a scope this process has not
//     learned to pace, with no configured rate, start slowly: the first
//     goes alone, each answer that teaches nothing lets two more go and
//     each call that ends one more, until an answer teaches the pace (a
//     429, or headers describing the bucket) or 64 went. A herd of agents
//     starting at once would otherwise meet a provider's burst before any
//     answer could teach a thing.
//
// Measured at fake time with the scout (pace_test.go; 50 agents whose
// calls take 300 to 450 ms): a provider that tells only Retry-After, 2
// calls a second with a burst of 120: at most 10 429s in 60 s and 90% of
// what it allows served; the same of a token limit (60,000 a minute in
// bursts of 5,000, 500 a call) told in token headers; a pace ten times
// too high converges within 5 s and 8 429s and stays (at most 4 more in
// 55 s, 90% served); a provider that doubles its rate is run at 80% of
// the new one within 90 s.
//
// Scope: the providers limit each model on its own (a deployment, where
// one stands for the model, is the call's model). So what Learn learns is
// the model's: "pause:<provider>/<model>"; a 429 for one model holds no
// other. Limiter.SharedLimits names the providers whose limits all their
// models share (an account-wide limit of an OpenAI-compatible server,
// say): theirs is "pause:<provider>".
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
// ":tokens" (and, with a Reserve, ":requests:batch" and ":tokens:batch"),
// its concurrency key "limit:<name>:<scope value>:concurrent" (and its
// waiting counts ":concurrent:waiting:interactive" and ":batch")
// (scope value: the provider, "<provider>/<model>", the client id, or
// "all"); a model's pause and learned bucket are "pause:<provider>/<model>"
// ("pause:<provider>" for a provider whose models share its limits). A
// call falls under every bucket and concurrency key of every Limit that
// covers its provider, and under its model's pause and learned bucket; it
// takes the same instant in all the buckets, and the in-flight slots in
// the order of the Limits.
//
// # Use
//
// Limiter.Wait is called before each attempt: it takes the call's slots,
// waits for them (or refuses at once with an *Error when they are further
// than the call may wait) and returns done, which settles the token
// buckets with what the call used and gives back its in-flight slots.
// Limiter.Learn is told each answer: a rate-limit 429's Retry-After, or
// headers saying a window is spent, pause the model, and a requests window
// teaches its bucket, for everything sharing the Store.
//
// # Stores
//
// Memory keeps buckets in one process; File in a state directory, one
// record of counters per key, a reservation being one CompareAndSwap loop
// with no file lock; package redislimit in Redis, one Lua script per
// reservation on Redis's clock. Records idle for a minute (TAT and pause both that far
// in the past) limit nothing, and are swept, so that thousands of client
// ids or models do not grow memory or the directory without bound.
//
// A Store that is an Admitter (redislimit's) admits an Interactive call in
// one round trip in steady state: its pause read, a slot due now in each
// bucket (and in the learned one) and an in-flight slot of each Concurrent
// limit go together, in one pipeline; only when that is not all the call
// needs (a pause, a bucket not yet free, a full limit, a new learned rate)
// does it give back what it does not keep and go step by step. A call's
// end gives its in-flight slots back, one round trip each. Batch calls go
// step by step.
package limit
