package limit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/leaktest"
)

// concLimit is a limit of n calls in flight to one provider.
func concLimit(n int) []Limit { return []Limit{{Name: "conc", Concurrent: n}} }

const concKey = "limit:conc:openai:concurrent"

// admission is one call of runQueue: its place in the order of admission,
// when it was admitted and how long Wait said it waited.
type admission struct {
	seq    int
	at     time.Duration
	waited time.Duration
}

// runQueue starts len(holds) calls on l one after another (call i arrives
// before call i+1), each holding its slot for holds[i] once admitted, and
// returns each call's admission and the most calls in flight at once, as
// counted by the calls themselves. It runs in a synctest bubble.
func runQueue(t *testing.T, l *Limiter, holds []time.Duration) ([]admission, int64) {
	t.Helper()
	start := time.Now()
	out := make([]admission, len(holds))
	var seq, inFlight, most atomic.Int64
	var wg sync.WaitGroup
	for i, hold := range holds {
		wg.Go(func() {
			waited, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
			if err != nil {
				t.Errorf("call %d: %v", i, err)
				return
			}
			out[i] = admission{seq: int(seq.Add(1)) - 1, at: time.Since(start), waited: waited}
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(hold)
			inFlight.Add(-1)
			done(0)
		})
		synctest.Wait() // call i is admitted or queued before call i+1 arrives
	}
	wg.Wait()
	return out, most.Load()
}

// TestConcurrentQueue: 3 in flight, 10 calls arriving one after another,
// the first three holding 1 s, 2 s and 3 s, the others 3 s. The queue
// hands each freed slot to the call that arrived first, at the very
// instant it is given back: calls 0–2 at 0, call 3 when call 0 ends
// (exactly 1 s), then one a second as each holder ends, call 9 at 7 s;
// never more than 3 in flight, admitted in their order of arrival.
func TestConcurrentQueue(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: concLimit(3)}
		checkQueueOrder(t, l)
		if st := l.Stats()["conc"]; st.Admitted != 10 || st.InFlight != 0 || st.Queued != 0 {
			t.Errorf("stats %+v, want 10 admitted, none in flight or queued", st)
		}
	})
}

// checkQueueOrder runs TestConcurrentQueue's calls through l (limited to 3
// in flight under concKey) and checks their admissions, in a synctest
// bubble.
func checkQueueOrder(t *testing.T, l *Limiter) {
	t.Helper()
	holds := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
	for range 7 {
		holds = append(holds, 3*time.Second)
	}
	out, most := runQueue(t, l, holds)
	if most != 3 {
		t.Errorf("%d calls in flight at once, want at most (and at some point) 3", most)
	}
	wantAt := []time.Duration{0, 0, 0, 1, 2, 3, 4, 5, 6, 7}
	for i, a := range out {
		if want := wantAt[i] * time.Second; a.seq != i || a.at != want || a.waited != want {
			t.Errorf("call %d: admitted %dth at %v (waited %v), want %dth at exactly %v", i, a.seq, a.at, a.waited, i, want)
		}
	}
	if n, _ := l.store().InFlight(concKey); n != 0 {
		t.Errorf("%d slots taken after every call ended, want 0", n)
	}
}

// TestConcurrentTwoFreedAtOnce: two slots given back at once by another
// Limiter on the same Store, which does not wake this one's queue: its
// head finds one by polling, takes it and hands its turn on, so the call
// behind it takes the other at the same instant.
func TestConcurrentTwoFreedAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemory()
		other := &Limiter{Store: st, Limits: concLimit(2)}
		l := &Limiter{Store: st, Limits: concLimit(2)}
		ctx := context.Background()
		_, done1, err1 := other.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
		_, done2, err2 := other.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		waited := make([]time.Duration, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Go(func() {
				w, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				waited[i] = w
				time.Sleep(time.Hour) // holds its slot past the test's checks
				done(0)
			})
			synctest.Wait()
		}
		time.Sleep(time.Second)
		done1(0)
		done2(0)
		wg.Wait()
		if waited[0] != waited[1] || waited[0] < time.Second || waited[0] > time.Second+pollMax {
			t.Errorf("the queued calls waited %v, want the same, within %v of the release at 1s", waited, pollMax)
		}
	})
}

// TestConcurrentQueueOrderWhenPolling: slots given back by another Limiter
// on the same Store (another process, as it were) do not wake this
// Limiter's queue: its head finds them by polling, within pollMax, and
// the calls still go in their order of arrival.
func TestConcurrentQueueOrderWhenPolling(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := NewMemory()
		other := &Limiter{Store: st, Limits: concLimit(6)}
		l := &Limiter{Store: st, Limits: concLimit(6)}
		ctx := context.Background()
		var dones []func(int64)
		for range 6 {
			_, done, err := other.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			dones = append(dones, done)
		}
		start := time.Now()
		var mu sync.Mutex
		var order []int
		var lags []time.Duration
		var wg sync.WaitGroup
		for i := range 6 {
			wg.Go(func() {
				_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				order = append(order, i)
				lags = append(lags, time.Since(start)%time.Second) // after the second's release
				mu.Unlock()
				time.Sleep(time.Hour) // holds its slot to the end
				done(0)
			})
			synctest.Wait()
		}
		for k := range 6 { // the other Limiter gives back a slot a second
			time.Sleep(time.Second)
			dones[k](0)
		}
		time.Sleep(time.Second)
		mu.Lock()
		if want := []int{0, 1, 2, 3, 4, 5}; fmt.Sprint(order) != fmt.Sprint(want) {
			t.Errorf("admitted in the order %v, want %v", order, want)
		}
		for _, lag := range lags {
			if lag > pollMax {
				t.Errorf("a slot found %v after it was given back, want within %v", lag, pollMax)
			}
		}
		mu.Unlock()
		time.Sleep(time.Hour)
		wg.Wait()
	})
}

// TestConcurrentStats: with 3 calls holding the 3 slots and 4 queued,
// Stats, Queued and Buckets show them.
func TestConcurrentStats(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: concLimit(3)}
		release := make(chan bool)
		var wg sync.WaitGroup
		for range 7 {
			wg.Go(func() {
				_, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
				if err != nil {
					t.Error(err)
					return
				}
				<-release
				done(0)
			})
		}
		synctest.Wait()
		if st := l.Stats()["conc"]; st.InFlight != 3 || st.Queued != 4 || st.Admitted != 3 {
			t.Errorf("stats %+v, want 3 in flight, 4 queued, 3 admitted", st)
		}
		if q := l.Queued(); q != 4 {
			t.Errorf("Queued() = %d, want 4", q)
		}
		bs, err := l.Buckets()
		want := fmt.Sprint([]Bucket{{Key: concKey, Queued: 4, InFlight: 3, Waiting: map[Priority]int64{Interactive: 4, Batch: 0}}, {Key: "pause:openai/m", Queued: 4}})
		if err != nil || fmt.Sprint(bs) != want {
			t.Errorf("Buckets() = %v (%v), want %v", bs, err, want)
		}
		close(release)
		wg.Wait()
	})
}

// TestConcurrentRefused: a call that finds the slot taken for its whole
// maximum wait is refused when it ends, exactly, with an *Error naming the
// limit and a hint of 1 s; one that may not wait is refused at once.
// Neither takes a slot.
func TestConcurrentRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: concLimit(1)}
		ctx := context.Background()
		_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		for _, maxWait := range []time.Duration{0, 2 * time.Second} {
			waited, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: maxWait})
			var e *Error
			if !errors.As(err, &e) || !errors.Is(err, ErrLimited) || e.Key != concKey || e.Limit != "conc" || e.Wait != time.Second {
				t.Fatalf("maxWait %v: %v, want an *Error of %s, limit conc, Wait 1s", maxWait, err, concKey)
			}
			if waited != maxWait || time.Since(start) != maxWait {
				t.Errorf("maxWait %v: refused after %v (waited %v), want exactly %v", maxWait, time.Since(start), waited, maxWait)
			}
			start = time.Now()
		}
		if n, _ := l.store().InFlight(concKey); n != 1 {
			t.Errorf("%d slots taken, want 1: refusals take none", n)
		}
		if st := l.Stats()["conc"]; st.Refused != 2 {
			t.Errorf("%d refusals counted, want 2", st.Refused)
		}
		done(0)
		if _, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"}); err != nil {
			t.Errorf("after the holder ended: %v, want a slot at once", err)
		}
	})
}

// TestConcurrentCancelWhileQueued: the head of the queue whose context
// ends returns its cause at that instant and takes no slot; the call
// behind it gets the slot the instant the holder gives it back.
func TestConcurrentCancelWhileQueued(t *testing.T) {
	leaktest.Check(t)
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: concLimit(1)}
		_, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		cause := errors.New("client left")
		ctx, cancel := context.WithCancelCause(context.Background())
		var cancelled, behind time.Duration
		var errA, errB error
		var wg sync.WaitGroup
		wg.Go(func() {
			_, _, errA = l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
			cancelled = time.Since(start)
		})
		synctest.Wait()
		wg.Go(func() {
			var d func(int64)
			_, d, errB = l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
			behind = time.Since(start)
			if errB == nil {
				d(0)
			}
		})
		synctest.Wait()
		time.Sleep(500 * time.Millisecond)
		cancel(cause)
		synctest.Wait()
		if !errors.Is(errA, cause) || cancelled != 500*time.Millisecond {
			t.Errorf("cancelled call: %v after %v, want its cause at exactly 500ms", errA, cancelled)
		}
		if n, _ := l.store().InFlight(concKey); n != 1 {
			t.Errorf("%d slots taken after the cancel, want 1 (the holder's)", n)
		}
		time.Sleep(time.Second)
		done(0)
		wg.Wait()
		if errB != nil || behind != 1500*time.Millisecond {
			t.Errorf("call behind: %v at %v, want the slot at exactly 1.5s, when the holder ended", errB, behind)
		}
	})
}

// TestConcurrentDoneTwice: a done called twice gives back one slot, not
// another call's.
func TestConcurrentDoneTwice(t *testing.T) {
	l := &Limiter{Limits: concLimit(2)}
	ctx := context.Background()
	_, doneA, errA := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
	_, _, errB := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
	if errA != nil || errB != nil {
		t.Fatal(errA, errB)
	}
	doneA(0)
	doneA(0)
	if n, _ := l.store().InFlight(concKey); n != 1 {
		t.Fatalf("%d slots taken after one done called twice, want 1", n)
	}
	if _, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"}); err != nil {
		t.Fatalf("the freed slot: %v", err)
	}
	if _, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"}); !errors.Is(err, ErrLimited) {
		t.Fatalf("a third call while two hold the slots: %v, want refused", err)
	}
	if st := l.Stats()["conc"]; st.InFlight != 2 {
		t.Errorf("%d in flight in Stats, want 2", st.InFlight)
	}
}

// TestConcurrentAfterRateSlot: one call a second and two in flight, each
// call holding 10 s. A call takes its in-flight slot only once its slot
// in time is due: calls at 0 and 1 s; the third's slot in time is at 2 s,
// but both in-flight slots are held until 10 s, when it goes.
func TestConcurrentAfterRateSlot(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: []Limit{{Name: "conc", Requests: Rate{Limit: 60, Per: time.Minute}, Concurrent: 2}}}
		out, most := runQueue(t, l, []time.Duration{10 * time.Second, 10 * time.Second, time.Second})
		for i, want := range []time.Duration{0, time.Second, 10 * time.Second} {
			if out[i].at != want || out[i].waited != want {
				t.Errorf("call %d admitted at %v (waited %v), want exactly %v", i, out[i].at, out[i].waited, want)
			}
		}
		if most != 2 {
			t.Errorf("%d in flight at once, want 2", most)
		}
	})
}

// TestConcurrentPausedWhileQueued: a call queued for the one slot when
// the model is paused (a 429 asking 5 s, at 1 s) does not go when the
// holder ends at 2 s: it gives the slot back and goes when the pause ends,
// at exactly 6 s; the slot is free meanwhile.
func TestConcurrentPausedWhileQueued(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: concLimit(1)}
		ctx := context.Background()
		_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
		if err != nil {
			t.Fatal(err)
		}
		var waited time.Duration
		var werr error
		var wg sync.WaitGroup
		wg.Go(func() {
			var d func(int64)
			waited, d, werr = l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
			if werr == nil {
				d(0)
			}
		})
		time.Sleep(time.Second)
		l.Learn(hook.Answer{Dialect: dialect.OpenAI, Provider: "openai", Model: "m", Status: http.StatusTooManyRequests, RetryAfter: 5 * time.Second})
		time.Sleep(time.Second)
		done(0)
		synctest.Wait()
		if n, _ := l.store().InFlight(concKey); n != 0 {
			t.Errorf("%d slots taken during the pause, want 0", n)
		}
		wg.Wait()
		if werr != nil || waited != 6*time.Second {
			t.Errorf("the queued call: %v after %v, want admitted at exactly 6s, the end of the pause", werr, waited)
		}
	})
}

// TestConcurrentCheck: a negative or too large Concurrent is refused with
// a one-line error naming the limit.
func TestConcurrentCheck(t *testing.T) {
	for _, n := range []int{-1, maxCount + 1} {
		err := Limit{Name: "conc", Concurrent: n}.Check()
		if err == nil || err.Error() != fmt.Sprintf("limit: limit conc: concurrent %d: give 0 (no limit) to 65535 calls in flight", n) {
			t.Errorf("Concurrent %d: %v", n, err)
		}
	}
}

// acquireFails is a Memory whose concurrency keys fail, as a Store whose
// connection drops between a call's pause and its slot.
type acquireFails struct{ *Memory }

func (acquireFails) Acquire(string, int64, time.Duration) (uint64, bool, error) {
	return 0, false, errDown
}

// TestConcurrentFallsBack: when the Store fails, the limit holds in this
// process: two in flight, the third refused, a slot given back serves the
// next, and OnError is told, once.
func TestConcurrentFallsBack(t *testing.T) {
	for _, st := range []Store{brokenStore{}, acquireFails{NewMemory()}} {
		t.Run(fmt.Sprintf("%T", st), func(t *testing.T) {
			var errs atomic.Int64
			l := &Limiter{Store: st, Limits: concLimit(2), OnError: func(err error) {
				if errors.Is(err, errDown) {
					errs.Add(1)
				}
			}}
			ctx := context.Background()
			_, doneA, errA := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
			_, _, errB := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
			_, _, errC := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
			if errA != nil || errB != nil || !errors.Is(errC, ErrLimited) {
				t.Fatalf("three calls under 2 in flight: %v, %v, %v; want 2 admitted, the third refused", errA, errB, errC)
			}
			doneA(0)
			if _, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"}); err != nil {
				t.Fatalf("after a done: %v", err)
			}
			if n, _ := l.local().InFlight(concKey); n != 2 {
				t.Errorf("%d slots in the process's memory, want 2", n)
			}
			if errs.Load() != 1 {
				t.Errorf("OnError told %d times, want once: the Store then rests, and the next calls are not asked of it", errs.Load())
			}
		})
	}
}

// TestConcurrentNewcomerQueuesBehindWaiter: a call that arrives the
// instant a slot is given back, while another call waits for one, queues
// behind that call instead of taking the slot (a call skips the queue only
// when no call of its process waits).
func TestConcurrentNewcomerQueuesBehindWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &Limiter{Limits: concLimit(1)}
		ctx := context.Background()
		_, doneA, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var order []string
		admitted := func(name string) {
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		}
		go func() {
			_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
			if err != nil {
				t.Error(err)
				return
			}
			admitted("B")
			time.Sleep(time.Second)
			done(0)
		}()
		synctest.Wait() // B waits for the slot A holds
		doneA(0)
		_, doneC, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute}) // C arrives at once
		if err != nil {
			t.Fatal(err)
		}
		admitted("C")
		doneC(0)
		if fmt.Sprint(order) != "[B C]" {
			t.Errorf("admitted %v, want B (waiting) before C (the newcomer)", order)
		}
	})
}
