package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
)

// The quirks of OpenAI-compatible servers (kind openai, another base_url).

// withCompat adds a provider groq, kind openai, at the fake's address
// under /openai/v1 as Groq's base URL is, and the route /groq to it.
func withCompat(edit func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		c.Providers["groq"] = config.Provider{Kind: "openai", BaseURL: c.Providers["openai"].BaseURL + "/openai/v1", MaxConcurrent: 64}
		c.Routes = append(c.Routes, config.Route{Prefix: "/groq", Provider: "groq", Policy: "interactive", RetrySafe: true})
		if edit != nil {
			edit(c)
		}
	}
}

const compatStream = `{"model":"llama-3.3-70b","max_tokens":5,"stream":true,"messages":[{"role":"user","content":"hi"}]}`

// OpenRouter's ": OPENROUTER PROCESSING" comments while a model is queued
// are no first event: a queue longer than first_byte (400 ms) is a silent
// provider, retried before anything reached the client; a shorter one is
// relayed, comments and all, in one attempt.
func TestCompatKeepAlivesAreNotTheFirstEvent(t *testing.T) {
	e := newEnv(t, "stream:keepalive=20;interval=50ms,200", withCompat(nil))
	resp := e.do("POST", "/groq/chat/completions", compatStream)
	got := body(t, resp)
	if resp.StatusCode != 200 || strings.Contains(got, "OPENROUTER") || !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Fatalf("%d %q, want the second attempt's answer alone", resp.StatusCode, got)
	}
	if e.up.Calls() != 2 {
		t.Errorf("upstream calls %d, want 2", e.up.Calls())
	}
	if l := e.logLines(); len(l) != 2 || l[0]["error"] != "timeout_first_byte" {
		t.Errorf("log %v, want a first-byte timeout, then the answer", l)
	}

	e = newEnv(t, "stream:keepalive=3;interval=20ms", withCompat(nil))
	got = body(t, e.do("POST", "/groq/chat/completions", compatStream))
	if !strings.HasPrefix(got, strings.Repeat(": OPENROUTER PROCESSING\n\n", 3)+"data: {") || !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Errorf("relayed %q, want the comments and the whole stream", got)
	}
	if e.up.Calls() != 1 {
		t.Errorf("upstream calls %d, want 1", e.up.Calls())
	}
}

// An error object inside a 200 stream is an error: as the first event it
// is retried as the status its code stands for (overloaded: 529), nothing
// having reached the client; after the first event it is relayed, never
// retried, and the stream gets no made-up ending.
func TestCompatErrorInsideStream(t *testing.T) {
	e := newEnv(t, "overloaded,200", withCompat(nil))
	got := body(t, e.do("POST", "/groq/chat/completions", compatStream))
	if strings.Contains(got, `"error"`) || !strings.HasSuffix(got, "data: [DONE]\n\n") || e.up.Calls() != 2 {
		t.Errorf("%d calls, got %q; want the second, whole answer", e.up.Calls(), got)
	}

	e = newEnv(t, "stream:error-after=3", withCompat(nil))
	got = body(t, e.do("POST", "/groq/chat/completions", compatStream))
	evs := sseEvents(got)
	var v struct{ Error struct{ Code string } }
	if strings.Contains(got, "[DONE]") || len(evs) != 4 ||
		json.Unmarshal([]byte(strings.TrimPrefix(evs[3], "data: ")), &v) != nil || v.Error.Code != "overloaded" {
		t.Errorf("relayed %q, want 3 events and the provider's error", got)
	}
	if e.up.Calls() != 1 {
		t.Errorf("upstream calls %d, want 1", e.up.Calls())
	}
}

// A compatible server sends usage only when asked: under a budget the
// gateway asks, hides the chunk from a client that did not, and settles
// the spend at what it reports.
func TestCompatStreamUsageSettles(t *testing.T) {
	e := newEnv(t, "200", withCompat(func(c *config.Config) {
		c.Prices = map[string]spend.Price{"llama-*": {Input: 0, Output: 20000}}
		c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 10, Period: "day", Scope: "all"}}
	}))
	got := body(t, e.do("POST", "/groq/chat/completions", compatStream))
	if strings.Contains(got, `"usage":{`) || !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Errorf("the client, which did not ask for usage, got %q", got)
	}
	r := e.up.Requests()[0]
	if r.Path != "/openai/v1/chat/completions" || !strings.Contains(string(r.Body), `"stream_options":{"include_usage":true}`) {
		t.Errorf("upstream %s got %s, which does not ask for usage", r.Path, r.Body)
	}
	m := body(t, e.do("GET", "/metrics", ""))
	if !strings.Contains(m, `sluice_budget_spent_usd{budget="daily"} 0.1`+"\n") {
		t.Errorf("spend is not the $0.10 the usage chunk reports:\n%s", grepLines(m, "sluice_budget"))
	}
}

// An error event after a stream's first event ends the attempt as a
// failure: logged fail, stream_error, and counted by the breaker, which
// opens after two such streams and answers the third call itself.
func TestCompatErrorAfterFirstEventCountsAgainstBreaker(t *testing.T) {
	e := newEnv(t, "stream:error-after=3", withCompat(func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Breaker.Failures = 2
		c.Policies["interactive"] = p
	}))
	for range 2 {
		if got := body(t, e.do("POST", "/groq/chat/completions", compatStream)); !strings.Contains(got, `"overloaded"`) {
			t.Fatalf("relayed %q, want the provider's error", got)
		}
	}
	for _, l := range e.logLines() {
		if l["outcome"] != "fail" || l["error"] != "stream_error" {
			t.Errorf("log line %v, want fail, stream_error", l)
		}
	}
	resp := e.do("POST", "/groq/chat/completions", compatStream)
	if code := gatewayError(t, resp, "openai"); resp.StatusCode != 503 || code != "provider_down" {
		t.Errorf("third call: %d %s, want 503 provider_down", resp.StatusCode, code)
	}
	if e.up.Calls() != 2 {
		t.Errorf("upstream calls %d, want 2", e.up.Calls())
	}
}
