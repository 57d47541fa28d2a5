package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
)

const (
	geminiGenerate = "/gemini/v1beta/models/gemini-test:generateContent"
	geminiStreamed = "/gemini/v1beta/models/gemini-test:streamGenerateContent?alt=sse"
	geminiBody     = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":5}}`
	googleKey      = "AIzaSy-client-0f9e8d7c6b5a"
)

// withGemini adds a gemini provider at the fake (the openai provider's
// address) and a /gemini route to it.
func withGemini(c *config.Config) {
	c.Providers["gemini"] = config.Provider{Kind: "gemini", BaseURL: c.Providers["openai"].BaseURL, MaxConcurrent: 64}
	c.Routes = append(c.Routes, config.Route{Prefix: "/gemini", Provider: "gemini", Policy: "interactive", RetrySafe: true})
}

// googleError is Google's error shape as the gateway answers it.
type googleError struct {
	Error struct {
		Code    int
		Message string
		Status  string
		Details []struct {
			Type   string `json:"@type"`
			Reason string
		}
	}
}

// geminiGatewayError checks a gateway error in Google's shape and returns
// its status name and its reason (the gateway's code).
func geminiGatewayError(t *testing.T, raw string, httpStatus int) (status, reason string) {
	t.Helper()
	var v googleError
	if err := json.Unmarshal([]byte(raw), &v); err != nil || v.Error.Message == "" || len(v.Error.Details) != 1 {
		t.Fatalf("not a Google error: %s (%v)", raw, err)
	}
	if v.Error.Code != httpStatus {
		t.Errorf("code %d, want the HTTP status %d", v.Error.Code, httpStatus)
	}
	if d := v.Error.Details[0]; d.Type != "type.googleapis.com/google.rpc.ErrorInfo" {
		t.Errorf("detail %+v, want an ErrorInfo", d)
	}
	return v.Error.Status, v.Error.Details[0].Reason
}

func TestGeminiRetries(t *testing.T) {
	for _, tt := range []struct {
		script  string
		atLeast time.Duration // the wait the provider asked for
	}{
		{"503,200", 0},
		{"500,200", 0},
		{"429,200", 0}, // a per-minute quota: a rate limit
		{"429:retry-after-ms=600,200", 600 * time.Millisecond}, // RetryInfo retryDelay "0.6s"
		{"429:retry-after=1,200", time.Second},                 // RetryInfo retryDelay "1s"
	} {
		t.Run(tt.script, func(t *testing.T) {
			e := newEnv(t, tt.script, withGemini)
			start := time.Now()
			resp := e.do("POST", geminiGenerate, geminiBody)
			got := body(t, resp)
			took := time.Since(start)
			if resp.StatusCode != 200 || !strings.Contains(got, `"finishReason":"STOP"`) {
				t.Fatalf("%d %s", resp.StatusCode, got)
			}
			if e.up.Calls() != 2 || resp.Header.Get("Sluice-Attempts") != "2" {
				t.Errorf("upstream calls %d, Sluice-Attempts %q; want 2", e.up.Calls(), resp.Header.Get("Sluice-Attempts"))
			}
			if took < tt.atLeast {
				t.Errorf("retried after %v, before the %v the RetryInfo asked for", took, tt.atLeast)
			}
			if tt.atLeast == 0 && took > time.Second {
				t.Errorf("took %v, want the policy's backoff (≤ 20 ms) with no hint", took)
			}
		})
	}
}

func TestGeminiRetryDelayPausesTheModel(t *testing.T) {
	// The limiter's host-wide pause learns a 429's RetryInfo as it learns
	// Retry-After: a second call waits for it before it reaches upstream.
	e := newEnv(t, "200", withGemini)
	resp := e.do("POST", geminiGenerate, geminiBody, fake.ScriptHeader, "429:retry-after=1")
	body(t, resp)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d, want the provider's 429 (a hint beyond the first attempt's wait is retried; this one ends in 429)", resp.StatusCode)
	}
	start := time.Now()
	resp = e.do("POST", geminiGenerate, geminiBody)
	body(t, resp)
	if took := time.Since(start); resp.StatusCode != 200 || took < 500*time.Millisecond {
		t.Errorf("status %d after %v; want 200 after waiting out the pause", resp.StatusCode, took)
	}
}

func TestGeminiDailyQuotaNeverRetriedNorCounted(t *testing.T) {
	e := newEnv(t, "429:insufficient_quota", func(c *config.Config) {
		withGemini(c)
		p := c.Policies["interactive"]
		p.Breaker.Failures = 1
		c.Policies["interactive"] = p
	})
	for i := range 3 {
		resp := e.do("POST", geminiGenerate, geminiBody)
		got := body(t, resp)
		if resp.StatusCode != 429 || !strings.Contains(got, "PerDay") {
			t.Fatalf("call %d: %d %s, want the provider's own quota 429 relayed", i+1, resp.StatusCode, got)
		}
	}
	if e.up.Calls() != 3 {
		t.Errorf("upstream calls %d, want 3: never retried, and the breaker (failures 1) never opened", e.up.Calls())
	}
	for _, l := range e.logLines() {
		if l["error"] != "quota_exhausted" || l["outcome"] != "fail" {
			t.Errorf("log line %v, want error quota_exhausted, outcome fail", l)
		}
	}
	// A per-minute quota is a rate limit: retried up to max_attempts.
	e2 := newEnv(t, "429", withGemini)
	body(t, e2.do("POST", geminiGenerate, geminiBody))
	if e2.up.Calls() != 3 {
		t.Errorf("per-minute 429: upstream calls %d, want 3", e2.up.Calls())
	}
}

func TestGeminiSilentProviderAnswers504(t *testing.T) {
	e := newEnv(t, "hang", withGemini)
	start := time.Now()
	resp := e.do("POST", geminiGenerate, geminiBody)
	got := body(t, resp)
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("took %v, want within total 2s + 1s", took)
	}
	if resp.StatusCode != 504 {
		t.Fatalf("status %d, want 504", resp.StatusCode)
	}
	if st, reason := geminiGatewayError(t, got, 504); st != "DEADLINE_EXCEEDED" || reason != "timeout" {
		t.Errorf("status %q reason %q", st, reason)
	}
}

// chunkText returns a Gemini chunk's text and finishReason.
func chunkText(t *testing.T, ev string) (text, finish string) {
	t.Helper()
	var c struct {
		Candidates []struct {
			Content      struct{ Parts []struct{ Text string } }
			FinishReason string
		}
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(ev, "data: ")), &c); err != nil || len(c.Candidates) == 0 {
		t.Fatalf("not a Gemini chunk: %q", ev)
	}
	return c.Candidates[0].Content.Parts[0].Text, c.Candidates[0].FinishReason
}

func TestGeminiStreamRelayedWhole(t *testing.T) {
	e := newEnv(t, "stream:events=12", withGemini)
	resp := e.do("POST", geminiStreamed, geminiBody)
	evs := sseEvents(body(t, resp))
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" || len(evs) != 12 {
		t.Fatalf("%d %q, %d events; want a 200 stream of 12", resp.StatusCode, resp.Header.Get("Content-Type"), len(evs))
	}
	for i, ev := range evs {
		_, finish := chunkText(t, ev)
		if (finish != "") != (i == len(evs)-1) {
			t.Errorf("event %d finishReason %q: only the last has one", i, finish)
		}
	}
	if l := e.logLines(); len(l) != 1 || l[0]["outcome"] != "ok" || l[0]["stream"] != true {
		t.Errorf("log %v, want one ok stream line", l)
	}
}

func TestGeminiStreamStallOrCutEndsWithGoogleError(t *testing.T) {
	for _, tt := range []struct {
		script, reason, outcome string
		code                    int
	}{
		{"stream:stall-after=2", "stream_stalled", "stream_stalled", 504},
		{"stream:cut-after=2", "stream_cut", "fail", 503},
	} {
		t.Run(tt.script, func(t *testing.T) {
			e := newEnv(t, tt.script, withGemini)
			resp := e.do("POST", geminiStreamed, geminiBody)
			evs := sseEvents(body(t, resp))
			if len(evs) != 3 {
				t.Fatalf("%d events %q, want 2 chunks and an error", len(evs), evs)
			}
			for _, ev := range evs[:2] {
				if _, finish := chunkText(t, ev); finish != "" {
					t.Errorf("a fake ending: %q", ev)
				}
			}
			last := evs[2]
			if !strings.HasPrefix(last, "data: ") {
				t.Fatalf("last event %q, want a data event", last)
			}
			if _, reason := geminiGatewayError(t, strings.TrimPrefix(last, "data: "), tt.code); reason != tt.reason {
				t.Errorf("reason %q, want %q", reason, tt.reason)
			}
			if e.up.Calls() != 1 {
				t.Errorf("upstream calls %d, want 1 (never retried after the first byte)", e.up.Calls())
			}
			if l := e.logLines(); len(l) != 1 || l[0]["outcome"] != tt.outcome {
				t.Errorf("log %v, want one %s line", l, tt.outcome)
			}
		})
	}
}

func TestGeminiStreamEndingWithoutFinishReasonIsCut(t *testing.T) {
	// The provider ends its stream cleanly, but before a chunk with a
	// finishReason: Gemini has no other end, so the answer is incomplete.
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, `data: {"candidates":[{"content":{"parts":[{"text":"Half"}],"role":"model"},"index":0}]}`+"\n\n")
		io.WriteString(w, `data: {"candidates":[{"content":{"parts":[{"text":" an"}],"role":"model"},"index":0}]}`+"\n\n")
	}))
	defer up.Close()
	e := newEnv(t, "200", func(c *config.Config) {
		withGemini(c)
		p := c.Providers["gemini"]
		p.BaseURL = up.URL
		c.Providers["gemini"] = p
	})
	resp := e.do("POST", geminiStreamed, geminiBody)
	evs := sseEvents(body(t, resp))
	if len(evs) != 3 {
		t.Fatalf("events %q, want the 2 chunks and an error", evs)
	}
	if _, reason := geminiGatewayError(t, strings.TrimPrefix(evs[2], "data: "), 503); reason != "stream_cut" {
		t.Errorf("reason %q, want stream_cut", reason)
	}
	if l := e.logLines(); len(l) != 1 || l[0]["outcome"] != "fail" || l[0]["error"] != "stream_cut" {
		t.Errorf("log %v, want one fail line, error stream_cut", l)
	}
}

func TestGeminiFailureBeforeFirstEventRetried(t *testing.T) {
	for _, script := range []string{"stream:stall-after=0,200", "overloaded,200", "reset,200"} {
		t.Run(script, func(t *testing.T) {
			e := newEnv(t, script, withGemini)
			resp := e.do("POST", geminiStreamed, geminiBody)
			evs := sseEvents(body(t, resp))
			if resp.StatusCode != 200 || len(evs) != 5 || strings.Contains(strings.Join(evs, ""), `"error"`) {
				t.Fatalf("%d %q, want only the second, whole answer", resp.StatusCode, evs)
			}
			if _, finish := chunkText(t, evs[4]); finish != "STOP" {
				t.Errorf("last chunk's finishReason %q", finish)
			}
			if e.up.Calls() != 2 {
				t.Errorf("upstream calls %d, want 2", e.up.Calls())
			}
		})
	}
}

func TestGeminiUsageSettlesBudget(t *testing.T) {
	// 5 output tokens at $20,000 per million: $0.10 a call; its worst
	// case (maxOutputTokens 50) is $1.00, and an answer measured by its
	// bytes would cost far more than $0.10.
	e := newEnv(t, "200", func(c *config.Config) {
		withGemini(c)
		c.Prices = map[string]spend.Price{"gemini-test": {Input: 0, Output: 20000}}
		c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 1.25, Period: "day", Scope: "all"}}
	})
	const big = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":50}}`
	for _, path := range []string{geminiGenerate, geminiStreamed} {
		resp := e.do("POST", path, big)
		if got := body(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%s: status %d %s", path, resp.StatusCode, got)
		}
	}
	for _, l := range e.logLines() {
		if l["cost_usd"] != 0.1 {
			t.Errorf("cost_usd %v, want 0.1 from usageMetadata (%v)", l["cost_usd"], l["path"])
		}
	}
	// $0.20 spent, $1.05 left: a third call's $1.00 worst case fits, a
	// fourth's does not, and the refusal is in Google's shape.
	body(t, e.do("POST", geminiGenerate, big))
	resp := e.do("POST", geminiGenerate, big)
	got := body(t, resp)
	if resp.StatusCode != 429 {
		t.Fatalf("status %d, want 429", resp.StatusCode)
	}
	if st, reason := geminiGatewayError(t, got, 429); st != "RESOURCE_EXHAUSTED" || reason != "budget_exhausted" {
		t.Errorf("status %q reason %q", st, reason)
	}
	if e.up.Calls() != 3 {
		t.Errorf("upstream calls %d, want 3", e.up.Calls())
	}
}

func TestGeminiFallbackRewritesThePath(t *testing.T) {
	e := newEnv(t, "503,503,503,200", func(c *config.Config) {
		withGemini(c)
		c.Routes[len(c.Routes)-1].Fallbacks = []config.Target{{Provider: "gemini", Model: "gemini-backup"}}
		p := c.Policies["interactive"]
		p.BreakerScope = sluice.ScopeModel
		c.Policies["interactive"] = p
	})
	resp := e.do("POST", geminiGenerate, geminiBody)
	got := body(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(got, `"modelVersion":"gemini-backup"`) {
		t.Fatalf("%d %s, want the fallback model's answer", resp.StatusCode, got)
	}
	if resp.Header.Get("Sluice-Model") != "gemini-backup" {
		t.Errorf("Sluice-Model %q", resp.Header.Get("Sluice-Model"))
	}
	reqs := e.up.Requests()
	if len(reqs) != 4 || reqs[3].Path != "/v1beta/models/gemini-backup:generateContent" {
		t.Fatalf("upstream saw %d calls, the last to %q; want 4, the last to the backup model's path", len(reqs), reqs[len(reqs)-1].Path)
	}
	for i, r := range reqs[:3] {
		if r.Path != "/v1beta/models/gemini-test:generateContent" {
			t.Errorf("call %d to %s", i+1, r.Path)
		}
		if string(r.Body) != geminiBody || string(reqs[3].Body) != geminiBody {
			t.Error("the body changed: Gemini's model is in the path only")
		}
	}
	lines := e.logLines()
	if len(lines) != 4 || lines[0]["model"] != "gemini-test" || lines[3]["model"] != "gemini-backup" {
		t.Fatalf("log models: %v", lines)
	}
	var v struct{ Breakers []struct{ Name string } }
	json.Unmarshal([]byte(body(t, e.do("GET", "/sluice/breakers", ""))), &v)
	names := map[string]bool{}
	for _, b := range v.Breakers {
		names[b.Name] = true
	}
	if !names["gemini/gemini-test"] { // the backup's, never failing, keeps no record
		t.Errorf("breakers %v, want the primary's named by the model in the path", names)
	}
}

// queryRecorder serves a fake provider and keeps the query of every call.
type queryRecorder struct {
	fake.Provider
	mu      sync.Mutex
	queries []string
}

func (q *queryRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q.mu.Lock()
	q.queries = append(q.queries, r.URL.RawQuery)
	q.mu.Unlock()
	q.Provider.ServeHTTP(w, r)
}

func TestGeminiKeyInjectedAndNeverLogged(t *testing.T) {
	rec := &queryRecorder{}
	up := httptest.NewServer(rec)
	defer up.Close()
	e := newEnv(t, "200", func(c *config.Config) {
		withGemini(c)
		c.Providers["gemini"] = config.Provider{Kind: "gemini", BaseURL: up.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 8}
		c.Auth.Keys = []string{googleKey}
	})
	// The client authenticates with its Google key, in the query or in
	// x-goog-api-key, as Google's SDKs send it.
	for _, tt := range []struct{ path, header string }{
		{geminiStreamed + "&key=" + googleKey, ""},
		{"/gemini/v1beta/models/gemini-test:generateContent?key=" + googleKey, ""},
		{geminiGenerate, googleKey},
	} {
		req, _ := http.NewRequest("POST", e.srv.URL+tt.path, strings.NewReader(geminiBody))
		if tt.header != "" {
			req.Header.Set("X-Goog-Api-Key", tt.header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		if got := body(t, resp); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", tt.path, resp.StatusCode, got)
		}
	}
	reqs := rec.Requests()
	for i, r := range reqs {
		if got := r.Header.Get("X-Goog-Api-Key"); got != "sk-injected-1234" {
			t.Errorf("call %d: upstream x-goog-api-key %q, want the injected key", i+1, got)
		}
	}
	rec.mu.Lock()
	queries := rec.queries
	rec.mu.Unlock()
	if len(queries) != 3 || queries[0] != "alt=sse" || queries[1] != "" || queries[2] != "" {
		t.Errorf("upstream queries %q, want the client's key removed and alt=sse kept", queries)
	}
	if l := e.logs.String(); strings.Contains(l, googleKey) || strings.Contains(l, "key=") {
		t.Errorf("the key reached the attempt log: %s", l)
	}
	// A wrong key in the query is refused in Google's shape.
	resp, err := http.Post(e.srv.URL+geminiGenerate+"?key=wrong", "application/json", strings.NewReader(geminiBody))
	if err != nil {
		t.Fatal(err)
	}
	if st, reason := geminiGatewayError(t, body(t, resp), 401); resp.StatusCode != 401 || st != "UNAUTHENTICATED" || reason != "unauthorized" {
		t.Errorf("%d %q %q, want 401 UNAUTHENTICATED", resp.StatusCode, st, reason)
	}
}

func TestGeminiPassThroughKeyNeverLogged(t *testing.T) {
	// Without an injected key the client's ?key= goes to the provider as it
	// came; a failing call must not show it in the log or the answer.
	e := newEnv(t, "hang", withGemini)
	resp := e.do("POST", geminiGenerate+"?key="+googleKey, geminiBody)
	if got := body(t, resp); resp.StatusCode != 504 || strings.Contains(got, googleKey) {
		t.Errorf("%d %s", resp.StatusCode, got)
	}
	if l := e.logs.String(); strings.Contains(l, googleKey) || !strings.Contains(l, `"model":"gemini-test"`) {
		t.Errorf("log %s: want the path's model and never the key", l)
	}
}

func TestGeminiGatewayErrorShapes(t *testing.T) {
	e := newEnv(t, "500", func(c *config.Config) {
		withGemini(c)
		p := c.Policies["interactive"]
		p.Breaker.Failures, p.Breaker.Cool, p.Retry.MaxAttempts = 1, 30*time.Second, 1
		c.Policies["interactive"] = p
	})
	resp := e.do("POST", geminiGenerate, geminiBody, "Sluice-Policy", "batch")
	if st, reason := geminiGatewayError(t, body(t, resp), 400); resp.StatusCode != 400 || st != "INVALID_ARGUMENT" || reason != "invalid_request" {
		t.Errorf("unknown policy: %d %q %q", resp.StatusCode, st, reason)
	}
	body(t, e.do("POST", geminiGenerate, geminiBody)) // the 500 opens the breaker
	resp = e.do("POST", geminiGenerate, geminiBody)
	if st, reason := geminiGatewayError(t, body(t, resp), 503); resp.StatusCode != 503 || st != "UNAVAILABLE" || reason != "provider_down" {
		t.Errorf("breaker open: %d %q %q", resp.StatusCode, st, reason)
	}
	if resp.Header.Get("X-Should-Retry") != "false" || resp.Header.Get("Retry-After") == "" {
		t.Error("a gateway error lacks x-should-retry: false or Retry-After")
	}
}

// A Gemini stream that carries the provider's error event after its first
// chunks and then ends reaches the client with that one error, not a
// second one of the gateway's for a cut: the provider ended it on its
// error. The log says fail, stream_error.
func TestGeminiStreamErrorEventIsTheEnd(t *testing.T) {
	e := newEnv(t, "stream:error-after=2", withGemini)
	resp := e.do("POST", geminiStreamed, geminiBody)
	evs := sseEvents(body(t, resp))
	errs := 0
	for _, ev := range evs {
		if strings.Contains(ev, `"error"`) {
			errs++
		}
	}
	if len(evs) != 3 || errs != 1 {
		t.Fatalf("events %q: want 2 chunks and the provider's one error", evs)
	}
	if l := e.logLines(); len(l) != 1 || l[0]["outcome"] != "fail" || l[0]["error"] != "stream_error" {
		t.Errorf("log %v, want one fail line, error stream_error", l)
	}
}
