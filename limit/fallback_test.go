package limit

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/rest"
)

// brokenStore fails every operation, as a Redis that is down does.
type brokenStore struct{}

var errDown = errors.New("store down")

func (brokenStore) Reserve(string, Rate, int64, time.Time, time.Duration) (time.Time, bool, error) {
	return time.Time{}, false, errDown
}
func (brokenStore) Cancel(string, Rate, time.Time, int64) error { return errDown }
func (brokenStore) Settle(string, Rate, int64) error            { return errDown }
func (brokenStore) Pause(string, time.Time) error               { return errDown }
func (brokenStore) Resume(string) error                         { return errDown }
func (brokenStore) PausedUntil(string) (time.Time, error)       { return time.Time{}, errDown }
func (brokenStore) Learn(string, Rate, int64) error             { return errDown }
func (brokenStore) Learned(string) (Learned, error)             { return Learned{}, errDown }
func (brokenStore) Pace(string, PaceEvent) (Pace, error)        { return Pace{}, errDown }
func (brokenStore) FreeAt(string) (time.Time, error)            { return time.Time{}, errDown }
func (brokenStore) Acquire(string, int64, time.Duration) (uint64, bool, error) {
	return 0, false, errDown
}
func (brokenStore) Release(string, uint64) error   { return errDown }
func (brokenStore) InFlight(string) (int64, error) { return 0, errDown }

// A Store that fails does not fail the calls: the limits and the pauses
// hold in this process alone, and each failure is told to OnError.
func TestWaitFallsBackWhenStoreFails(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var errs int
		l := &Limiter{Store: brokenStore{}, OnError: func(err error) {
			if errors.Is(err, errDown) {
				errs++
			}
		},
			Limits: []Limit{{Name: "rpm", Requests: Rate{Limit: 60, Per: time.Minute}}}}
		ctx := context.Background()
		for i, want := range []time.Duration{0, time.Second, time.Second} { // one a second, each call after the last
			waited, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
			if err != nil || waited != want {
				t.Fatalf("call %d: waited %v (%v), want exactly %v under the local limit", i, waited, err, want)
			}
			done(0)
		}
		// The Store failed at 0 s and rested a second: the call at 0 s
		// after the first went to this process's memory without asking it;
		// the one at 1 s asked it again.
		if errs != 2 {
			t.Errorf("OnError told %d times, want 2 (at 0 s and at 1 s)", errs)
		}
		// A pause learned while the store is down holds in this process.
		l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "openai", Model: "m", Status: http.StatusTooManyRequests, RetryAfter: 10 * time.Second})
		if errs != 3 {
			t.Errorf("OnError told %d times after Learn at 2 s, want 3", errs)
		}
		time.Sleep(3 * time.Second) // past the rate's next slot, 3 s into the pause
		waited, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
		if err != nil || waited != 7*time.Second {
			t.Errorf("after the pause: waited %v (%v), want exactly 7s (the rest of the 10s pause)", waited, err)
		}
	})
}

// countingStore is a Memory that fails while down is set, and counts the
// operations it was asked.
type countingStore struct {
	*Memory
	asked atomic.Int64
	down  atomic.Bool
}

func (s *countingStore) Reserve(key string, r Rate, cost int64, notBefore time.Time, maxWait time.Duration) (time.Time, bool, error) {
	s.asked.Add(1)
	if s.down.Load() {
		return time.Time{}, false, errDown
	}
	return s.Memory.Reserve(key, r, cost, notBefore, maxWait)
}

func (s *countingStore) PausedUntil(key string) (time.Time, error) {
	s.asked.Add(1)
	if s.down.Load() {
		return time.Time{}, errDown
	}
	return s.Memory.PausedUntil(key)
}

func (s *countingStore) Learned(key string) (Learned, error) {
	s.asked.Add(1)
	if s.down.Load() {
		return Learned{}, errDown
	}
	return s.Memory.Learned(key)
}

// After the Store fails, the Limiter asks it nothing for rest.Period: the
// calls meanwhile hold their limits in this process, so that a Redis that
// hangs costs one call a second its timeout, not every call. Once it rests,
// the Store is asked again, and serves again once it answers.
func TestStoreRestsAfterFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &countingStore{Memory: NewMemory()}
		st.down.Store(true)
		l := &Limiter{Store: st, Limits: []Limit{{Name: "rps", Requests: Rate{Limit: 1000, Per: time.Second}}}}
		ctx := context.Background()
		wait := func() {
			t.Helper()
			_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			done(0)
		}
		for range 100 {
			wait()
		}
		if n := st.asked.Load(); n != 1 {
			t.Errorf("a failed Store was asked %d times by 100 calls within its rest, want once", n)
		}
		time.Sleep(rest.Period)
		wait()
		if n := st.asked.Load(); n != 2 {
			t.Errorf("after the rest the Store was asked %d times in all, want 2 (asked again once)", n)
		}
		st.down.Store(false)
		time.Sleep(rest.Period)
		before := st.asked.Load()
		for range 3 {
			wait()
		}
		if n := st.asked.Load() - before; n < 3 {
			t.Errorf("the Store, answering again, was asked %d times by 3 calls, want each call to ask it", n)
		}
	})
}
