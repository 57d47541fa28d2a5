package limit

import (
	"sync"
	"sync/atomic"
	"time"
)

// Admitter is a Store that can ask everything a call's admission needs
// at once, in one round trip to a shared store (redislimit's Store: one
// pipeline). A Limiter whose Store is an Admitter admits an Interactive
// call that finds no call of its process queued at its concurrency keys
// with one Admit: the pause read, a slot due now in every bucket and an
// in-flight slot of every concurrency key. When that is not all it needs
// (a pause holds, a bucket's next slot is not due, a slot is full, the
// learned rate changed), it gives back what it does not keep and takes
// the usual way, one step at a time. Memory and File are not Admitters:
// their steps cost no round trip.
type Admitter interface {
	// Admit reads a.Pause as Learned does, reserves in each bucket of
	// a.Buckets as Reserve(key, rate, cost, time.Time{}, 0) does (a slot
	// due now at the store's clock, or nothing), and acquires a slot of
	// each gate of a.Gates as Acquire does, and writes the answers into
	// a. When it returns an error, it has given back, as far as the store
	// answers, whatever it took.
	Admit(a *Admission) error
}

// Admission is what an Admitter is asked, and what it answers.
type Admission struct {
	// Pause is the pause key read; Learned is its answer, as
	// Store.Learned gives it.
	Pause   string
	Learned Learned

	// Buckets are reserved in, Gates acquired.
	Buckets []AdmitBucket
	Gates   []AdmitGate
}

// AdmitBucket is one reservation of an Admission: Key, Rate and Cost are
// asked; OK and At are the answer (as Store.Reserve's ok and at).
type AdmitBucket struct {
	Key  string
	Rate Rate
	Cost int64
	OK   bool
	At   time.Time
}

// AdmitGate is one in-flight slot of an Admission: Key, Limit and Lease
// are asked; OK and Token are the answer (as Store.Acquire's).
type AdmitGate struct {
	Key   string
	Limit int64
	Lease time.Duration
	OK    bool
	Token uint64
}

// maxGuesses bounds how many pause keys' learned rates a Limiter keeps.
const maxGuesses = 4096

// guesses holds, per pause key, the learned rate and pace the Store last
// gave: an admission in one round trip reserves in the learned buckets
// before it reads them, so it takes the last ones seen and checks them;
// and Learn tells the Store an answer that raises a pace only where one
// was seen.
type guesses struct {
	m sync.Map // pause key → guess
	n atomic.Int64
}

// guess is what a pause key was last seen to hold: its learned rate and
// its pace (Until is not kept).
type guess Learned

func (g *guesses) get(key string) guess {
	if r, ok := g.m.Load(key); ok {
		return r.(guess)
	}
	return guess{}
}

func (g *guesses) set(key string, l Learned) {
	n := guess{Rate: l.Rate, RateAt: l.RateAt, Pace: l.Pace}
	if old, ok := g.m.Load(key); ok {
		if old.(guess) != n {
			g.m.Store(key, n)
		}
		return
	}
	if g.n.Add(1) <= maxGuesses {
		g.m.Store(key, n)
	}
}

// sameBuckets reports whether a and b make the same learned buckets: the
// same rate, and the same pace cut (the answers since, which raise it a
// little, aside).
func sameBuckets(a, b Learned) bool {
	return a.Rate == b.Rate && a.Pace.Interval == b.Pace.Interval && a.Pace.At == b.Pace.At && a.Pace.Steady == b.Pace.Steady
}

// admitOnce is the admission in one round trip (see Admitter) of the call
// t under its buckets and gs on its store. It reports whether the call holds its slots in
// time (all: bs and the learned bucket, slots set) and, gated, its
// in-flight slots too; when not fast, it holds nothing and takes the
// usual way. An error is the store's failure: nothing is held.
func (l *Limiter) admitOnce(t *turn, gs []gate) (all []bucket, fast, gated bool, err error) {
	st, bs, pause := t.st, t.bs, t.pause
	adm, ok := st.(Admitter)
	if !ok || st != l.Store || t.start.Before(t.rank) {
		return nil, false, false, nil // Batch calls wait their turn in their queues
	}
	for _, g := range gs {
		if !l.queues.empty(g.key) {
			return nil, false, false, nil // first come, first served in this process
		}
	}
	guess := Learned(l.guesses.get(pause))
	all = withLearned(bs, pause, guess)
	a := &Admission{Pause: pause, Buckets: make([]AdmitBucket, len(all)), Gates: make([]AdmitGate, len(gs))}
	for i, b := range all {
		a.Buckets[i] = AdmitBucket{Key: b.key, Rate: b.rate, Cost: b.cost}
	}
	for i, g := range gs {
		a.Gates[i] = AdmitGate{Key: g.key, Limit: g.n, Lease: l.lease()}
	}
	if err := adm.Admit(a); err != nil {
		return nil, false, false, err
	}
	l.guesses.set(pause, a.Learned)
	fast = !a.Learned.Until.After(time.Now()) && sameBuckets(a.Learned, guess)
	for i := range all {
		fast = fast && a.Buckets[i].OK
	}
	gated = true
	for _, g := range a.Gates {
		gated = gated && g.OK
	}
	if !fast || !gated {
		for _, g := range a.Gates {
			if g.OK {
				st.Release(g.Key, g.Token)
				l.queues.wake(g.Key) // a call that found it taken meanwhile asks again now
			}
		}
	}
	if !fast {
		for _, b := range a.Buckets {
			if b.OK {
				st.Cancel(b.Key, b.Rate, b.At, b.Cost)
			}
		}
		return nil, false, false, nil
	}
	for i := range all {
		all[i].slot = a.Buckets[i].At
	}
	l.stats.admitted(all)
	if gated {
		for i := range gs {
			gs[i].st, gs[i].token = st, a.Gates[i].Token
			l.stats.hold(gs[i].limit, 1)
		}
	}
	return all, true, gated, nil
}
