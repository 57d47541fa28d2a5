package idempotency

import (
	"context"
	"time"
)

// Backoff bounds of Wait's polling: the first pause, doubled after every
// poll up to the last.
const (
	WaitFirst = 10 * time.Millisecond
	WaitMax   = 250 * time.Millisecond
)

// Wait is Begin for a duplicate that may join a call in flight: while the
// verdict is InFlight it polls s.Begin again, pausing WaitFirst, then twice
// as long each time up to WaitMax (never past the holder's lease end or its
// own end), for at most maxWait or until ctx ends. It returns the first
// verdict that is not InFlight (Replay once the first call kept its answer,
// Run if it ended without one: the mark is then the caller's), else the
// last InFlight result when the wait ends, with ctx's error if ctx ended
// it. A store error ends the wait at once.
//
// Nothing watches a key: a key nobody waits on costs nothing, and a
// waiting duplicate costs one Begin per poll — about maxWait/WaitMax + 5
// of them.
func Wait(ctx context.Context, s Store, id string, fp [32]byte, lease, maxWait time.Duration) (Result, error) {
	end := time.Now().Add(maxWait)
	pause := WaitFirst
	var t *time.Timer
	for {
		now := time.Now()
		r, err := s.Begin(id, fp, lease, now)
		if err != nil || r.Verdict != InFlight {
			return r, err
		}
		left := end.Sub(now)
		if left <= 0 {
			return r, nil
		}
		d := min(pause, left)
		if u := r.Until.Sub(now); u > 0 && u < d {
			d = u // the lease ends sooner: look again then
		}
		pause = min(2*pause, WaitMax)
		if t == nil {
			t = time.NewTimer(d)
			defer t.Stop()
		} else {
			t.Reset(d)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-t.C:
		}
	}
}
