package limit

import (
	"math"
	"strings"
	"time"
)

// Pace is what the rate-limit 429s of a scope (a pause key) taught of its
// rate: the pace its calls leave at, across everything sharing the Store.
// See "Paces learned from 429s" in the package doc. The zero Pace is none
// learned: the scope is not paced.
type Pace struct {
	// Interval is the time between two calls, in nanoseconds, when the
	// pace was last cut: 1/Interval is the pace then. 0: none learned.
	Interval int64

	// At is when the pace was last cut, in Unix milliseconds.
	At int64

	// OK counts the answers other than a rate-limit 429 of the calls sent
	// after At: each raises the pace (see PerSecond), and a cut measures
	// the provider's rate by them.
	OK int64

	// Steady reports that the last cut was measured (see PaceStep): the
	// pace rises slowly. Else it probes upward fast, as TCP's slow start
	// does, until the next 429 measures the rate.
	Steady bool

	// Last is when the pace last learned from an answer (a cut or an
	// answer counted in OK), in Unix milliseconds: a pace unused for
	// a minute is swept with its record.
	Last int64
}

// The constants of the pace's control law (PaceStep).
const (
	// paceProbeGain is how much each answer raises a pace that probes,
	// in calls per second: the pace rises by half itself each second it
	// is used to the full (doubling in about 1.4 s).
	paceProbeGain = 0.5
	// paceSteadyGain is the same once the rate was measured: 1% a second
	// (doubling in about 70 s), so that the pace probes above the
	// provider's rate seldom and by little.
	paceSteadyGain = 0.01
	// paceCut is the share of the pace a 429 leaves when it cannot
	// measure the rate: a halving.
	paceCut = 0.5
	// paceMeasuredMax is the most a measured cut leaves of the pace: a
	// 429 always slows the scope by a tenth at least.
	paceMeasuredMax = 0.9
	// paceMeasuredMin is the least a measured cut leaves of the pace.
	paceMeasuredMin = 1.0 / 32
	// paceMinOK is how many answers since the last cut a cut needs to
	// measure the rate by.
	paceMinOK = 4
	// paceSettle is how long after a cut, in milliseconds, a 429 with
	// fewer than paceMinOK answers since cuts nothing: its call went
	// before the cut's pause reached every process (a herd's last
	// calls), and cutting for each would halve the pace again and again.
	paceSettle = 250
)

// PerSecond returns the pace in calls per second: 1e9/Interval when it was
// cut, raised by each answer since (OK) by paceSteadyGain calls per second,
// or paceProbeGain while it probes. Raised per answer, the pace rises in
// time in proportion to itself while its calls all succeed, and not at all
// while none is made. 0 when none is learned.
func (p Pace) PerSecond() float64 {
	if p.Interval <= 0 {
		return 0
	}
	gain := paceProbeGain
	if p.Steady {
		gain = paceSteadyGain
	}
	// The conversions round each product, so that no fused multiply-add
	// makes Go's sum differ from Lua's (redislimit's twin).
	return float64(1e9/float64(p.Interval)) + float64(gain*float64(p.OK))
}

// Rate returns the bucket the pace makes: one call per its interval now,
// without a burst (calls leave one by one at the pace, never together);
// the zero Rate when none is learned.
func (p Pace) Rate() Rate {
	ps := p.PerSecond()
	if ps <= 0 {
		return Rate{}
	}
	return Rate{Limit: 1, Per: time.Duration(max(math.Ceil(1e9/ps), 1))}
}

// IsZero reports whether no pace is learned.
func (p Pace) IsZero() bool { return p.Interval <= 0 }

// PaceEvent is an answer a pace learns from.
type PaceEvent struct {
	// Sent is when the call was sent, in Unix milliseconds.
	Sent int64

	// Limited reports a rate-limit 429 (not one of an exhausted quota);
	// else the answer is one the provider's limit let through.
	Limited bool

	// RetryAfter is how long the 429 asked to wait, in nanoseconds (0:
	// it did not say).
	RetryAfter int64

	// Ceiling is the fastest pace the scope knows otherwise, in calls per
	// second: the bucket learned from the provider's headers, or a
	// configured limit; 0 for none.
	Ceiling float64
}

// PaceStep is the pace's control law, pure: the pace after p learns e at
// now (Unix milliseconds). The package's redislimit runs the same step in
// Lua, and a test proves them equal.
//
//   - An answer that is not a rate-limit 429, of a call sent after the
//     last cut, counts in OK: it raises the pace.
//   - A rate-limit 429 of a call sent before the last cut teaches
//     nothing: the cut was made for it (the calls in flight when a 429
//     comes get theirs too, and each would cut again); nor does one of a
//     call sent within 250 ms after it, with fewer than 4 answers
//     since: it went before the cut's pause reached everything sharing
//     the Store.
//   - Any other rate-limit 429 says the pace was too high, and cuts it:
//     from the pace now, or the Ceiling when that is lower or no pace is
//     learned, to the rate the provider let through since the last cut
//     (OK over the time since: between two 429s its bucket went from
//     empty to empty, so what it let through is what it refilled), at
//     most 90% of it and at least 1/32; with fewer than 4 answers since
//     the last cut, to half of it or, if lower, one call more than
//     counted over the time since (the answers of calls the provider let
//     through may not be back yet), probing on; with no pace before, to
//     half of it; and
//     when nothing at all is known (no pace, no ceiling), to one call per
//     Retry-After (per second without one), from where it probes upward.
//
// A cut resets OK and sets At and Last to now; it is Steady when it was
// measured. A counted answer sets Last to now (never back). The interval
// is rounded up to the nanosecond and kept within 1 ns and MaxPause.
func PaceStep(p Pace, e PaceEvent, now int64) Pace {
	if !e.Limited {
		if p.Interval > 0 && e.Sent > p.At {
			p.OK++
			p.Last = max(p.Last, now)
		}
		return p
	}
	if p.Interval > 0 && (e.Sent <= p.At || e.Sent <= p.At+paceSettle && p.OK < paceMinOK) {
		return p
	}
	cur := p.PerSecond()
	if e.Ceiling > 0 && (cur <= 0 || e.Ceiling < cur) {
		cur = e.Ceiling
	}
	var next float64
	steady := false
	switch {
	case cur <= 0:
		next = 1e9 / float64(max(e.RetryAfter, int64(time.Second)))
	case p.Interval > 0 && p.OK >= paceMinOK && now > p.At:
		next = float64(p.OK) * 1000 / float64(now-p.At)
		next = max(min(next, float64(cur*paceMeasuredMax)), float64(cur*paceMeasuredMin))
		steady = true
	case p.Interval > 0 && now > p.At:
		// Too few answers to measure by: the calls the provider let
		// through may not have answered yet (a 429 comes back at once,
		// an answer after its latency). One more than were counted, over
		// the time since, bounds the rate from below; it probes on from
		// there.
		next = min(float64(cur*paceCut), float64(p.OK+1)*1000/float64(now-p.At))
	default:
		next = cur * paceCut
	}
	iv := min(max(math.Ceil(1e9/next), 1), float64(MaxPause))
	return Pace{Interval: int64(iv), At: now, Steady: steady, Last: now}
}

// Paced is a scope's pace as an operator sees it: the pace its calls are
// held to, in calls per second, and what set it, when.
type Paced struct {
	// PerSecond is the slowest of the rates that hold the scope's calls
	// (0: none does).
	PerSecond float64

	// SetBy says which: "headers" (the bucket learned from the
	// provider's headers), "429" (the pace learned from its 429s) or
	// "limit" (a configured limit, lower than both).
	SetBy string

	// At is when the headers or the 429 last set it (the zero Time for a
	// configured limit).
	At time.Time
}

// PacedOf returns the pace a pause listed by Buckets holds its calls to:
// the slowest of the rate learned from headers, the pace learned from
// 429s and the lowest configured request rate covering its provider.
func (l *Limiter) PacedOf(b Bucket) Paced {
	var out Paced
	if !isPause(b.Key) {
		return out
	}
	take := func(ps float64, by string, at time.Time) {
		if ps > 0 && (out.PerSecond == 0 || ps < out.PerSecond) {
			out = Paced{PerSecond: ps, SetBy: by, At: at}
		}
	}
	take(b.Learned.perSecond(), "headers", b.LearnedAt)
	if !b.Pace.IsZero() {
		take(b.Pace.PerSecond(), "429", time.UnixMilli(b.Pace.At))
	}
	if out.PerSecond > 0 {
		provider, _, _ := strings.Cut(strings.TrimPrefix(b.Key, "pause:"), "/")
		take(l.plan(provider).ceiling, "limit", time.Time{})
	}
	return out
}
