package report

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
)

// mixedLog is a log with every way a call is told: retries, a fallback,
// breaker refusals folded with and without refused_ids (some of the
// refused calls then answered by the fallback, one of them before the
// folded line was written), budget refusals, rate-limit refusals, a
// queued call and a client's cancellation.
//
// Its 25 attempts (12 upstream) are 18 calls: 7 ok (r1 f1 c1 c2 c3 q0
// z1), 1 fail (c4: its 503 retried, then refused by the open breaker, so
// the 503 was its answer), 3 ended on circuit_open (c6 c5 and one the old
// folded line does not name), 3 on budget_exhausted (b1 b2 b3), 3 on
// rate_limited (q1 q2 q3), 1 cancelled by its client (cc1).
func mixedLog() []Line {
	t0 := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	l := func(ms int, id string, n int, provider, brk, outcome, class string, status int) Line {
		return Line{TS: at(ms), RequestID: id, Attempt: n, Provider: provider, Breaker: brk,
			Outcome: sluice.Outcome(outcome), Error: class, Status: status, LatencyMS: 10}
	}
	folded := func(l Line, n int, ids ...string) Line {
		l.Refused, l.RefusedIDs, l.LatencyMS = n, ids, 0
		return l
	}
	queued := l(30000, "q0", 1, "openai", "closed", "ok", "", 200)
	queued.QueuedMS = 250
	return []Line{
		// r1: two retries, then ok.
		l(0, "r1", 1, "openai", "closed", "retry", "status_503", 503),
		l(1000, "r1", 2, "openai", "closed", "retry", "status_503", 503),
		l(2000, "r1", 3, "openai", "closed", "ok", "", 200),
		// f1: the primary fails, the fallback answers.
		l(3000, "f1", 1, "openai", "closed", "fail", "status_503", 503),
		l(4000, "f1", 2, "anthropic", "closed", "ok", "", 200),
		// c4's first attempt, before the breaker opened: then refused.
		l(9500, "c4", 1, "openai", "closed", "retry", "status_503", 503),
		// The breaker opens: c1 refused at once, answered by the fallback.
		folded(l(10000, "c1", 1, "openai", "open", "circuit_open", "circuit_open", 0), 1, "c1"),
		l(10100, "c1", 2, "anthropic", "closed", "ok", "", 200),
		// c2 and c3, refused within the second, answered by the fallback
		// before the folded line that counts them is written.
		l(10600, "c2", 2, "anthropic", "closed", "ok", "", 200),
		l(10700, "c3", 2, "anthropic", "closed", "ok", "", 200),
		folded(l(10900, "c2", 1, "openai", "open", "circuit_open", "circuit_open", 0), 4, "c2", "c3", "c4", "c6"),
		// A folded line written before the log listed the ids: c5 and one
		// call it does not name.
		folded(l(12000, "c5", 1, "openai", "open", "circuit_open", "circuit_open", 0), 2),
		// Budget refusals.
		folded(l(20000, "b1", 1, "anthropic", "closed", "budget_exhausted", "budget_exhausted", 0), 1, "b1"),
		folded(l(21000, "b2", 1, "anthropic", "closed", "budget_exhausted", "budget_exhausted", 0), 2, "b2", "b3"),
		// Rate limits: one call queued, three refused.
		queued,
		folded(l(31000, "q1", 1, "openai", "closed", "rate_limited", "rate_limited", 0), 1, "q1"),
		folded(l(32000, "q2", 1, "openai", "closed", "rate_limited", "rate_limited", 0), 2, "q2", "q3"),
		l(40000, "cc1", 1, "openai", "closed", "client_cancel", "client_cancel", 0),
		l(50000, "z1", 1, "openai", "closed", "ok", "", 200),
	}
}

// countOf returns the count of key in cs, 0 when absent.
func countOf(cs []Count, key string) int {
	for _, c := range cs {
		if c.Key == key {
			return c.N
		}
	}
	return 0
}

// sum adds up the counts of cs.
func sum(cs []Count) int {
	n := 0
	for _, c := range cs {
		n += c.N
	}
	return n
}

// TestCallsCountedAlike is the report's one truth: the header, the
// failed calls, the failures by reason, the calls section, the queued
// refusals, the breaker openings, the timeline, the --json object and the
// HTML page all count the same calls and attempts.
func TestCallsCountedAlike(t *testing.T) {
	s := summaryOf(t, jsonl(t, mixedLog()), "-")
	const attempts, upstream, calls, failed = 25, 12, 18, 10
	if s.Attempts != attempts || s.Upstream != upstream || s.Calls != calls {
		t.Errorf("%d attempts, %d upstream, %d calls; want %d, %d, %d", s.Attempts, s.Upstream, s.Calls, attempts, upstream, calls)
	}
	wantResults := []Count{{"ok", 7, 7.0 / calls}, {"budget_exhausted", 3, 3.0 / calls}, {"circuit_open", 3, 3.0 / calls},
		{"rate_limited", 3, 3.0 / calls}, {"client_cancel", 1, 1.0 / calls}, {"fail", 1, 1.0 / calls}}
	if !reflect.DeepEqual(s.CallResults, wantResults) {
		t.Errorf("call results = %+v\nwant %+v", s.CallResults, wantResults)
	}
	wantHist := []Count{{"0", 9, 9.0 / calls}, {"1", 7, 7.0 / calls}, {"2", 1, 1.0 / calls}, {"3", 1, 1.0 / calls}}
	if !reflect.DeepEqual(s.AttemptsPerCall.Hist, wantHist) || s.AttemptsPerCall.Max != 3 {
		t.Errorf("attempts per call = %+v, want hist %+v, max 3", s.AttemptsPerCall, wantHist)
	}
	// Every count of calls is the same calls.
	hist := 0
	for _, c := range s.AttemptsPerCall.Hist {
		k, _ := strconv.Atoi(c.Key)
		hist += k * c.N
	}
	provCalls, provFailed, classes := 0, 0, map[string]int{}
	for _, p := range s.Incident.Providers {
		provCalls += p.Calls
		provFailed += p.FailedCalls
		for _, c := range p.Classes {
			classes[c.Key] += c.N
		}
	}
	failCalls, failAttempts := 0, 0
	failByClass := map[string]int{}
	for _, f := range s.Failures {
		failCalls += f.Calls
		failAttempts += f.Attempts
		failByClass[f.Class] += f.Calls
	}
	bucketAttempts := 0
	for _, b := range s.OverTime.Buckets {
		bucketAttempts += b.Attempts
	}
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"incident calls", s.Incident.Calls, calls},
		{"calls by result", sum(s.CallResults), calls},
		{"calls by attempts per call", sum(s.AttemptsPerCall.Hist), calls},
		{"upstream attempts per call × calls", hist, upstream},
		{"attempts by outcome", sum(s.Outcomes), attempts},
		{"attempts by status", sum(s.Statuses), attempts},
		{"attempts over time", bucketAttempts, attempts},
		{"failed calls", s.Incident.FailedCalls, failed},
		{"failed calls: every result but ok and client_cancel", calls - countOf(s.CallResults, "ok") - countOf(s.CallResults, "client_cancel"), failed},
		{"failed calls by provider", provFailed, failed},
		{"failures' calls", failCalls, failed},
		// Calls by provider count only providers with a failed call: here both.
		{"calls by provider", provCalls, calls},
		{"circuit_open: results", countOf(s.CallResults, "circuit_open"), 3},
		{"circuit_open: incident classes", classes["circuit_open"], 3},
		{"circuit_open: failures", failByClass["circuit_open"], 3},
		{"status_503: failures (c4's answer)", failByClass["status_503"], 1},
		{"circuit_open: attempts", countOf(s.Outcomes, "circuit_open"), 7},
		{"budget_exhausted: failures", failByClass["budget_exhausted"], countOf(s.CallResults, "budget_exhausted")},
		{"rate_limited: queued refused", s.Queued.Refused, countOf(s.CallResults, "rate_limited")},
		{"rate_limited: failures", failByClass["rate_limited"], 3},
		{"queued", s.Queued.Count, 1},
		{"failure attempts", failAttempts, 7 + 3 + 3 + 4}, // refusals, and the 503s retried or fallen back from
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	if len(s.Openings) != 1 || s.Openings[0].FastFails != 7 || s.Openings[0].CallsFailedFast != 7 {
		t.Errorf("openings = %+v; want one, 7 attempts of 7 calls failed fast", s.Openings)
	}
	// The ids a folded line lists are the calls' ids, to look up.
	for _, f := range s.Failures {
		if f.Class == "circuit_open" && !reflect.DeepEqual(f.Samples, []string{"c5", "c6"}) {
			t.Errorf("circuit_open samples = %q, want the latest named calls c5 c6", f.Samples)
		}
	}

	// The text says the same.
	_, text, _ := runCmd(t, jsonl(t, mixedLog()), "-")
	for _, want := range []string{
		fmt.Sprintf("sluice report: %d attempts, %d calls", attempts, calls),
		fmt.Sprintf("FAILED CALLS: %d of %d", failed, calls),
		fmt.Sprintf("  %d calls, %d attempts (%d upstream, %d refused): %.2f upstream attempts per call", calls, attempts, upstream, attempts-upstream, float64(upstream)/calls),
		fmt.Sprintf("  answered %s (ok %s, replayed 0.0%%)", pct(7.0/calls), pct(7.0/calls)),
		"circuit_open: 3 (", "ok: 7 (", "fail: 1 (",
		"3 calls refused: their turn",
		"7 calls (7 attempts)",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	// The page says the same.
	page := htmlPage(t, mixedLog())
	for _, want := range []string{
		fmt.Sprintf("Failed calls: %d of %d", failed, calls),
		fmt.Sprintf("<span>answered</span><b>%s</b><span>ok %s, replayed 0.0%%</span>", pct(7.0/calls), pct(7.0/calls)),
		fmt.Sprintf("<span>failed calls</span><b>%d</b><span>of %d</span>", failed, calls),
		fmt.Sprintf("%d attempts, %d calls", attempts, calls),
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if m := regexp.MustCompile(`<span>calls</span><b>(\d+)</b>`).FindStringSubmatch(page); m == nil || m[1] != strconv.Itoa(calls) {
		t.Errorf("page's calls card = %q, want %d", m, calls)
	}
}

// TestCallEnds: a call ends on its attempt with the highest number, not
// on the latest line: a folded refusal line is written after the calls it
// counts went on to their fallback. A call refused after an attempt went
// upstream returned that attempt's answer: c4's 503.
func TestCallEnds(t *testing.T) {
	ends := groupCalls(mixedLog())
	got := map[string]string{}
	for _, e := range ends {
		if e.id != "" {
			got[e.id] = e.result
		}
	}
	for id, want := range map[string]string{
		"r1": "ok", "f1": "ok", "c1": "ok", "c2": "ok", "c3": "ok", "c4": "fail",
		"c5": "circuit_open", "c6": "circuit_open", "b3": "budget_exhausted", "q3": "rate_limited",
	} {
		if got[id] != want {
			t.Errorf("call %s ended on %q, want %q", id, got[id], want)
		}
	}
	if len(ends) != 18 {
		t.Errorf("%d calls, want 18", len(ends))
	}
	if !slices.IsSortedFunc(ends, func(a, b callEnd) int { return a.last.TS.Compare(b.last.TS) }) {
		t.Error("calls not in the order of their ends")
	}
}

// TestLineHasEveryAttemptField: the report's Line decodes every field the
// attempt log writes, by the same JSON name.
func TestLineHasEveryAttemptField(t *testing.T) {
	names := func(typ reflect.Type) map[string]bool {
		m := map[string]bool{}
		for f := range typ.Fields() {
			if name, _, _ := strings.Cut(f.Tag.Get("json"), ","); name != "-" && name != "" {
				m[name] = true
			}
		}
		return m
	}
	line := names(reflect.TypeFor[Line]())
	for name := range names(reflect.TypeFor[sluice.Attempt]()) {
		if !line[name] {
			t.Errorf("the attempt log writes %q; Line does not read it", name)
		}
	}
	if !line["refused_ids"] {
		t.Error("Line does not read refused_ids")
	}
	var l Line
	if err := json.Unmarshal([]byte(`{"ts":"2025-06-01T09:00:00Z","request_id":"a","refused":3,"refused_ids":["a","b","c"]}`), &l); err != nil ||
		l.Refused != 3 || !reflect.DeepEqual(l.RefusedIDs, []string{"a", "b", "c"}) {
		t.Errorf("decoded %+v, %v", l, err)
	}
}

// TestRequestIDLookup: --request-id finds a call by the id its client was
// given, a refused one among the refused_ids of the folded line that
// counts it, and tells how it ended as the report counts it.
func TestRequestIDLookup(t *testing.T) {
	data := jsonl(t, mixedLog())
	for _, tc := range []struct {
		id       string
		attempts []string // outcomes, in order
		result   string
	}{
		{"c4", []string{"retry", "circuit_open"}, "fail"},
		{"c3", []string{"circuit_open", "ok"}, "ok"},
		{"q3", []string{"rate_limited"}, "rate_limited"},
		{"r1", []string{"retry", "retry", "ok"}, "ok"},
	} {
		code, out, stderr := runCmd(t, data, "--request-id", tc.id, "--json", "-")
		var c Call
		if err := json.Unmarshal([]byte(out), &c); code != ExitOK || err != nil {
			t.Fatalf("--request-id %s: exit %d, %v, %s", tc.id, code, err, stderr)
		}
		var got []string
		for _, l := range c.Attempts {
			got = append(got, string(l.Outcome))
		}
		if !c.Found || c.Result != tc.result || !slices.Equal(got, tc.attempts) {
			t.Errorf("--request-id %s: found %v, result %q, attempts %q; want %q, %q", tc.id, c.Found, c.Result, got, tc.result, tc.attempts)
		}
	}
	_, out, _ := runCmd(t, data, "--request-id", "c6", "-")
	for _, want := range []string{"call c6: 0 attempts upstream (Sluice-Attempts), result circuit_open\n", "(one of the 4 refusals this line counts)"} {
		if !strings.Contains(out, want) {
			t.Errorf("text lacks %q:\n%s", want, out)
		}
	}
	if code, out, stderr := runCmd(t, data, "--request-id", "nope", "-"); code != ExitNoMatch || out != "" ||
		stderr != "sluice report: no call with id nope in the log (neither a Sluice-Request-Id nor an upstream x-request-id); check the id, the log read and --since/--until\n" {
		t.Errorf("unknown id: exit %d, stdout %q, stderr %q; want 1, nothing, one line", code, out, stderr)
	}
	if code, _, stderr := runCmd(t, data, "--request-id", "c6", "--html", "x.html", "-"); code != ExitUsage || !strings.Contains(stderr, "give one or the other") {
		t.Errorf("--request-id with --html: exit %d, %q; want 2", code, stderr)
	}
}
