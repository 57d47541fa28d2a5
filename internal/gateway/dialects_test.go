package gateway

import (
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect/dialecttest"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
)

// The gateway's rules, once for every dialect dialecttest.All lists: a
// retryable failure retried out of sight, a caller's error relayed at
// once, a used-up quota neither retried nor counted by the breaker, a
// stream cut or stalled after text ended with the dialect's error frame,
// a stream that fails before its first event (an error event, silence, a
// reset) retried, usage priced and settled, and a
// fallback to another model of the same dialect.
func TestEveryDialect(t *testing.T) {
	rules := []struct {
		name string
		run  func(*testing.T, dialecttest.Speaker)
	}{
		{"retry", dialectRetry},
		{"no_retry", dialectNoRetry},
		{"quota", dialectQuota},
		{"stream_cut", dialectStreamCut},
		{"first_event_error", dialectFirstEventError},
		{"spend", dialectSpend},
		{"fallback", dialectFallback},
	}
	for _, sp := range dialecttest.All() {
		t.Run(sp.Kind, func(t *testing.T) {
			for _, r := range rules {
				t.Run(r.name, func(t *testing.T) { r.run(t, sp) })
			}
		})
	}
}

// dialectPrimary is the provider a dialectEnv's route goes to; it names
// the breaker of a policy scoped by provider.
const dialectPrimary = "primary"

// dialectEnv is a gateway routing /llm to the provider "primary" of one
// dialect, the fake behind it.
type dialectEnv struct {
	*env
	sp dialecttest.Speaker
}

// newDialectEnv starts a fake provider with script and a gateway whose
// route /llm goes to it, speaking sp's dialect under the test-sized
// policy; edit, if given, changes the config first.
func newDialectEnv(t *testing.T, sp dialecttest.Speaker, script string, edit func(*config.Config)) *dialectEnv {
	t.Helper()
	checkLeaks(t)
	e := &env{t: t, up: fake.NewServer(script), logs: &syncBuffer{}}
	t.Cleanup(e.up.Close)
	var u dialecttest.Upstream
	if sp.Prepare != nil {
		u = sp.Prepare(t, e.up)
	}
	cfg := config.Default()
	cfg.State.Backend = config.BackendMemory
	cfg.Providers = map[string]config.Provider{dialectPrimary: {Kind: sp.Kind, BaseURL: e.up.URL, MaxConcurrent: 64,
		Region: u.Region, CredentialsFile: u.CredentialsFile}}
	cfg.Routes = []config.Route{{Prefix: "/llm", Provider: dialectPrimary, Policy: "interactive", RetrySafe: true}}
	cfg.Policies = map[string]sluice.Policy{"interactive": fastPolicy("interactive"), "nightly": fastPolicy("nightly")}
	if edit != nil {
		edit(cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("test config: %v", err)
	}
	e.cfg = cfg
	gw, err := New(cfg, Options{AttemptLog: e.logs, Getenv: func(k string) string {
		if v, ok := u.Env[k]; ok {
			return v
		}
		return map[string]string{"UPSTREAM_KEY": "sk-injected-1234"}[k]
	}})
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
	return &dialectEnv{env: e, sp: sp}
}

// send makes the client's call c through the gateway, with its key where
// the dialect's clients send it and the extra header pairs given.
func (e *dialectEnv) send(c dialecttest.Call, header ...string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+"/llm"+c.Path, strings.NewReader(c.Body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	e.sp.SetKey(req.Header, clientKey)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// answer, stream and errorOf read a body as the dialect shapes it, failing
// the test when it is not so shaped.
func (e *dialectEnv) answer(raw string) dialecttest.Answer {
	e.t.Helper()
	a, err := e.sp.Answer([]byte(raw))
	if err != nil {
		e.t.Fatalf("answer: %v", err)
	}
	return a
}

func (e *dialectEnv) stream(raw string) dialecttest.Stream {
	e.t.Helper()
	s, err := e.sp.Stream([]byte(raw))
	if err != nil {
		e.t.Fatalf("stream: %v", err)
	}
	return s
}

func (e *dialectEnv) errorOf(raw string) dialecttest.Error {
	e.t.Helper()
	v, err := e.sp.Error([]byte(raw))
	if err != nil {
		e.t.Fatalf("error body: %v", err)
	}
	return v
}

// outcomes returns the outcome of every line of the attempt log, in order.
func (e *dialectEnv) outcomes() []string {
	var out []string
	for _, l := range e.logLines() {
		o, _ := l["outcome"].(string)
		out = append(out, o)
	}
	return out
}

// A retryable failure (503, Anthropic's 529) is retried out of sight: the
// client gets the second answer, whole; the provider saw two calls, each
// with the client's key.
func dialectRetry(t *testing.T, sp dialecttest.Speaker) {
	e := newDialectEnv(t, sp, sp.Scripts.Retryable+",200", nil)
	resp := e.send(sp.Call(sp.Model, false))
	raw := body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Attempts") != "2" {
		t.Fatalf("%d, Sluice-Attempts %q: %s; want 200 after 2", resp.StatusCode, resp.Header.Get("Sluice-Attempts"), raw)
	}
	if a := e.answer(raw); a.Text != dialecttest.Text {
		t.Errorf("text %q, want %q", a.Text, dialecttest.Text)
	}
	if got, want := e.up.Played(), map[string]int{sp.Scripts.Retryable: 1, "200": 1}; !maps.Equal(got, want) {
		t.Errorf("the fake played %v, want %v", got, want)
	}
	for i, r := range e.up.Requests() {
		if sp.KeyHeader != "" && sp.Key(r.Header) != clientKey {
			t.Errorf("call %d: the provider read key %q from %s, want the client's", i+1, sp.Key(r.Header), sp.KeyHeader)
		}
	}
	if got := e.outcomes(); !slices.Equal(got, []string{"retry", "ok"}) {
		t.Errorf("log outcomes %q, want retry, ok", got)
	}
}

// A caller's error (400) is relayed as the provider gave it, after one
// call, with x-should-retry: false.
func dialectNoRetry(t *testing.T, sp dialecttest.Speaker) {
	e := newDialectEnv(t, sp, sp.Scripts.Invalid+",200", nil)
	resp := e.send(sp.Call(sp.Model, false))
	raw := body(t, resp)
	if resp.StatusCode != 400 || e.up.Calls() != 1 || resp.Header.Get("Sluice-Attempts") != "1" {
		t.Fatalf("%d after %d calls: %s; want the provider's 400 after 1", resp.StatusCode, e.up.Calls(), raw)
	}
	if v := e.errorOf(raw); v.Type != sp.InvalidType {
		t.Errorf("error type %q, want the provider's %q", v.Type, sp.InvalidType)
	}
	if resp.Header.Get("X-Should-Retry") != "false" {
		t.Error("a relayed error lacks x-should-retry: false")
	}
	if got := e.outcomes(); !slices.Equal(got, []string{"fail"}) {
		t.Errorf("log outcomes %q, want fail", got)
	}
}

// A 429 saying, in the dialect's words, that a quota is used up is relayed
// after one call, and the breaker does not count it: under a breaker that
// opens at 2 failures, 3 such calls all reach the provider and leave it
// closed, while one retryable failure then opens it.
func dialectQuota(t *testing.T, sp dialecttest.Speaker) {
	e := newDialectEnv(t, sp, sp.Scripts.Quota, func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Breaker.Failures = 2
		c.Policies["interactive"] = p
	})
	for i := range 3 {
		resp := e.send(sp.Call(sp.Model, false))
		raw := body(t, resp)
		if resp.StatusCode != 429 || !sp.Quota([]byte(raw)) || e.up.Calls() != i+1 {
			t.Fatalf("call %d: %d %s after %d upstream calls; want the provider's quota 429 after %d",
				i+1, resp.StatusCode, raw, e.up.Calls(), i+1)
		}
	}
	for _, l := range e.logLines() {
		if l["error"] != "quota_exhausted" || l["outcome"] != "fail" {
			t.Errorf("log line %v, want error quota_exhausted, outcome fail", l)
		}
	}
	rec, err := e.gw.Store().Load(dialectPrimary)
	if err != nil || rec.State.String() != "closed" || rec.Failures != 0 {
		t.Fatalf("breaker %+v (%v), want closed with no failures", rec, err)
	}

	// The same breaker counts a retryable failure: it opens, and the next
	// call is refused in the dialect's shape without reaching upstream.
	body(t, e.send(sp.Call(sp.Model, false), fake.ScriptHeader, sp.Scripts.Retryable))
	before := e.up.Calls()
	resp := e.send(sp.Call(sp.Model, false))
	raw := body(t, resp)
	if v := e.errorOf(raw); resp.StatusCode != 503 || v.Code != "provider_down" || e.up.Calls() != before {
		t.Errorf("%d %+v after %d more upstream calls; want 503 provider_down after none",
			resp.StatusCode, v, e.up.Calls()-before)
	}
}

// A stream cut or stalled (past idle) after two pieces of text reaches
// the client with those pieces, then the dialect's error frame
// (stream_cut, stream_stalled), never an ending of the gateway's making,
// after one call.
func dialectStreamCut(t *testing.T, sp dialecttest.Speaker) {
	for _, tt := range []struct{ script, code, outcome, class string }{
		{sp.Scripts.Cut, "stream_cut", "fail", "stream_cut"},
		{sp.Scripts.Stall, "stream_stalled", "stream_stalled", "timeout_idle"},
	} {
		t.Run(tt.code, func(t *testing.T) {
			e := newDialectEnv(t, sp, tt.script+",200", nil)
			start := time.Now()
			resp := e.send(sp.Call(sp.Model, true))
			raw := body(t, resp)
			if took := time.Since(start); took > 4*time.Second {
				t.Errorf("the stream ended after %v, want within idle 300ms (+3s for a busy machine)", took)
			}
			s := e.stream(raw)
			if resp.StatusCode != 200 || !slices.Equal(s.Pieces, dialecttest.Words[:2]) {
				t.Fatalf("%d, text %q; want 200 and %q", resp.StatusCode, s.Pieces, dialecttest.Words[:2])
			}
			if s.End || s.Errors != 1 || s.Err == nil || s.Err.Code != tt.code {
				t.Errorf("stream %v (%s): want no end and one error frame, %s, last", s, raw, tt.code)
			}
			if e.up.Calls() != 1 {
				t.Errorf("upstream calls %d, want 1 (never retried after the first byte)", e.up.Calls())
			}
			if l := e.logLines(); len(l) != 1 || l[0]["outcome"] != tt.outcome || l[0]["error"] != tt.class {
				t.Errorf("log %v, want one %s line, error %s", l, tt.outcome, tt.class)
			}
		})
	}
}

// A stream that fails before its first event reached no client byte: its
// first event the provider's error, silence past first_byte, or a reset
// connection. It is retried, and the client gets only the second stream,
// whole.
func dialectFirstEventError(t *testing.T, sp dialecttest.Speaker) {
	for _, script := range []string{sp.Scripts.FirstEventError, "stream:stall-after=0", "reset"} {
		t.Run(script, func(t *testing.T) {
			e := newDialectEnv(t, sp, script+",200", nil)
			resp := e.send(sp.Call(sp.Model, true))
			raw := body(t, resp)
			s := e.stream(raw)
			if resp.StatusCode != 200 || !slices.Equal(s.Pieces, dialecttest.Words) || !s.End || s.Errors != 0 {
				t.Fatalf("%d, stream %v (%s); want 200 and only the second answer, whole", resp.StatusCode, s, raw)
			}
			if got, want := e.up.Played(), map[string]int{script: 1, "200": 1}; !maps.Equal(got, want) ||
				resp.Header.Get("Sluice-Attempts") != "2" {
				t.Errorf("the fake played %v, Sluice-Attempts %q; want %v, 2", got, resp.Header.Get("Sluice-Attempts"), want)
			}
			if got := e.outcomes(); len(got) != 2 || got[0] == "ok" || got[1] != "ok" {
				t.Errorf("log outcomes %q, want a failed attempt, then ok", got)
			}
		})
	}
}

// Under a budget, a call's cost is its usage as the provider reported it,
// priced: the fake's prompt tokens (its body's bytes / 4, as it reached
// the provider) at $1,000 and its 5 output tokens at $20,000 per million,
// for a whole answer and a stream alike; the budget settles at their sum.
func dialectSpend(t *testing.T, sp dialecttest.Speaker) {
	const in, out = 1000, 20000
	e := newDialectEnv(t, sp, "200", func(c *config.Config) {
		c.Prices = map[string]spend.Price{sp.Model: {Input: in, Output: out}}
		c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 10, Period: "day", Scope: "all"}}
	})
	for _, stream := range []bool{false, true} {
		resp := e.send(sp.Call(sp.Model, stream))
		raw := body(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("stream %v: %d %s", stream, resp.StatusCode, raw)
		}
		if stream {
			if s := e.stream(raw); !s.End || !slices.Equal(s.Pieces, dialecttest.Words) {
				t.Errorf("stream %+v, want the whole answer", s)
			}
		} else if a := e.answer(raw); a.Output != 5 || a.Input != int64(len(e.up.Requests()[0].Body)/4) {
			t.Errorf("usage %d in, %d out; want the fake's", a.Input, a.Output)
		}
	}
	reqs, lines := e.up.Requests(), e.logLines()
	if len(reqs) != 2 || len(lines) != 2 {
		t.Fatalf("%d upstream calls, %d log lines; want 2, 2", len(reqs), len(lines))
	}
	var total float64
	for i, r := range reqs {
		want := float64(len(r.Body)/4*in+5*out) / 1e6
		total += want
		if got, _ := lines[i]["cost_usd"].(float64); math.Abs(got-want) > 1e-9 {
			t.Errorf("call %d: cost_usd %v, want %v", i+1, lines[i]["cost_usd"], want)
		}
	}
	m := body(t, e.do("GET", "/metrics", ""))
	line := metricLines(m, "sluice_budget_spent_usd")
	_, v, _ := strings.Cut(line, `{budget="daily"} `)
	if got, err := strconv.ParseFloat(v, 64); err != nil || math.Abs(got-total) > 1e-9 {
		t.Errorf("%q, want the budget settled at %v", line, total)
	}
}

// When the primary is down (every attempt a retryable failure), another
// provider of the same dialect answers with the fallback's model, named
// where the dialect names it: the fallback's call is the one a client
// naming that model would have made, with the fallback's own key.
func dialectFallback(t *testing.T, sp dialecttest.Speaker) {
	backup := fake.NewServer("200")
	t.Cleanup(backup.Close)
	e := newDialectEnv(t, sp, sp.Scripts.Retryable, func(c *config.Config) {
		p := c.Providers[dialectPrimary]
		p.BaseURL = backup.URL
		if sp.KeyHeader != "" {
			p.APIKeyEnv = "UPSTREAM_KEY"
		}
		if sp.Prepare != nil {
			u := sp.Prepare(t, backup)
			p.Region, p.CredentialsFile = u.Region, u.CredentialsFile
		}
		c.Providers["backup"] = p
		c.Routes[0].Fallbacks = []config.Target{{Provider: "backup", Model: sp.Fallback}}
	})
	resp := e.send(sp.Call(sp.Model, false))
	raw := body(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "backup" || resp.Header.Get("Sluice-Model") != sp.Fallback {
		t.Fatalf("%d from %q, %q: %s; want 200 from backup, %s", resp.StatusCode,
			resp.Header.Get("Sluice-Provider"), resp.Header.Get("Sluice-Model"), raw, sp.Fallback)
	}
	if a := e.answer(raw); a.Text != dialecttest.Text {
		t.Errorf("text %q", a.Text)
	}
	if e.up.Calls() != 3 || backup.Calls() != 1 {
		t.Fatalf("calls to the primary %d, the backup %d; want 3, 1", e.up.Calls(), backup.Calls())
	}
	for i, r := range e.up.Requests() {
		if sp.ModelOf(r) != sp.Model {
			t.Errorf("primary call %d named %q, want %q", i+1, sp.ModelOf(r), sp.Model)
		}
	}
	r, want := backup.Requests()[0], sp.Call(sp.Fallback, false)
	if sp.ModelOf(r) != sp.Fallback || r.Path != want.URLPath() || string(r.Body) != want.Body {
		t.Errorf("the backup got %s %s naming %q; want %s %s", r.Path, r.Body, sp.ModelOf(r), want.URLPath(), want.Body)
	}
	if sp.KeyHeader != "" && sp.Key(r.Header) != "sk-injected-1234" {
		t.Errorf("the backup read key %q from %s, want its own", sp.Key(r.Header), sp.KeyHeader)
	}
	lines := e.logLines()
	if len(lines) != 4 || lines[0]["model"] != sp.Model || lines[3]["provider"] != "backup" ||
		lines[3]["model"] != sp.Fallback || lines[3]["outcome"] != "ok" {
		t.Errorf("log %v, want 3 lines of the primary, then the backup's ok", lines)
	}
}
