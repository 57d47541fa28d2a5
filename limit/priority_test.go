package limit

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/hook"
)

// rpm60 is one request a second.
var rpm60 = []Limit{{Name: "rpm", Requests: Rate{Limit: 60, Per: time.Minute}}}

// admitted is one call's Wait: who it was and when it was admitted, in
// the bubble's time since the test began.
type admittedAt struct {
	name   string
	at     time.Duration
	waited time.Duration
	err    error
}

// call is a call a test makes: at start, at its priority, on l.
type call struct {
	name  string
	start time.Duration
	prio  Priority
	l     *Limiter // if nil, the one given to run
}

// run makes the calls cs on l (or each on its own Limiter), each willing
// to wait maxWait, and returns them in the order they were admitted.
func run(t *testing.T, l *Limiter, maxWait time.Duration, cs ...call) []admittedAt {
	t.Helper()
	begin := time.Now()
	out := make([]admittedAt, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		lim := l
		if c.l != nil {
			lim = c.l
		}
		wg.Go(func() {
			time.Sleep(c.start)
			waited, _, err := lim.Wait(context.Background(), hook.Ask{Caller: hook.Caller{Priority: c.prio}, Provider: "openai", Model: "gpt-4o", MaxWait: maxWait})
			out[i] = admittedAt{name: c.name, at: time.Since(begin), waited: waited, err: err}
		})
	}
	wg.Wait()
	slices.SortStableFunc(out, func(a, b admittedAt) int { return int(a.at - b.at) })
	return out
}

func names(as []admittedAt) []string {
	var s []string
	for _, a := range as {
		s = append(s, fmt.Sprintf("%s@%v", a.name, a.at))
	}
	return s
}

// floodAndThree: 10 Batch calls at 0, 3 Interactive calls at 2.5 s.
func floodAndThree(interactive Priority) []call {
	var cs []call
	for i := range 10 {
		cs = append(cs, call{name: fmt.Sprintf("b%d", i), start: time.Duration(i) * time.Millisecond, prio: Batch})
	}
	for i := range 3 {
		cs = append(cs, call{name: fmt.Sprintf("i%d", i), start: 2500*time.Millisecond + time.Duration(i)*time.Millisecond, prio: interactive})
	}
	return cs
}

// TestPriorityOrder: at one request a second, 10 Batch calls flood the
// bucket at 0; 3 Interactive calls come at 2.5 s. The Batch calls hold no
// slot further than the horizon ahead, so the Interactive ones take the
// next three slots (3, 4 and 5 s) and the Batch calls go on after them,
// first come first served. With the same 3 calls made as Batch (no
// priority: today's first come, first served), they go last.
func TestPriorityOrder(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		got := names(run(t, &Limiter{Limits: rpm60}, time.Minute, floodAndThree(Interactive)...))
		want := []string{"b0@0s", "b1@1s", "b2@2s", "i0@3s", "i1@4s", "i2@5s", "b3@6s", "b4@7s", "b5@8s", "b6@9s", "b7@10s", "b8@11s", "b9@12s"}
		if !slices.Equal(got, want) {
			t.Errorf("admissions %v,\nwant %v", got, want)
		}
	})
	synctest.Test(t, func(t *testing.T) {
		got := names(run(t, &Limiter{Limits: rpm60}, time.Minute, floodAndThree(Batch)...))
		want := []string{"b0@0s", "b1@1s", "b2@2s", "b3@3s", "b4@4s", "b5@5s", "b6@6s", "b7@7s", "b8@8s", "b9@9s", "i0@10s", "i1@11s", "i2@12s"}
		if !slices.Equal(got, want) {
			t.Errorf("without priorities: admissions %v,\nwant %v", got, want)
		}
	})
}

// TestPriorityAcrossLimiters: the same, with the Batch calls on one
// Limiter and the Interactive ones on another sharing its Store (two
// processes on one state): the order holds, since the Interactive calls'
// slots are in the shared bucket and the Batch calls take none ahead.
func TestPriorityAcrossLimiters(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemory()
		a, b := &Limiter{Store: st, Limits: rpm60}, &Limiter{Store: st, Limits: rpm60}
		cs := floodAndThree(Interactive)
		for i := range cs {
			if cs[i].prio == Interactive {
				cs[i].l = b
			}
		}
		got := names(run(t, a, time.Minute, cs...))
		want := []string{"b0@0s", "b1@1s", "b2@2s", "i0@3s", "i1@4s", "i2@5s", "b3@6s", "b4@7s", "b5@8s", "b6@9s", "b7@10s", "b8@11s", "b9@12s"}
		if !slices.Equal(got, want) {
			t.Errorf("admissions %v,\nwant %v", got, want)
		}
	})
}

// TestPriorityAging: Interactive calls come twice as fast as the limit
// (one every 500 ms, at one a second) for 30 s; a Batch call comes at
// 100 ms. Promoted after 5 s, it takes the slot after those of the
// Interactive calls that came before 5.1 s (11 of them: slots 0 to 10 s):
// 11 s. Not promoted (PromoteAfter an hour), it waits for all 60.
func TestPriorityAging(t *testing.T) {
	for _, tc := range []struct {
		promote time.Duration
		want    time.Duration
	}{{5 * time.Second, 11 * time.Second}, {time.Hour, 60 * time.Second}} {
		synctest.Test(t, func(t *testing.T) {
			l := &Limiter{Limits: rpm60, PromoteAfter: tc.promote}
			cs := []call{{name: "batch", start: 100 * time.Millisecond, prio: Batch}}
			for i := range 60 {
				cs = append(cs, call{name: fmt.Sprint(i), start: time.Duration(i) * 500 * time.Millisecond, prio: Interactive})
			}
			out := run(t, l, 2*time.Minute, cs...)
			i := slices.IndexFunc(out, func(a admittedAt) bool { return a.name == "batch" })
			if b := out[i]; b.err != nil || b.at != tc.want || b.waited != tc.want-100*time.Millisecond {
				t.Errorf("promote after %v: the batch call admitted at %v (waited %v, %v), want at %v", tc.promote, b.at, b.waited, b.err, tc.want)
			}
		})
	}
}

// TestPriorityReserve: 20% of one request a second reserved: Batch calls
// flooding it get 48 a minute, not 60, and an Interactive call that comes
// where the Batch calls left a gap goes at once. Without the reserve, the
// flood takes every slot and the Interactive call waits for the next one.
func TestPriorityReserve(t *testing.T) {
	for _, tc := range []struct {
		reserve   float64
		batch     int
		waitedInt time.Duration
	}{{0.2, 48, 0}, {0, 59, 150 * time.Millisecond}} { // 59: of the 60 slots, the interactive call took one
		synctest.Test(t, func(t *testing.T) {
			lim := []Limit{{Name: "rpm", Requests: Rate{Limit: 60, Per: time.Minute}, Reserve: tc.reserve}}
			l := &Limiter{Limits: lim, PromoteAfter: time.Hour}
			// Batch slots are 1.25 s apart with the reserve: the third at
			// 3.75 s holds the bucket until 4.75 s, and the fourth is at
			// 5 s. An Interactive call at 4.85 s finds it free.
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute-time.Millisecond)
			defer cancel()
			var n sync.WaitGroup
			var mu sync.Mutex
			batch := 0
			for range 100 {
				n.Go(func() {
					if _, _, err := l.Wait(ctx, hook.Ask{Caller: hook.Caller{Priority: Batch}, Provider: "openai", Model: "gpt-4o", MaxWait: 2 * time.Minute}); err == nil {
						mu.Lock()
						batch++
						mu.Unlock()
					}
				})
			}
			time.Sleep(4850 * time.Millisecond)
			waited, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "gpt-4o", MaxWait: time.Minute})
			if err != nil || waited != tc.waitedInt {
				t.Errorf("reserve %v: the interactive call at 4.85 s waited %v (%v), want %v", tc.reserve, waited, err, tc.waitedInt)
			}
			n.Wait()
			if batch != tc.batch {
				t.Errorf("reserve %v: %d batch calls admitted in a minute, want %d", tc.reserve, batch, tc.batch)
			}
		})
	}
}

// TestPriorityConcurrent: one in-flight slot, held; 4 Batch calls queue,
// then 2 Interactive ones. When the slot is given back, each time, the
// Interactive calls go first, in their order, then the Batch ones in
// theirs. The Batch calls queue on another Limiter sharing the Store (two
// processes): its head leaves the freed slot to the Interactive calls
// waiting in the other, whom the Store counts as waiting.
func TestPriorityConcurrent(t *testing.T) {
	for _, shared := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			st := NewMemory()
			a := &Limiter{Store: st, Limits: concLimit(1)}
			b := a
			if shared {
				b = &Limiter{Store: st, Limits: concLimit(1)}
			}
			_, hold, err := a.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			var order []string
			var mu sync.Mutex
			var wg sync.WaitGroup
			start := func(l *Limiter, name string, p Priority) {
				wg.Go(func() {
					_, done, err := l.Wait(context.Background(), hook.Ask{Caller: hook.Caller{Priority: p}, Provider: "openai", Model: "m", MaxWait: time.Minute})
					if err != nil {
						t.Error(name, err)
						return
					}
					mu.Lock()
					order = append(order, name)
					mu.Unlock()
					time.Sleep(time.Second)
					done(0)
				})
				synctest.Wait()
				time.Sleep(time.Millisecond)
			}
			for i := range 4 {
				start(a, fmt.Sprint("b", i), Batch)
			}
			for i := range 2 {
				start(b, fmt.Sprint("i", i), Interactive)
			}
			if w, _ := waitingIn(st, concKey); w[Interactive] != 2 || w[Batch] != 4 {
				t.Errorf("the store counts %v waiting, want 2 interactive and 4 batch", w)
			}
			hold(0)
			wg.Wait()
			if want := []string{"i0", "i1", "b0", "b1", "b2", "b3"}; !slices.Equal(order, want) {
				t.Errorf("shared %v: admitted %v, want %v", shared, order, want)
			}
			if w, _ := waitingIn(st, concKey); w[Interactive] != 0 || w[Batch] != 0 {
				t.Errorf("the store counts %v waiting after all went, want none", w)
			}
		})
	}
}

// TestPriorityConcurrentReserve: of 5 slots, 20% reserved: 4 Batch calls
// hold 4, a 5th Batch call queues, an Interactive call takes the 5th at
// once.
func TestPriorityConcurrentReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "conc", Concurrent: 5, Reserve: 0.2}}}
		batch := hook.Caller{Priority: Batch}
		for i := range 4 {
			if _, _, err := l.Wait(context.Background(), hook.Ask{Caller: batch, Provider: "openai", Model: "m", MaxWait: time.Second}); err != nil {
				t.Fatal(i, err)
			}
		}
		if _, _, err := l.Wait(context.Background(), hook.Ask{Caller: batch, Provider: "openai", Model: "m", MaxWait: time.Second}); err == nil {
			t.Fatal("a 5th batch call took the reserved slot")
		}
		waited, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Second})
		if err != nil || waited != 0 {
			t.Fatalf("the interactive call: waited %v, %v; want at once", waited, err)
		}
	})
}
