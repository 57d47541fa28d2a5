package breaker

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// State is the state of a breaker.
type State uint8

// The states of a breaker.
const (
	Closed State = iota
	Open
	HalfOpen
)

// String returns "closed", "open" or "half_open".
func (s State) String() string {
	switch s {
	case Closed:
		return "closed"
	case Open:
		return "open"
	case HalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("state(%d)", uint8(s))
}

// Outcome is what one admitted attempt tells the breaker about its provider.
type Outcome uint8

// The outcomes an attempt reports.
const (
	// Success: the provider answered.
	Success Outcome = iota
	// Failure: the provider failed (connection error, timeout, 5xx, 529,
	// rate-limit 429, a stream cut or stalled).
	Failure
	// Ignored: the attempt says nothing of the provider's health (a caller
	// error such as 400 or 401, a quota-exhausted 429, a caller who left).
	// It neither counts as a failure nor resets the count; a probe that ends
	// this way hands the probe to the next caller.
	Ignored
)

// ErrOpen is the error, matched with errors.Is, of a call refused because
// its breaker is open or its half-open probe is taken.
var ErrOpen = errors.New("breaker: open")

// OpenError is the error returned by Allow while the breaker refuses calls.
type OpenError struct {
	// Name is the breaker's name.
	Name string
	// Until is when the breaker may let a probe through: the end of the cool
	// period, or of the running probe's lease.
	Until time.Time
	// State is Open, or HalfOpen while another caller holds the probe.
	State State
}

// Error describes the refusal.
func (e *OpenError) Error() string {
	return fmt.Sprintf("breaker: %s is %s until %s", e.Name, e.State, e.Until.UTC().Format(time.RFC3339))
}

// Is reports whether target is ErrOpen.
func (e *OpenError) Is(target error) bool { return target == ErrOpen }

// Breaker is one named circuit breaker whose record lives in a Store. It is
// safe for concurrent use; breakers of the same name on the same Store (in
// this process or, with a shared Store, in others) act as one.
type Breaker struct {
	name     string
	settings Settings
	store    Store
}

// New returns the breaker called name, keeping its record in store.
// If store is nil, a Memory store private to this breaker is used.
func New(name string, s Settings, store Store) *Breaker {
	if store == nil {
		store = NewMemory()
	}
	return &Breaker{name: name, settings: s, store: store}
}

// Name returns the breaker's name.
func (b *Breaker) Name() string { return b.name }

// Settings returns the breaker's settings.
func (b *Breaker) Settings() Settings { return b.settings }

// Permit is an admission granted by Allow. Report the attempt's outcome
// with Done exactly once.
type Permit struct {
	b     *Breaker
	token uint64 // the probe's token; 0 when admitted closed
	gen   uint64 // the generation admitted in (Event.Gen); 0 when unknown
	state State
}

// State returns the breaker's state as seen when the permit was granted:
// Closed, or HalfOpen for the probe.
func (p Permit) State() State { return p.state }

// Allow asks whether a call may go now. It returns a Permit, or an
// *OpenError while the breaker is open or another caller holds the probe.
// In the closed state it takes no lock and writes nothing. If the store
// fails, Allow admits the call (the store reports its own trouble).
func (b *Breaker) Allow() (Permit, error) {
	rec, err := b.store.Load(b.name)
	if err != nil {
		return Permit{b: b, state: Closed}, nil
	}
	if rec.State == Closed {
		return Permit{b: b, gen: rec.Gen(), state: Closed}, nil
	}
	now := time.Now()
	if now.UnixNano() < rec.Until {
		return Permit{}, b.refusal(rec)
	}
	token := rand.Uint64() | 1
	from, rec, err := b.store.Apply(b.name, b.settings, Event{Kind: Acquire, Token: token})
	b.changed(from, rec)
	switch {
	case err != nil:
		return Permit{b: b, state: Closed}, nil
	case rec.State == Closed:
		return Permit{b: b, gen: rec.Gen(), state: Closed}, nil
	case rec.State == HalfOpen && rec.Probe == token:
		return Permit{b: b, token: token, gen: rec.Gen(), state: HalfOpen}, nil
	}
	return Permit{}, b.refusal(rec)
}

func (b *Breaker) refusal(rec Record) error {
	return &OpenError{Name: b.name, Until: time.Unix(0, rec.Until), State: rec.State}
}

// Done reports the outcome of the admitted attempt and how long it took
// (for a stream: to its first byte). A closed breaker with nothing to
// change is left untouched: no lock, no write. An outcome from before the
// breaker last changed state (the permit's generation is over) counts
// nothing.
func (p Permit) Done(o Outcome, latency time.Duration) {
	b := p.b
	if b == nil {
		return
	}
	slow := o == Success && b.settings.Slow.Threshold > 0 && latency >= b.settings.Slow.Threshold
	if p.token == 0 && !slow {
		switch o {
		case Ignored:
			return
		case Success:
			if rec, err := b.store.Load(b.name); err == nil && rec.State == Closed && rec.Failures == 0 {
				return
			}
		}
	}
	kind := EventSuccess
	switch o {
	case Failure:
		kind = EventFailure
	case Ignored:
		kind = EventIgnored
	}
	from, rec, _ := b.store.Apply(b.name, b.settings, Event{Kind: kind, Token: p.token, Slow: slow, Gen: p.gen})
	b.changed(from, rec)
}

// Reset closes the breaker and clears its counts.
func (b *Breaker) Reset() error {
	from, rec, err := b.store.Apply(b.name, b.settings, Event{Kind: EventReset})
	b.changed(from, rec)
	return err
}

// changed calls Settings.OnStateChange when an Apply of this breaker took
// its record from state from to another. A store that failed made no
// change, or one in this process alone (filestore, while its directory
// cannot be written): that one is reported too.
func (b *Breaker) changed(from State, to Record) {
	if from != to.State && b.settings.OnStateChange != nil {
		b.settings.OnStateChange(b.name, from, to)
	}
}

// Record returns the breaker's current record.
func (b *Breaker) Record() (Record, error) { return b.store.Load(b.name) }
