package report

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
)

// gatewayLog returns testdata/gateway.jsonl: lines a real gateway wrote
// (sluice serve over sluice fake, breaker failures 2, max_attempts 3,
// prices and no budget). Call 7d2e… got the fake's 503 twice, the breaker
// opened after the 2nd and refused the 3rd: its client got the 2nd 503
// with Sluice-Attempts: 2 and X-Request-Id req_MHX5…. Call 0d3d… was
// refused by the open breaker (Sluice-Attempts: 0). After a restart,
// c458… answered ok (Sluice-Attempts: 1, priced from prices alone) and
// 9adb… and 1d95… were replayed from its kept answer (Sluice-Attempts: 0).
func gatewayLog(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/gateway.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

const (
	relayed503   = "7d2e764c002dbec5e00f61d3"
	clientSawID  = "req_MHX5ZGQOEO4FIWLB62XWFWIEIV" // the 2nd attempt's, the answer's x-request-id
	firstUpID    = "req_4LKNSYRDIUPRM5363CD2BBCTZR" // the 1st attempt's
	noSuchCallID = "req_NOSUCHCALL0000000000000000"
)

// TestReportAgreesWithClient: every call is counted by the answer its
// client got: the relayed 503 is a failed call of 2 upstream attempts with
// reason status_503, not circuit_open with 3; replays made no attempt and
// stay out of latency, and count as answered.
func TestReportAgreesWithClient(t *testing.T) {
	s := summaryOf(t, gatewayLog(t), "-")
	if s.Calls != 5 || s.Attempts != 5 || s.Upstream != 3 {
		t.Errorf("%d calls, %d attempts, %d upstream; want 5 calls, 5 attempts (3 sent, 2 refused; replays none), 3 upstream",
			s.Calls, s.Attempts, s.Upstream)
	}
	for _, c := range []struct {
		what      string
		got, want int
	}{
		{"results: fail", countOf(s.CallResults, "fail"), 1},
		{"results: circuit_open", countOf(s.CallResults, "circuit_open"), 1},
		{"results: ok", countOf(s.CallResults, "ok"), 1},
		{"results: replayed", countOf(s.CallResults, "replayed"), 2},
		{"calls of 0 upstream attempts (refused, replayed)", countOf(s.AttemptsPerCall.Hist, "0"), 3},
		{"calls of 1 upstream attempt", countOf(s.AttemptsPerCall.Hist, "1"), 1},
		{"calls of 2 upstream attempts (the relayed 503)", countOf(s.AttemptsPerCall.Hist, "2"), 1},
		{"calls of 3 attempts", countOf(s.AttemptsPerCall.Hist, "3"), 0},
		{"outcomes: replayed (no attempt)", countOf(s.Outcomes, "replayed"), 0},
		{"failed calls", s.Incident.FailedCalls, 2},
		{"latency n (upstream only)", s.Overall.Latency.N, 3},
	} {
		if c.got != c.want {
			t.Errorf("%s: %d, want %d", c.what, c.got, c.want)
		}
	}
	if s.Overall.Latency.P50 != 1.018 {
		t.Errorf("latency p50 %v, want 1.018 (of 0.4, 1.018, 3.859; replays' 0 left out)", s.Overall.Latency.P50)
	}
	byClass := map[string]Failure{}
	for _, f := range s.Failures {
		byClass[f.Class] = f
	}
	if f := byClass["status_503"]; f.Calls != 1 || f.Attempts != 2 || len(f.Samples) != 1 || f.Samples[0] != relayed503 {
		t.Errorf("status_503 = %+v; want 1 call (%s), 2 attempts", f, relayed503)
	}
	if f := byClass["circuit_open"]; f.Calls != 1 || f.Attempts != 2 {
		t.Errorf("circuit_open = %+v; want 1 call, 2 attempts", f)
	}
	if s.SpendUSD != 0.0000054 {
		t.Errorf("spend %v, want the ok call's 0.0000054", s.SpendUSD)
	}

	_, text, _ := runCmd(t, gatewayLog(t), "-")
	for _, want := range []string{
		"  5 calls, 5 attempts (3 upstream, 2 refused): 0.60 upstream attempts per call (Sluice-Attempts), at most 2\n",
		"  answered 60.0% (ok 20.0%, replayed 40.0%)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("text lacks %q:\n%s", want, text)
		}
	}
	var lines []Line
	Read(strings.NewReader(string(gatewayLog(t))), func(l Line) { lines = append(lines, l) })
	page := htmlPage(t, lines)
	if want := "<span>answered</span><b>60.0%</b><span>ok 20.0%, replayed 40.0%</span>"; !strings.Contains(page, want) {
		t.Errorf("page lacks the headline %q", want)
	}
}

// TestRequestIDFindsUpstreamID: --request-id finds a call by the provider's
// request id its SDK showed (the log's upstream_request_id), of the answer
// or of an earlier attempt, and tells the answer it returned; an id of no
// call exits 1 with one line on stderr.
func TestRequestIDFindsUpstreamID(t *testing.T) {
	data := gatewayLog(t)
	for _, id := range []string{clientSawID, firstUpID, relayed503} {
		code, out, stderr := runCmd(t, data, "--request-id", id, "--json", "-")
		var c Call
		if err := json.Unmarshal([]byte(out), &c); code != ExitOK || err != nil || stderr != "" {
			t.Fatalf("--request-id %s: exit %d, %v, %q", id, code, err, stderr)
		}
		if !c.Found || c.RequestID != relayed503 || c.Result != "fail" || c.Upstream != 2 || c.Answer != 2 || len(c.Attempts) != 3 {
			t.Errorf("--request-id %s: %+v; want call %s found, result fail, 2 upstream, answered by attempt 2, 3 lines", id, c, relayed503)
		}
		if want := map[bool]string{true: "", false: id}[id == relayed503]; c.UpstreamRequestID != want {
			t.Errorf("--request-id %s: upstream_request_id %q, want %q", id, c.UpstreamRequestID, want)
		}
	}
	code, out, _ := runCmd(t, data, "--request-id", clientSawID, "-")
	want := "sluice report: call " + relayed503 + " (upstream request id " + clientSawID +
		"): 2 attempts upstream (Sluice-Attempts), result fail: the answer of attempt 2, status 503, x-request-id " + clientSawID + "\n"
	if code != ExitOK || !strings.HasPrefix(out, want) {
		t.Errorf("exit %d, text:\n%s\nwant it to start %q", code, out, want)
	}
	for _, args := range [][]string{{"--request-id", noSuchCallID, "-"}, {"--request-id", noSuchCallID, "--json", "-"}} {
		code, out, stderr := runCmd(t, data, args...)
		if code != ExitNoMatch || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, noSuchCallID) {
			t.Errorf("%q: exit %d, stderr %q; want exit 1 and one line naming the id", args, code, stderr)
		}
		if json := len(args) == 4; json != strings.Contains(out, `"found": false`) || (!json && out != "") {
			t.Errorf("%q: stdout %q; want the JSON object with found false, or nothing", args, out)
		}
	}
}

// TestRefusedAfterUpstream: a call refused unsent after an attempt went
// upstream (by its breaker, or a rate limit before a retry) returned that
// attempt's answer: fail with its reason, or timeout when it timed out with
// no response; a call refused before any attempt keeps its refusal.
func TestRefusedAfterUpstream(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 9, 0, 0, 0, time.UTC)
	l := func(ms int, id string, n int, outcome, class string, status int) Line {
		return Line{TS: t0.Add(time.Duration(ms) * time.Millisecond), RequestID: id, Attempt: n, Provider: "p",
			Outcome: sluice.Outcome(outcome), Error: class, Status: status, LatencyMS: 5}
	}
	lines := []Line{
		l(0, "t", 1, "retry", "timeout_first_byte", 0),
		l(10, "t", 2, "rate_limited", "rate_limited", 0),
		l(20, "q", 1, "retry", "status_429", 429),
		l(30, "q", 2, "rate_limited", "rate_limited", 0),
		l(40, "o", 1, "circuit_open", "circuit_open", 0),
	}
	want := map[string]struct {
		result, reason string
		upstream       int
	}{
		"t": {"timeout", "timeout_first_byte", 1},
		"q": {"fail", "status_429", 1},
		"o": {"circuit_open", "circuit_open", 0},
	}
	for _, e := range groupCalls(lines) {
		w := want[e.id]
		if e.result != w.result || reason(e.last) != w.reason || e.upstream != w.upstream {
			t.Errorf("call %s: result %q, reason %q, %d upstream; want %q, %q, %d", e.id, e.result, reason(e.last), e.upstream, w.result, w.reason, w.upstream)
		}
	}
}
