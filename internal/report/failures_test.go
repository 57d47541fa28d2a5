package report

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
)

// incidentLog is a small log with a known incident: openai fails from
// t+10 s to the end (timeouts, then the breaker), anthropic fails once and
// recovers.
func incidentLog() ([]Line, time.Time) {
	t0 := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	l := func(s int, id, provider, outcome, class string, status int) Line {
		return Line{TS: at(s), RequestID: id, Provider: provider, Outcome: sluice.Outcome(outcome),
			Error: class, Status: status}
	}
	return []Line{
		l(0, "a1", "openai", "ok", "", 200),
		l(1, "b1", "anthropic", "retry", "error_event_529", 200), // failed inside a 200 stream
		l(2, "b1", "anthropic", "ok", "", 200),
		l(5, "a2", "openai", "ok", "", 200),
		l(6, "b2", "anthropic", "fail", "quota_exhausted", 429),
		l(8, "b3", "anthropic", "ok", "", 200),
		l(10, "a3", "openai", "retry", "timeout_first_byte", 0),
		l(11, "a3", "openai", "timeout", "timeout_total", 0),
		l(12, "a4", "openai", "stream_stalled", "timeout_idle", 200),
		l(13, "a5", "openai", "client_cancel", "client_cancel", 0),
		l(14, "a6", "openai", "circuit_open", "circuit_open", 0),
		l(15, "a7", "openai", "circuit_open", "circuit_open", 0),
		l(16, "a8", "openai", "circuit_open", "circuit_open", 0),
		l(17, "a9", "openai", "circuit_open", "circuit_open", 0),
	}, t0
}

// TestFoldedRefusalsCount: a refusal line folded by the attempt log counts
// as the refused calls it stands for.
func TestFoldedRefusalsCount(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	lines := []Line{
		{TS: t0, RequestID: "x1", Provider: "openai", Outcome: "ok", Status: 200},
		{TS: t0.Add(time.Second), RequestID: "x2", Provider: "openai", Outcome: "circuit_open", Error: "circuit_open", Refused: 1},
		{TS: t0.Add(2 * time.Second), RequestID: "x3", Provider: "openai", Outcome: "circuit_open", Error: "circuit_open", Refused: 499},
	}
	s := Summarize(lines)
	if s.Incident.FailedCalls != 500 || s.Incident.Calls != 501 {
		t.Errorf("incident: %d failed of %d calls, want 500 of 501", s.Incident.FailedCalls, s.Incident.Calls)
	}
	if f := s.Failures[0]; f.Class != "circuit_open" || f.Calls != 500 || f.Attempts != 500 {
		t.Errorf("failures[0] = %+v, want circuit_open with 500 calls and attempts", f)
	}
}

func TestIncident(t *testing.T) {
	lines, t0 := incidentLog()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	s := Summarize(lines)
	want := Incident{FailedCalls: 7, Calls: 12, Providers: []ProviderIncident{
		{Provider: "openai", FailedCalls: 6, Calls: 9, First: at(11), Last: at(17), Failing: true,
			Since: at(11), LastOK: at(5), Classes: []Count{{"circuit_open", 4, 4.0 / 6}, {"timeout_idle", 1, 1.0 / 6}, {"timeout_total", 1, 1.0 / 6}}},
		{Provider: "anthropic", FailedCalls: 1, Calls: 3, First: at(6), Last: at(6),
			LastOK: at(8), Classes: []Count{{"quota_exhausted", 1, 1}}},
	}}
	if !reflect.DeepEqual(s.Incident, want) {
		t.Errorf("incident =\n%+v\nwant\n%+v", s.Incident, want)
	}
}

// TestFailures: a client's cancellation (a5) is no failure, as in the
// incident: the rows' calls add up to its failed calls.
func TestFailures(t *testing.T) {
	lines, t0 := incidentLog()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	s := Summarize(lines)
	want := []Failure{
		{Class: "circuit_open", Provider: "openai", Attempts: 4, Calls: 4, First: at(14), Last: at(17), Samples: []string{"a9", "a8", "a7"}},
		{Class: "quota_exhausted", Provider: "anthropic", Attempts: 1, Calls: 1, First: at(6), Last: at(6), Samples: []string{"b2"}},
		{Class: "timeout_idle", Provider: "openai", Attempts: 1, Calls: 1, First: at(12), Last: at(12), Samples: []string{"a4"}},
		{Class: "timeout_total", Provider: "openai", Attempts: 1, Calls: 1, First: at(11), Last: at(11), Samples: []string{"a3"}},
		{Class: "error_event_529", Provider: "anthropic", Attempts: 1, Calls: 0, First: at(1), Last: at(1), Samples: []string{"b1"}},
		{Class: "timeout_first_byte", Provider: "openai", Attempts: 1, Calls: 0, First: at(10), Last: at(10), Samples: []string{"a3"}},
	}
	if !reflect.DeepEqual(s.Failures, want) {
		t.Errorf("failures =\n%+v\nwant\n%+v", s.Failures, want)
	}
}

// TestRetriedAfterNamesTheFailure: an attempt retried after a 200 whose
// stream carried an error reads as that error, never as "200".
func TestRetriedAfterNamesTheFailure(t *testing.T) {
	lines, _ := incidentLog()
	s := Summarize(lines)
	want := []Count{{"error_event_529", 1, 0.5}, {"timeout_first_byte", 1, 0.5}}
	if !reflect.DeepEqual(s.Retries.After, want) {
		t.Errorf("retried after = %+v, want %+v", s.Retries.After, want)
	}
}

func TestTextIncidentFirst(t *testing.T) {
	lines, _ := incidentLog()
	_, out, _ := runCmd(t, jsonl(t, lines), "-")
	fc, calls := strings.Index(out, "FAILED CALLS: 7 of 12"), strings.Index(out, "\nCALLS\n")
	if fc < 0 || calls < 0 || fc > calls {
		t.Fatalf("the failed calls do not come first:\n%s", out)
	}
	for _, want := range []string{
		"openai: 6 of 9 calls failed, first 2025-06-01T09:00:11Z, last 2025-06-01T09:00:17Z; failing since 2025-06-01T09:00:11Z (last ok call 2025-06-01T09:00:05Z)",
		"anthropic: 1 of 3 calls failed, first 2025-06-01T09:00:06Z, last 2025-06-01T09:00:06Z; ok again since 2025-06-01T09:00:08Z",
		"circuit_open", "a9 a8 a7", "quota_exhausted", "timeout_idle", "error_event_529",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "retried after     200") {
		t.Errorf("a retry after a failed 200 stream reads as a retried success:\n%s", out)
	}
}

func TestFmtUSD(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{
		{0, "0.00"}, {6.15e-06, "0.00000615"}, {1.2656, "1.266"}, {0.1236, "0.1236"},
		{123.456, "123.46"}, {20, "20.00"}, {0.5, "0.50"}, {1e-12, "0.000000000001"},
		{0.000123456, "0.0001235"},
	} {
		if got := fmtUSD(tc.in); got != tc.want {
			t.Errorf("fmtUSD(%g) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
