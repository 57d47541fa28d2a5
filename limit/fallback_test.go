package limit

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"testing/synctest"
	"time"
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
			waited, done, err := l.Wait(ctx, nil, "openai", "m", 0, 0, time.Minute)
			if err != nil || waited != want {
				t.Fatalf("call %d: waited %v (%v), want exactly %v under the local limit", i, waited, err, want)
			}
			done(0)
		}
		if errs != 3 {
			t.Errorf("OnError told %d times, want once per call (3)", errs)
		}
		// A pause learned while the store is down holds in this process.
		l.Learn("openai", "m", http.StatusTooManyRequests, false, nil, 10*time.Second)
		if errs != 4 {
			t.Errorf("OnError told %d times after Learn, want 4", errs)
		}
		time.Sleep(3 * time.Second) // past the rate's next slot, 3 s into the pause
		waited, _, err := l.Wait(ctx, nil, "openai", "m", 0, 0, time.Minute)
		if err != nil || waited != 7*time.Second {
			t.Errorf("after the pause: waited %v (%v), want exactly 7s (the rest of the 10s pause)", waited, err)
		}
	})
}
