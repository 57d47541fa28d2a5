package keypool

import (
	"context"
	"errors"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/limit"
)

// pick chooses the next ready key at now by smooth weighted round robin
// (each ready key gains its weight, the highest is chosen and pays the
// sum back), so that over any run of calls each ready key takes its share
// spread out, not in bursts. ok is false when no key is ready.
func (p *pool) pick(now time.Time, states []keyState) (int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best, total := -1, 0
	for i, k := range p.keys {
		if !states[i].ready(now) {
			continue
		}
		p.current[i] += k.weight
		total += k.weight
		if best < 0 || p.current[i] > p.current[best] {
			best = i
		}
	}
	if best < 0 {
		return 0, false
	}
	p.current[best] -= total
	return best, true
}

// nextReady returns when the first key paused, not out, is ready again;
// allOut when every key is out.
func nextReady(now time.Time, states []keyState) (at time.Time, allOut bool) {
	allOut = true
	for _, s := range states {
		if s.out.After(now) {
			continue
		}
		allOut = false
		if at.IsZero() || s.paused.Before(at) {
			at = s.paused
		}
	}
	return at, allOut
}

// take returns the index of the key the next attempt to model uses,
// waiting while every key is paused for model, or its next slot at its
// learned pace is more than keyHorizon away, at most maxWait; refused
// with a *limit.Error past it, or a *OutError when every key is out.
// The key chosen, its slot at its pace is taken and waited for (at most
// keyHorizon). A wait polls the store at least once a second, to see a
// key reset by an operator. When a key is ready again, the interactive
// calls of this process that waited for one take theirs first: a batch
// call (prio) looks again every 10 ms while one waits.
func (p *pool) take(ctx context.Context, model string, prio hook.Priority, maxWait time.Duration) (int, error) {
	deadline := time.Now().Add(max(maxWait, 0))
	batch, counted := prio == hook.Batch, false
	defer func() {
		if counted {
			p.interactive.Add(-1)
		}
	}()
	var buf [8]keyState
	var busy []time.Time // per key, when its next slot at its pace is, as a take of it was told
	for {
		now := time.Now()
		states := p.states(buf[:], model)
		for i, at := range busy {
			states[i].paused = later(states[i].paused, at)
		}
		if batch && p.interactive.Load() > 0 && now.Before(deadline) && readyAny(now, states) {
			// A key is ready again, and interactive calls of this process
			// that waited for one go first.
			if err := sleepCtx(ctx, min(batchYield, time.Until(deadline))); err != nil {
				return 0, err
			}
			continue
		}
		if i, ok := p.pick(now, states); ok {
			_, done, err := p.paces.Wait(ctx, hook.Ask{Provider: p.scopeAt(i, states[i].epoch), Model: model, MaxWait: min(time.Until(deadline), keyHorizon)})
			var le *limit.Error
			switch {
			case err == nil:
				done(0)
				return i, nil
			case errors.As(err, &le):
				// Its next slot is further away: another key, or this
				// one when it is nearer.
				if busy == nil {
					busy = make([]time.Time, len(p.keys))
				}
				busy[i] = time.Now().Add(le.Wait)
				continue
			default:
				return 0, err
			}
		}
		if !batch && !counted {
			counted = true
			p.interactive.Add(1)
		}
		at, allOut := nextReady(now, states)
		if allOut {
			return 0, p.outError(now, states)
		}
		if at.After(deadline) {
			return 0, &limit.Error{Key: "keys:" + p.provider, Limit: "pause", Wait: at.Sub(now)}
		}
		// A key's slot within keyHorizon is taken when it is that near.
		wake := at
		if busyAt(busy, at) {
			wake = at.Add(-keyHorizon)
		}
		if err := sleepCtx(ctx, min(wake.Sub(now), time.Second)); err != nil {
			return 0, err
		}
		clear(busy)
	}
}

// batchYield is how long a batch call waiting for a pool's key looks
// again while interactive calls of this process that waited for one take
// theirs, once a key is ready again.
const batchYield = 10 * time.Millisecond

// readyAny reports whether a key of states is ready at now.
func readyAny(now time.Time, states []keyState) bool {
	for _, s := range states {
		if s.ready(now) {
			return true
		}
	}
	return false
}

// sleepCtx waits d, or until ctx ends (its cause is returned).
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// busyAt reports whether at is one of busy's times: a key's next slot at
// its pace, not the end of a pause.
func busyAt(busy []time.Time, at time.Time) bool {
	for _, b := range busy {
		if b.Equal(at) {
			return true
		}
	}
	return false
}

// later returns the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
