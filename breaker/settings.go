package breaker

import "time"

// Settings says when a breaker opens and how long it stays open. The zero
// value is usable: every zero field takes the default written in its doc.
type Settings struct {
	// Failures is how many consecutive failures open the breaker.
	// If zero, 5 is used.
	Failures int

	// Cool is how long the breaker stays open before it lets one probe
	// through. If zero, 30s is used.
	Cool time.Duration

	// Slow opens the breaker on attempts that succeed too slowly.
	Slow Slow

	// Lease bounds how long one half-open probe may be held. A probe whose
	// holder never reports (it died, or hung) is released when the lease
	// ends, so the breaker never stays stuck half-open. Callers set it to
	// the policy's total timeout. If zero, 30s is used.
	Lease time.Duration

	// OnStateChange, if set, is called once for every change of state a
	// Breaker with these settings makes: Allow's open → half_open (it took
	// the probe), Permit.Done's closed → open, half_open → closed and
	// half_open → open, and Reset's → closed. It is called after the
	// change is stored, with no lock held (it may call the breaker back),
	// on the goroutine that made the change; to is the record the change
	// left (why it opened, until when, how many changes so far). A change
	// another process sharing the Store made is not reported: read the
	// Store for those. If nil, nothing is called.
	OnStateChange func(name string, from State, to Record)
}

// Slow says when successful but slow attempts open the breaker: Count
// attempts slower than Threshold within Window. For a stream, "slow" is the
// time to its first byte.
type Slow struct {
	// Threshold is the latency from which an attempt counts as slow.
	// If zero, slow attempts are not tracked.
	Threshold time.Duration

	// Count is how many slow attempts within Window open the breaker.
	// If zero, 3 is used.
	Count int

	// Window is the sliding window over which slow attempts are counted.
	// If zero, 60s is used.
	Window time.Duration
}

func (s Settings) failures() int {
	if s.Failures <= 0 {
		return 5
	}
	return s.Failures
}

func (s Settings) cool() time.Duration {
	if s.Cool <= 0 {
		return 30 * time.Second
	}
	return s.Cool
}

func (s Settings) lease() time.Duration {
	if s.Lease <= 0 {
		return 30 * time.Second
	}
	return s.Lease
}

func (s Slow) count() int {
	if s.Count <= 0 {
		return 3
	}
	return s.Count
}

func (s Slow) window() time.Duration {
	if s.Window <= 0 {
		return 60 * time.Second
	}
	return s.Window
}
