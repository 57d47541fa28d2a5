package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/limitstats"
	"github.com/sluice-llm/sluice/limit"
)

// withRate adds a requests-per-minute limit on provider p.
func withRate(name, p string, rpm int64) func(*config.Config) {
	return func(c *config.Config) {
		c.Limits.Rates = append(c.Limits.Rates, limit.Limit{Name: name, Provider: p, Scope: "provider",
			Requests: limit.Rate{Limit: rpm, Per: time.Minute}})
	}
}

// Calls over a limit wait for their turn instead of failing: ten calls at
// once under 600 a minute all succeed, spread over at least nine slots of
// 100 ms, and each wait is in the log.
func TestRateLimitQueuesCalls(t *testing.T) {
	e := newEnv(t, "200", withRate("openai-rpm", "openai", 600))
	start := time.Now()
	var wg sync.WaitGroup
	statuses := make([]int, 10)
	for i := range statuses {
		wg.Go(func() {
			resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
			body(t, resp)
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	for i, s := range statuses {
		if s != 200 {
			t.Errorf("call %d: status %d, want 200", i, s)
		}
	}
	if e.up.Calls() != 10 {
		t.Errorf("upstream calls %d, want 10", e.up.Calls())
	}
	if elapsed < 850*time.Millisecond {
		t.Errorf("ten calls took %v; at 600/min they need at least 900 ms", elapsed)
	}
	var queued int
	var most float64
	for _, l := range e.logLines() {
		if q, ok := l["queued_ms"].(float64); ok {
			queued++
			most = max(most, q)
		}
	}
	if queued < 8 || most < 800 {
		t.Errorf("%d lines with queued_ms, the longest %v ms; want at least 8, one ≥ 800", queued, most)
	}
	m := body(t, e.do("GET", "/metrics", ""))
	if !strings.Contains(m, `sluice_ratelimit_admitted_total{provider="openai"}`) {
		t.Errorf("no admitted count in the metrics")
	}
}

// A call whose turn is further than max_queue is refused at once with 429
// rate_limited in the provider's shape, with when to come back, and
// nothing goes upstream for it.
func TestRateLimitRefusesBeyondMaxQueue(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		withRate("slow", "", 60)(c) // one call a second, every provider together
		c.Limits.Rates[0].Scope = "all"
		for _, name := range []string{"interactive", "nightly"} {
			p := c.Policies[name]
			p.MaxQueue = 300 * time.Millisecond
			c.Policies[name] = p
		}
	})
	if resp := e.do("POST", "/openai/v1/chat/completions", chatBody); resp.StatusCode != 200 {
		t.Fatalf("first call: %d", resp.StatusCode)
	} else {
		body(t, resp)
	}
	for _, tt := range []struct{ path, body, kind string }{
		{"/openai/v1/chat/completions", chatBody, "openai"},
		{"/anthropic/v1/messages", msgStream, "anthropic"},
	} {
		start := time.Now()
		resp := e.do("POST", tt.path, tt.body)
		if resp.StatusCode != 429 {
			t.Fatalf("%s: status %d, want 429", tt.path, resp.StatusCode)
		}
		if d := time.Since(start); d > 250*time.Millisecond {
			t.Errorf("%s: refused after %v, want at once", tt.path, d)
		}
		if typ := gatewayError(t, resp, tt.kind); typ != "rate_limited" {
			t.Errorf("%s: type %q, want rate_limited", tt.path, typ)
		}
		if ra := resp.Header.Get("Retry-After"); ra != "1" && ra != "2" {
			t.Errorf("%s: Retry-After %q, want 1 or 2 (s)", tt.path, ra)
		}
	}
	if e.up.Calls() != 1 {
		t.Errorf("upstream calls %d, want 1", e.up.Calls())
	}
	var refused int
	for _, l := range e.logLines() {
		if l["outcome"] == "rate_limited" {
			refused++
			if l["status"] != 0.0 || l["error"] != "rate_limited" {
				t.Errorf("refusal line %v", l)
			}
		}
	}
	if refused == 0 {
		t.Error("no rate_limited line in the attempt log")
	}
	if m := body(t, e.do("GET", "/metrics", "")); !strings.Contains(m, `sluice_ratelimit_refused_total{provider="anthropic"} 1`) ||
		!strings.Contains(m, `sluice_ratelimit_refused_total{provider="openai"} 1`) {
		t.Errorf("refusals not counted per provider:\n%s", grepLines(m, "sluice_ratelimit_refused"))
	}
}

// A rate-limit 429 with Retry-After pauses the model for every call: one
// that arrives during the pause waits it out instead of spending an
// attempt on a second 429; the breaker is not told.
func TestProviderPauseHoldsOtherCalls(t *testing.T) {
	e := newEnv(t, "429:retry-after=1,200", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Timeout.Total = 5 * time.Second
		p.Breaker.Failures = 1
		c.Policies["interactive"] = p
	})
	first := make(chan *http.Response, 1)
	go func() { first <- e.do("POST", "/openai/v1/chat/completions", chatBody) }()
	// Once the 429's line is written, the pause it asks for is kept.
	waitFor(t, "the first 429", func() bool { return strings.Contains(e.logs.String(), `"status":429`) })
	second := e.do("POST", "/openai/v1/chat/completions", chatBody)
	body(t, second)
	r1 := <-first
	body(t, r1)
	if r1.StatusCode != 200 || second.StatusCode != 200 {
		t.Fatalf("statuses %d and %d, want 200 and 200", r1.StatusCode, second.StatusCode)
	}
	if e.up.Calls() != 3 {
		t.Errorf("upstream calls %d, want 3 (one 429, then one 200 each)", e.up.Calls())
	}
	var waitedLong bool
	for _, l := range e.logLines() {
		if q, _ := l["queued_ms"].(float64); q >= 500 {
			waitedLong = true
		}
	}
	if !waitedLong {
		t.Errorf("no attempt waited out the pause: %v", e.logLines())
	}
}

// GET /sluice/limits lists the limits, the buckets and pauses in the store
// and this process's counts.
func TestLimitsEndpoint(t *testing.T) {
	e := newEnv(t, "200", withRate("openai-rpm", "openai", 600))
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody))
	resp := e.do("GET", "/sluice/limits", "")
	raw := body(t, resp)
	var v struct {
		Limits []struct {
			Name              string `json:"name"`
			Provider          string `json:"provider"`
			RequestsPerMinute int64  `json:"requests_per_minute"`
			Concurrent        int    `json:"concurrent"`
		} `json:"limits"`
		Buckets []struct {
			Key    string     `json:"key"`
			FreeAt *time.Time `json:"free_at"`
		} `json:"buckets"`
	}
	if resp.StatusCode != 200 || json.Unmarshal([]byte(raw), &v) != nil {
		t.Fatalf("%d %s", resp.StatusCode, raw)
	}
	// limits.rates, then each provider's max_concurrent (64 in the test config).
	if len(v.Limits) != 3 || v.Limits[0].Name != "openai-rpm" || v.Limits[0].RequestsPerMinute != 600 ||
		v.Limits[1].Name != "max_concurrent" || v.Limits[1].Concurrent != 64 || v.Limits[1].Provider != "anthropic" {
		t.Errorf("limits %+v", v.Limits)
	}
	var found bool
	for _, b := range v.Buckets {
		if strings.HasPrefix(b.Key, "limit:openai-rpm:") && b.FreeAt != nil {
			found = true
		}
	}
	if !found {
		t.Errorf("no bucket of openai-rpm in %s", raw)
	}
	if resp := e.do("POST", "/sluice/limits", ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d", resp.StatusCode)
	} else {
		body(t, resp)
	}
}

// A tokens-per-minute limit reserves a call's estimate (its body / 4 plus
// max_tokens) and settles on the answer's usage as the provider does:
// Anthropic gives back what a call did not use, so the next call need not
// wait for the estimate's worth; OpenAI keeps what max_tokens reserved, so
// the next call waits for it (past max_queue here: 429). Streams too (the
// gateway asks for their usage).
func TestTokensLimitSettlesAsTheProvider(t *testing.T) {
	for _, tt := range []struct {
		name, path, body string
		second           int
	}{
		{"anthropic json", "/anthropic/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":300,"messages":[{"role":"user","content":"hi"}]}`, 200},
		{"anthropic stream", "/anthropic/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":300,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, 200},
		{"openai json", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","max_tokens":300,"messages":[{"role":"user","content":"hi"}]}`, 429},
		{"openai stream", "/openai/v1/chat/completions", `{"model":"gpt-4o-mini","max_tokens":300,"stream":true,"messages":[{"role":"user","content":"hi"}]}`, 429},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// 6,000 tokens a minute: 10 ms a token. The estimate, about 325
			// tokens, is 3.25 s of the bucket, past max_queue (1.6 s); the
			// call uses about 30.
			e := newEnv(t, "200", func(c *config.Config) {
				c.Limits.Rates = append(c.Limits.Rates, limit.Limit{Name: "tpm", Scope: "provider",
					Tokens: limit.Rate{Limit: 6000, Per: time.Minute}})
			})
			for i, want := range []int{200, tt.second} {
				resp := e.do("POST", tt.path, tt.body)
				body(t, resp)
				if resp.StatusCode != want {
					t.Fatalf("call %d: status %d, want %d", i, resp.StatusCode, want)
				}
			}
			if tt.second == 200 {
				lines := e.logLines()
				if q, _ := lines[len(lines)-1]["queued_ms"].(float64); q > 1000 {
					t.Errorf("the second call waited %v ms; settled on usage it waits about 300 ms", q)
				}
			}
		})
	}
}

// A reload keeps every bucket's place: the limits live in the store the
// snapshots share, so a call after the reload still waits behind the ones
// before it.
func TestReloadKeepsRateLimitBuckets(t *testing.T) {
	edit := func(c *config.Config) {
		withRate("slow", "openai", 60)(c) // one call a second
		p := c.Policies["interactive"]
		p.MaxQueue = 300 * time.Millisecond
		c.Policies["interactive"] = p
	}
	e := newEnv(t, "200", edit)
	if resp := e.do("POST", "/openai/v1/chat/completions", chatBody); resp.StatusCode != 200 {
		t.Fatalf("first call: %d", resp.StatusCode)
	} else {
		body(t, resp)
	}
	err := e.gw.Reload(func() (*config.Config, error) {
		c := config.Default()
		*c = *e.cfg
		c.Limits.Rates = append([]limit.Limit(nil), e.cfg.Limits.Rates...)
		return c, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	body(t, resp)
	if resp.StatusCode != 429 {
		t.Errorf("status %d after the reload, want 429: the bucket's next slot is still a second away", resp.StatusCode)
	}
	if e.up.Calls() != 1 {
		t.Errorf("upstream calls %d, want 1", e.up.Calls())
	}
}

// The concurrency slots a call holds show while it is in flight — in GET
// /sluice/limits (this process's count per limit, and every process's per
// key), in status.json and in sluice_ratelimit_in_flight — for the
// provider's max_concurrent and for a limits.rates concurrent limit
// alike; and all go back to 0 when the call ends (here its client
// leaves).
func TestInFlightShown(t *testing.T) {
	e := newEnv(t, "hang", func(c *config.Config) {
		p := c.Providers["openai"]
		p.MaxConcurrent = 2
		c.Providers["openai"] = p
		c.Limits.Rates = append(c.Limits.Rates, limit.Limit{Name: "agents", Provider: "openai", Scope: "provider", Concurrent: 4})
		pol := c.Policies["interactive"]
		pol.Timeout.FirstByte, pol.Timeout.Total = 20*time.Second, 30*time.Second
		c.Policies["interactive"] = pol
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/openai/v1/chat/completions", strings.NewReader(chatBody))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	waitFor(t, "the call upstream", func() bool { return e.up.Calls() == 1 })
	e.checkInFlight(1)
	// The status page shows the field in a column of both tables (its
	// rendering is checked in a browser by TestStatusPageInChromium).
	if page := string(statusPage); strings.Count(page, `["in flight"]`) != 2 ||
		!strings.Contains(page, "td(b.in_flight || 0)") || !strings.Contains(page, "td(s.in_flight || 0)") {
		t.Error("the status page has no in-flight column for buckets and limits")
	}
	cancel()
	<-done
	waitFor(t, "the slots back", func() bool { return e.gw.current.Load().limiter.Stats()["agents"].InFlight == 0 })
	e.checkInFlight(0)
}

// checkInFlight checks that the openai call slots held are n in every
// view: /sluice/limits, status.json and /metrics.
func (e *env) checkInFlight(n int) {
	t := e.t
	t.Helper()
	var v limitstats.View
	resp := e.do("GET", "/sluice/limits", "")
	if raw := body(t, resp); resp.StatusCode != 200 || json.Unmarshal([]byte(raw), &v) != nil {
		t.Fatalf("GET /sluice/limits: %d %s", resp.StatusCode, raw)
	}
	st := e.status()
	if st.Limits == nil {
		t.Fatalf("status.json has no limits: %s", st.LimitsError)
	}
	for _, view := range []struct {
		name string
		v    limitstats.View
	}{{"/sluice/limits", v}, {"status.json", *st.Limits}} {
		for _, name := range []string{"max_concurrent", "agents"} {
			if got := view.v.Stats[name].InFlight; got != n {
				t.Errorf("%s: stats[%s].in_flight %d, want %d", view.name, name, got, n)
			}
		}
		var found bool
		for _, b := range view.v.Buckets {
			if b.Key == "limit:max_concurrent:openai:concurrent" {
				found = true
				if b.InFlight != int64(n) {
					t.Errorf("%s: bucket %s in_flight %d, want %d", view.name, b.Key, b.InFlight, n)
				}
			}
		}
		if !found {
			t.Errorf("%s: no bucket limit:max_concurrent:openai:concurrent in %+v", view.name, view.v.Buckets)
		}
	}
	m := body(t, e.do("GET", "/metrics", ""))
	for _, name := range []string{"max_concurrent", "agents"} {
		want := fmt.Sprintf("sluice_ratelimit_in_flight{limit=%q} %d", name, n)
		if !strings.Contains(m, want+"\n") {
			t.Errorf("/metrics has no %q: %q", want, metricLines(m, "sluice_ratelimit_in_flight"))
		}
	}
}

// A 429 that says nothing but Retry-After sets a pace for the model: one
// call per Retry-After, shown by GET /sluice/limits with what set it and
// when, and by sluice_ratelimit_learned_per_second; the call after it
// is paced, not released with the others.
func TestLearnedPaceShown(t *testing.T) {
	e := newEnv(t, "429:retry-after=1,200", func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Timeout.Total = 10 * time.Second
		c.Policies["interactive"] = p
	})
	before := time.Now().UTC()
	r := e.do("POST", "/openai/v1/chat/completions", chatBody)
	if b := body(t, r); r.StatusCode != 200 {
		t.Fatalf("status %d: %s", r.StatusCode, b)
	}
	buckets, raw := e.learnedBuckets()
	b, found := buckets["pause:openai/gpt-4o-mini"]
	if !found {
		t.Fatalf("no pause of the model in %s", raw)
	}
	// One call per second, raised by the 200 (half a call a second per
	// answer while it probes).
	if b.SetBy != "429" || b.LearnedPerSecond != 1.5 || b.SetAt == nil || b.SetAt.Before(before.Truncate(time.Millisecond)) {
		t.Errorf("the model's pace: %+v, want 1.5/s set by a 429 since %v", b, before)
	}
	metrics := body(t, e.do("GET", "/metrics", ""))
	if !strings.Contains(metrics, `sluice_ratelimit_learned_per_second{limit="pause:openai/gpt-4o-mini"} 1.5`) {
		t.Errorf("no learned pace in the metrics:\n%s", metrics)
	}
}

// learnedBucket is what GET /sluice/limits tells of a bucket's learned
// pace.
type learnedBucket struct {
	LearnedPerSecond float64    `json:"learned_per_second"`
	SetBy            string     `json:"set_by"`
	SetAt            *time.Time `json:"set_at"`
}

// learnedBuckets returns the buckets GET /sluice/limits lists, by key,
// and its raw answer.
func (e *env) learnedBuckets() (map[string]learnedBucket, string) {
	e.t.Helper()
	raw := body(e.t, e.do("GET", "/sluice/limits", ""))
	var v struct {
		Buckets []struct {
			Key string `json:"key"`
			learnedBucket
		} `json:"buckets"`
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		e.t.Fatalf("%v: %s", err, raw)
	}
	out := make(map[string]learnedBucket, len(v.Buckets))
	for _, b := range v.Buckets {
		out[b.Key] = b.learnedBucket
	}
	return out, raw
}
