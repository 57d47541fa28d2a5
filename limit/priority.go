package limit

import (
	"math"
	"time"

	"github.com/sluice-llm/sluice/hook"
)

// Priority is a call's priority where it waits: Interactive or Batch
// (see Priorities in the package doc). Wait takes it from the call's
// caller (hook.Ask).
type Priority = hook.Priority

// The priorities.
const (
	// Interactive is the priority of a call a person waits on, and of a
	// call that names none.
	Interactive = hook.Interactive

	// Batch is the priority of a call nobody waits on.
	Batch = hook.Batch
)

const defaultPromoteAfter = 30 * time.Second

// promoteAfter returns l.PromoteAfter or its default.
func (l *Limiter) promoteAfter() time.Duration {
	if l.PromoteAfter > 0 {
		return l.PromoteAfter
	}
	return defaultPromoteAfter
}

// rank returns the instant from which a call that started waiting at start
// counts as Interactive: start for an Interactive call, start +
// PromoteAfter for a Batch one. Waiting calls are admitted in the order of
// their ranks, and a call whose rank has passed is Interactive.
func (l *Limiter) rank(p Priority, start time.Time) (Priority, time.Time) {
	if p == Batch {
		return Batch, start.Add(l.promoteAfter())
	}
	return Interactive, start
}

// reserveScale is the resolution of Limit.Reserve: a basis point.
const reserveScale = 10_000

// batchRate returns the share of r a Batch call may take: r less the
// reserve share, as a Rate of its own; the zero Rate when nothing is
// reserved.
func batchRate(r Rate, reserve float64) Rate {
	bp := int64(math.Round(reserve * reserveScale))
	if bp <= 0 || r.IsZero() {
		return Rate{}
	}
	if r.Limit <= math.MaxInt64/reserveScale && r.Per <= math.MaxInt64/reserveScale {
		return Rate{Limit: r.Limit * (reserveScale - bp), Per: r.Per * reserveScale}
	}
	return Rate{Limit: max(r.Limit-r.Limit/reserveScale*bp, 1), Per: r.Per}
}

// reservedSlots returns how many of n in-flight slots a reserve share
// keeps from Batch calls: the share of n rounded down.
func reservedSlots(n int64, reserve float64) int64 {
	return min(int64(math.Floor(reserve*float64(n)+1e-9)), n)
}

// withReserves returns bs and after them, for each bucket of bs whose
// limit reserves a share, the bucket a Batch call also takes a slot in:
// "<key>:batch", at the rate left to Batch calls. A Batch call's slot is
// the same instant in both, so that Batch calls together never start more
// than the rest of the limit. The buckets are appended in bs's spare
// capacity (buckets leaves room for them).
func withReserves(bs []bucket) []bucket {
	both := bs
	for _, b := range bs {
		if b.reserve <= 0 {
			continue
		}
		both = append(both, bucket{key: b.batchKey, limit: b.limit, rate: batchRate(b.rate, b.reserve), cost: b.cost, tokens: b.tokens})
	}
	return both
}

// batchKey is the suffix of the bucket of a limit's share left to Batch
// calls.
const batchKey = ":batch"

// waitingKey returns the key under which the calls of priority p waiting
// for an in-flight slot of the concurrency key key are counted in the
// Store: "<key>:waiting:<p>", held with Acquire and given back with
// Release like an in-flight slot (so that a Redis lease, or a dead
// process's entry in a File, drops the waiters of a host or process that
// died).
func waitingKey(key string, p Priority) string { return key + ":waiting:" + string(p) }

// maxWaiters is the limit a waiting count is acquired under: in effect
// none.
const maxWaiters = maxCount
