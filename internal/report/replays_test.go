package report

import (
	"strings"
	"testing"
	"time"
)

// A call replayed from a kept answer is a call that succeeded, counted
// with the dollars its first call spent, in the text, the JSON and the
// HTML page alike.
func TestReplaysCounted(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	lines := []Line{
		{TS: t0, RequestID: "first", Attempt: 1, Provider: "openai", Status: 503, Outcome: "retry", Error: "status_503"},
		{TS: t0.Add(time.Second), RequestID: "first", Attempt: 2, Provider: "openai", Status: 200, Outcome: "ok", CostUSD: 0.25},
		{TS: t0.Add(time.Minute), RequestID: "again-1", Attempt: 1, Provider: "openai", Status: 200, Outcome: "replayed", ReplayOf: "first"},
		{TS: t0.Add(2 * time.Minute), RequestID: "again-2", Attempt: 1, Provider: "openai", Status: 200, Outcome: "replayed", ReplayOf: "first"},
		{TS: t0.Add(3 * time.Minute), RequestID: "again-3", Attempt: 1, Provider: "openai", Status: 200, Outcome: "replayed", ReplayOf: "older"},
		// The first call's lines rotated away; the replay's own line says what it cost.
		{TS: t0.Add(4 * time.Minute), RequestID: "again-4", Attempt: 1, Provider: "openai", Status: 200, Outcome: "replayed", ReplayOf: "rotated", SavedUSD: 0.25},
	}
	s := Summarize(lines)
	if s.Calls != 5 || s.Replays.Calls != 4 || s.Replays.SavedUSD != 0.75 || s.Replays.Unpriced != 1 {
		t.Errorf("calls %d, replays %+v; want 5 calls, 4 replays saving $0.75, 1 unpriced", s.Calls, s.Replays)
	}
	if s.Incident.FailedCalls != 0 {
		t.Errorf("%d failed calls, want 0: a replay is an answer", s.Incident.FailedCalls)
	}
	var b strings.Builder
	WriteText(&b, &s)
	if !strings.Contains(b.String(), "replayed from kept answers (Idempotency-Key): 4 calls, 0.75 USD not spent again (1 whose first call this log does not hold)") {
		t.Errorf("text report:\n%s", b.String())
	}
	page := htmlPage(t, lines)
	if !strings.Contains(page, "Replayed from kept answers (Idempotency-Key): 4 calls, $0.75 not spent again (1 whose first call this log does not hold).") {
		t.Errorf("the HTML page does not count the replays:\n%s", page)
	}
	if page := htmlPage(t, lines[:2]); strings.Contains(page, `id="replays"`) {
		t.Error("the HTML page speaks of replays where there are none")
	}
}
