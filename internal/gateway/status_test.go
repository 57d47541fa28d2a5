package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/history"
	"github.com/sluice-llm/sluice/internal/keypool"
)

// The request ids the scripted incident gives its calls.
const (
	ridDown    = "incident-anthropic-503"
	ridRefused = "incident-anthropic-refused"
	ridPool    = "incident-openai-pool"
)

const haikuBody = `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`

// incident drives a gateway through an incident: anthropic answers 503
// until its breaker opens (three failed attempts) and the next call is
// refused; openai's pool has a first key that gets a 429, so it is paused
// and the calls move to the second; nine $0.10 calls leave $0.10 of a $1
// budget. An admin token is configured.
func incident(t *testing.T) *env {
	t.Helper()
	e := newEnv(t, "200", func(c *config.Config) {
		withPool(c)
		tenCentCalls(1.00, "all")(c)
		c.Budgets[0].AllowUnpriced = true // claude-haiku-4-5, at no cost
		c.Admin.TokenEnv = "ADMIN_TOKEN"
		p := c.Policies["interactive"]
		p.Breaker.Failures = 3
		p.Breaker.Cool = time.Minute
		p.Retry.MaxAttempts = 3
		c.Policies["interactive"] = p
	})
	e.up.Provider.KeyScripts = map[string]string{poolKeyA: "429:retry-after=30"}
	resp := e.do("POST", "/anthropic/v1/messages", haikuBody, fake.ScriptHeader, "503", "X-Request-Id", ridDown)
	if b := body(t, resp); resp.StatusCode != 503 {
		t.Fatalf("the failing call: %d %s", resp.StatusCode, b)
	}
	resp = e.do("POST", "/anthropic/v1/messages", haikuBody, fake.ScriptHeader, "503", "X-Request-Id", ridRefused)
	if b := body(t, resp); resp.StatusCode != 503 || e.up.Calls() != 3 {
		t.Fatalf("the call after: %d %s, %d upstream calls; want refused (503) with 3 calls", resp.StatusCode, b, e.up.Calls())
	}
	for i := range 9 {
		h := []string{}
		if i == 0 {
			h = []string{"X-Request-Id", ridPool}
		}
		resp := e.do("POST", "/openai/v1/chat/completions", cappedBody, h...)
		if b := body(t, resp); resp.StatusCode != 200 {
			t.Fatalf("openai call %d: %d %s", i, resp.StatusCode, b)
		}
	}
	if a, b := e.callsWith(poolKeyA), e.callsWith(poolKeyB); a != 1 || b != 9 {
		t.Fatalf("key A %d calls, key B %d; want 1, 9", a, b)
	}
	return e
}

// status reads GET /sluice/status.json from loopback.
func (e *env) status() statusView {
	e.t.Helper()
	resp := e.do("GET", "/sluice/status.json", "")
	var v statusView
	if err := json.Unmarshal([]byte(body(e.t, resp)), &v); err != nil || resp.StatusCode != 200 {
		e.t.Fatalf("GET /sluice/status.json: %d %v", resp.StatusCode, err)
	}
	return v
}

// status.json after the incident shows what happened: the open breaker
// and until when, the failures by class per provider and model, the paused
// key, the budget nearly spent, and the failed calls with the request ids
// the attempt log holds.
func TestStatusJSONAfterIncident(t *testing.T) {
	e := incident(t)
	v := e.status()
	var anth *BreakerView
	for i := range v.Breakers {
		if v.Breakers[i].Name == "anthropic" {
			anth = &v.Breakers[i]
		}
	}
	if anth == nil || anth.State != "open" || time.Until(anth.Until) < 50*time.Second || time.Until(anth.Until) > 61*time.Second {
		t.Errorf("breaker anthropic %+v, want open for about a minute", anth)
	}
	series := map[string]history.Series{}
	for _, s := range v.Series {
		series[s.Provider+"/"+s.Model] = s
	}
	h := series["anthropic/claude-haiku-4-5"].Hour
	if h.Classes["5xx"] != 3 || h.Classes["breaker_open"] != 1 || h.Attempts != 4 {
		t.Errorf("anthropic/claude-haiku-4-5 this hour: %+v; want 3 5xx and 1 breaker_open", h)
	}
	if now := series["anthropic/claude-haiku-4-5"].Minutes[history.Minutes-1]; now.Attempts+series["anthropic/claude-haiku-4-5"].Minutes[history.Minutes-2].Attempts != 4 {
		t.Errorf("the last two minutes hold %d attempts, want 4", now.Attempts)
	}
	o := series["openai/gpt-4o-mini"].Hour
	if o.Classes["ok"] != 9 || o.Classes["rate_limited"] != 1 || o.LatencyMS.P50 <= 0 || o.TTFBMS.P50 <= 0 {
		t.Errorf("openai/gpt-4o-mini this hour: %+v; want 9 ok, 1 rate_limited, latencies", o)
	}
	keys := map[string]keypool.View{}
	for _, k := range v.Keys {
		keys[k.Hash] = k
	}
	if a := keys[keypool.Hash(poolKeyA)]; a.State != keypool.Paused || time.Until(a.Until) < 20*time.Second {
		t.Errorf("key A %+v, want paused for about 30 s", a)
	}
	if len(v.Budgets) != 1 || v.Budgets[0].Name != "daily" || v.Budgets[0].LimitUSD != 1 ||
		!near(v.Budgets[0].SpentUSD, 0.90) || !near(v.Budgets[0].LeftUSD, 0.10) || v.Budgets[0].Resets.Before(time.Now()) {
		t.Errorf("budgets %+v, want daily: $0.90 spent, $0.10 left", v.Budgets)
	}
	if v.Limits == nil || len(v.Limits.Limits) == 0 {
		t.Errorf("limits %+v, want the providers' max_concurrent", v.Limits)
	}
	logged := map[string]bool{}
	for _, l := range e.logLines() {
		logged[l["request_id"].(string)] = true
	}
	want := map[string]string{ridDown: "5xx", ridRefused: "breaker_open", ridPool: "rate_limited"}
	got := map[string]int{}
	for _, f := range v.Failures {
		if c, ok := want[f.RequestID]; ok && c == f.Class {
			got[f.RequestID]++
		}
		if !logged[f.RequestID] {
			t.Errorf("failure %+v: its request id is not in the attempt log", f)
		}
	}
	if got[ridDown] != 3 || got[ridRefused] != 1 || got[ridPool] != 1 || len(v.Failures) != 5 {
		t.Errorf("failures %+v; want 3 5xx of %s, the refusal of %s, the 429 of %s", v.Failures, ridDown, ridRefused, ridPool)
	}
	if f := v.Failures[len(v.Failures)-1]; f.Status != 503 || f.Error != "status_503" || f.Provider != "anthropic" {
		t.Errorf("the oldest failure %+v, want anthropic's first 503", f)
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// Off loopback the page and status.json need the admin token: status.json
// only as the header, the page also as ?token= (a browser cannot send a
// header when opening a page). The page comes with headers that keep it
// (and the token in its address) to this gateway.
func TestStatusNeedsAdminToken(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) { c.Admin.TokenEnv = "ADMIN_TOKEN" })
	for _, tt := range []struct {
		path, remote, header string
		want                 int
	}{
		{"/sluice/", "192.0.2.7:5000", "", 401},
		{"/sluice/?token=wrong", "192.0.2.7:5000", "", 401},
		{"/sluice/?token=admintok", "192.0.2.7:5000", "", 200},
		{"/sluice/", "192.0.2.7:5000", "admintok", 200},
		{"/sluice/", "127.0.0.1:5000", "", 200},
		{"/sluice/status.json", "192.0.2.7:5000", "", 401},
		{"/sluice/status.json?token=admintok", "192.0.2.7:5000", "", 401},
		{"/sluice/breakers?token=admintok", "192.0.2.7:5000", "", 401},
		{"/sluice/status.json", "192.0.2.7:5000", "admintok", 200},
		{"/sluice/status.json", "[::1]:5000", "", 200},
	} {
		req := httptest.NewRequest("GET", tt.path, nil)
		req.RemoteAddr = tt.remote
		if tt.header != "" {
			req.Header.Set("Authorization", "Bearer "+tt.header)
		}
		w := httptest.NewRecorder()
		e.gw.ServeHTTP(w, req)
		if w.Code != tt.want {
			t.Errorf("%s from %s (header %q): %d, want %d", tt.path, tt.remote, tt.header, w.Code, tt.want)
		}
		if w.Code == 200 && tt.path != "/sluice/status.json" {
			h := w.Header()
			if !strings.Contains(h.Get("Content-Security-Policy"), "connect-src 'self'") || h.Get("Referrer-Policy") != "no-referrer" ||
				h.Get("Cache-Control") != "no-store" || !strings.HasPrefix(h.Get("Content-Type"), "text/html") {
				t.Errorf("%s: headers %v", tt.path, h)
			}
			if b := w.Body.String(); !strings.Contains(b, "status.json") || strings.Contains(b, "admintok") ||
				strings.Contains(b, "src=\"http") || strings.Contains(b, "href=\"http") {
				t.Errorf("%s: the page names no status.json, or carries the token or an external asset", tt.path)
			}
		}
	}
	resp := e.do("POST", "/sluice/status.json", "")
	if body(t, resp); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST status.json: %d, want 405", resp.StatusCode)
	}
}

// The status page asked for without its slash is sent to it, its query
// kept.
func TestStatusPageWithoutSlashRedirects(t *testing.T) {
	e := newEnv(t, "200", nil)
	for path, want := range map[string]string{"/sluice": "/sluice/", "/sluice?token=x": "/sluice/?token=x"} {
		w := httptest.NewRecorder()
		req := httptest.NewRequest("GET", path, nil)
		req.RemoteAddr = "127.0.0.1:1"
		e.gw.ServeHTTP(w, req)
		if w.Code != http.StatusMovedPermanently || w.Header().Get("Location") != want {
			t.Errorf("GET %s: %d to %q, want 301 to %q", path, w.Code, w.Header().Get("Location"), want)
		}
	}
}
