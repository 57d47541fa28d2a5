package gateway

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
)

// The gateway suite for kind azure: a route /azure to an Azure OpenAI
// provider, the fake behind it.

const (
	azDeployment = "gpt4o-prod"
	azPath       = "/azure/openai/deployments/" + azDeployment + "/chat/completions?api-version=2024-10-21"
	azV1Path     = "/azure/openai/v1/chat/completions?api-version=preview"
	azBody       = `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5}`
	azStream     = `{"messages":[{"role":"user","content":"hi"}],"max_tokens":5,"stream":true}`
	azClientKey  = "az-client-key-5a4b3c2d1e"
)

// withAzure adds the provider azure (kind azure, the fake's address, the
// injected key UPSTREAM_KEY) and the route /azure to it, then edit.
func withAzure(edit func(*config.Config)) func(*config.Config) {
	return func(c *config.Config) {
		c.Providers["azure"] = config.Provider{Kind: "azure", BaseURL: c.Providers["openai"].BaseURL,
			APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 64}
		c.Routes = append(c.Routes, config.Route{Prefix: "/azure", Provider: "azure", Policy: "interactive", RetrySafe: true})
		if edit != nil {
			edit(c)
		}
	}
}

func newAzureEnv(t *testing.T, script string, edit func(*config.Config)) *env {
	return newEnv(t, script, withAzure(edit))
}

// azDo sends a request as the AzureOpenAI SDKs do: the key in api-key.
func (e *env) azDo(path, body string, header ...string) *http.Response {
	return e.do("POST", path, body, append([]string{"Authorization", "", "Api-Key", azClientKey}, header...)...)
}

// Both URL styles pass through, the api-version kept; the injected key
// goes in api-key and the client's never reaches upstream or the log; the
// deployment is the call's model where the path names it, the body's
// model where it does not.
func TestAzureForward(t *testing.T) {
	e := newAzureEnv(t, "200", nil)
	resp := e.azDo(azPath, azBody)
	got := body(t, resp)
	if resp.StatusCode != 200 || !strings.Contains(got, `"chat.completion"`) {
		t.Fatalf("%d %s", resp.StatusCode, got)
	}
	if resp.Header.Get("Sluice-Model") != azDeployment {
		t.Errorf("Sluice-Model %q, want the deployment %s", resp.Header.Get("Sluice-Model"), azDeployment)
	}
	resp = e.azDo(azV1Path, `{"model":"gpt-4o","messages":[]}`)
	body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Model") != "gpt-4o" {
		t.Errorf("v1: %d, Sluice-Model %q, want 200 and the body's model", resp.StatusCode, resp.Header.Get("Sluice-Model"))
	}
	reqs := e.up.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d upstream calls, want 2", len(reqs))
	}
	for i, want := range []string{"/openai/deployments/" + azDeployment + "/chat/completions", "/openai/v1/chat/completions"} {
		r := reqs[i]
		if r.Path != want {
			t.Errorf("upstream path %q, want %q", r.Path, want)
		}
		if r.Header.Get("Api-Key") != "sk-injected-1234" || r.Header.Get("Authorization") != "" {
			t.Errorf("upstream api-key %q, Authorization %q; want the injected key in api-key alone",
				r.Header.Get("Api-Key"), r.Header.Get("Authorization"))
		}
		for k, vs := range r.Header {
			if strings.Contains(strings.Join(vs, ","), azClientKey) {
				t.Errorf("the client's key reached upstream in %s", k)
			}
		}
	}
	lines := e.logLines()
	if len(lines) != 2 || lines[0]["model"] != azDeployment || lines[1]["model"] != "gpt-4o" {
		t.Errorf("log models: %v", lines)
	}
	if s := e.logs.String(); strings.Contains(s, "sk-injected-1234") || strings.Contains(s, azClientKey) {
		t.Error("a key reached the attempt log")
	}
	// The api-version reached the provider: its 429 names it.
	resp = e.azDo(azPath, azBody, "Sluice-Fake-Script", "429:retry-after-ms=5000")
	if got := body(t, resp); !strings.Contains(got, "API version 2024-10-21") {
		t.Errorf("the api-version was not forwarded: %s", got)
	}
}

// The client's api-key is a client token like Authorization: Bearer.
func TestAzureClientKeyAuthorizes(t *testing.T) {
	e := newAzureEnv(t, "200", func(c *config.Config) { c.Auth.Keys = []string{azClientKey} })
	if resp := e.azDo(azPath, azBody); resp.StatusCode != 200 {
		t.Errorf("api-key %d, want 200", resp.StatusCode)
	} else {
		body(t, resp)
	}
	resp := e.azDo(azPath, azBody, "Api-Key", "wrong")
	if code := gatewayError(t, resp, "azure"); resp.StatusCode != 401 || code != "unauthorized" {
		t.Errorf("a wrong api-key: %d %s", resp.StatusCode, code)
	}
	if e.up.Calls() != 1 {
		t.Errorf("upstream calls %d, want 1", e.up.Calls())
	}
}

// 503, 500 and a rate-limit 429 are retried invisibly; the 429's
// retry-after-ms is honoured, before its Retry-After: a wait of 5 s would
// pass the 2 s total and end the call with the 429.
func TestAzureRetries(t *testing.T) {
	e := newAzureEnv(t, "503,500,200", nil)
	resp := e.azDo(azPath, azBody)
	body(t, resp)
	if resp.StatusCode != 200 || e.up.Calls() != 3 || resp.Header.Get("Sluice-Attempts") != "3" {
		t.Fatalf("status %d after %d calls, want 200 after 3", resp.StatusCode, e.up.Calls())
	}

	e = newAzureEnv(t, "429:retry-after-ms=300;retry-after=5,200", nil)
	start := time.Now()
	resp = e.azDo(azPath, azBody)
	body(t, resp)
	elapsed := time.Since(start)
	if resp.StatusCode != 200 || e.up.Calls() != 2 {
		t.Fatalf("status %d after %d calls, want 200 after 2", resp.StatusCode, e.up.Calls())
	}
	if elapsed < 300*time.Millisecond {
		t.Errorf("retried after %v, want the 300 ms retry-after-ms asked for", elapsed)
	}
	if l := e.logLines(); len(l) != 2 || l[0]["retry_in_ms"].(float64) < 300 || l[0]["retry_in_ms"].(float64) > 330 {
		t.Errorf("log %v, want a retry in 300-330 ms (the hint and its jitter)", l)
	}
}

// Azure's quota 429 is never retried and never counted by the breaker:
// with a breaker that opens on one failure, the next call still reaches
// the provider.
func TestAzureQuotaNotRetriedNorCounted(t *testing.T) {
	e := newAzureEnv(t, "429:insufficient_quota", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Breaker.Failures = 1
		c.Policies["interactive"] = p
	})
	for i := range 2 {
		resp := e.azDo(azPath, azBody)
		got := body(t, resp)
		if resp.StatusCode != 429 || !strings.Contains(got, "call volume quota") {
			t.Fatalf("call %d: %d %s, want the provider's quota 429", i+1, resp.StatusCode, got)
		}
	}
	if e.up.Calls() != 2 {
		t.Errorf("upstream calls %d, want 2: never retried, and the breaker stayed closed", e.up.Calls())
	}
	for _, l := range e.logLines() {
		if l["error"] != "quota_exhausted" || l["outcome"] != "fail" {
			t.Errorf("log line %v, want quota_exhausted, fail", l)
		}
	}
}

// A silent provider gets a 504 within total (2 s) + 1 s.
func TestAzureHangAnswers504WithinTotal(t *testing.T) {
	e := newAzureEnv(t, "hang", nil)
	start := time.Now()
	resp := e.azDo(azPath, azBody)
	if code := gatewayError(t, resp, "azure"); resp.StatusCode != 504 || code != "timeout" {
		t.Fatalf("%d %s, want 504 timeout", resp.StatusCode, code)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("took %v, want within total 2s + 1s", d)
	}
}

// A stream is relayed whole; a stall or a cut after its first event ends
// it with an error frame and no made-up ending; a stall before its first
// event is retried invisibly.
func TestAzureStreams(t *testing.T) {
	e := newAzureEnv(t, "stream:events=40", nil)
	got := body(t, e.azDo(azPath, azStream))
	if evs := sseEvents(got); len(evs) != 44 || !strings.Contains(evs[0], `"prompt_filter_results"`) || evs[len(evs)-1] != "data: [DONE]" {
		t.Errorf("relayed %d events from %q ending %q, want 44 from Azure's prompt filter results ending [DONE]", len(evs), evs[0], evs[len(evs)-1])
	}
	for _, tc := range []struct{ script, code string }{
		{"stream:stall-after=3", "stream_stalled"},
		{"stream:cut-after=3", "stream_cut"},
	} {
		e := newAzureEnv(t, tc.script, nil)
		got := body(t, e.azDo(azPath, azStream))
		evs := sseEvents(got)
		var v struct{ Error struct{ Code string } }
		if strings.Contains(got, "[DONE]") || len(evs) != 4 ||
			json.Unmarshal([]byte(strings.TrimPrefix(evs[3], "data: ")), &v) != nil || v.Error.Code != tc.code {
			t.Errorf("%s: relayed %q, want 3 events and a %s error frame", tc.script, got, tc.code)
		}
		if e.up.Calls() != 1 {
			t.Errorf("%s: upstream calls %d, want 1", tc.script, e.up.Calls())
		}
	}
	e = newAzureEnv(t, "stream:stall-after=0,200", nil)
	resp := e.azDo(azPath, azStream)
	got = body(t, resp)
	if !strings.HasSuffix(got, "data: [DONE]\n\n") || e.up.Calls() != 2 || resp.Header.Get("Sluice-Attempts") != "2" {
		t.Errorf("%d calls, got %q; want the second answer, whole", e.up.Calls(), got)
	}
}

// Under a budget, a stream that did not ask for usage gets it asked for
// (the api-version accepts stream_options), hidden from the client, and
// the spend settles at what it reports, priced by deployment; an
// api-version older than stream_options is sent as it came.
func TestAzureStreamUsageSettles(t *testing.T) {
	e := newAzureEnv(t, "200", func(c *config.Config) {
		c.Prices = map[string]spend.Price{"gpt4o-*": {Input: 0, Output: 20000}}
		c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 10, Period: "day", Scope: "all"}}
	})
	got := body(t, e.azDo(azPath, azStream))
	if strings.Contains(got, `"usage":{`) || !strings.HasSuffix(got, "data: [DONE]\n\n") {
		t.Errorf("the client, which did not ask for usage, got %q", got)
	}
	if up := string(e.up.Requests()[0].Body); !strings.Contains(up, `"stream_options":{"include_usage":true}`) {
		t.Errorf("upstream body %s does not ask for usage", up)
	}
	m := body(t, e.do("GET", "/metrics", ""))
	if !strings.Contains(m, `sluice_budget_spent_usd{budget="daily"} 0.1`+"\n") ||
		!strings.Contains(m, `sluice_spend_usd_total{model="gpt4o-prod",provider="azure"}`) {
		t.Errorf("spend is not the $0.10 the usage chunk reports, by deployment:\n%s", grepLines(m, "spend"))
	}
	body(t, e.azDo(strings.Replace(azPath, "2024-10-21", "2024-02-01", 1), azStream))
	if up := string(e.up.Requests()[1].Body); strings.Contains(up, "stream_options") {
		t.Errorf("stream_options sent to an api-version that refuses it: %s", up)
	}
}

// A fallback to another deployment rewrites the path; the answer, the
// headers and the log name it.
func TestAzureFallbackToAnotherDeployment(t *testing.T) {
	e := newAzureEnv(t, "503,503,503,200", func(c *config.Config) {
		c.Routes[len(c.Routes)-1].Fallbacks = []config.Target{{Provider: "azure", Model: "gpt4o-backup"}}
		p := c.Policies["interactive"]
		p.BreakerScope = sluice.ScopeModel
		c.Policies["interactive"] = p
	})
	resp := e.azDo(azPath, azBody)
	body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Model") != "gpt4o-backup" {
		t.Fatalf("%d, Sluice-Model %q; want 200 from gpt4o-backup", resp.StatusCode, resp.Header.Get("Sluice-Model"))
	}
	reqs := e.up.Requests()
	if len(reqs) != 4 {
		t.Fatalf("%d upstream calls, want 4", len(reqs))
	}
	if reqs[2].Path != "/openai/deployments/gpt4o-prod/chat/completions" ||
		reqs[3].Path != "/openai/deployments/gpt4o-backup/chat/completions" {
		t.Errorf("paths %q then %q", reqs[2].Path, reqs[3].Path)
	}
	if string(reqs[3].Body) != azBody {
		t.Errorf("the fallback's body changed: %s", reqs[3].Body)
	}
	if reqs[3].Header.Get("Api-Key") != "sk-injected-1234" {
		t.Error("the fallback lacks the injected key")
	}
	lines := e.logLines()
	if len(lines) != 4 || lines[2]["model"] != azDeployment || lines[3]["model"] != "gpt4o-backup" {
		t.Errorf("log: %v", lines)
	}
}

// A rate-limit 429's retry-after-ms pauses the deployment for every call:
// one that arrives during the pause waits it out.
func TestAzurePauseHoldsOtherCalls(t *testing.T) {
	e := newAzureEnv(t, "429:retry-after-ms=1000,200", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Timeout.Total = 5 * time.Second
		c.Policies["interactive"] = p
	})
	var wg sync.WaitGroup
	var first *http.Response
	wg.Go(func() { first = e.azDo(azPath, azBody) })
	waitFor(t, "the first 429", func() bool { return strings.Contains(e.logs.String(), `"status":429`) })
	second := e.azDo(azPath, azBody)
	body(t, second)
	wg.Wait()
	body(t, first)
	if first.StatusCode != 200 || second.StatusCode != 200 || e.up.Calls() != 3 {
		t.Fatalf("statuses %d, %d after %d calls; want 200, 200 after 3", first.StatusCode, second.StatusCode, e.up.Calls())
	}
	var waited bool
	for _, l := range e.logLines() {
		if q, _ := l["queued_ms"].(float64); q >= 500 && l["model"] == azDeployment {
			waited = true
		}
	}
	if !waited {
		t.Errorf("no attempt waited out the pause: %v", e.logLines())
	}
}
