package report

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
)

func TestOpenings(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	l := func(s int, provider, breaker, outcome string, status int) Line {
		return Line{TS: at(s), RequestID: provider + at(s).String(), Provider: provider,
			Breaker: breaker, Outcome: sluice.Outcome(outcome), Status: status}
	}
	folded := func(l Line, n int) Line { l.Refused = n; return l }
	tests := []struct {
		name  string
		lines []Line
		want  []Opening
	}{
		{"none", []Line{l(0, "a", "closed", "ok", 200), l(1, "a", "closed", "fail", 503)}, nil},
		{"open then closed", []Line{
			l(0, "a", "closed", "fail", 503), l(1, "a", "closed", "fail", 0),
			l(2, "a", "open", "circuit_open", 0), l(3, "a", "open", "circuit_open", 0),
			l(10, "a", "half_open", "ok", 200), l(11, "a", "closed", "ok", 200),
		}, []Opening{{Provider: "a", Start: at(2), End: at(11), DurationMS: 9000, FastFails: 2,
			CallsFailedFast: 2, Probes: []time.Time{at(10)},
			Before: []Count{{"503", 1, 0.5}, {"fail", 1, 0.5}}}}},
		{"failed probe stays one opening", []Line{
			l(0, "a", "open", "circuit_open", 0), l(5, "a", "half_open", "fail", 503),
			l(6, "a", "open", "circuit_open", 0), l(12, "a", "closed", "ok", 200),
		}, []Opening{{Provider: "a", Start: at(0), End: at(12), DurationMS: 12000, FastFails: 2,
			CallsFailedFast: 2, Probes: []time.Time{at(5)}, FailedProbes: 1, Before: []Count{}}}},
		{"folded refusals count as the calls they stand for", []Line{
			l(0, "a", "open", "circuit_open", 0), folded(l(1, "a", "open", "circuit_open", 0), 40),
			l(12, "a", "closed", "ok", 200),
		}, []Opening{{Provider: "a", Start: at(0), End: at(12), DurationMS: 12000, FastFails: 41,
			CallsFailedFast: 41, Probes: []time.Time{}, Before: []Count{}}}},
		{"still open at the end", []Line{
			l(0, "a", "closed", "fail", 503), l(4, "a", "open", "circuit_open", 0), l(9, "b", "closed", "ok", 200),
		}, []Opening{{Provider: "a", Start: at(4), Ongoing: true, DurationMS: 5000, FastFails: 1,
			CallsFailedFast: 1, Probes: []time.Time{}, Before: []Count{{"503", 1, 1}}}}},
		{"providers apart", []Line{
			l(0, "a", "open", "circuit_open", 0), l(1, "b", "closed", "ok", 200),
			l(2, "b", "open", "circuit_open", 0), l(3, "a", "closed", "ok", 200), l(4, "b", "closed", "ok", 200),
		}, []Opening{
			{Provider: "a", Start: at(0), End: at(3), DurationMS: 3000, FastFails: 1, CallsFailedFast: 1, Probes: []time.Time{}, Before: []Count{}},
			{Provider: "b", Start: at(2), End: at(4), DurationMS: 2000, FastFails: 1, CallsFailedFast: 1, Probes: []time.Time{}, Before: []Count{{"200", 1, 1}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := openings(tc.lines)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("openings =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestWhyWindow(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var lines []Line
	for i := range 9 {
		status := 200
		if i >= 4 {
			status = 503
		}
		lines = append(lines, Line{TS: t0.Add(time.Duration(i) * time.Second), Provider: "p", Breaker: "closed", Status: status})
	}
	lines = append(lines, Line{TS: t0.Add(time.Minute), Provider: "p", Breaker: "open", Outcome: "circuit_open"})
	got := openings(lines)
	if len(got) != 1 || !reflect.DeepEqual(got[0].Before, []Count{{"503", 5, 1}}) {
		t.Errorf("openings = %+v; want one after 5× 503", got)
	}
}

func TestCallsAndStatuses(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	lines := []Line{
		{TS: t0, RequestID: "a", Outcome: "retry", Status: 503, RetryInMS: 100},
		{TS: t0.Add(time.Second), RequestID: "a", Outcome: "ok", Status: 200},
		{TS: t0, RequestID: "b", Outcome: "fail", Status: 0, Error: "connect"},
		{TS: t0, Outcome: "ok", Status: 200},
		{TS: t0, Outcome: "ok", Status: 200},
	}
	s := Summarize(lines)
	if s.Calls != 4 || s.AttemptsPerCall.Max != 2 || s.AttemptsPerCall.Mean != 1.25 {
		t.Errorf("calls = %d, per call %+v; want 4, max 2, mean 1.25", s.Calls, s.AttemptsPerCall)
	}
	wantResults := []Count{{"ok", 3, 0.75}, {"fail", 1, 0.25}}
	if !reflect.DeepEqual(s.CallResults, wantResults) {
		t.Errorf("call results = %+v, want %+v", s.CallResults, wantResults)
	}
	wantStatuses := []Count{{"0", 1, 0.2}, {"200", 3, 0.6}, {"503", 1, 0.2}}
	if !reflect.DeepEqual(s.Statuses, wantStatuses) {
		t.Errorf("statuses = %+v, want %+v", s.Statuses, wantStatuses)
	}
	if s.Retries.Count != 1 || s.Retries.WaitSumMS != 100 || !reflect.DeepEqual(s.Retries.After, []Count{{"503", 1, 1}}) {
		t.Errorf("retries = %+v", s.Retries)
	}
}

// Waits for rate-limit slots are summed, and refusals counted as the calls
// a folded line stands for; refusals never went upstream.
func TestQueued(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	lines := []Line{
		{TS: t0, RequestID: "a", Outcome: "ok", Status: 200, LatencyMS: 10},
		{TS: t0, RequestID: "b", Outcome: "ok", Status: 200, LatencyMS: 10, QueuedMS: 400},
		{TS: t0, RequestID: "c", Outcome: "ok", Status: 200, LatencyMS: 10, QueuedMS: 1600},
		{TS: t0, RequestID: "d", Outcome: sluice.OutcomeRateLimited, Error: "rate_limited", Refused: 1},
		{TS: t0, RequestID: "e", Outcome: sluice.OutcomeRateLimited, Error: "rate_limited", Refused: 7},
	}
	s := Summarize(lines)
	q := s.Queued
	if q.Count != 2 || q.WaitSumMS != 2000 || q.WaitMaxMS != 1600 || q.Refused != 8 {
		t.Errorf("queued %+v; want 2 attempts waiting 2000 ms (max 1600), 8 refused", q)
	}
	if s.Overall.Latency.N != 3 {
		t.Errorf("latency counts %d attempts, want the 3 that went upstream", s.Overall.Latency.N)
	}
}

// The page shows the queued attempts and the refused calls as the text
// does, and no such section when no rate limit held anything.
func TestHTMLQueued(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	page := func(lines []Line) string { return htmlPage(t, lines) }
	p := page([]Line{
		{TS: t0, RequestID: "b", Outcome: "ok", Status: 200, LatencyMS: 10, QueuedMS: 400},
		{TS: t0, RequestID: "c", Outcome: "ok", Status: 200, LatencyMS: 10, QueuedMS: 1600},
		{TS: t0, RequestID: "e", Outcome: sluice.OutcomeRateLimited, Error: "rate_limited", Refused: 7},
	})
	for _, want := range []string{
		`<h2 id="queued">`,
		"<p>2 attempts waited 2s in all (p50 400ms, p99 1.6s, max 1.6s).</p>",
		"<p>7 calls refused: their turn was further than their max_queue (429 rate_limited).</p>",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if r, q := strings.Index(p, "<h2>Retries"), strings.Index(p, `<h2 id="queued">`); q < r {
		t.Errorf("queued section at %d, want after retries (%d), as in the text", q, r)
	}
	if p := page([]Line{{TS: t0, RequestID: "a", Outcome: "ok", Status: 200, LatencyMS: 10}}); strings.Contains(p, `id="queued"`) {
		t.Error("a log where nothing waited has a queued section on the page")
	}
}
