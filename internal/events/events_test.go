package events

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/spend"
)

// buffer is a bytes.Buffer safe for the refresh's goroutine.
type buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// lines returns the lines written so far.
func (b *buffer) lines() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.b.String()
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// newLog returns a Log on a JSON logger writing every level to a buffer,
// without the time, so that its lines compare whole.
func newLog() (*Log, *buffer) {
	buf := &buffer{}
	h := slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}})
	return New(slog.New(h)), buf
}

func wantLines(t *testing.T, buf *buffer, want ...string) {
	t.Helper()
	if got := buf.lines(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

var resets = time.Date(2026, 12, 8, 0, 0, 0, 0, time.UTC)

// Each kind's line: its level, message and attributes, whole.
func TestLines(t *testing.T) {
	ev, buf := newLog()
	pol := &sluice.Policy{BreakerScope: sluice.ScopeModel}
	ev.Refused(pol, &sluice.Attempt{Outcome: sluice.OutcomeCircuitOpen, Provider: "openai", Model: "gpt-4o", RequestID: "r1"})
	ev.Refused(pol, &sluice.Attempt{Outcome: sluice.OutcomeRateLimited, Provider: "openai", Model: "gpt-4o", RequestID: "r2"})
	ev.Refused(pol, &sluice.Attempt{Outcome: sluice.OutcomeOK, Provider: "openai", Model: "gpt-4o", RequestID: "r3"})
	ev.Budget(&spend.BudgetError{Budget: "daily", Remaining: 0.25, Resets: resets.In(time.FixedZone("x", 3600))})
	ev.Budget(&spend.BudgetError{Budget: "daily", Err: errors.New("ledger down")})
	ev.StoreError("limits", "rate limits failed", errors.New("boom"), "errors", 3)
	ev.KeyPaused("openai", "k1", resets, false)
	ev.KeyPaused("openai", "k2", resets, true)
	wantLines(t, buf,
		`{"level":"WARN","msg":"calls refused: the breaker is open","event":"refused","breaker":"openai/gpt-4o","provider":"openai","model":"gpt-4o","request_id":"r1"}`,
		`{"level":"WARN","msg":"calls refused: a rate limit's queue is full","event":"refused","provider":"openai","model":"gpt-4o","request_id":"r2"}`,
		`{"level":"WARN","msg":"budget exhausted; calls are refused until it resets","event":"budget_exhausted","budget":"daily","remaining_usd":0.25,"resets":"2026-12-08T00:00:00Z"}`,
		`{"level":"ERROR","msg":"the spend ledger failed; calls under its budgets are refused meanwhile","event":"state_store","budget":"daily","err":"ledger down"}`,
		`{"level":"ERROR","msg":"rate limits failed","event":"state_store","store":"limits","err":"boom","errors":3}`,
		`{"level":"WARN","msg":"pool key paused: the provider's rate limit","event":"key_paused","provider":"openai","key":"k1","reason":"rate_limit","until":"2026-12-08T00:00:00Z"}`,
		`{"level":"WARN","msg":"pool key out of quota: its calls go to the other keys","event":"key_paused","provider":"openai","key":"k2","reason":"quota","until":"2026-12-08T00:00:00Z"}`,
	)
}

// A line of one kind and subject holds back the next ones of the same
// kind and subject for Every; the first line after says how many were
// held back. Other subjects and kinds are not held back.
func TestRateLimited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, buf := newLog()
		for range 5 {
			ev.StoreError("limits", "failed", errors.New("boom"))
		}
		ev.StoreError("keys", "failed", errors.New("boom"))
		ev.KeyPaused("openai", "limits", resets, false)
		time.Sleep(Every - time.Nanosecond)
		ev.StoreError("limits", "failed", errors.New("boom"))
		time.Sleep(time.Nanosecond)
		ev.StoreError("limits", "failed", errors.New("boom"))
		ev.StoreError("limits", "failed", errors.New("boom"))
		time.Sleep(Every)
		ev.StoreError("limits", "failed", errors.New("boom"))
		wantLines(t, buf,
			`{"level":"ERROR","msg":"failed","event":"state_store","store":"limits","err":"boom"}`,
			`{"level":"ERROR","msg":"failed","event":"state_store","store":"keys","err":"boom"}`,
			`{"level":"WARN","msg":"pool key paused: the provider's rate limit","event":"key_paused","provider":"openai","key":"limits","reason":"rate_limit","until":"2026-12-08T00:00:00Z"}`,
			`{"level":"ERROR","msg":"failed","event":"state_store","store":"limits","err":"boom","suppressed":5}`,
			`{"level":"ERROR","msg":"failed","event":"state_store","store":"limits","err":"boom","suppressed":1}`,
		)
	})
}

// SetEvery(0) lets every line through.
func TestSetEveryZero(t *testing.T) {
	ev, buf := newLog()
	ev.SetEvery(0)
	for range 3 {
		ev.StoreError("limits", "failed", errors.New("boom"))
	}
	if n := len(buf.lines()); n != 3 {
		t.Errorf("%d lines, want 3", n)
	}
}

// Past maxSubjects subjects, a new subject of a kind shares one mark: a
// storm of distinct subjects writes a bounded number of lines.
func TestSubjectsBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ev, buf := newLog()
		for i := range maxSubjects + 100 {
			ev.StoreError(fmt.Sprint("s", i), "failed", errors.New("boom"))
		}
		if n := len(buf.lines()); n != maxSubjects+1 {
			t.Errorf("%d lines for %d subjects, want %d", n, maxSubjects+100, maxSubjects+1)
		}
		if n := len(ev.marks); n != maxSubjects+1 {
			t.Errorf("%d marks, want %d", n, maxSubjects+1)
		}
		time.Sleep(Every)
		ev.StoreError("new", "failed", errors.New("boom")) // the stale marks swept
		if n := len(ev.marks); n > 2 {
			t.Errorf("%d marks after a sweep, want at most 2", n)
		}
	})
}

// A nil *Log writes nothing and does not panic.
func TestNil(t *testing.T) {
	var ev *Log
	ev.StoreError("limits", "failed", errors.New("boom"))
	ev.KeyPaused("openai", "k", resets, true)
}

func open(transitions uint64) breaker.Record {
	return breaker.Record{State: breaker.Open, Reason: "failures", Until: resets.UnixNano(), Transitions: transitions}
}

// reads returns a read of the refresh that returns records.
func reads(records map[string]breaker.Record) func() (map[string]breaker.Record, error) {
	return func() (map[string]breaker.Record, error) { return records, nil }
}

// A transition is logged once, whether the hook or the refresh sees it
// first; a late hook (an older record) is ignored; a breaker another
// process changed twice between two reads is one line with transitions=2.
func TestBreakerTransitions(t *testing.T) {
	ev, buf := newLog()
	ev.SetEvery(0)
	w := &ev.breakers
	w.refresh(reads(map[string]breaker.Record{"quiet": {}, "a": {State: breaker.Closed, Transitions: 2}}), nil) // closed at the first read: nothing
	ev.BreakerChanged("openai", breaker.Closed, open(1))
	w.refresh(reads(map[string]breaker.Record{"openai": open(1)}), nil) // seen by the hook already
	w.refresh(reads(map[string]breaker.Record{"openai": {State: breaker.HalfOpen, Transitions: 2}}), nil)
	ev.BreakerChanged("openai", breaker.Open, breaker.Record{State: breaker.HalfOpen, Transitions: 2}) // late
	w.refresh(reads(map[string]breaker.Record{"openai": {State: breaker.Open, Reason: "slow", Until: resets.UnixNano(), Transitions: 4}}), nil)
	ev.BreakerChanged("openai", breaker.Open, breaker.Record{State: breaker.Closed, Transitions: 5})
	w.refresh(reads(map[string]breaker.Record{"b": open(1)}), nil) // first reads
	w.refresh(reads(map[string]breaker.Record{"c": {State: breaker.HalfOpen, Transitions: 3}}), nil)
	wantLines(t, buf,
		`{"level":"WARN","msg":"breaker opened: calls fail fast until a probe succeeds","event":"breaker","breaker":"openai","from":"closed","to":"open","transitions":1,"reason":"failures","until":"2026-12-08T00:00:00Z"}`,
		`{"level":"INFO","msg":"breaker half_open: one probe goes to the provider","event":"breaker","breaker":"openai","from":"open","to":"half_open","transitions":1}`,
		`{"level":"WARN","msg":"breaker opened: calls fail fast until a probe succeeds","event":"breaker","breaker":"openai","from":"half_open","to":"open","transitions":2,"reason":"slow","until":"2026-12-08T00:00:00Z"}`,
		`{"level":"INFO","msg":"breaker closed: calls go to the provider again","event":"breaker","breaker":"openai","from":"open","to":"closed","transitions":1}`,
		`{"level":"WARN","msg":"breaker opened: calls fail fast until a probe succeeds","event":"breaker","breaker":"b","from":"closed","to":"open","transitions":1,"reason":"failures","until":"2026-12-08T00:00:00Z"}`,
		`{"level":"INFO","msg":"breaker half_open: one probe goes to the provider","event":"breaker","breaker":"c","from":"unknown","to":"half_open","transitions":3}`,
	)
}

// A store falling back to local breakers is one error line however often
// it is read; its recovery one info line.
func TestStoreDegraded(t *testing.T) {
	ev, buf := newLog()
	ev.SetEvery(0)
	degraded := true
	for range 3 {
		ev.breakers.refresh(reads(nil), func() bool { return degraded })
	}
	degraded = false
	for range 3 {
		ev.breakers.refresh(reads(nil), func() bool { return degraded })
	}
	wantLines(t, buf,
		`{"level":"ERROR","msg":"the shared state store cannot be reached or written; breakers count in this process alone meanwhile","event":"state_store","store":"breakers"}`,
		`{"level":"INFO","msg":"the shared state store is back; breakers are shared again","event":"state_store","store":"breakers"}`,
	)
}

// Start refreshes at once and every every until Stop: a store that cannot
// be read is one line at once, then held back (21 polls, 20 held), and no
// read after Stop. Stop may be called twice, and without Start.
func TestStartStop(t *testing.T) {
	New(slog.New(slog.DiscardHandler)).Stop()
	synctest.Test(t, func(t *testing.T) {
		ev, buf := newLog()
		var mu sync.Mutex
		polls := 0
		ev.Start(time.Millisecond, func() (map[string]breaker.Record, error) {
			mu.Lock()
			defer mu.Unlock()
			polls++
			return nil, errors.New("unreachable")
		}, nil)
		synctest.Wait()
		time.Sleep(20 * time.Millisecond)
		synctest.Wait()
		ev.Stop()
		ev.Stop()
		time.Sleep(time.Second)
		mu.Lock()
		n := polls
		mu.Unlock()
		if n != 21 {
			t.Errorf("%d polls, want 21", n)
		}
		wantLines(t, buf, `{"level":"ERROR","msg":"the breakers' state cannot be read","event":"state_store","store":"breakers","err":"unreachable"}`)
		if m := ev.marks[eventKey{KindStore, "breakers"}]; m == nil || m.held != 20 {
			t.Errorf("mark %+v, want 20 held back", m)
		}
	})
}
