package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
)

const clientKey = "sk-client-0f9e8d7c6b5a4938"

// fastPolicy has test-sized timeouts and backoffs.
func fastPolicy(name string) sluice.Policy {
	p := sluice.Interactive()
	p.Name = name
	p.Timeout = sluice.Timeouts{Connect: time.Second, FirstByte: 400 * time.Millisecond, Idle: 300 * time.Millisecond, Total: 2 * time.Second}
	p.Retry.Base, p.Retry.Cap = 5*time.Millisecond, 20*time.Millisecond
	p.Breaker.Failures = 1000
	p.Breaker.Slow.Threshold = 0
	p.Breaker.Lease = p.Timeout.Total
	return p
}

// env is a gateway listening on loopback in front of a fake provider.
type env struct {
	t    *testing.T
	up   *fake.Server
	gw   *Gateway
	srv  *httptest.Server
	cfg  *config.Config
	logs *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// newEnv starts a fake provider with script and a gateway routing
// /openai and /anthropic to it; edit, if given, changes the config first.
func newEnv(t *testing.T, script string, edit func(*config.Config)) *env {
	t.Helper()
	return newEnvWith(t, script, edit, Options{})
}

// newEnvWith is newEnv with the gateway's options opt; the env sets their
// AttemptLog and Getenv.
func newEnvWith(t *testing.T, script string, edit func(*config.Config), opt Options) *env {
	t.Helper()
	checkLeaks(t)
	e := &env{t: t, up: fake.NewServer(script), logs: &syncBuffer{}}
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	cfg.Providers = map[string]config.Provider{
		"openai":    {Kind: "openai", BaseURL: e.up.URL, MaxConcurrent: 64},
		"anthropic": {Kind: "anthropic", BaseURL: e.up.URL, MaxConcurrent: 64},
	}
	cfg.Policies = map[string]sluice.Policy{"interactive": fastPolicy("interactive"), "nightly": fastPolicy("nightly")}
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	e.cfg = cfg
	opt.AttemptLog = e.logs
	opt.Getenv = func(k string) string {
		return map[string]string{"UPSTREAM_KEY": "sk-injected-1234", "ADMIN_TOKEN": "admintok",
			"POOL_KEY_A": poolKeyA, "POOL_KEY_B": poolKeyB}[k]
	}
	gw, err := New(cfg, opt)
	if err != nil {
		t.Fatal(err)
	}
	e.gw = gw
	e.srv = httptest.NewServer(gw)
	t.Cleanup(func() {
		e.srv.CloseClientConnections()
		e.srv.Close()
		e.up.Close()
		gw.Close()
		http.DefaultTransport.(*http.Transport).CloseIdleConnections()
	})
	return e
}

func (e *env) do(method, path, body string, header ...string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+clientKey)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

const chatBody = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`
const chatStream = `{"model":"gpt-4o-mini","stream":true,"messages":[{"role":"user","content":"hi"}]}`
const msgStream = `{"model":"claude-haiku-4-5","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return string(b)
}

func (e *env) logLines() []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(e.logs.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			e.t.Fatalf("bad log line %q: %v", sc.Text(), err)
		}
		out = append(out, m)
	}
	return out
}

// waitFor polls cond until it holds, failing the test if it does not
// within 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10s for %s", what)
		}
	}
}

func checkLeaks(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines leaked: %d > %d\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func TestForwardStripsPrefix(t *testing.T) {
	e := newEnv(t, "200", nil)
	resp := e.do("POST", "/openai/v1/chat/completions?x=1", chatBody)
	got := body(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(got, `"chat.completion"`) {
		t.Fatalf("%d %q", resp.StatusCode, got)
	}
	reqs := e.up.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" {
		t.Fatalf("upstream saw %+v, want one call to /v1/chat/completions", reqs)
	}
	if reqs[0].Header.Get("Authorization") != "Bearer "+clientKey {
		t.Error("the client's key was not passed through")
	}
	for _, h := range []string{"Sluice-Request-Id", "X-Request-Id", "Sluice-Attempts", "X-Should-Retry"} {
		if resp.Header.Get(h) == "" {
			t.Errorf("response lacks %s", h)
		}
	}
	id := resp.Header.Get("Sluice-Request-Id")
	if reqs[0].Header.Get("X-Request-Id") != id || reqs[0].Header.Get("X-Client-Request-Id") != id {
		t.Error("the upstream request does not carry the call's id as X-Request-Id and X-Client-Request-Id")
	}
	if up := resp.Header.Get("X-Request-Id"); up == id || !strings.Contains(e.logs.String(), `"upstream_request_id":"`+up+`"`) {
		t.Errorf("X-Request-Id %q is not the provider's own id", up)
	}
}

func TestRetriesAreInvisible(t *testing.T) {
	e := newEnv(t, "503,503,200", nil)
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Attempts") != "3" || e.up.Calls() != 3 {
		t.Fatalf("status %d, Sluice-Attempts %q, upstream calls %d; want 200, 3, 3",
			resp.StatusCode, resp.Header.Get("Sluice-Attempts"), e.up.Calls())
	}
}

func TestProviderErrorRelayedWithNoRetryHint(t *testing.T) {
	e := newEnv(t, "503", nil)
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	got := body(t, resp)
	if resp.StatusCode != 503 || !strings.Contains(got, `"error"`) {
		t.Fatalf("%d %q, want the provider's 503", resp.StatusCode, got)
	}
	if resp.Header.Get("X-Should-Retry") != "false" {
		t.Error("relayed provider error lacks x-should-retry: false")
	}
	if e.up.Calls() != 3 {
		t.Errorf("upstream calls %d, want max_attempts 3", e.up.Calls())
	}
}

func gatewayError(t *testing.T, resp *http.Response, kind string) (typ string) {
	t.Helper()
	raw := body(t, resp)
	if resp.Header.Get("X-Should-Retry") != "false" {
		t.Errorf("gateway error lacks x-should-retry: false")
	}
	if kind == "anthropic" {
		var v struct {
			Type  string `json:"type"`
			Error struct{ Type, Message string }
		}
		if json.Unmarshal([]byte(raw), &v) != nil || v.Type != "error" || v.Error.Message == "" {
			t.Fatalf("not an Anthropic error: %s", raw)
		}
		return v.Error.Type
	}
	var v struct {
		Error struct{ Message, Type, Code string }
	}
	if json.Unmarshal([]byte(raw), &v) != nil || v.Error.Message == "" || v.Error.Type != v.Error.Code {
		t.Fatalf("not an OpenAI error: %s", raw)
	}
	return v.Error.Code
}

func TestBreakerOpenAnswers503WithRetryAfter(t *testing.T) {
	e := newEnv(t, "500", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Breaker.Failures = 2
		p.Breaker.Cool = 30 * time.Second
		p.Retry.MaxAttempts = 1
		c.Policies["interactive"] = p
	})
	for range 2 {
		body(t, e.do("POST", "/openai/v1/chat/completions", chatBody))
		body(t, e.do("POST", "/anthropic/v1/messages", msgStream))
	}
	for _, tt := range []struct{ path, body, kind string }{
		{"/openai/v1/chat/completions", chatBody, "openai"},
		{"/anthropic/v1/messages", msgStream, "anthropic"},
	} {
		resp := e.do("POST", tt.path, tt.body)
		if resp.StatusCode != 503 {
			t.Fatalf("%s: status %d, want 503", tt.path, resp.StatusCode)
		}
		if typ := gatewayError(t, resp, tt.kind); typ != "provider_down" {
			t.Errorf("type %q, want provider_down", typ)
		}
		if ra := resp.Header.Get("Retry-After"); ra == "" || len(ra) > 2 || ra > "30" {
			t.Errorf("Retry-After %q, want ≤ 30 s", ra)
		}
	}
	if e.up.Calls() != 4 {
		t.Errorf("upstream calls %d, want 4 (none while open)", e.up.Calls())
	}
}

func TestHangAnswers504WithinTotal(t *testing.T) {
	e := newEnv(t, "hang", nil)
	start := time.Now()
	resp := e.do("POST", "/anthropic/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[]}`)
	if resp.StatusCode != 504 {
		t.Fatalf("status %d, want 504", resp.StatusCode)
	}
	if typ := gatewayError(t, resp, "anthropic"); typ != "timeout" {
		t.Errorf("type %q, want timeout", typ)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v, want within total 2s (+3s for a busy machine)", d)
	}
}

func TestUnreachableAnswers502(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	e := newEnv(t, "200", func(c *config.Config) {
		c.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: "http://" + addr, MaxConcurrent: 4}
	})
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	if resp.StatusCode != 502 {
		t.Fatalf("status %d, want 502", resp.StatusCode)
	}
	if typ := gatewayError(t, resp, "openai"); typ != "upstream_unreachable" {
		t.Errorf("code %q", typ)
	}
	if resp.Header.Get("Sluice-Attempts") != "3" {
		t.Errorf("Sluice-Attempts %q, want 3", resp.Header.Get("Sluice-Attempts"))
	}
}

// The message of a 502 counts its attempts in good grammar: "after 1
// attempt", "after 3 attempts".
func TestUnreachableMessageGrammar(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	for _, tt := range []struct {
		attempts int
		want     string
	}{{1, "after 1 attempt\""}, {3, "after 3 attempts\""}} {
		e := newEnv(t, "200", func(c *config.Config) {
			c.Providers["openai"] = config.Provider{Kind: "openai", BaseURL: "http://" + addr, MaxConcurrent: 4}
			p := c.Policies["interactive"]
			p.Retry.MaxAttempts = tt.attempts
			c.Policies["interactive"] = p
		})
		resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
		if raw := body(t, resp); resp.StatusCode != 502 || !strings.Contains(raw, tt.want) {
			t.Errorf("%d attempts: %d %s, want 502 saying %s", tt.attempts, resp.StatusCode, raw, tt.want)
		}
	}
}

// sseEvents splits an SSE body into its events' raw text.
func sseEvents(s string) []string {
	var out []string
	for ev := range strings.SplitSeq(s, "\n\n") {
		if strings.TrimSpace(ev) != "" {
			out = append(out, ev)
		}
	}
	return out
}

func TestStreamRelayedByteExact(t *testing.T) {
	e := newEnv(t, "stream:events=40", nil)
	direct, err := http.Post(e.up.URL+"/v1/chat/completions", "application/json", strings.NewReader(chatStream))
	if err != nil {
		t.Fatal(err)
	}
	want := sseEvents(body(t, direct))
	resp := e.do("POST", "/openai/v1/chat/completions", chatStream)
	got := sseEvents(body(t, resp))
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Errorf("content type %q", resp.Header.Get("Content-Type"))
	}
	if len(got) != len(want) || len(got) < 40 {
		t.Fatalf("relayed %d events, direct %d", len(got), len(want))
	}
	for i := range got {
		// ids and timestamps differ between the two answers; shapes must not.
		if strings.Count(got[i], "data:") != strings.Count(want[i], "data:") {
			t.Errorf("event %d: %q vs %q", i, got[i], want[i])
		}
	}
	if got[len(got)-1] != "data: [DONE]" {
		t.Errorf("last event %q", got[len(got)-1])
	}
}

func TestStreamFlushedAtOnce(t *testing.T) {
	// The provider sends one event and stalls; a gateway that buffered
	// would deliver it only when the 10 s idle timeout ends the stream.
	e := newEnv(t, "stream:stall-after=1", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Timeout.Idle, p.Timeout.Total = 10*time.Second, 20*time.Second
		c.Policies["interactive"] = p
	})
	resp := e.do("POST", "/openai/v1/chat/completions", chatStream)
	defer resp.Body.Close()
	r := bufio.NewReader(resp.Body)
	start := time.Now()
	line, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("first event arrived %v after the headers, want at once (within 3s on a busy machine)", d)
	}
}

func TestStreamStallBeforeFirstByteRetriedInvisibly(t *testing.T) {
	e := newEnv(t, "stream:stall-after=0,200", nil)
	resp := e.do("POST", "/openai/v1/chat/completions", chatStream)
	got := body(t, resp)
	if resp.StatusCode != 200 || !strings.HasSuffix(strings.TrimSpace(got), "data: [DONE]") {
		t.Fatalf("%d %q", resp.StatusCode, got)
	}
	if e.up.Calls() != 2 || resp.Header.Get("Sluice-Attempts") != "2" {
		t.Errorf("upstream calls %d, Sluice-Attempts %q; want 2", e.up.Calls(), resp.Header.Get("Sluice-Attempts"))
	}
}

func TestStreamStallAfterFirstByteEndsWithErrorEvent(t *testing.T) {
	for _, tt := range []struct {
		name, path, req, kind, noEnd string
	}{
		{"openai", "/openai/v1/chat/completions", chatStream, "openai", "[DONE]"},
		{"anthropic", "/anthropic/v1/messages", msgStream, "anthropic", "message_stop"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, "stream:stall-after=3", nil)
			start := time.Now()
			resp := e.do("POST", tt.path, tt.req)
			got := body(t, resp)
			if time.Since(start) > 4*time.Second {
				t.Errorf("stall ended after %v, want within idle (+3s for a busy machine)", time.Since(start))
			}
			if strings.Contains(got, tt.noEnd) {
				t.Fatalf("a stalled stream got an ending: %q", got)
			}
			evs := sseEvents(got)
			last := evs[len(evs)-1]
			if tt.kind == "anthropic" {
				if !strings.HasPrefix(last, "event: error\ndata: ") || !strings.Contains(last, `"type":"stream_stalled"`) {
					t.Errorf("last event %q, want an Anthropic error event", last)
				}
			} else {
				var v struct {
					Error struct{ Code, Message string }
				}
				if json.Unmarshal([]byte(strings.TrimPrefix(last, "data: ")), &v) != nil || v.Error.Code != "stream_stalled" {
					t.Errorf("last event %q, want an OpenAI error data event", last)
				}
			}
			if e.up.Calls() != 1 {
				t.Errorf("upstream calls %d, want 1 (never retried after the first byte)", e.up.Calls())
			}
			if l := e.logLines(); len(l) != 1 || l[0]["outcome"] != "stream_stalled" {
				t.Errorf("log %v, want one stream_stalled line", l)
			}
		})
	}
}

func TestStreamCutEndsWithErrorEvent(t *testing.T) {
	e := newEnv(t, "stream:cut-after=5", nil)
	resp := e.do("POST", "/openai/v1/chat/completions", chatStream)
	got := body(t, resp)
	if strings.Contains(got, "[DONE]") || !strings.Contains(got, `"code":"stream_cut"`) {
		t.Fatalf("cut stream relayed as %q", got)
	}
	if e.up.Calls() != 1 {
		t.Errorf("upstream calls %d, want 1", e.up.Calls())
	}
}

func TestOverloadedFirstEventRetried(t *testing.T) {
	e := newEnv(t, "overloaded,200", nil)
	resp := e.do("POST", "/anthropic/v1/messages", msgStream)
	got := body(t, resp)
	if strings.Contains(got, "overloaded_error") || !strings.Contains(got, "message_stop") {
		t.Fatalf("got %q, want only the second, whole answer", got)
	}
	if e.up.Calls() != 2 {
		t.Errorf("upstream calls %d, want 2", e.up.Calls())
	}
}

func TestClientDisconnectCancelsUpstream(t *testing.T) {
	e := newEnv(t, "hang", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Timeout.FirstByte, p.Timeout.Total = 10*time.Second, 20*time.Second
		c.Policies["interactive"] = p
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/openai/v1/chat/completions", strings.NewReader(chatBody))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "the call in flight", func() bool { return e.gw.InFlight() > 0 })
	cancel()
	<-done
	// The hung call would otherwise hold on for first_byte (10s).
	start := time.Now()
	for e.gw.InFlight() != 0 {
		if time.Since(start) > 5*time.Second {
			t.Fatal("the upstream call was still open 5 s after the client left")
		}
		time.Sleep(time.Millisecond)
	}
	waitFor(t, "the attempt's log line", func() bool { return len(e.logLines()) > 0 })
	if l := e.logLines(); l[0]["outcome"] != "client_cancel" {
		t.Errorf("outcome %v, want client_cancel", l[0]["outcome"])
	}
}

func TestBodyLimit(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) { c.Limits.MaxBodyBytes = 1024 })
	resp := e.do("POST", "/openai/v1/chat/completions", `{"model":"x","pad":"`+strings.Repeat("a", 2000)+`"}`)
	if resp.StatusCode != 413 {
		t.Fatalf("status %d, want 413", resp.StatusCode)
	}
	if typ := gatewayError(t, resp, "openai"); typ != "request_too_large" {
		t.Errorf("code %q", typ)
	}
	if e.up.Calls() != 0 {
		t.Errorf("upstream calls %d, want 0", e.up.Calls())
	}
}

// A provider's max_concurrent queues the calls beyond it instead of
// refusing them: a second call waits for the first's slot, and one that
// would wait past its max_queue gets 429 rate_limited.
func TestConcurrencyCapQueues(t *testing.T) {
	e := newEnv(t, "slow:300ms", func(c *config.Config) {
		p := c.Providers["openai"]
		p.MaxConcurrent = 1
		c.Providers["openai"] = p
	})
	start := time.Now()
	var wg sync.WaitGroup
	statuses := make([]int, 2)
	for i := range statuses {
		wg.Go(func() {
			resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
			body(t, resp)
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	if statuses[0] != 200 || statuses[1] != 200 {
		t.Fatalf("statuses %v, want both 200: the second waits for the first", statuses)
	}
	if d := time.Since(start); d < 550*time.Millisecond {
		t.Errorf("two 300 ms calls under a cap of 1 took %v, want at least 600 ms, one after the other", d)
	}
	var waited bool
	for _, l := range e.logLines() {
		if q, _ := l["queued_ms"].(float64); q >= 200 {
			waited = true
		}
	}
	if !waited {
		t.Errorf("no call waited for the slot: %v", e.logLines())
	}

	// Past max_queue: the hung call holds the slot longer than the next may wait.
	e2 := newEnv(t, "hang", func(c *config.Config) {
		p := c.Providers["openai"]
		p.MaxConcurrent = 1
		c.Providers["openai"] = p
		pol := c.Policies["interactive"]
		pol.Timeout.FirstByte, pol.Timeout.Total = 10*time.Second, 20*time.Second
		pol.MaxQueue = 300 * time.Millisecond
		c.Policies["interactive"] = pol
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		body(t, e2.do("POST", "/openai/v1/chat/completions", chatBody))
	}()
	waitFor(t, "the call in flight", func() bool { return e2.up.Calls() > 0 })
	start = time.Now()
	resp := e2.do("POST", "/openai/v1/chat/completions", chatBody)
	if resp.StatusCode != 429 || time.Since(start) > 3*time.Second {
		t.Errorf("status %d after %v, want 429 after about 300 ms", resp.StatusCode, time.Since(start))
	}
	if typ := gatewayError(t, resp, "openai"); typ != "rate_limited" {
		t.Errorf("code %q", typ)
	}
	e2.up.Provider.Close() // release the hung call
	<-done
}

func TestPolicyHeader(t *testing.T) {
	e := newEnv(t, "200", nil)
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, "Sluice-Policy", "nightly"))
	if l := e.logLines(); len(l) != 1 || l[0]["policy"] != "nightly" {
		t.Errorf("log %v, want policy nightly", l)
	}
	if h := e.up.Requests()[0].Header; h.Get("Sluice-Policy") != "" {
		t.Error("Sluice-Policy was forwarded upstream")
	}
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Sluice-Policy", "nope")
	if resp.StatusCode != 400 {
		t.Errorf("unknown policy: status %d, want 400", resp.StatusCode)
	}
	gatewayError(t, resp, "openai")
}

func TestInjectedKeyReplacesClientKey(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		p := c.Providers["anthropic"]
		p.APIKeyEnv = "UPSTREAM_KEY"
		c.Providers["anthropic"] = p
	})
	body(t, e.do("POST", "/anthropic/v1/messages", msgStream, "X-Api-Key", clientKey))
	h := e.up.Requests()[0].Header
	if h.Get("X-Api-Key") != "sk-injected-1234" {
		t.Errorf("x-api-key upstream %q, want the injected key", h.Get("X-Api-Key"))
	}
	for k, vs := range h {
		for _, v := range vs {
			if strings.Contains(v, clientKey) {
				t.Errorf("the client's key reached upstream in %s", k)
			}
		}
	}
}

func TestClientAuth(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		c.Auth.Keys = []string{"good-token", "sha256:" + sha256Hex("hashed-token")}
		p := c.Providers["openai"]
		p.APIKeyEnv = "UPSTREAM_KEY"
		c.Providers["openai"] = p
	})
	for _, tok := range []string{"", "bad", "good-tokenx", "GOOD-TOKEN", "hashed", "sha256:" + sha256Hex("hashed-token")} {
		req, _ := http.NewRequest("POST", e.srv.URL+"/openai/v1/chat/completions", strings.NewReader(chatBody))
		if tok != "" {
			req.Header.Set("Authorization", "Bearer "+tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 401 {
			t.Errorf("token %q: status %d, want 401", tok, resp.StatusCode)
		}
		gatewayError(t, resp, "openai")
	}
	if e.up.Calls() != 0 {
		t.Fatalf("upstream calls %d after bad tokens, want 0", e.up.Calls())
	}
	for _, tok := range []string{"good-token", "hashed-token"} {
		resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Authorization", "Bearer "+tok)
		body(t, resp)
		if resp.StatusCode != 200 {
			t.Errorf("token %q: status %d, want 200", tok, resp.StatusCode)
		}
	}
	if got := e.up.Requests()[0].Header.Get("Authorization"); got != "Bearer sk-injected-1234" {
		t.Errorf("upstream Authorization %q, want the injected key", got)
	}
}

func TestAdminEndpoints(t *testing.T) {
	e := newEnv(t, "500", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Breaker.Failures = 1
		p.Retry.MaxAttempts = 1
		c.Policies["interactive"] = p
	})
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody))
	resp := e.do("GET", "/sluice/breakers", "")
	var list struct{ Breakers []BreakerView }
	if err := json.Unmarshal([]byte(body(t, resp)), &list); err != nil || len(list.Breakers) != 2 ||
		list.Breakers[0].Name != "anthropic" || list.Breakers[0].State != "closed" ||
		list.Breakers[1].Name != "openai" || list.Breakers[1].State != "open" {
		t.Fatalf("breakers %+v (%v), want anthropic closed and openai open", list, err)
	}
	resp = e.do("POST", "/sluice/breakers/openai/reset", "")
	body(t, resp)
	if resp.StatusCode != 200 {
		t.Fatalf("reset: %d", resp.StatusCode)
	}
	if rec, _ := e.gw.Store().Load("openai"); rec.State.String() != "closed" {
		t.Errorf("after reset: %v", rec.State)
	}
	if resp := e.do("POST", "/sluice/breakers/nope/reset", ""); resp.StatusCode != 404 {
		t.Errorf("reset of an unknown breaker: %d", resp.StatusCode)
	} else {
		body(t, resp)
	}
	resp = e.do("GET", "/metrics", "")
	m := body(t, resp)
	for _, want := range []string{`sluice_attempts_total{outcome="fail",provider="openai",status="500"} 1`, `sluice_breaker_state{breaker="openai"}`, "sluice_attempt_duration_seconds_bucket"} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(m, clientKey) || strings.Contains(e.logs.String(), clientKey) {
		t.Error("the client key reached the metrics or the log")
	}
	if resp := e.do("GET", "/healthz", ""); resp.StatusCode != 200 || !strings.Contains(body(t, resp), "ok") {
		t.Error("healthz")
	}
}

func TestAdminOffLoopbackNeedsToken(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) { c.Admin.TokenEnv = "ADMIN_TOKEN" })
	for _, tt := range []struct {
		remote, token string
		want          int
	}{
		{"192.0.2.7:5000", "", 401},
		{"192.0.2.7:5000", "wrong", 401},
		{"192.0.2.7:5000", "admintok", 200},
		{"127.0.0.1:5000", "", 200},
	} {
		req := httptest.NewRequest("GET", "/sluice/breakers", nil)
		req.RemoteAddr = tt.remote
		if tt.token != "" {
			req.Header.Set("Authorization", "Bearer "+tt.token)
		}
		w := httptest.NewRecorder()
		e.gw.ServeHTTP(w, req)
		if w.Code != tt.want {
			t.Errorf("%s with %q: %d, want %d", tt.remote, tt.token, w.Code, tt.want)
		}
	}
}

func TestErrorsNeverCarrySecrets(t *testing.T) {
	e := newEnv(t, "hang", nil)
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	if got := body(t, resp); strings.Contains(got, clientKey) {
		t.Errorf("error body carries the key: %s", got)
	}
	if strings.Contains(e.logs.String(), clientKey) {
		t.Error("the key reached the attempt log")
	}
}

// Every breaker the routes use is listed from the start, closed, though a
// breaker keeps no record until it counts a failure: by /sluice/breakers,
// the status page and the metrics; one that is known can be reset, and a
// name no route uses still cannot.
func TestBreakersListedBeforeAnyCall(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		c.Providers["backup"] = config.Provider{Kind: "openai", BaseURL: "http://127.0.0.1:1", APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 64}
		c.Routes[0].Fallbacks = []config.Target{{Provider: "backup", Model: "gpt-4o"}}
		p := c.Policies["nightly"]
		p.BreakerScope = sluice.ScopeModel
		c.Policies["nightly"] = p
	})
	if e.cfg.Routes[0].Prefix != "/openai" {
		t.Fatalf("routes %+v: the test expects /openai first", e.cfg.Routes)
	}
	// interactive is per provider: the three providers; nightly per model:
	// the fallback's model (the primary's is the client's to name).
	want := []string{"anthropic", "backup", "backup/gpt-4o", "openai"}
	var list struct{ Breakers []BreakerView }
	if err := json.Unmarshal([]byte(body(t, e.do("GET", "/sluice/breakers", ""))), &list); err != nil {
		t.Fatal(err)
	}
	var status statusView
	if err := json.Unmarshal([]byte(body(t, e.do("GET", "/sluice/status.json", ""))), &status); err != nil {
		t.Fatal(err)
	}
	for what, views := range map[string][]BreakerView{"/sluice/breakers": list.Breakers, "status.json": status.Breakers} {
		var names []string
		for _, v := range views {
			names = append(names, v.Name)
			if v.State != "closed" || v.Failures != 0 || v.Transitions != 0 {
				t.Errorf("%s: %+v, want closed and idle", what, v)
			}
		}
		if !slices.Equal(names, want) {
			t.Errorf("%s lists %q, want %q", what, names, want)
		}
	}
	m := body(t, e.do("GET", "/metrics", ""))
	for _, name := range want {
		if line := `sluice_breaker_state{breaker="` + name + `"} 0`; !strings.Contains(m, line) {
			t.Errorf("metrics lack %s", line)
		}
	}
	if resp := e.do("POST", "/sluice/breakers/backup%2Fgpt-4o/reset", ""); resp.StatusCode != 200 {
		t.Errorf("reset of a known breaker with no record: %d, want 200", resp.StatusCode)
		body(t, resp)
	} else {
		body(t, resp)
	}
	if resp := e.do("POST", "/sluice/breakers/openai%2Fgpt-4o/reset", ""); resp.StatusCode != 404 {
		t.Errorf("reset of a breaker no route uses: %d, want 404", resp.StatusCode)
		body(t, resp)
	} else {
		body(t, resp)
	}
}

// BreakerNames gives a policy scoped by model no name for a primary, whose
// model is the client's, and none for a fallback that keeps the model.
func TestBreakerNamesByScope(t *testing.T) {
	cfg := config.Default()
	cfg.Routes = []config.Route{{Prefix: "/a", Provider: "openai", Fallbacks: []config.Target{{Provider: "backup", Model: "m"}, {Provider: "other"}}}}
	for _, tt := range []struct {
		scope sluice.Scope
		want  []string
	}{
		{sluice.ScopeProvider, []string{"backup", "openai", "other"}},
		{sluice.ScopeModel, []string{"backup/m"}},
	} {
		cfg.Policies = map[string]sluice.Policy{"p": {BreakerScope: tt.scope}}
		if got := BreakerNames(cfg); !slices.Equal(got, tt.want) {
			t.Errorf("scope %s: %q, want %q", tt.scope, got, tt.want)
		}
	}
}
