package history

import (
	"fmt"
	"runtime"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/sluice-llm/sluice"
)

func okAttempt(provider, model string, latency, ttfb float64) *sluice.Attempt {
	return &sluice.Attempt{Provider: provider, Model: model, Outcome: sluice.OutcomeOK, Status: 200,
		LatencyMS: latency, TTFBMS: ttfb, RequestID: "req-ok"}
}

// Attempts land in the minute they end; a minute later they are the
// previous bar, an hour later they are gone, and the slot is reused by the
// new minute without carrying the old counts.
func TestHistoryMinuteRollover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New()
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute))) // at a minute's start
		for range 3 {
			h.Observe(okAttempt("openai", "gpt", 100, 40))
		}
		h.Observe(&sluice.Attempt{Provider: "openai", Model: "gpt", Outcome: sluice.OutcomeRetry, Status: 503,
			Error: "status_503", LatencyMS: 20, TTFBMS: 20, RequestID: "req-503"})
		s := one(t, h)
		if m := s.Minutes[59]; m.Attempts != 4 || m.Classes["ok"] != 3 || m.Classes["5xx"] != 1 {
			t.Fatalf("current minute %+v, want 3 ok and 1 5xx", m)
		}
		time.Sleep(59 * time.Second) // still the same minute
		h.Observe(okAttempt("openai", "gpt", 100, 40))
		if m := one(t, h).Minutes[59]; m.Attempts != 5 {
			t.Fatalf("59 s on: current minute has %d attempts, want 5", m.Attempts)
		}
		time.Sleep(time.Second) // the next minute
		s = one(t, h)
		if s.Minutes[59].Attempts != 0 || s.Minutes[58].Attempts != 5 || s.Hour.Attempts != 5 {
			t.Fatalf("a minute on: now %d, previous %d, hour %d; want 0, 5, 5",
				s.Minutes[59].Attempts, s.Minutes[58].Attempts, s.Hour.Attempts)
		}
		if !s.Minutes[59].Start.Equal(time.Now().Truncate(time.Minute)) {
			t.Errorf("current minute starts %v, want %v", s.Minutes[59].Start, time.Now().Truncate(time.Minute))
		}
		time.Sleep(58 * time.Minute) // the first minute is now the oldest bar
		if s = one(t, h); s.Minutes[0].Attempts != 5 || s.Hour.Attempts != 5 {
			t.Fatalf("59 min on: oldest %d, hour %d; want 5, 5", s.Minutes[0].Attempts, s.Hour.Attempts)
		}
		time.Sleep(time.Minute) // an hour on: its slot is the current minute's
		h.Observe(okAttempt("openai", "gpt", 100, 40))
		s = one(t, h)
		if s.Hour.Attempts != 1 || s.Minutes[59].Attempts != 1 || s.Hour.Classes["5xx"] != 0 {
			t.Fatalf("an hour on: hour %+v, want the one new attempt only", s.Hour)
		}
		_, fails := h.Snapshot(time.Now())
		if len(fails) != 1 || fails[0].RequestID != "req-503" || fails[0].Class != "5xx" || fails[0].Status != 503 {
			t.Errorf("failures %+v, want the one 503", fails)
		}
	})
}

func one(t *testing.T, h *History) Series {
	t.Helper()
	s, _ := h.Snapshot(time.Now())
	if len(s) != 1 {
		t.Fatalf("%d series, want 1", len(s))
	}
	return s[0]
}

// The classes of the engine's outcomes and error classes.
func TestHistoryClasses(t *testing.T) {
	for _, c := range []struct {
		a    sluice.Attempt
		want string
	}{
		{sluice.Attempt{Outcome: sluice.OutcomeOK, Status: 200}, "ok"},
		{sluice.Attempt{Outcome: sluice.OutcomeRetry, Status: 429, Error: "status_429"}, "rate_limited"},
		{sluice.Attempt{Outcome: sluice.OutcomeFail, Status: 429, Error: "quota_exhausted"}, "quota"},
		{sluice.Attempt{Outcome: sluice.OutcomeRetry, Status: 503, Error: "status_503"}, "5xx"},
		{sluice.Attempt{Outcome: sluice.OutcomeFail, Status: 400, Error: "status_400"}, "4xx"},
		{sluice.Attempt{Outcome: sluice.OutcomeTimeout, Error: "timeout_first_byte"}, "timeout"},
		{sluice.Attempt{Outcome: sluice.OutcomeFail, Status: 200, Error: "stream_cut"}, "cut_stream"},
		{sluice.Attempt{Outcome: sluice.OutcomeStreamStalled, Status: 200, Error: "timeout_idle"}, "cut_stream"},
		{sluice.Attempt{Outcome: sluice.OutcomeRetry, Status: 200, Error: "error_event_500"}, "stream_error"},
		{sluice.Attempt{Outcome: sluice.OutcomeRetry, Error: "connect_refused"}, "connection"},
		{sluice.Attempt{Outcome: sluice.OutcomeCircuitOpen, Error: "circuit_open"}, "breaker_open"},
		{sluice.Attempt{Outcome: sluice.OutcomeBudgetExhausted, Error: "budget_exhausted"}, "budget_refused"},
		{sluice.Attempt{Outcome: sluice.OutcomeRateLimited, Error: "rate_limited"}, "limit_refused"},
		{sluice.Attempt{Outcome: sluice.OutcomeClientCancel, Error: "client_cancel"}, "client_cancel"},
		{sluice.Attempt{Outcome: sluice.OutcomeSkipped, Error: "skipped: a tool choice"}, "skipped"},
		{sluice.Attempt{Outcome: sluice.OutcomeHedgeLost, Error: "client_cancel"}, "hedge_lost"},
		{sluice.Attempt{Outcome: sluice.OutcomeResumed, Error: "stream_cut"}, "cut_stream"},
		{sluice.Attempt{Outcome: sluice.OutcomeFail, Error: "something_new"}, "other"},
	} {
		if got := classNames[classOf(&c.a)]; got != c.want {
			t.Errorf("%s/%s: class %s, want %s", c.a.Outcome, c.a.Error, got, c.want)
		}
	}
}

// p50 and p95 are the upper bounds of the buckets holding those ranks,
// never above the largest sample, over the minute and over the hour.
func TestHistoryQuantiles(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New()
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		for range 90 { // 90 fast ones: 80 ms (bucket ≤100), ttfb 20 (≤25)
			h.Observe(okAttempt("anthropic", "haiku", 80, 20))
		}
		for range 10 { // 10 slow ones: 3 s (bucket ≤5000), ttfb 700 (≤1000)
			h.Observe(okAttempt("anthropic", "haiku", 3000, 700))
		}
		m := one(t, h).Minutes[59]
		if m.LatencyMS != (Quantiles{100, 3000}) || m.TTFBMS != (Quantiles{25, 700}) {
			t.Errorf("latency %+v ttfb %+v; want p50 100 p95 3000 (the max), ttfb p50 25 p95 700", m.LatencyMS, m.TTFBMS)
		}
		time.Sleep(time.Minute)
		for range 100 { // the next minute: 100 at 400 ms (≤500)
			h.Observe(okAttempt("anthropic", "haiku", 400, 0))
		}
		s := one(t, h)
		if s.Minutes[59].LatencyMS != (Quantiles{400, 400}) || s.Minutes[59].TTFBMS != (Quantiles{}) {
			t.Errorf("second minute latency %+v ttfb %+v; want 400/400 (the max) and no ttfb", s.Minutes[59].LatencyMS, s.Minutes[59].TTFBMS)
		}
		// The hour: 200 samples; ranks 100 and 190 are among the 400 ms
		// ones (bucket ≤500), whose bound is below the hour's max.
		if s.Hour.LatencyMS != (Quantiles{500, 500}) || s.Hour.TTFBMS != (Quantiles{25, 700}) {
			t.Errorf("hour latency %+v ttfb %+v, want 500/500, 25/700", s.Hour.LatencyMS, s.Hour.TTFBMS)
		}
		// A refused call has no latency: it is counted, not timed.
		h.Observe(&sluice.Attempt{Provider: "anthropic", Model: "haiku", Outcome: sluice.OutcomeCircuitOpen, Error: "circuit_open"})
		if s := one(t, h); s.Minutes[59].Attempts != 101 || s.Minutes[59].LatencyMS != (Quantiles{400, 400}) {
			t.Errorf("after a refusal: %d attempts, latency %+v; want 101, 400/400", s.Minutes[59].Attempts, s.Minutes[59].LatencyMS)
		}
	})
}

// Model names come from clients: past maxSeries, new models fold into one
// "(other)" series per provider, and past maxOtherSeries providers into
// one "(other)"/"(other)". Long names fold too. The failures kept are the
// last maxFailures, newest first.
func TestHistoryBounded(t *testing.T) {
	h := New()
	for i := range 1000 {
		h.Observe(&sluice.Attempt{Provider: fmt.Sprintf("p%d", i%40), Model: fmt.Sprintf("m%d", i),
			Outcome: sluice.OutcomeFail, Status: 500, Error: "status_500", RequestID: fmt.Sprintf("req-%d", i)})
	}
	long := string(make([]byte, 10_000))
	h.Observe(&sluice.Attempt{Provider: "p0", Model: long, Outcome: sluice.OutcomeOK, Status: 200})
	series, fails := h.Snapshot(time.Now())
	if n := len(series); n != maxSeries+maxOtherSeries+1 {
		t.Fatalf("%d series, want %d", n, maxSeries+maxOtherSeries+1)
	}
	var total uint64
	for _, s := range series {
		total += s.Hour.Attempts
		if len(s.Model) > maxNameLen || len(s.Provider) > maxNameLen {
			t.Errorf("series %q/%q keeps a long name", s.Provider[:10], s.Model[:10])
		}
	}
	if total != 1001 {
		t.Errorf("the series count %d attempts, want all 1001", total)
	}
	if series[0].Provider != Other || series[0].Model != Other {
		t.Errorf("busiest series %s/%s, want the fold of the rest", series[0].Provider, series[0].Model)
	}
	if len(fails) != maxFailures || fails[0].RequestID != "req-999" || fails[maxFailures-1].RequestID != "req-950" {
		t.Errorf("%d failures from %s to %s; want %d, req-999 to req-950", len(fails), fails[0].RequestID, fails[len(fails)-1].RequestID, maxFailures)
	}
}

// An hour of history costs the same at 1,000 attempts a second as at one:
// observing allocates nothing once its series exist, and a series is a
// fixed array.
func TestHistoryMemoryFlat(t *testing.T) {
	h := New()
	attempts := []*sluice.Attempt{okAttempt("openai", "gpt", 120, 30),
		{Provider: "openai", Model: "gpt", Outcome: sluice.OutcomeRetry, Status: 429, Error: "status_429", LatencyMS: 5, RequestID: "r"}}
	for _, a := range attempts {
		h.Observe(a)
	}
	allocs := testing.AllocsPerRun(1000, func() {
		h.Observe(attempts[0])
		h.Observe(attempts[1])
	})
	if allocs != 0 {
		t.Errorf("observe allocates %.1f times per pair of attempts in the steady state, want 0", allocs)
	}
	size := unsafe.Sizeof(series{})
	t.Logf("one series: %d bytes; at most %d series: %d KiB; failures: %d bytes", size, maxSeries+maxOtherSeries+1,
		int(size)*(maxSeries+maxOtherSeries+1)/1024, unsafe.Sizeof(h.failures))
	if size > 16<<10 {
		t.Errorf("a series is %d bytes; the budget is 16 KiB", size)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range 60_000 { // a minute at 1,000 a second
		h.Observe(attempts[0])
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if grew := int64(after.HeapAlloc) - int64(before.HeapAlloc); grew > 64<<10 {
		t.Errorf("60,000 attempts grew the heap by %d bytes", grew)
	}
}

// BenchmarkHistoryObserve is what the status page adds to each attempt.
func BenchmarkHistoryObserve(b *testing.B) {
	h := New()
	ok := okAttempt("openai", "gpt-4o-mini", 120, 30)
	fail := &sluice.Attempt{Provider: "openai", Model: "gpt-4o-mini", Outcome: sluice.OutcomeRetry, Status: 503,
		Error: "status_503", LatencyMS: 20, TTFBMS: 20, RequestID: "req-1"}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%10 == 0 {
			h.Observe(fail)
		} else {
			h.Observe(ok)
		}
	}
}

// A replay counts under ClassReplayed, with what its first call cost as
// the dollars saved, in its minute and in the hour.
func TestHistoryReplaySaved(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New()
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		replay := func(saved float64) *sluice.Attempt {
			return &sluice.Attempt{Provider: "openai", Model: "gpt", Outcome: sluice.OutcomeReplayed, Status: 200, SavedUSD: saved}
		}
		h.Observe(replay(0.25))
		time.Sleep(time.Minute)
		h.Observe(replay(0.5))
		h.Observe(okAttempt("openai", "gpt", 100, 40))
		s := one(t, h)
		if m := s.Minutes[Minutes-1]; m.Classes[ClassReplayed] != 1 || m.SavedUSD != 0.5 || m.Attempts != 2 {
			t.Errorf("current minute %+v, want 1 replay saving $0.50 and 1 ok", m)
		}
		if s.Hour.Classes[ClassReplayed] != 2 || s.Hour.SavedUSD != 0.75 {
			t.Errorf("hour %+v, want 2 replays saving $0.75", s.Hour)
		}
	})
}

// The calls begun and what hedging did, per minute and over the hour: a
// call's first line counts it (a refused calls' line each it stands for),
// a hedge's first line counts a hedge sent and not a call, the first
// attempt's hedge_lost line a hedge won, a refused mark a hedge refused;
// later attempts count nothing.
func TestHistoryHedges(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := New()
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)))
		line := func(attempt int, o sluice.Outcome, mark sluice.HedgeMark, refused int) {
			h.Observe(&sluice.Attempt{Provider: "openai", Model: "m", Attempt: attempt, Outcome: o, Hedge: mark, Refused: refused})
		}
		line(1, sluice.OutcomeOK, 0, 0)                       // a plain call
		line(1, sluice.OutcomeRetry, 0, 0)                    // a call retried:
		line(2, sluice.OutcomeOK, 0, 0)                       //   one call
		line(1, sluice.OutcomeHedgeLost, 0, 0)                // a call whose hedge won
		line(1, sluice.OutcomeOK, sluice.HedgeSent, 0)        //   the hedge
		line(1, sluice.OutcomeOK, 0, 0)                       // a call whose hedge lost
		line(1, sluice.OutcomeHedgeLost, sluice.HedgeSent, 0) //   the hedge
		line(1, sluice.OutcomeOK, sluice.HedgeRefused, 0)     // a call whose hedge was refused
		line(1, sluice.OutcomeCircuitOpen, 0, 3)              // three refused calls on one line
		line(2, sluice.OutcomeOK, sluice.HedgeSent, 0)        // a hedge's retry: nothing new
		want := Hedges{Sent: 2, Won: 1, Refused: 1}
		s := one(t, h)
		if m := s.Minutes[59]; m.Calls != 8 || m.Hedges != want {
			t.Errorf("minute: %d calls, hedges %+v; want 8 calls, %+v", m.Calls, m.Hedges, want)
		}
		time.Sleep(time.Minute)
		line(1, sluice.OutcomeHedgeLost, 0, 0)
		line(1, sluice.OutcomeOK, sluice.HedgeSent, 0)
		s = one(t, h)
		want.Add(Hedges{Sent: 1, Won: 1})
		if s.Minutes[59].Calls != 1 || s.Hour.Calls != 9 || s.Hour.Hedges != want {
			t.Errorf("next minute %d calls; hour %d calls, hedges %+v; want 1, 9 and %+v", s.Minutes[59].Calls, s.Hour.Calls, s.Hour.Hedges, want)
		}
	})
}
