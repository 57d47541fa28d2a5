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

	// Burst, if above zero, makes the bucket a token bucket holding Burst
	// units and refilled Limit per Per, continuously: calls start at once
	// while it holds their cost, and one every Per/Limit once it is
	// empty. The limits Learn learns from a provider's answers are such
	// buckets (Burst = Limit: the provider's own). If zero, slots never
	// overlap: calls are spaced Per/Limit apart even after a quiet time,
	// as the configured limits are (see the package doc).
	Burst int64
}

// perSecond returns r in units per second; 0 for a Rate that limits
// nothing.
func (r Rate) perSecond() float64 {
	if r.IsZero() {
		return 0
	}
	return float64(r.Limit) / r.Per.Seconds()
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

// Tolerance returns how far before a bucket's TAT a call of cost units of
// r may start: r.Burst·r.Interval(1) − r.Interval(cost), what the bucket
// holds beyond the call when full, 0 without a Burst (or for a call as
// dear as the whole bucket, which starts only once the bucket is full).
// The bucket's size is Burst whole intervals of one unit (each rounded up
// as Interval rounds), so that a bucket Learn filled with n units (n
// intervals) hands out exactly Burst − n at once, not one fewer by the
// rounding.
func (r Rate) Tolerance(cost int64) int64 {
	if r.Burst <= 0 {
		return 0
	}
	return max(r.Units(r.Burst)-r.Interval(cost), 0)
}

// Units returns n·r.Interval(1), saturated at math.MaxInt64: how long n
// units hold a token bucket of r (see Tolerance).
func (r Rate) Units(n int64) int64 {
	iv := r.Interval(1)
	if n <= 0 || iv <= 0 {
		return 0
	}
	if n > math.MaxInt64/iv {
		return math.MaxInt64
	}
	return n * iv
}

// Step is the generic cell rate algorithm's step, pure: it takes the
// bucket's theoretical arrival time tat, the time now and the earliest
// start notBefore, all in Unix nanoseconds, and a reservation of cost
// units of r that may wait at most maxWait. The slot is
// at = max(tat − τ, now, notBefore), where the tolerance τ is 0 for a
// Rate without a Burst (the configured limits: zero burst tolerance) and
// r.Interval(r.Burst) − r.Interval(cost) for a token bucket of Burst
// units. If at is more than maxWait after now the reservation is refused:
// ok is false, newTAT is tat (nothing is taken) and at says when the slot
// would be. Otherwise ok is true and newTAT is
// max(tat, at) + r.Interval(cost) (at + r.Interval(cost) with τ = 0),
// saturated at math.MaxInt64; the caller starts at at. A maxWait below
// zero counts as zero; a Rate that limits nothing gives
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
	at = max(tat-r.Tolerance(cost), now, notBefore)
	if at > addSat(now, max(int64(maxWait), 0)) {
		return tat, at, false
	}
	return addSat(max(tat, at), r.Interval(cost)), at, true
}

// addSat returns a+b for b ≥ 0, saturated at math.MaxInt64.
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
