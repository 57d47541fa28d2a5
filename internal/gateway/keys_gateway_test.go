package gateway

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/keypool"
	"github.com/sluice-llm/sluice/internal/scrub"
)

// The keys of the test pool, as the environment of newEnv holds them.
const (
	poolKeyA = "sk-pool-aaaaaaaaaaaa"
	poolKeyB = "sk-pool-bbbbbbbbbbbb"
)

// withPool gives provider openai the pool [POOL_KEY_A, POOL_KEY_B].
func withPool(c *config.Config) {
	p := c.Providers["openai"]
	p.APIKeys = []config.PoolKey{{Env: "POOL_KEY_A", Weight: 1}, {Env: "POOL_KEY_B", Weight: 1}}
	c.Providers["openai"] = p
}

// keyViews returns what GET /sluice/keys answers, by hash.
func (e *env) keyViews() map[string]keypool.View {
	e.t.Helper()
	resp := e.do("GET", "/sluice/keys", "")
	var v struct{ Keys []keypool.View }
	if err := json.Unmarshal([]byte(body(e.t, resp)), &v); err != nil || resp.StatusCode != 200 {
		e.t.Fatalf("GET /sluice/keys: %d %v", resp.StatusCode, err)
	}
	out := map[string]keypool.View{}
	for _, k := range v.Keys {
		out[k.Hash] = k
	}
	return out
}

// callsWith counts the upstream calls made with key.
func (e *env) callsWith(key string) int {
	n := 0
	for _, r := range e.up.Requests() {
		if r.Header.Get("Authorization") == "Bearer "+key {
			n++
		}
	}
	return n
}

// A pool of two whose first key is rate limited: every call is served,
// none fails, the first key is tried once and then paused for the 429's
// Retry-After, the client's own key never goes upstream, and the log names
// both keys by hash (never the key).
func TestPoolMovesOffRateLimitedKey(t *testing.T) {
	e := newEnv(t, "200", withPool)
	e.up.Provider.KeyScripts = map[string]string{poolKeyA: "429:retry-after=30"}
	start := time.Now()
	for i := range 6 {
		resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
		if b := body(t, resp); resp.StatusCode != 200 {
			t.Fatalf("call %d: %d %s", i, resp.StatusCode, b)
		}
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("six calls took %v: the move to key B waited", d)
	}
	if a, b := e.callsWith(poolKeyA), e.callsWith(poolKeyB); a != 1 || b != 6 || e.up.Calls() != 7 {
		t.Errorf("upstream calls: key A %d, key B %d, all %d; want 1, 6, 7", a, b, e.up.Calls())
	}
	ha, hb := keypool.Hash(poolKeyA), keypool.Hash(poolKeyB)
	v := e.keyViews()
	if a := v[ha]; a.State != keypool.Paused || a.Env != "POOL_KEY_A" || time.Until(a.Until) < 25*time.Second || time.Until(a.Until) > 31*time.Second {
		t.Errorf("key A %+v, want paused for about 30s", a)
	}
	if b := v[hb]; b.State != keypool.Ready {
		t.Errorf("key B %+v, want ready", b)
	}
	lines := e.logLines()
	seen := map[any]int{}
	for _, l := range lines {
		seen[l["key"]]++
	}
	if seen[ha] != 1 || seen[hb] != 6 || lines[0]["key"] != ha || lines[0]["status"] != 429.0 || lines[0]["outcome"] != "retry" {
		t.Errorf("log keys %v, first line %v; want A once (429, retry), B six times", seen, lines[0])
	}
	if strings.Contains(e.logs.String(), poolKeyA) || strings.Contains(e.logs.String(), poolKeyB) {
		t.Error("a pool key reached the attempt log")
	}
	m := body(t, e.do("GET", "/metrics", ""))
	for _, want := range []string{`sluice_keys{provider="openai",state="paused"} 1`, `sluice_keys{provider="openai",state="ready"} 1`, `sluice_keys{provider="openai",state="out"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if strings.Contains(m, poolKeyA) || strings.Contains(m, poolKeyB) {
		t.Error("a pool key reached the metrics")
	}
	if e.callsWith(clientKey) != 0 {
		t.Error("the client's own key went upstream")
	}
	// The 429 taught key A's pace for the model (nothing else known: one
	// call per Retry-After), shown on /sluice/limits and in the metrics.
	scope := "pause:key:openai:" + ha + "/gpt-4o-mini"
	buckets, raw := e.learnedBuckets()
	if b := buckets[scope]; b.SetBy != "429" || b.LearnedPerSecond <= 0 || b.LearnedPerSecond >= 0.1 {
		t.Errorf("/sluice/limits lacks %s at about one call per 30 s, set by a 429: %s", scope, raw)
	}
	if !strings.Contains(m, `sluice_ratelimit_learned_per_second{limit="`+scope+`"}`) {
		t.Errorf("the metrics lack key A's learned pace")
	}
}

// A key whose quota is used up is taken out and the call moves on; with
// every key out, the provider's quota 429 is relayed and then the
// gateway answers 429 insufficient_quota itself, without an upstream
// call; the admin endpoint's reset brings the key back.
func TestPoolQuotaOutAndReset(t *testing.T) {
	e := newEnv(t, "200", withPool)
	e.up.Provider.KeyScripts = map[string]string{poolKeyA: "429:insufficient_quota,200", poolKeyB: "200,429:insufficient_quota"}
	ha := keypool.Hash(poolKeyA)
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	if b := body(t, resp); resp.StatusCode != 200 {
		t.Fatalf("first call: %d %s, want B's 200", resp.StatusCode, b)
	}
	if v := e.keyViews()[ha]; v.State != keypool.Out || !v.Until.IsZero() {
		t.Errorf("key A %+v, want out until reset", v)
	}
	resp = e.do("POST", "/openai/v1/chat/completions", chatBody)
	if b := body(t, resp); resp.StatusCode != 429 || !strings.Contains(b, "insufficient_quota") {
		t.Fatalf("second call: %d %s, want B's quota 429", resp.StatusCode, b)
	}
	before := e.up.Calls()
	resp = e.do("POST", "/openai/v1/chat/completions", chatBody)
	b := body(t, resp)
	var shape struct {
		Error struct{ Type, Code, Message string }
	}
	json.Unmarshal([]byte(b), &shape)
	if resp.StatusCode != 429 || shape.Error.Code != codeQuota || !strings.Contains(shape.Error.Message, "every key of provider openai is out of quota") {
		t.Errorf("with every key out: %d %s, want 429 insufficient_quota in the OpenAI shape", resp.StatusCode, b)
	}
	if e.up.Calls() != before {
		t.Errorf("%d upstream calls with every key out, want none", e.up.Calls()-before)
	}
	if resp := e.do("POST", "/sluice/keys/"+ha+"/reset", ""); resp.StatusCode != 200 {
		t.Fatalf("reset: %d %s", resp.StatusCode, body(t, resp))
	} else {
		body(t, resp)
	}
	if v := e.keyViews()[ha]; v.State != keypool.Ready {
		t.Errorf("key A after the reset %+v, want ready", v)
	}
	resp = e.do("POST", "/openai/v1/chat/completions", chatBody)
	if b := body(t, resp); resp.StatusCode != 200 || e.callsWith(poolKeyA) != 2 {
		t.Errorf("after the reset: %d %s, key A calls %d; want A's 200 (2 calls)", resp.StatusCode, b, e.callsWith(poolKeyA))
	}
	for _, tt := range []struct {
		method, path string
		want         int
	}{
		{"POST", "/sluice/keys/00000000/reset", 404},
		{"GET", "/sluice/keys/" + ha + "/reset", 405},
		{"POST", "/sluice/keys", 405},
	} {
		if resp := e.do(tt.method, tt.path, ""); resp.StatusCode != tt.want {
			t.Errorf("%s %s: %d, want %d", tt.method, tt.path, resp.StatusCode, tt.want)
		} else {
			body(t, resp)
		}
	}
}

// The keys endpoints are guarded like the other admin endpoints: off
// loopback, only with the admin token, and a refused reset changes nothing.
func TestPoolKeysEndpointNeedsAdminToken(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		withPool(c)
		c.Admin.TokenEnv = "ADMIN_TOKEN"
	})
	e.up.Provider.KeyScripts = map[string]string{poolKeyA: "429:insufficient_quota"}
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody)) // A out
	ha := keypool.Hash(poolKeyA)
	serve := func(method, path, token string) int {
		w := httptest.NewRecorder()
		r := httptest.NewRequest(method, path, nil)
		r.RemoteAddr = "203.0.113.9:4000"
		if token != "" {
			r.Header.Set("Authorization", "Bearer "+token)
		}
		e.gw.ServeHTTP(w, r)
		return w.Code
	}
	for _, tt := range []struct {
		method, path, token string
		want                int
	}{
		{"GET", "/sluice/keys", "", 401},
		{"POST", "/sluice/keys/" + ha + "/reset", "wrong", 401},
		{"GET", "/sluice/keys", "admintok", 200},
	} {
		if got := serve(tt.method, tt.path, tt.token); got != tt.want {
			t.Errorf("%s %s with token %q: %d, want %d", tt.method, tt.path, tt.token, got, tt.want)
		}
	}
	if v := e.keyViews()[ha]; v.State != keypool.Out {
		t.Errorf("key A %+v after a refused reset, want still out", v)
	}
	if got := serve("POST", "/sluice/keys/"+ha+"/reset", "admintok"); got != 200 || e.keyViews()[ha].State != keypool.Ready {
		t.Errorf("reset with the token: %d, key A %+v", got, e.keyViews()[ha])
	}
}

// Every pool key is scrubbed from answers like an injected key.
func TestPoolKeysAreSecrets(t *testing.T) {
	e := newEnv(t, "200", withPool)
	h := http.Header{"A": {poolKeyA}, "B": {poolKeyB}}
	e.gw.secrets.Header(h)
	if h.Get("A") != scrub.Redacted || h.Get("B") != scrub.Redacted {
		t.Errorf("scrubbed %v, want both pool keys redacted", h)
	}
}

// An Anthropic pool puts its keys in x-api-key, the client's never goes
// upstream, and every key out is answered in Anthropic's error shape.
func TestPoolAnthropicShape(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		p := c.Providers["anthropic"]
		p.APIKeys = []config.PoolKey{{Env: "POOL_KEY_A", Weight: 1}, {Env: "POOL_KEY_B", Weight: 1}}
		c.Providers["anthropic"] = p
	})
	e.up.Provider.KeyScripts = map[string]string{poolKeyA: "429:retry-after=30", poolKeyB: "200,429:insufficient_quota"}
	const msg = `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
	resp := e.do("POST", "/anthropic/v1/messages", msg, "X-Api-Key", "client-own-key")
	if b := body(t, resp); resp.StatusCode != 200 {
		t.Fatalf("%d %s, want B's 200", resp.StatusCode, b)
	}
	var keys []string
	for _, r := range e.up.Requests() {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("an Authorization header went upstream: %q", r.Header.Get("Authorization"))
		}
		keys = append(keys, r.Header.Get("X-Api-Key"))
	}
	if strings.Join(keys, ",") != poolKeyA+","+poolKeyB {
		t.Errorf("x-api-key sent %q, want A then B", keys)
	}
	body(t, e.do("POST", "/anthropic/v1/messages", msg))                                                                                                     // B's quota 429: B out, A paused
	e.gw.current.Load().pools.Learn(hook.Answer{Provider: "anthropic", Model: "m", Key: keypool.Hash(poolKeyA), Sent: time.Now(), Status: 429, Quota: true}) // A out too
	resp = e.do("POST", "/anthropic/v1/messages", msg)
	b := body(t, resp)
	var shape struct {
		Type  string
		Error struct{ Type, Message string }
	}
	json.Unmarshal([]byte(b), &shape)
	if resp.StatusCode != 429 || shape.Type != "error" || shape.Error.Type != codeQuota {
		t.Errorf("every key out: %d %s, want 429 in Anthropic's shape", resp.StatusCode, b)
	}
}

// A pool key goes where the provider's dialect reads it: for Gemini in
// x-goog-api-key, every key the client sent dropped, its ?key= too.
func TestPoolKeyInTheDialectsHeader(t *testing.T) {
	rec := &queryRecorder{}
	up := httptest.NewServer(rec)
	defer up.Close()
	e := newEnv(t, "200", func(c *config.Config) {
		withGemini(c)
		c.Providers["gemini"] = config.Provider{Kind: "gemini", BaseURL: up.URL, MaxConcurrent: 8,
			APIKeys: []config.PoolKey{{Env: "POOL_KEY_A", Weight: 1}}}
	})
	resp := e.do("POST", geminiStreamed+"&key="+googleKey, geminiBody, "X-Goog-Api-Key", googleKey)
	if got := body(t, resp); resp.StatusCode != 200 {
		t.Fatalf("%d %s, want 200", resp.StatusCode, got)
	}
	reqs := rec.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream calls, want 1", len(reqs))
	}
	h := reqs[0].Header
	if h.Get("X-Goog-Api-Key") != poolKeyA {
		t.Errorf("x-goog-api-key %q, want the pool's key", h.Get("X-Goog-Api-Key"))
	}
	for k, v := range h {
		if s := strings.Join(v, " "); strings.Contains(s, googleKey) || strings.Contains(s, clientKey) {
			t.Errorf("the client's key went upstream in %s", k)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.queries) != 1 || rec.queries[0] != "alt=sse" {
		t.Errorf("upstream queries %q, want alt=sse alone", rec.queries)
	}
}
