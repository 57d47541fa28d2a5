package limit

import (
	"math"
	"math/bits"
	"time"
)

// Rate is Limit units (requests or tokens) per Per. A Rate whose Limit or
// Per is zero or less limits nothing.
type Rate struct {
	// Limit is how many units may start within any window of length Per.
	Limit int64

	// Per is the window. At most 24 h is meaningful; longer is accepted.
	Per time.Duration
}

// IsZero reports whether r limits nothing.
func (r Rate) IsZero() bool { return r.Limit <= 0 || r.Per <= 0 }

// Interval returns how long cost units hold a bucket of r: cost·Per/Limit,
// rounded up to the nanosecond (so that rounding never lets more through),
// computed in 128 bits and saturated at math.MaxInt64: it does not
// overflow for any cost and Per. A cost of zero or less, or a Rate that
// limits nothing, holds nothing.
func (r Rate) Interval(cost int64) int64 { return r.span(cost, true) }

// IntervalDown returns cost·Per/Limit rounded down: what a settlement of
// cost units fewer than reserved gives back (never more than was taken).
func (r Rate) IntervalDown(cost int64) int64 { return r.span(cost, false) }

// span returns cost·Per/Limit in nanoseconds, rounded up or down.
func (r Rate) span(cost int64, up bool) int64 {
	if r.IsZero() || cost <= 0 {
		return 0
	}
	hi, lo := bits.Mul64(uint64(cost), uint64(r.Per))
	d := uint64(r.Limit)
	if hi >= d { // the quotient needs more than 64 bits
		return math.MaxInt64
	}
	q, rem := bits.Div64(hi, lo, d)
	if rem != 0 && up {
		q++
	}
	if q > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(q)
}

// Step is the generic cell rate algorithm's step with zero burst
// tolerance, pure: it takes the bucket's theoretical arrival time tat, the
// time now and the earliest start notBefore, all in Unix nanoseconds, and a
// reservation of cost units of r that may wait at most maxWait. The slot is
// at = max(tat, now, notBefore). If at is more than maxWait after now the
// reservation is refused: ok is false, newTAT is tat (nothing is taken) and
// at says when the slot would be. Otherwise ok is true and newTAT is
// at + r.Interval(cost), saturated at math.MaxInt64; the caller starts at
// at. A maxWait below zero counts as zero; a Rate that limits nothing gives
// at = max(now, notBefore) and leaves tat as it is.
//
// A clock gone back (now earlier than the now of the step that set tat) is
// taken as it is: the slot stays where the bucket's schedule puts it, so
// the wait grows by the step back and a wait beyond maxWait is refused,
// never granted early. The package's redislimit runs the same step in Lua.
func Step(tat, now, notBefore int64, r Rate, cost int64, maxWait time.Duration) (newTAT, at int64, ok bool) {
	if r.IsZero() {
		return tat, max(now, notBefore), true
	}
	at = max(tat, now, notBefore)
	if at > addSat(now, max(int64(maxWait), 0)) {
		return tat, at, false
	}
	return addSat(at, r.Interval(cost)), at, true
}

// addSat returns a+b for b ≥ 0, saturated at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
