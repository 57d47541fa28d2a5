package main

import (
	"bytes"
	"flag"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
)

var runSoak = flag.Bool("soak", false, "run a 20-second soak against a built sluice serve (slow; needs go and loopback)")

// TestSmoke runs the soak for 20 seconds at 50 calls/s. It fails when a
// figure that must be 0 is not. Skipped unless -soak is given:
//
//	go test ./bench/soak -soak -v
func TestSmoke(t *testing.T) {
	if !*runSoak {
		t.Skip("a 20-second soak; run with -soak")
	}
	out := filepath.Join(t.TempDir(), "soak.json")
	var stdout, stderr bytes.Buffer
	code := run([]string{"-duration", "20s", "-rate", "50", "-out", out, "-gateway-cpu", ""}, &stdout, &stderr)
	t.Logf("summary:\n%s\n%s", stdout.String(), stderr.String())
	if code == 2 {
		t.Fatalf("the soak could not run")
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatalf("no raw result: %v", err)
	}
	if code != 0 {
		t.Errorf("soak exit %d: a must-be-0 figure is not 0", code)
	}
}

func TestReadStream(t *testing.T) {
	openai, anthropic := apis[0], apis[1]
	tests := []struct {
		name      string
		a         api
		body      string
		truncated bool
		errFrame  bool
		err       bool
	}{
		{"openai whole", openai, "data: {\"x\":1}\n\ndata: [DONE]\n\n", false, false, false},
		{"openai cut clean", openai, "data: {\"x\":1}\n\n", true, false, false},
		{"openai cut mid-event", openai, "data: {\"x\":1}\n\ndata: {\"x", true, false, true},
		{"openai error frame", openai, "data: {\"x\":1}\n\ndata: {\"error\":{\"message\":\"m\",\"type\":\"timeout\",\"code\":\"timeout\"}}\n\n", false, true, false},
		{"anthropic whole", anthropic, "event: message_start\ndata: {}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n", false, false, false},
		{"anthropic cut", anthropic, "event: message_start\ndata: {}\n\nevent: content_block_delta\ndata: {}\n\n", true, false, false},
		{"anthropic error", anthropic, "event: message_start\ndata: {}\n\nevent: error\ndata: {\"type\":\"error\"}\n\n", false, true, false},
		{"crlf", openai, "data: [DONE]\r\n\r\n", false, false, false},
	}
	for _, tt := range tests {
		o := outcome{stream: true, status: http.StatusOK}
		err := readStream(strings.NewReader(tt.body), tt.a, &o)
		if o.truncated() != tt.truncated || o.errFrame != tt.errFrame || (err != nil) != tt.err {
			t.Errorf("%s: truncated %v, error event %v, err %v; want %v, %v, error %v",
				tt.name, o.truncated(), o.errFrame, err, tt.truncated, tt.errFrame, tt.err)
		}
	}
	if (outcome{stream: true, status: 503}).truncated() {
		t.Errorf("a 503 to a stream request counts as a truncated stream")
	}
}

func TestTally(t *testing.T) {
	outs := []outcome{
		{stream: false, status: 200, latency: 10 * time.Millisecond},
		{stream: false, status: 0, latency: 7500 * time.Millisecond},
		{stream: false, status: 200, bodyError: true, latency: time.Second},
		{stream: true, status: 200, terminal: true, latency: 100 * time.Millisecond},
		{stream: true, status: 200, errFrame: true, latency: 2 * time.Second},
		{stream: true, status: 200, latency: 3 * time.Second},
		{stream: true, status: 503, latency: time.Second},
	}
	var r result
	tally(&r, outs, 7*time.Second)
	got := [...]int{r.Calls, r.Late, r.Empty, r.Truncated, r.StreamsWhole, r.StreamsError, r.JSONBodyCut}
	if want := [...]int{7, 1, 1, 1, 1, 1, 1}; got != want {
		t.Errorf("calls, late, empty, truncated, whole, error, JSON cut = %v, want %v", got, want)
	}
	if want := map[string]int{"200": 3, "503": 1}; !reflect.DeepEqual(r.Status["stream"], want) {
		t.Errorf("stream statuses %v, want %v", r.Status["stream"], want)
	}
	if d := r.Latency["all"]; d.N != 7 || d.Max != 7500 || d.P50 != 1000 {
		t.Errorf("latency %+v, want n 7, p50 1000, max 7500", d)
	}
	if f := failures(&r); len(f) != 3 {
		t.Errorf("failures %q, want the late, empty and truncated ones", f)
	}
}

func TestCheckLog(t *testing.T) {
	req := func(id, step string) fake.Request {
		return fake.Request{Header: http.Header{"X-Request-Id": {id}}, Step: step}
	}
	reqs := []fake.Request{
		req("a", "503"), req("a", "200"), // a retry, then an answer
		req("b", "reset"), // a retry line the budget refused: no next attempt
		req("c", "stall"),
		req("d", "200"), // an attempt the log lacks
	}
	log := `{"request_id":"a","attempt":2,"status":200,"outcome":"ok"}
{"request_id":"a","attempt":1,"status":503,"outcome":"retry"}
{"request_id":"b","attempt":1,"status":0,"outcome":"retry"}
{"request_id":"c","attempt":1,"status":200,"outcome":"stream_stalled"}
{"request_id":"e","attempt":1,"status":0,"outcome":"circuit_open"}
not json
`
	lines, unparsed, size, err := readLog(strings.NewReader(log))
	if err != nil || unparsed != 1 || size != int64(len(log)) {
		t.Fatalf("readLog: %d lines, %d unparsed, %d bytes, %v", len(lines), unparsed, size, err)
	}
	c := checkLog(lines, reqs, nil)
	got := [...]int{c.Lines, c.SentLines, c.UpstreamCalls, c.Calls, c.RetryLines, c.ActualRetries, c.RetryNoNext, c.Unlogged, c.Phantom}
	if want := [...]int{5, 4, 5, 4, 2, 1, 1, 1, 0}; got != want {
		t.Errorf("lines, sent, upstream, calls, retry lines, retries, retry without next, unlogged, phantom = %v, want %v", got, want)
	}
	want := map[string]map[string]int{"503": {"retry": 1}, "200": {"ok": 1}, "reset": {"retry": 1}, "stall": {"stream_stalled": 1}}
	if !reflect.DeepEqual(c.ByStep, want) {
		t.Errorf("outcome by fake step %v, want %v", c.ByStep, want)
	}
	r := result{Log: c}
	if f := failures(&r); len(f) != 2 {
		t.Errorf("failures %q, want the line count and the retry without a next attempt", f)
	}
}

func TestMetricValue(t *testing.T) {
	text := "# HELP go_goroutines Number of goroutines.\n# TYPE go_goroutines gauge\ngo_goroutines_x 3\ngo_goroutines 42\n"
	if got := metricValue(strings.NewReader(text), "go_goroutines"); got != 42 {
		t.Errorf("go_goroutines = %d, want 42", got)
	}
	if got := metricValue(strings.NewReader("up 1\n"), "go_goroutines"); got != -1 {
		t.Errorf("missing metric = %d, want -1", got)
	}
}

func TestFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-rate", "0"}, {"-streams", "2"}, {"-breaker-failures", "0"}, {"-total", "1s"}, {"-out", ""}, {"extra"},
	} {
		var stderr bytes.Buffer
		if _, err := parseFlags(args, &stderr); err == nil {
			t.Errorf("parseFlags(%q): no error", args)
		}
	}
	if code := run([]string{"-mix", "mix:503=200%", "-sluice", "/nonexistent"}, new(bytes.Buffer), new(bytes.Buffer)); code != 2 {
		t.Errorf("a bad -mix: exit %d, want 2", code)
	}
}
