package gateway

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// doAs sends a chat call carrying exactly the credentials of h (no
// default key) to path, with extra header pairs.
func (e *env) doAs(h http.Header, path, body string, header ...string) *http.Response {
	e.t.Helper()
	req, err := http.NewRequest("POST", e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

// callerForms are pairs of requests whose credentials differ, in every
// form a client may send one: each pair is two callers.
var callerForms = []struct {
	name         string
	alice, other http.Header
	path         string // "" for the chat path
}{
	{"Bearer", http.Header{"Authorization": {"Bearer sk-alice"}}, http.Header{"Authorization": {"Bearer sk-mallory"}}, ""},
	{"bearer", http.Header{"Authorization": {"bearer sk-alice"}}, http.Header{"Authorization": {"bearer sk-mallory"}}, ""},
	{"Basic", http.Header{"Authorization": {basic("alice", "pw-alice-1")}}, http.Header{"Authorization": {basic("mallory", "pw-mallory-2")}}, ""},
	{"no credential", http.Header{"Authorization": {"bearer sk-alice"}}, http.Header{}, ""},
	{"Sluice-Key + Bearer", http.Header{"Sluice-Key": {"team"}, "Authorization": {"Bearer sk-C"}},
		http.Header{"Sluice-Key": {"team"}, "Authorization": {"Bearer sk-D"}}, ""},
	{"x-api-key", http.Header{"X-Api-Key": {"sk-ant-alice"}}, http.Header{"X-Api-Key": {"sk-ant-mallory"}}, ""},
	{"?key", http.Header{}, http.Header{}, "?key=AIza-mallory"},
}

// One caller is never replayed another's answer: a second request with
// the same Idempotency-Key and body but other credentials is its own call
// upstream, while the first caller, asking again, gets its kept answer.
func TestCallersApartReplay(t *testing.T) {
	const b = `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"secret report for alice"}]}`
	for _, f := range callerForms {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, "200", nil)
			path := "/openai/v1/chat/completions"
			alicePath := path
			if f.path != "" {
				alicePath = path + "?key=AIza-alice"
			}
			first := e.doAs(f.alice, alicePath, b, "Idempotency-Key", "nightly-2026-12-06")
			body(t, first)
			other := e.doAs(f.other, path+f.path, b, "Idempotency-Key", "nightly-2026-12-06")
			body(t, other)
			if other.Header.Get("Idempotent-Replayed") != "" || e.up.Calls() != 2 {
				t.Fatalf("another caller was replayed the first's answer (upstream calls %d)", e.up.Calls())
			}
			again := e.doAs(f.alice, alicePath, b, "Idempotency-Key", "nightly-2026-12-06")
			body(t, again)
			if again.Header.Get("Idempotent-Replayed") != "true" || e.up.Calls() != 2 {
				t.Errorf("the first caller, asking again, was not replayed (upstream calls %d)", e.up.Calls())
			}
		})
	}
}

// Each credential is its own client for a budget scoped per key: one
// caller's spent budget does not refuse another.
func TestCallersApartBudget(t *testing.T) {
	for _, f := range callerForms {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, "200", tenCentCalls(0.10, "key"))
			path := "/openai/v1/chat/completions"
			alicePath := path
			if f.path != "" {
				alicePath = path + "?key=AIza-alice"
			}
			for i, want := range []int{200, 429} {
				resp := e.doAs(f.alice, alicePath, cappedBody)
				body(t, resp)
				if resp.StatusCode != want {
					t.Fatalf("first caller's call %d: %d, want %d", i+1, resp.StatusCode, want)
				}
			}
			resp := e.doAs(f.other, path+f.path, cappedBody)
			body(t, resp)
			if resp.StatusCode != 200 {
				t.Errorf("another caller was refused on the first's budget: %d", resp.StatusCode)
			}
		})
	}
}

// Each credential is its own bucket of a limit scoped per key.
func TestCallersApartLimits(t *testing.T) {
	for _, f := range callerForms {
		t.Run(f.name, func(t *testing.T) {
			e := newEnv(t, "200", func(c *config.Config) {
				c.Limits.Rates = append(c.Limits.Rates, limit.Limit{Name: "per-client", Scope: "key", Requests: limit.Rate{Limit: 600, Per: time.Minute}})
			})
			path := "/openai/v1/chat/completions"
			alicePath := path
			if f.path != "" {
				alicePath = path + "?key=AIza-alice"
			}
			body(t, e.doAs(f.alice, alicePath, chatBody))
			body(t, e.doAs(f.other, path+f.path, chatBody))
			var v struct {
				Buckets []struct {
					Key string `json:"key"`
				} `json:"buckets"`
			}
			raw := body(t, e.do("GET", "/sluice/limits", ""))
			if err := json.Unmarshal([]byte(raw), &v); err != nil {
				t.Fatal(err)
			}
			buckets := map[string]bool{}
			for _, b := range v.Buckets {
				if strings.HasPrefix(b.Key, "limit:per-client:") {
					buckets[b.Key] = true
				}
			}
			if len(buckets) != 2 {
				t.Errorf("buckets of per-client %v, want one per caller (2): %s", buckets, raw)
			}
		})
	}
}

// With auth.keys on, the client of a per-key budget is the entry its
// token matched: provider keys it varies beside it do not make it a new
// client with a fresh budget.
func TestAuthKeyEntryIsTheBudgetClient(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		tenCentCalls(0.10, "key")(c)
		c.Auth.Keys = []string{"team-token-1"}
	})
	for i, want := range []int{200, 429, 429} {
		resp := e.doAs(http.Header{"Sluice-Key": {"team-token-1"}, "Authorization": {"Bearer sk-dummy-" + string(rune('a'+i))}}, "/openai/v1/chat/completions", cappedBody)
		body(t, resp)
		if resp.StatusCode != want {
			t.Errorf("call %d: %d, want %d", i+1, resp.StatusCode, want)
		}
	}
}

// A body whose top level names model, stream or an output limit twice,
// or in another case, is refused 400 invalid_request before any upstream
// call: priced as one model, it would be served as the other.
func TestAmbiguousBodyRefused(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		c.Prices = map[string]spend.Price{"cheap": {Input: 0.01, Output: 0.01}, "expensive": {Input: 1000, Output: 1000}}
		c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 1, Period: "day", Scope: "all"}}
	})
	for _, b := range []string{
		`{"model":"cheap","model":"expensive","messages":[]}`,
		`{"model":"cheap","mod\u0065l":"expensive","messages":[]}`,
		`{"model":"cheap","Model":"expensive","messages":[]}`,
		`{"model":"cheap","stream":false,"stream":true,"messages":[]}`,
		`{"model":"cheap","max_tokens":1,"max_tokens":100000,"messages":[]}`,
	} {
		resp := e.do("POST", "/openai/v1/chat/completions", b)
		got := body(t, resp)
		if resp.StatusCode != 400 || !strings.Contains(got, `"invalid_request"`) || !strings.Contains(got, "JSON parsers disagree") {
			t.Errorf("%s: %d %s, want 400 invalid_request naming the member", b, resp.StatusCode, got)
		}
	}
	if e.up.Calls() != 0 {
		t.Errorf("%d upstream calls, want 0", e.up.Calls())
	}
}

// An answer that holds a credential the request carried (an upstream
// that echoes the request) is relayed but never kept: the duplicate runs
// again, and the store holds nothing of it. The same upstream answering
// without the echo is kept.
func TestAnswerHoldingCredentialNotKept(t *testing.T) {
	for _, tc := range []struct {
		name   string
		echo   func(r *http.Request) string
		kept   bool
		inject bool // the gateway injects the provider's key: the echo is of it
	}{
		{"bearer echoed", func(r *http.Request) string { return r.Header.Get("Authorization") }, false, false},
		{"token alone", func(r *http.Request) string { return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") }, false, false},
		{"cookie echoed", func(r *http.Request) string { return r.Header.Get("Cookie") }, false, false},
		{"no echo", func(r *http.Request) string { return "nothing of yours" }, true, false},
		{"injected key echoed", func(r *http.Request) string { return r.Header.Get("Authorization") }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int32
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				content, _ := json.Marshal(tc.echo(r))
				w.Header().Set("Content-Type", "application/json")
				fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":%s},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, content)
			}))
			defer up.Close()
			e := newEnv(t, "200", func(c *config.Config) {
				p := c.Providers["openai"]
				p.BaseURL = up.URL
				if tc.inject {
					p.APIKeyEnv = "UPSTREAM_KEY"
				}
				c.Providers["openai"] = p
			})
			h := http.Header{"Authorization": {"Bearer sk-client-secret-77"}, "Cookie": {"session=cookie-secret-88"}}
			for range 2 {
				resp := e.doAs(h, "/openai/v1/chat/completions", chatBody, "Idempotency-Key", "echo-1")
				if got := body(t, resp); resp.StatusCode != 200 || !strings.Contains(got, "choices") {
					t.Fatalf("%d %s", resp.StatusCode, got)
				}
			}
			want := map[bool]int32{true: 1, false: 2}[tc.kept]
			if calls.Load() != want {
				t.Errorf("%d upstream calls, want %d", calls.Load(), want)
			}
			m := body(t, e.do("GET", "/metrics", ""))
			counted := strings.Contains(m, `sluice_idempotency_not_kept_total{reason="credential"} 2`)
			if none := !strings.Contains(m, `reason="credential"`); counted == tc.kept || none != tc.kept {
				t.Errorf("metrics count answers not kept for a credential (both calls): %v, want %v", counted, !tc.kept)
			}
		})
	}
}
