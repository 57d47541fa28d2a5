package sluice

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
	"unsafe"

	"github.com/sluice-llm/sluice/internal/leaktest"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/fake"
)

const testKey = "sk-test-7f3a9c1e5b2d4f6a8c0e"

// fastPolicy is a policy with test-sized timeouts and backoffs. First
// byte and idle leave a busy machine a second, so that a prompt answer is
// never taken for a silent one.
func fastPolicy() Policy {
	p := Interactive()
	p.Timeout = Timeouts{Connect: time.Second, FirstByte: time.Second, Idle: time.Second, Total: 2 * time.Second}
	p.Retry.Base = 5 * time.Millisecond
	p.Retry.Cap = 20 * time.Millisecond
	p.Breaker.Failures = 1000
	p.Breaker.Slow.Threshold = 0
	return p
}

// rig is a Transport in front of a fake provider, logging to a buffer.
type rig struct {
	t    *testing.T
	srv  *fake.Server
	tr   *Transport
	logs *lockedBuffer
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newRig(t *testing.T, script string, p Policy) *rig {
	t.Helper()
	leaktest.Check(t)
	r := &rig{t: t, srv: fake.NewServer(script), logs: &lockedBuffer{}}
	r.tr = &Transport{Policy: p, Provider: "openai", Log: NewAttemptLog(r.logs)}
	t.Cleanup(func() {
		r.srv.Close()
		r.tr.CloseIdleConnections()
	})
	return r
}

func (r *rig) request(path, body string) *http.Request {
	req, err := http.NewRequest("POST", r.srv.URL+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	return req
}

func (r *rig) chat(stream bool) (*http.Response, error) {
	body := `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
	if stream {
		body = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	}
	return r.tr.RoundTrip(r.request("/v1/chat/completions", body))
}

// lines returns the attempt log's lines, decoded; the test fails on any
// line that does not parse.
func (r *rig) lines() []map[string]any {
	r.t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			r.t.Fatalf("log line does not parse: %v: %s", err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

func readAll(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

func TestHangTimesOutWithinTotal(t *testing.T) {
	p := fastPolicy()
	p.Timeout.Total = 800 * time.Millisecond
	r := newRig(t, "hang", p)
	start := time.Now()
	resp, err := r.chat(false)
	elapsed := time.Since(start)
	if resp != nil {
		t.Fatalf("got a response %d from a provider that never answers", resp.StatusCode)
	}
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrTimeout) {
		t.Fatalf("err = %v, want a *TimeoutError", err)
	}
	// The exact bound (never past total) is TestNothingOutlivesTotal's;
	// this one, on a real socket, only guards against a hang.
	if elapsed > p.Timeout.Total+3*time.Second {
		t.Errorf("took %v, want within total %v (+3s for a busy machine)", elapsed, p.Timeout.Total)
	}
	if n := r.srv.Calls(); n < 1 || n > p.Retry.MaxAttempts {
		t.Errorf("upstream calls = %d, want 1..%d", n, p.Retry.MaxAttempts)
	}
	if got := len(r.lines()); got != r.srv.Calls() {
		t.Errorf("log lines = %d, upstream calls = %d", got, r.srv.Calls())
	}
}

func TestRetriesUntilSuccess(t *testing.T) {
	for _, tt := range []struct {
		script string
		calls  int
	}{
		{"503,503,200", 3},
		{"reset,200", 2},
		{"529,200", 2},
		{"500,502,200", 3},
		{"408,200", 2},
		{"429,200", 2},
	} {
		t.Run(tt.script, func(t *testing.T) {
			r := newRig(t, tt.script, fastPolicy())
			resp, err := r.chat(false)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			if resp.StatusCode != 200 || !strings.Contains(body, "chat.completion") {
				t.Fatalf("status %d body %q, want a 200 chat completion", resp.StatusCode, body)
			}
			if got := r.srv.Calls(); got != tt.calls {
				t.Errorf("upstream calls = %d, want %d", got, tt.calls)
			}
			if got := resp.Header.Get("Sluice-Attempts"); got != strconv.Itoa(tt.calls) {
				t.Errorf("Sluice-Attempts = %q, want %d", got, tt.calls)
			}
			lines := r.lines()
			if len(lines) != tt.calls {
				t.Fatalf("log lines = %d, want %d", len(lines), tt.calls)
			}
			for i, l := range lines {
				want := "retry"
				if i == tt.calls-1 {
					want = "ok"
				}
				if l["outcome"] != want || l["attempt"] != float64(i+1) {
					t.Errorf("line %d: outcome %v attempt %v, want %s %d", i, l["outcome"], l["attempt"], want, i+1)
				}
			}
		})
	}
}

func TestNeverRetried(t *testing.T) {
	for _, script := range []string{"400", "401", "403", "404", "409", "413", "422", "429:insufficient_quota", "400:context_length_exceeded"} {
		t.Run(script, func(t *testing.T) {
			r := newRig(t, script+",200", fastPolicy())
			resp, err := r.chat(false)
			if err != nil {
				t.Fatal(err)
			}
			body := readAll(t, resp)
			want, _ := strconv.Atoi(script[:3])
			if resp.StatusCode != want {
				t.Errorf("status = %d, want the provider's %d", resp.StatusCode, want)
			}
			if !strings.Contains(body, `"error"`) {
				t.Errorf("body %q is not the provider's error", body)
			}
			if got := r.srv.Calls(); got != 1 {
				t.Errorf("upstream calls = %d, want 1", got)
			}
			if rec, _ := r.tr.Breaker("openai").Record(); rec.Failures != 0 {
				t.Errorf("breaker counted %d failures, want 0", rec.Failures)
			}
		})
	}
}

func TestExhaustedReturnsLastResponse(t *testing.T) {
	r := newRig(t, "503", fastPolicy())
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(t, resp)
	if resp.StatusCode != 503 || !strings.Contains(body, "error") {
		t.Fatalf("got %d %q, want the provider's last 503", resp.StatusCode, body)
	}
	if got := r.srv.Calls(); got != 3 {
		t.Errorf("upstream calls = %d, want 3", got)
	}
	lines := r.lines()
	if got := lines[len(lines)-1]["outcome"]; got != "fail" {
		t.Errorf("last line outcome %v, want fail", got)
	}
}

// A 429's Retry-After is waited out between the attempts: 2s plus the
// jitter of at most 10 %, on the fake clock to the nanosecond.
func TestRetryAfterHonoured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fastPolicy()
		p.Timeout.Total = 10 * time.Second
		r := newFakeRig(t, "429:retry-after=2,200", p)
		var mu sync.Mutex
		var ends, starts []time.Time
		r.tr.Observe = func(a *Attempt) {
			mu.Lock()
			defer mu.Unlock()
			starts = append(starts, a.TS)
			ends = append(ends, a.TS.Add(time.Duration(a.LatencyMS*float64(time.Millisecond))))
		}
		start := time.Now()
		resp, err := r.chat(false)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if resp.StatusCode != 200 || r.srv.Calls() != 2 {
			t.Fatalf("status %d after %d calls, want 200 after 2", resp.StatusCode, r.srv.Calls())
		}
		if !ends[0].Equal(start) {
			t.Errorf("the 429 took %v, want no time", ends[0].Sub(start))
		}
		if gap := starts[1].Sub(ends[0]); gap < 2*time.Second || gap >= 2200*time.Millisecond {
			t.Errorf("waited %v between attempts, want 2s plus less than 10 %%", gap)
		}
	})
}

func TestRetryAfterTooLongFailsNow(t *testing.T) {
	for _, tt := range []struct{ name, script string }{
		{"beyond max_retry_after", "503:retry-after=30,200"},
		{"beyond the deadline", "429:retry-after=3,200"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, tt.script, fastPolicy()) // total 2s, max_retry_after 20s
			resp, err := r.chat(false)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if resp.StatusCode == 200 || r.srv.Calls() != 1 {
				t.Fatalf("status %d after %d calls, want the real error after 1", resp.StatusCode, r.srv.Calls())
			}
			if resp.Header.Get("Retry-After") == "" {
				t.Error("the provider's Retry-After header was not handed back")
			}
			// That the answer comes at once is TestRetryHintEndsTheCallNow's
			// to prove, on fake time.
		})
	}
}

// A stream silent after its header is retried when its first-byte
// timeout runs out: the second attempt starts one first_byte after the
// first, plus less than one base backoff.
func TestStreamStallBeforeFirstByteRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fastPolicy()
		r := newFakeRig(t, "stream:stall-after=0,200", p)
		var starts []time.Time
		r.tr.Observe = func(a *Attempt) { starts = append(starts, a.TS) }
		resp, err := r.chat(true)
		if err != nil {
			t.Fatal(err)
		}
		body := readAll(t, resp)
		if !strings.Contains(body, "[DONE]") {
			t.Fatalf("stream %q is not whole", body)
		}
		if got := r.srv.Calls(); got != 2 {
			t.Fatalf("upstream calls = %d, want 2", got)
		}
		if gap := starts[1].Sub(starts[0]); gap < p.Timeout.FirstByte || gap >= p.Timeout.FirstByte+p.Retry.Base {
			t.Errorf("second attempt %v after the first, want first_byte %v plus less than %v", gap, p.Timeout.FirstByte, p.Retry.Base)
		}
		lines := r.lines()
		if lines[0]["error"] != "timeout_first_byte" || lines[0]["outcome"] != "retry" {
			t.Errorf("first attempt logged %v/%v, want retry/timeout_first_byte", lines[0]["outcome"], lines[0]["error"])
		}
	})
}

// A stream that stalls after its first events is not retried: the read
// ends exactly one idle gap after the last event, in an idle timeout.
func TestStreamStallAfterFirstByteNotRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fastPolicy()
		r := newFakeRig(t, "stream:stall-after=3,200", p)
		resp, err := r.chat(true)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		var te *TimeoutError
		if !errors.As(err, &te) || te.Phase != PhaseIdle {
			t.Fatalf("read err = %v, want an idle *TimeoutError", err)
		}
		if d := time.Since(start); d != p.Timeout.Idle {
			t.Errorf("stall ended after %v, want idle %v", d, p.Timeout.Idle)
		}
		if strings.Count(string(b), "data:") != 3 {
			t.Errorf("got %q, want the 3 events sent", b)
		}
		if got := r.srv.Calls(); got != 1 {
			t.Errorf("upstream calls = %d, want 1", got)
		}
		lines := r.lines()
		if len(lines) != 1 || lines[0]["outcome"] != "stream_stalled" || lines[0]["stream"] != true {
			t.Errorf("log %v, want one stream_stalled line", lines)
		}
		if rec, _ := r.tr.Breaker("openai").Record(); rec.Failures != 1 {
			t.Errorf("breaker failures = %d, want 1", rec.Failures)
		}
	})
}

func TestStreamCutIsAFailure(t *testing.T) {
	r := newRig(t, "stream:cut-after=4,200", fastPolicy())
	resp, err := r.chat(true)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !errors.Is(err, ErrStreamCut) {
		t.Fatalf("read err = %v, want ErrStreamCut", err)
	}
	if strings.Contains(string(b), "[DONE]") {
		t.Error("a cut stream ended like a whole one")
	}
	if got := r.srv.Calls(); got != 1 {
		t.Errorf("upstream calls = %d, want 1", got)
	}
	if l := r.lines(); len(l) != 1 || l[0]["outcome"] != "fail" || l[0]["error"] != "stream_cut" {
		t.Errorf("log %v, want one fail/stream_cut line", l)
	}
	if rec, _ := r.tr.Breaker("openai").Record(); rec.Failures != 1 {
		t.Errorf("breaker failures = %d, want 1", rec.Failures)
	}
}

func TestOverloadedFirstEventRetried(t *testing.T) {
	r := newRig(t, "overloaded,200", fastPolicy())
	body := `{"model":"claude-haiku-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	resp, err := r.tr.RoundTrip(r.request("/v1/messages", body))
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, resp)
	if !strings.Contains(got, "message_stop") || strings.Contains(got, "overloaded_error") {
		t.Fatalf("stream %q: want the whole second answer only", got)
	}
	if n := r.srv.Calls(); n != 2 {
		t.Errorf("upstream calls = %d, want 2", n)
	}
	if l := r.lines(); l[0]["error"] != "status_529" {
		t.Errorf("first attempt error %v, want status_529", l[0]["error"])
	}
}

func TestBreakerOpensAndFailsFast(t *testing.T) {
	p := fastPolicy()
	p.Breaker.Failures = 3
	p.Breaker.Cool = time.Hour
	p.Retry.MaxAttempts = 1
	r := newRig(t, "500", p)
	for range 3 {
		resp, err := r.chat(false)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	start := time.Now()
	_, err := r.chat(false)
	var oe *OpenError
	if !errors.As(err, &oe) || !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("4th call err = %v, want *OpenError", err)
	}
	if time.Until(oe.Until) < 59*time.Minute {
		t.Errorf("may close at %v, want about an hour from now", oe.Until)
	}
	// Nothing is sent (the call count below); the bound only catches a
	// wait, such as one for the cool (an hour) or a timeout.
	if time.Since(start) > 2*time.Second {
		t.Errorf("fast fail took %v", time.Since(start))
	}
	if got := r.srv.Calls(); got != 3 {
		t.Errorf("upstream calls = %d, want 3 (none while open)", got)
	}
}

func TestRetryLoopStopsWhenBreakerOpens(t *testing.T) {
	p := fastPolicy()
	p.Breaker.Failures = 2
	p.Breaker.Cool = time.Hour
	p.Retry.MaxAttempts = 5
	r := newRig(t, "503", p)
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != 503 {
		t.Errorf("status %d, want the last real 503", resp.StatusCode)
	}
	if got := r.srv.Calls(); got != 2 {
		t.Errorf("upstream calls = %d, want 2", got)
	}
	lines := r.lines()
	if last := lines[len(lines)-1]; last["outcome"] != "circuit_open" {
		t.Errorf("last line %v, want circuit_open", last)
	}
}

func TestCallerErrorsNeverOpenBreaker(t *testing.T) {
	for _, script := range []string{"401", "429:insufficient_quota", "400", "404"} {
		t.Run(script, func(t *testing.T) {
			p := fastPolicy()
			p.Breaker.Failures = 2
			r := newRig(t, script, p)
			for range 10 {
				resp, err := r.chat(false)
				if err != nil {
					t.Fatal(err)
				}
				readAll(t, resp)
			}
			if rec, _ := r.tr.Breaker("openai").Record(); rec.State != breaker.Closed {
				t.Errorf("breaker %v after 10× %s, want closed", rec.State, script)
			}
			if r.srv.Calls() != 10 {
				t.Errorf("upstream calls = %d, want 10\n%s", r.srv.Calls(), r.logs.String())
			}
		})
	}
}

func TestSlowSuccessesOpenBreaker(t *testing.T) {
	p := fastPolicy()
	p.Breaker.Slow = breaker.Slow{Threshold: 30 * time.Millisecond, Count: 3, Window: time.Minute}
	p.Breaker.Cool = time.Hour
	r := newRig(t, "slow:60ms", p)
	for range 3 {
		resp, err := r.chat(false)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
	}
	if _, err := r.chat(false); !errors.Is(err, ErrCircuitOpen) {
		t.Fatalf("after 3 slow successes: %v, want the breaker open", err)
	}
	if rec, _ := r.tr.Breaker("openai").Record(); rec.Reason != "slow" {
		t.Errorf("opened for %q, want slow", rec.Reason)
	}
}

func TestHungProbeDoesNotStickHalfOpen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fastPolicy()
		p.Breaker.Failures = 1
		p.Breaker.Cool = 50 * time.Millisecond
		p.Retry.MaxAttempts = 1
		p.Timeout.Total = 300 * time.Millisecond
		p.Breaker.Lease = 300 * time.Millisecond
		r := newFakeRig(t, "500,hang,200", p)
		resp, _ := r.chat(false)
		readAll(t, resp)
		time.Sleep(p.Breaker.Cool - time.Nanosecond)
		if _, err := r.chat(false); !errors.Is(err, ErrCircuitOpen) {
			t.Fatalf("a nanosecond before the cool period ends: %v, want the breaker open", err)
		}
		time.Sleep(time.Nanosecond)
		start := time.Now()
		if _, err := r.chat(false); !errors.Is(err, ErrTimeout) { // the probe hangs
			t.Fatalf("probe err = %v, want a timeout", err)
		}
		if d := time.Since(start); d != p.Timeout.Total {
			t.Errorf("the hung probe ended after %v, want its total timeout %v", d, p.Timeout.Total)
		}
		time.Sleep(p.Breaker.Cool)
		resp, err := r.chat(false) // the next probe goes through
		if err != nil {
			t.Fatalf("after the hung probe: %v", err)
		}
		readAll(t, resp)
		if rec, _ := r.tr.Breaker("openai").Record(); rec.State != breaker.Closed {
			t.Errorf("breaker %v, want closed after a good probe", rec.State)
		}
	})
}

func TestRequestID(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	id := resp.Header.Get("Sluice-Request-Id")
	if len(id) != 24 {
		t.Fatalf("Sluice-Request-Id %q, want 24 hex digits", id)
	}
	up := r.srv.Requests()[0].Header
	if up.Get("X-Request-Id") != id || up.Get("X-Client-Request-Id") != id {
		t.Errorf("upstream saw X-Request-Id %q, X-Client-Request-Id %q, want %q for both",
			up.Get("X-Request-Id"), up.Get("X-Client-Request-Id"), id)
	}
	// The provider's own id is returned as it came: SDKs show it as the
	// request id, for the provider's support.
	provided := resp.Header.Get("X-Request-Id")
	if provided == "" || provided == id {
		t.Errorf("X-Request-Id %q, want the provider's own id", provided)
	}
	if l := r.lines(); l[0]["request_id"] != id || l[0]["upstream_request_id"] != provided {
		t.Errorf("log line ids %v / %v, want %s / %s", l[0]["request_id"], l[0]["upstream_request_id"], id, provided)
	}

	for i, h := range []string{"X-Request-Id", "X-Client-Request-Id"} {
		req := r.request("/v1/chat/completions", `{"model":"m"}`)
		req.Header.Set(h, "mine-123")
		resp, err = r.tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		readAll(t, resp)
		if got := resp.Header.Get("Sluice-Request-Id"); got != "mine-123" {
			t.Errorf("caller's %s replaced by %q", h, got)
		}
		up := r.srv.Requests()[1+i].Header
		if up.Get("X-Request-Id") != "mine-123" || up.Get("X-Client-Request-Id") != "mine-123" {
			t.Errorf("upstream saw %q / %q, want the caller's id under both names", up.Get("X-Request-Id"), up.Get("X-Client-Request-Id"))
		}
		if other := []string{"X-Client-Request-Id", "X-Request-Id"}[i]; req.Header.Get(other) != "" {
			t.Errorf("the caller's request headers were changed: %v", req.Header)
		}
	}
}

func TestNonIdempotentRetriedOnlyIfNeverSent(t *testing.T) {
	r := newRig(t, "reset,200", fastPolicy())
	r.tr.RetrySafe = func(*http.Request) bool { return false }
	resp, err := r.chat(false)
	if err == nil {
		resp.Body.Close()
		t.Fatalf("a reset POST on a route that is not retry-safe was retried into %d", resp.StatusCode)
	}
	if got := r.srv.Calls(); got != 1 {
		t.Errorf("upstream calls = %d, want 1", got)
	}

	r.srv.Reset()
	req := r.request("/v1/chat/completions", `{"model":"m"}`)
	req.Header.Set("Idempotency-Key", "k1")
	resp, err = r.tr.RoundTrip(req)
	if err != nil {
		t.Fatalf("with an Idempotency-Key: %v", err)
	}
	readAll(t, resp)
	if got := r.srv.Calls(); got != 2 {
		t.Errorf("with an Idempotency-Key: upstream calls = %d, want 2", got)
	}
}

func TestConnectRefusedRetried(t *testing.T) {
	leaktest.Check(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	logs := &lockedBuffer{}
	tr := &Transport{Policy: fastPolicy(), Log: NewAttemptLog(logs)}
	defer tr.CloseIdleConnections()
	req, _ := http.NewRequest("POST", "http://"+addr+"/v1/other", strings.NewReader("{}"))
	_, err = tr.RoundTrip(req)
	var ee *ExhaustedError
	if !errors.As(err, &ee) || ee.Attempts != 3 {
		t.Fatalf("err = %v, want 3 exhausted attempts (a refused connect never left)", err)
	}
	if n := strings.Count(logs.String(), "\n"); n != 3 {
		t.Errorf("log lines = %d, want 3", n)
	}
	if !strings.Contains(logs.String(), `"error":"connect_refused"`) {
		t.Errorf("log does not name connect_refused: %s", logs.String())
	}
}

func TestAttemptLogContract(t *testing.T) {
	r := newRig(t, "503,429:retry-after-ms=10,200", fastPolicy())
	resp, err := r.chat(true)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	lines := r.lines()
	if len(lines) != r.srv.Calls() || len(lines) != 3 {
		t.Fatalf("log lines %d, upstream calls %d, want 3 each", len(lines), r.srv.Calls())
	}
	fields := []string{"ts", "request_id", "attempt", "policy", "provider", "model", "method", "path", "status",
		"outcome", "error", "latency_ms", "ttfb_ms", "bytes_out", "bytes_in", "breaker", "retry_in_ms", "stream"}
	for i, l := range lines {
		for _, f := range fields {
			if _, ok := l[f]; !ok {
				t.Errorf("line %d lacks %q", i, f)
			}
		}
		if ts, _ := l["ts"].(string); len(ts) != len("2006-01-02T15:04:05.000Z") || !strings.HasSuffix(ts, "Z") {
			t.Errorf("ts %q is not RFC 3339 UTC with milliseconds", ts)
		}
		if l["model"] != "gpt-4o-mini" || l["provider"] != "openai" || l["policy"] != "interactive" || l["path"] != "/v1/chat/completions" {
			t.Errorf("line %d: %v", i, l)
		}
	}
	if lines[0]["status"] != 503.0 || lines[1]["status"] != 429.0 || lines[2]["status"] != 200.0 {
		t.Errorf("statuses %v %v %v", lines[0]["status"], lines[1]["status"], lines[2]["status"])
	}
	if lines[2]["stream"] != true || lines[2]["bytes_in"].(float64) <= 0 {
		t.Errorf("final line %v: want a stream with bytes", lines[2])
	}
	if lines[1]["retry_in_ms"].(float64) < 10 {
		t.Errorf("retry_in_ms %v after retry-after-ms=10", lines[1]["retry_in_ms"])
	}
	if strings.Contains(r.logs.String(), testKey) {
		t.Error("the API key reached the attempt log")
	}
}

func TestSecretsNeverInErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := fastPolicy()
		r := newFakeRig(t, "hang", p)
		start := time.Now()
		_, err := r.chat(false)
		if err == nil || strings.Contains(err.Error(), testKey) {
			t.Fatalf("err = %v", err)
		}
		if !errors.Is(err, ErrTimeout) || time.Since(start) != p.Timeout.Total {
			t.Errorf("err %v after %v, want a timeout at total %v", err, time.Since(start), p.Timeout.Total)
		}
		if strings.Contains(r.logs.String(), testKey) {
			t.Error("the API key reached the attempt log")
		}
	})
}

func TestCallerRequestNotMutated(t *testing.T) {
	r := newRig(t, "503,200", fastPolicy())
	req := r.request("/v1/chat/completions", `{"model":"m"}`)
	before := req.Header.Clone()
	resp, err := r.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if len(req.Header) != len(before) || req.Header.Get("X-Request-Id") != "" {
		t.Errorf("caller's headers changed: %v", req.Header)
	}
	for i, rq := range r.srv.Requests() {
		if string(rq.Body) != `{"model":"m"}` {
			t.Errorf("attempt %d sent body %q", i+1, rq.Body)
		}
	}
}

// The budget lets retries be outstanding up to its share of the attempts
// in flight, never fewer than the floor.
func TestRetryBudgetTake(t *testing.T) {
	var b retryBudget
	b.active.Store(100)
	got := 0
	for range 50 {
		if b.take(0.2) {
			got++
		}
	}
	if got != 20 {
		t.Errorf("100 attempts in flight, 20 %% budget: %d retries admitted, want 20", got)
	}
	var small retryBudget
	small.active.Store(2)
	got = 0
	for range 10 {
		if small.take(0.2) {
			got++
		}
	}
	if got != minRetries {
		t.Errorf("2 attempts in flight: %d retries admitted, want the floor %d", got, minRetries)
	}
}

func TestConcurrentLogWritersNeverInterleave(t *testing.T) {
	f, err := os.OpenFile(t.TempDir()+"/attempts.jsonl", os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	logs := []*AttemptLog{NewAttemptLog(f), NewAttemptLog(f)} // two writers, one file
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				a := &Attempt{TS: time.Now(), RequestID: strings.Repeat("x", 200+g), Attempt: i}
				if err := logs[g%2].Write(a); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	data, _ := os.ReadFile(f.Name())
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 4000 {
		t.Fatalf("%d lines, want 4000", len(lines))
	}
	for _, l := range lines {
		var a map[string]any
		if err := json.Unmarshal([]byte(l), &a); err != nil {
			t.Fatalf("interleaved line: %v", err)
		}
	}
}

func TestFirstByteCountsFromRequestWritten(t *testing.T) {
	p := fastPolicy()
	p.Timeout.Connect = 5 * time.Second
	p.Timeout.FirstByte = 200 * time.Millisecond
	p.Timeout.Total = 10 * time.Second
	p.Retry.MaxAttempts = 1
	r := newRig(t, "200,hang", p)
	resp, err := r.chat(false) // warm a connection: the next attempt reuses it
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	start := time.Now()
	_, err = r.chat(false)
	elapsed := time.Since(start)
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != PhaseFirstByte {
		t.Fatalf("err = %v, want a first_byte timeout", err)
	}
	// Counted from the connection, the timeout would come after connect +
	// first_byte (5.2s); the upper bound leaves a busy machine 2s.
	if elapsed < p.Timeout.FirstByte || elapsed > p.Timeout.FirstByte+2*time.Second {
		t.Errorf("timed out after %v, want first_byte %v from the request written (not connect + first_byte)", elapsed, p.Timeout.FirstByte)
	}
}

// A call is one allocation of the 1,792-byte size class, with Go's 8-byte
// allocation header: a field that takes it past 1,784 bytes makes every
// call allocate 256 bytes more (2,048).
func TestCallFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(call{}); n > 1784 {
		t.Errorf("call is %d bytes, over 1,784: pack its fields (bools and small enums together) or move rare state behind a pointer", n)
	}
}
