package breaker

import "time"

// Record is the stored state of one breaker. Times are Unix nanoseconds so
// that a record encodes the same in every store.
type Record struct {
	// State is the breaker's state.
	State State
	// Failures counts consecutive failures while closed.
	Failures int
	// Slow holds the times of the recent slow attempts, oldest first, at
	// most Slow.Count of them.
	Slow []int64
	// Until is, while Open, when a probe may go; while HalfOpen, when the
	// running probe's lease ends.
	Until int64
	// Probe is, while HalfOpen, the token of the caller holding the probe.
	Probe uint64
	// Reason says why the breaker last opened: "failures", "slow" or
	// "probe_failed".
	Reason string
	// Changed is when State last changed.
	Changed int64
	// Transitions counts the state changes of the breaker's life.
	Transitions uint64
}

// MaxStoredSlow is the most slow-attempt times a shared store (the file
// store of package filestore, and the Redis store) keeps for one breaker.
// A Slow.Count above it is treated as MaxStoredSlow by those stores.
const MaxStoredSlow = 16

// Idle reports whether r is the record of a breaker with nothing to
// share: closed, nothing counted, never changed state. A store need keep
// nothing for it: it reads as the zero Record.
func (r Record) Idle() bool {
	return r.State == Closed && r.Failures == 0 && len(r.Slow) == 0 && r.Transitions == 0
}

// EventKind is the kind of an Event.
type EventKind uint8

// The events a breaker's record goes through.
const (
	// Acquire asks for the probe of an open breaker whose cool period is
	// over, or of a half-open one whose probe lease has ended.
	Acquire EventKind = iota
	// EventSuccess, EventFailure and EventIgnored report an outcome.
	EventSuccess
	EventFailure
	EventIgnored
	// EventReset closes the breaker and clears its counts.
	EventReset
	// EventTrip opens the breaker now, as an operator would.
	EventTrip
)

// Event is one input to a breaker's record.
type Event struct {
	Kind EventKind
	// Token identifies the caller: the probe's token, or 0 for a caller
	// admitted while closed.
	Token uint64
	// Slow marks a successful attempt slower than Slow.Threshold.
	Slow bool
	// Gen is, for an outcome, the generation the caller was admitted in:
	// the record's Transitions then, plus one. An outcome whose Gen is not
	// the record's Transitions plus one now comes from before a state
	// change (a call admitted before the breaker opened and closed again)
	// and changes nothing. If zero, the outcome is not checked.
	Gen uint64
}

// Gen returns the generation an outcome event admitted under r carries:
// r.Transitions plus one.
func (r Record) Gen() uint64 { return r.Transitions + 1 }

// Next returns the record that follows r after event e at time now. It is
// the whole of the breaker's logic, a pure function that every Store
// applies atomically.
func (s Settings) Next(r Record, e Event, now time.Time) Record {
	next := s.next(r, e, now.UnixNano())
	next.Transitions = r.Transitions
	if next.State != r.State {
		next.Transitions++
	}
	return next
}

func (s Settings) next(r Record, e Event, t int64) Record {
	switch e.Kind {
	case EventReset:
		return Record{State: Closed, Changed: t}
	case EventTrip:
		return s.open(r, t, "manual")
	case Acquire:
		if (r.State == Open || r.State == HalfOpen) && t >= r.Until {
			if r.State == Open {
				r.Changed = t
			}
			r.State, r.Probe, r.Until = HalfOpen, e.Token, t+int64(s.lease())
		}
		return r
	}
	if e.Gen != 0 && e.Gen != r.Gen() {
		return r // admitted in an earlier generation
	}
	switch r.State {
	case Closed:
		return s.closedOutcome(r, e, t)
	case HalfOpen:
		if e.Token == 0 || e.Token != r.Probe {
			return r // a caller admitted before the breaker opened
		}
		switch e.Kind {
		case EventSuccess:
			return Record{State: Closed, Changed: t}
		case EventFailure:
			return s.open(r, t, "probe_failed")
		default: // Ignored: the next caller may probe
			r.Probe, r.Until = 0, t
			return r
		}
	}
	return r // Open: late outcomes of calls admitted before it opened
}

func (s Settings) closedOutcome(r Record, e Event, t int64) Record {
	switch e.Kind {
	case EventFailure:
		r.Failures++
		if r.Failures >= s.failures() {
			return s.open(r, t, "failures")
		}
	case EventSuccess:
		r.Failures = 0
		if e.Slow {
			r.Slow = addSlow(r.Slow, t, s.Slow)
			if len(r.Slow) >= s.Slow.count() {
				return s.open(r, t, "slow")
			}
		}
	}
	return r
}

func (s Settings) open(r Record, t int64, reason string) Record {
	return Record{State: Open, Until: t + int64(s.cool()), Reason: reason, Changed: t}
}

// addSlow appends t to the window, dropping times older than the window
// and keeping at most Count entries. It never modifies the old slice.
func addSlow(old []int64, t int64, s Slow) []int64 {
	from := t - int64(s.window())
	keep := make([]int64, 0, len(old)+1)
	for _, x := range old {
		if x > from {
			keep = append(keep, x)
		}
	}
	keep = append(keep, t)
	if n := s.count(); len(keep) > n {
		keep = keep[len(keep)-n:]
	}
	return keep
}
