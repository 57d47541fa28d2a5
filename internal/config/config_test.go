package config

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

func mustParse(t *testing.T, src string) *Config {
	t.Helper()
	c, err := Parse([]byte(src))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return c
}

func TestDefaultValidates(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatalf("Default().Validate() = %v", err)
	}
}

// TestDefaultValues checks every built-in value against DESIGN.md, number
// by number.
func TestDefaultValues(t *testing.T) {
	c := Default()
	s := time.Second
	checks := []struct {
		name      string
		got, want any
	}{
		{"listen", c.Listen, "127.0.0.1:8080"},
		{"drain", c.Drain, 10 * time.Minute}, // the longest total, nightly's: a stop cuts no call
		{"state", c.State, State{Backend: "file"}},
		{"log", c.Log, Log{}},
		{"auth.keys", len(c.Auth.Keys), 0},
		{"admin", c.Admin, Admin{}},
		{"providers", c.Providers, map[string]Provider{
			"openai":    {Kind: "openai", BaseURL: "https://api.openai.com", MaxConcurrent: DefaultMaxConcurrent},
			"anthropic": {Kind: "anthropic", BaseURL: "https://api.anthropic.com", MaxConcurrent: DefaultMaxConcurrent},
		}},
		{"routes", c.Routes, []Route{
			{Prefix: "/openai", Provider: "openai", Policy: "interactive", RetrySafe: true},
			{Prefix: "/anthropic", Provider: "anthropic", Policy: "interactive", RetrySafe: true},
		}},
		{"policies", len(c.Policies), 2},
		{"budgets", len(c.Budgets), 0},
		{"prices", len(c.Prices), 0},
		{"limits", c.Limits, Limits{Rates: []limit.Limit{}, MaxBodyBytes: 20 * 1024 * 1024, ReadHeaderTimeout: 10 * s, MaxHeaderBytes: 64 * 1024, PromoteAfter: 30 * s}},
	}
	for _, ch := range checks {
		if !reflect.DeepEqual(ch.got, ch.want) {
			t.Errorf("%s = %#v, want %#v", ch.name, ch.got, ch.want)
		}
	}
	checkPolicyNumbers(t, c.Policies["interactive"], policyNumbers{
		name: "interactive", connect: 5 * s, firstByte: 20 * s, idle: 15 * s, total: 30 * s,
		attempts: 3, base: 400 * time.Millisecond, cap: 16 * s, maxRetryAfter: 20 * s,
		failures: 5, cool: 30 * s, slowThreshold: 15 * s, slowCount: 3, slowWindow: 60 * s,
	})
	checkPolicyNumbers(t, c.Policies["nightly"], policyNumbers{
		name: "nightly", connect: 10 * s, firstByte: 120 * s, idle: 30 * s, total: 600 * s,
		attempts: 5, base: s, cap: 60 * s, maxRetryAfter: 120 * s,
		failures: 5, cool: 60 * s, slowThreshold: 0, slowCount: 3, slowWindow: 60 * s,
	})
}

type policyNumbers struct {
	name                            string
	connect, firstByte, idle, total time.Duration
	attempts                        int
	base, cap, maxRetryAfter        time.Duration
	failures                        int
	cool, slowThreshold             time.Duration
	slowCount                       int
	slowWindow                      time.Duration
}

func checkPolicyNumbers(t *testing.T, p sluice.Policy, w policyNumbers) {
	t.Helper()
	got := policyNumbers{
		name: p.Name, connect: p.Timeout.Connect, firstByte: p.Timeout.FirstByte,
		idle: p.Timeout.Idle, total: p.Timeout.Total, attempts: p.Retry.MaxAttempts,
		base: p.Retry.Base, cap: p.Retry.Cap, maxRetryAfter: p.Retry.MaxRetryAfter,
		failures: p.Breaker.Failures, cool: p.Breaker.Cool,
		slowThreshold: p.Breaker.Slow.Threshold, slowCount: p.Breaker.Slow.Count,
		slowWindow: p.Breaker.Slow.Window,
	}
	if got != w {
		t.Errorf("policy %s:\n got  %+v\n want %+v", w.name, got, w)
	}
	if want := []int{408, 429, 500, 502, 503, 504, 529}; !reflect.DeepEqual(p.Retry.Statuses, want) {
		t.Errorf("policy %s: statuses = %v, want %v", w.name, p.Retry.Statuses, want)
	}
	if want := []string{"insufficient_quota", "billing_hard_limit_reached"}; !reflect.DeepEqual(p.Retry.QuotaMarkers, want) {
		t.Errorf("policy %s: quota markers = %v, want %v", w.name, p.Retry.QuotaMarkers, want)
	}
	if p.BreakerScope != sluice.ScopeProvider {
		t.Errorf("policy %s: scope = %q, want provider", w.name, p.BreakerScope)
	}
	if p.Breaker.Lease != w.total {
		t.Errorf("policy %s: lease = %v, want total %v", w.name, p.Breaker.Lease, w.total)
	}
	if p.Retry.Budget != 0.2 {
		t.Errorf("policy %s: retry budget = %v, want 0.2", w.name, p.Retry.Budget)
	}
}

// TestParseDesignExample parses the config block of DESIGN.md, which shows
// the default values: it must give exactly Default(), but for its drain:
// 30s there is a value of its own, shorter than the default (the longest
// total, 10m).
func TestParseDesignExample(t *testing.T) {
	data, err := os.ReadFile("testdata/design.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(data)
	if err != nil {
		t.Fatalf("Parse(design.yaml): %v", err)
	}
	want := Default()
	want.Drain = 30 * time.Second
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(design.yaml) =\n%+v\nwant Default() with drain 30s =\n%+v", got, want)
	}
}

func TestParseEmptyGivesDefaults(t *testing.T) {
	for _, src := range []string{"", "\n", "# only a comment\n", "---\n", "listen: 127.0.0.1:8080\n---\n"} {
		if got := mustParse(t, src); !reflect.DeepEqual(got, Default()) {
			t.Errorf("Parse(%q) differs from Default()", src)
		}
	}
}

func TestParseOverrides(t *testing.T) {
	c := mustParse(t, `
listen: 0.0.0.0:9000
drain: 1m30s
state: {backend: redis, url: "redis://:secret@10.0.0.5:6379/0"}
log: {attempts: "-"}
auth: {keys: [tok-1, "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]}
admin: {token_env: SLUICE_ADMIN_TOKEN}
providers:
  openai: {api_key_env: OPENAI_API_KEY, max_concurrent: 64}
  groq: {kind: openai, base_url: "https://api.groq.com/openai/"}
routes:
  - prefix: /v1/
    provider: openai
    fallbacks: [{provider: groq, model: llama-3.1-8b}]
  - {prefix: /groq, provider: groq, policy: nightly, retry_safe: false}
budgets:
  - {name: daily, limit_usd: 20, period: day}
  - {name: per-key, limit_usd: 2.5, period: 6h, scope: key, unpriced: refuse, on_store_error: allow}
prices:
  gpt-4o-mini: {input: 0.15, output: 0.60}
  "gpt-4.1*": {input: 2, output: 8}
limits: {max_body: 512KiB, read_header_timeout: 5s, max_header_bytes: 32KiB}
`)
	want := &Config{
		Listen: "0.0.0.0:9000",
		Drain:  90 * time.Second,
		State:  State{Backend: "redis", URL: "redis://:secret@10.0.0.5:6379/0"},
		Log:    Log{Attempts: "-"},
		Auth: Auth{Keys: []string{"tok-1",
			"sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},
		Admin: Admin{TokenEnv: "SLUICE_ADMIN_TOKEN"},
		Providers: map[string]Provider{
			"openai": {Kind: "openai", BaseURL: "https://api.openai.com",
				APIKeyEnv: "OPENAI_API_KEY", MaxConcurrent: 64},
			"groq": {Kind: "openai", BaseURL: "https://api.groq.com/openai", MaxConcurrent: DefaultMaxConcurrent},
		},
		Routes: []Route{
			{Prefix: "/v1", Provider: "openai", Policy: "interactive", RetrySafe: true,
				Fallbacks: []Target{{Provider: "groq", Model: "llama-3.1-8b"}}},
			{Prefix: "/groq", Provider: "groq", Policy: "nightly", RetrySafe: false},
		},
		Policies: Default().Policies,
		Budgets: []spend.Budget{
			{Name: "daily", LimitUSD: 20, Period: "day", Scope: "all"},
			{Name: "per-key", LimitUSD: 2.5, Period: "6h", Scope: "key", AllowOnLedgerError: true},
		},
		Prices: map[string]spend.Price{
			"gpt-4o-mini": {Input: 0.15, Output: 0.60},
			"gpt-4.1*":    {Input: 2, Output: 8},
		},
		Limits:      Limits{Rates: []limit.Limit{}, MaxBodyBytes: 512 << 10, ReadHeaderTimeout: 5 * time.Second, MaxHeaderBytes: 32 << 10, PromoteAfter: 30 * time.Second},
		Tracing:     Tracing{SampleRatio: 1},
		Idempotency: Default().Idempotency,
	}
	if !reflect.DeepEqual(c, want) {
		t.Errorf("got\n%+v\nwant\n%+v", c, want)
	}
}

// TestPartialPolicyInherits: a policy takes the fields it leaves out from
// the built-in policy of its name, or from interactive.
func TestPartialPolicyInherits(t *testing.T) {
	c := mustParse(t, `
policies:
  interactive:
  nightly:
    retry: {max_attempts: 7}
  batch:
    timeout: {total: 5m}
    breaker: {scope: model, slow: {threshold: 0s}}
`)
	if got, want := c.Policies["interactive"], sluice.Interactive(); !reflect.DeepEqual(got, want) {
		t.Errorf("interactive = %+v, want the built-in %+v", got, want)
	}
	n := sluice.Nightly()
	n.Retry.MaxAttempts = 7
	if got := c.Policies["nightly"]; !reflect.DeepEqual(got, n) {
		t.Errorf("nightly = %+v, want %+v", got, n)
	}
	b := sluice.Interactive()
	b.Name = "batch"
	b.Timeout.Total = 5 * time.Minute
	b.Breaker.Lease = 5 * time.Minute
	b.BreakerScope = sluice.ScopeModel
	b.Breaker.Slow.Threshold = 0
	if got := c.Policies["batch"]; !reflect.DeepEqual(got, b) {
		t.Errorf("batch = %+v, want %+v", got, b)
	}
}

func TestSectionsReplaceWholesale(t *testing.T) {
	c := mustParse(t, `
providers:
  local: {kind: openai, base_url: "http://127.0.0.1:11434"}
routes:
  - {prefix: /local, provider: local, policy: fast}
policies:
  fast: {timeout: {total: 40s}}
`)
	if len(c.Providers) != 1 || len(c.Routes) != 1 || len(c.Policies) != 1 {
		t.Fatalf("providers %d, routes %d, policies %d; want 1 each",
			len(c.Providers), len(c.Routes), len(c.Policies))
	}
	if got := c.Policies["fast"].Timeout.Connect; got != 5*time.Second {
		t.Errorf("fast connect = %v, want interactive's 5s", got)
	}
}

func TestProviderNamedLikeBuiltinInherits(t *testing.T) {
	c := mustParse(t, "providers:\n  anthropic: {max_concurrent: 8}\n  openai:\nroutes: [{prefix: /a, provider: anthropic}, {prefix: /o, provider: openai}]\n")
	want := map[string]Provider{
		"anthropic": {Kind: "anthropic", BaseURL: "https://api.anthropic.com", MaxConcurrent: 8},
		"openai":    {Kind: "openai", BaseURL: "https://api.openai.com", MaxConcurrent: DefaultMaxConcurrent},
	}
	if !reflect.DeepEqual(c.Providers, want) {
		t.Errorf("providers = %+v, want %+v", c.Providers, want)
	}
}

func TestAliasesAndMergeKeys(t *testing.T) {
	c := mustParse(t, `
policies:
  interactive: &base
    retry: {max_attempts: 2}
    timeout: {connect: 2s, first_byte: 90s, idle: 30s, total: 300s}
  batch:
    <<: *base
    retry: {max_attempts: 4}
  copy: *base
`)
	in, batch, cp := c.Policies["interactive"], c.Policies["batch"], c.Policies["copy"]
	if in.Timeout.FirstByte != 90*time.Second || in.Retry.MaxAttempts != 2 {
		t.Errorf("interactive = %+v", in)
	}
	if batch.Timeout != in.Timeout || batch.Retry.MaxAttempts != 4 || batch.Retry.Base != 400*time.Millisecond {
		t.Errorf("batch = %+v, want interactive's timeouts and 4 attempts", batch)
	}
	cp.Name = "interactive"
	if !reflect.DeepEqual(cp, in) {
		t.Errorf("copy = %+v, want %+v", cp, in)
	}
}

func TestSizes(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"0", 0, true}, {"1024", 1024, true}, {"10B", 10, true}, {"512KiB", 512 << 10, true},
		{"20MiB", 20 << 20, true}, {"20 MiB", 20 << 20, true}, {"1GiB", 1 << 30, true},
		{"20MB", 0, false}, {"20M", 0, false}, {"20mib", 0, false}, {"1.5MiB", 0, false},
		{"-1", 0, false}, {"", 0, false}, {"MiB", 0, false},
		{"9223372036854775807", 9223372036854775807, true}, {"9223372036854775808", 0, false},
		{"8589934592GiB", 0, false},
	}
	for _, tc := range cases {
		got, ok := parseSize(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("parseSize(%q) = %d, %v; want %d, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryBudget(t *testing.T) {
	cases := []struct {
		in   string
		want float64
	}{{"0.5", 0.5}, {"20%", 0.2}, {"1", 1}, {"off", -1}}
	for _, tc := range cases {
		c := mustParse(t, "policies: {interactive: {retry: {budget: "+tc.in+"}}}\n")
		if got := c.Policies["interactive"].Retry.Budget; got != tc.want {
			t.Errorf("budget %s = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func TestValidateAfterFlagOverride(t *testing.T) {
	c := Default()
	p := c.Providers["openai"]
	p.APIKeyEnv = "OPENAI_API_KEY"
	c.Providers["openai"] = p
	if err := c.Validate(); err != nil {
		t.Fatalf("loopback with api_key_env: %v", err)
	}
	c.Listen = "0.0.0.0:8080"
	err := c.Validate()
	want := "config: providers.openai.api_key_env: the gateway would hand this provider's key to anyone who reaches 0.0.0.0:8080; add auth.keys or listen on 127.0.0.1"
	if err == nil || err.Error() != want {
		t.Fatalf("non-loopback with api_key_env: %v\nwant %s", err, want)
	}
	c.Auth.Keys = []string{"client-token"}
	if err := c.Validate(); err != nil {
		t.Fatalf("with auth.keys: %v", err)
	}
	for _, l := range []string{"localhost:1", "[::1]:8080", "127.0.0.2:80"} {
		c := Default()
		c.Providers["openai"] = p
		c.Listen = l
		if err := c.Validate(); err != nil {
			t.Errorf("listen %s: %v", l, err)
		}
	}
}

func TestErrorLineAndFile(t *testing.T) {
	src := "listen: 127.0.0.1:8080\npolicies:\n  interactive:\n    retry:\n      max_atempts: 4\n"
	_, err := Parse([]byte(src))
	want := "config: policies.interactive.retry.max_atempts: unknown key (did you mean max_attempts?) at line 5"
	if err == nil || err.Error() != want {
		t.Errorf("Parse error = %v\nwant %s", err, want)
	}
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	src = "policies:\n  nightly:\n    timeout: {total: 30x}\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Load(path)
	want = `config: policies.nightly.timeout.total: "30x" is not a duration (write e.g. 30s or 2m) at ` + path + ":3"
	if err == nil || err.Error() != want {
		t.Errorf("Load error = %v\nwant %s", err, want)
	}
	// A semantic error found after decoding points at the nearest key.
	_, err = Parse([]byte("routes:\n  - {prefix: /x, provider: openai}\n  - prefix: /x\n    provider: openai\n"))
	if err == nil || !strings.HasSuffix(err.Error(), "at line 3") {
		t.Errorf("duplicate prefix error = %v, want it at line 3", err)
	}
}

func TestLoad(t *testing.T) {
	c, err := Load("")
	if err != nil || !reflect.DeepEqual(c, Default()) {
		t.Errorf(`Load("") = %v, %v; want the defaults`, c, err)
	}
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:9999\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if c, err := Load(path); err != nil || c.Listen != "127.0.0.1:9999" {
		t.Errorf("Load = %v, %v", c, err)
	}
	_, err = Load(filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil || !strings.HasPrefix(err.Error(), "config: open ") || !strings.Contains(err.Error(), "SLUICE_CONFIG") {
		t.Errorf("Load(missing) = %v", err)
	}
}

func TestStateDirAndAttemptsPath(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	cases := []struct {
		xdg, dir, attempts string
		wantDir, wantLog   string
	}{
		{"", "", "", home + "/.local/state/sluice", home + "/.local/state/sluice/attempts.jsonl"},
		{"/xdg", "", "", "/xdg/sluice", "/xdg/sluice/attempts.jsonl"},
		{"relative", "", "", home + "/.local/state/sluice", home + "/.local/state/sluice/attempts.jsonl"},
		{"/xdg", "/var/lib/sluice", "", "/var/lib/sluice", "/var/lib/sluice/attempts.jsonl"},
		{"", "~/st", "-", home + "/st", "-"},
		{"", "", "~/log.jsonl", home + "/.local/state/sluice", home + "/log.jsonl"},
		{"", "", "/tmp/a.jsonl", home + "/.local/state/sluice", "/tmp/a.jsonl"},
	}
	for _, tc := range cases {
		t.Setenv("XDG_STATE_HOME", tc.xdg)
		c := Default()
		c.State.Dir, c.Log.Attempts = tc.dir, tc.attempts
		dir, err := c.StateDir()
		if err != nil || dir != tc.wantDir {
			t.Errorf("%+v: StateDir = %q, %v; want %q", tc, dir, err, tc.wantDir)
		}
		log, err := c.AttemptsPath()
		if err != nil || log != tc.wantLog {
			t.Errorf("%+v: AttemptsPath = %q, %v; want %q", tc, log, err, tc.wantLog)
		}
	}
}

func TestWarnings(t *testing.T) {
	c := mustParse(t, `
providers:
  openai: {}
  local: {kind: openai, base_url: "http://10.0.0.9:8000"}
  loop: {kind: openai, base_url: "http://127.0.0.1:8000"}
  az: {kind: azure, base_url: "https://my-resource.openai.azure.com"}
  azfake: {kind: azure, base_url: "http://127.0.0.1:9000"}
  azwrong: {kind: azure, base_url: "https://api.openai.com"}
routes:
  - {prefix: /o, provider: openai, fallbacks: [{provider: openai, model: gpt-4o-mini}, {provider: loop, model: m}]}
`)
	want := []string{
		`config: routes[0].fallbacks[0]: shares the breaker of provider "openai" with the route itself; set breaker.scope: model in policy "interactive" so that it is not blocked when the primary's breaker opens`,
		`config: providers.azwrong.base_url: "https://api.openai.com" is not an Azure OpenAI resource's address; kind azure expects https://{resource}.openai.azure.com`,
		"config: providers.local.base_url: plain http to another machine sends prompts unencrypted; use https",
	}
	if got := c.Warnings(); !reflect.DeepEqual(got, want) {
		t.Errorf("Warnings =\n%q\nwant\n%q", got, want)
	}
	if got := Default().Warnings(); len(got) != 0 {
		t.Errorf("Default().Warnings() = %q", got)
	}
}

// TestErrorsHideSecrets: keys, tokens and URL passwords never reach an
// error message.
func TestErrorsHideSecrets(t *testing.T) {
	cases := []struct{ src, secret string }{
		{"auth: {keys: [\"sha256:hunter2hunter2\"]}\n", "hunter2"},
		{"auth: {keys: [\"bad token hunter2\"]}\n", "hunter2"},
		{"state: {backend: redis, url: \"http://u:hunter2@h:1\"}\n", "hunter2"},
		{"state: {backend: redis, url: \"redis://u:hunter2@\"}\n", "hunter2"},
		{"providers: {openai: {base_url: \"https://u:hunter2@api.openai.com\"}}\n", "hunter2"},
		{"providers: {openai: {base_url: \"ftp://u:hunter2@api.openai.com\"}}\n", "hunter2"},
	}
	for _, tc := range cases {
		_, err := Parse([]byte(tc.src))
		if err == nil {
			t.Errorf("Parse(%q) accepted it", tc.src)
			continue
		}
		if strings.Contains(err.Error(), tc.secret) {
			t.Errorf("Parse(%q) error shows the secret: %v", tc.src, err)
		}
	}
}

func TestAliasBombIsRefused(t *testing.T) {
	var b strings.Builder
	b.WriteString("policies:\n  a00: &a00 {timeout: {total: 30s}}\n")
	for i := 1; i < 30; i++ {
		prev := fmt.Sprintf("*a%02d", i-1)
		fmt.Fprintf(&b, "  a%02d: &a%02d {<<: [%s%s]}\n", i, i, strings.Repeat(prev+", ", 9), prev)
	}
	_, err := Parse([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "expands to more than") {
		t.Errorf("alias bomb: %v", err)
	}
	_, err = Parse([]byte("policies: &p\n  interactive: {<<: *p}\n"))
	if err == nil {
		t.Error("self-merging policy accepted")
	}
}

// TestCachePricesDecoded shows that every field of spend.Price can be set:
// the cache prices decode into the price the gateway's meter uses.
func TestCachePricesDecoded(t *testing.T) {
	c, err := Parse([]byte("prices:\n  claude-sonnet*: {input: 3, output: 15, cache_read: 0.3, cache_write: 3.75}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, ok := c.Prices.Of("claude-sonnet-4")
	want := spend.Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	if !ok || got != want {
		t.Fatalf("Prices.Of = %+v, %v; want %+v", got, ok, want)
	}
	// 1M cached prompt tokens cost the cache_read price, not input's.
	if cost := got.Cost(spend.Usage{CacheRead: 1_000_000}); cost != 0.3 {
		t.Errorf("a million cache reads cost $%v, want $0.3", cost)
	}
}

func TestMaxQueueDecoded(t *testing.T) {
	c, err := Parse([]byte("policies:\n  interactive:\n    max_queue: 7s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Policies["interactive"].MaxQueue; got != 7*time.Second {
		t.Errorf("max_queue = %v, want 7s", got)
	}
	_, err = Parse([]byte("policies:\n  interactive:\n    max_queue: -1s\n"))
	if err == nil || !strings.Contains(err.Error(), "policies.interactive.max_queue") || !strings.Contains(err.Error(), "negative") {
		t.Errorf("a negative max_queue: %v, want an error naming the key", err)
	}
}

func TestRatesDecoded(t *testing.T) {
	c, err := Parse([]byte(`limits:
  rates:
    - {name: openai-rpm, provider: openai, requests_per_minute: 120, tokens_per_minute: 30000}
    - {name: per-client, scope: key, requests_per_minute: 10, concurrent: 4}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []limit.Limit{
		{Name: "openai-rpm", Provider: "openai", Scope: "provider",
			Requests: limit.Rate{Limit: 120, Per: time.Minute}, Tokens: limit.Rate{Limit: 30000, Per: time.Minute}},
		{Name: "per-client", Scope: "key", Requests: limit.Rate{Limit: 10, Per: time.Minute}, Tokens: limit.Rate{Per: time.Minute},
			Concurrent: 4},
	}
	if !reflect.DeepEqual(c.Limits.Rates, want) {
		t.Errorf("rates %+v\nwant %+v", c.Limits.Rates, want)
	}
	for _, tt := range []struct{ yaml, want string }{
		{"limits:\n  rates:\n    - {requests_per_minute: 1}\n", "limits.rates[0].name: missing"},
		{"limits:\n  rates:\n    - {name: a, provider: nope, requests_per_minute: 1}\n", "limits.rates[0].provider"},
		{"limits:\n  rates:\n    - {name: a, scope: client, requests_per_minute: 1}\n", "limits.rates[0].scope"},
		{"limits:\n  rates:\n    - {name: a}\n", "limits nothing"},
		{"limits:\n  rates:\n    - {name: a, requests_per_minute: 0}\n", "at least 1"},
		{"limits:\n  rates:\n    - {name: a, requests_per_minute: 1}\n    - {name: a, tokens_per_minute: 1}\n", "also the name of limits.rates[0]"},
		{"limits:\n  rates:\n    - {name: max_concurrent, concurrent: 3}\n", "names the limit each provider's max_concurrent makes"},
		{"limits:\n  rates:\n    - {name: a, concurrent: -1}\n", "limits.rates[0].concurrent"},
	} {
		if _, err := Parse([]byte(tt.yaml)); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want an error containing %q", tt.yaml, err, tt.want)
		}
	}
}

// TestDrainDefaultsToLongestTotal: a drain left out is the longest total
// of the policies the config ends with, so that stopping the gateway cuts
// no call or stream; a drain given is kept.
func TestDrainDefaultsToLongestTotal(t *testing.T) {
	for _, tt := range []struct {
		name, src string
		want      time.Duration
	}{
		{"built-in policies: nightly's total", "", 10 * time.Minute},
		{"null is left out", "drain: ~\n", 10 * time.Minute},
		{"given", "drain: 30s\n", 30 * time.Second},
		{"given as 0", "drain: 0s\n", 0},
		{"interactive alone", "policies:\n  interactive: {timeout: {first_byte: 10s, total: 20s}}\n" +
			"routes: [{prefix: /openai, provider: openai, policy: interactive}]\n", 20 * time.Second},
		{"a longer policy", "policies:\n  interactive:\n  nightly:\n  weekly: {timeout: {total: 1h}}\n", time.Hour},
		{"a changed nightly", "policies:\n  interactive:\n  nightly: {timeout: {total: 15m}}\n", 15 * time.Minute},
	} {
		c := mustParse(t, tt.src)
		if c.Drain != tt.want {
			t.Errorf("%s: drain %v, want %v", tt.name, c.Drain, tt.want)
		}
	}
	if d, name := Default().LongestTotal(); d != 10*time.Minute || name != "nightly" {
		t.Errorf("Default().LongestTotal() = %v, %q; want 10m, nightly", d, name)
	}
}

// TestOversizedFileRefused: a file over 4 MiB is refused unread beyond
// its cap, by Parse and by Load, whose error names the file.
func TestOversizedFileRefused(t *testing.T) {
	big := []byte("listen: 127.0.0.1:8080\n" + strings.Repeat("# padding\n", maxFileSize/10+1))
	if _, err := Parse(big); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") {
		t.Errorf("Parse of %d bytes = %v, want the size refused", len(big), err)
	}
	if _, err := Parse(big[:maxFileSize]); err != nil {
		t.Errorf("Parse of exactly 4 MiB = %v, want it read", err)
	}
	path := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(path, big, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "larger than 4 MiB") || !strings.Contains(err.Error(), path) {
		t.Errorf("Load of %d bytes = %v, want the size refused, naming the file", len(big), err)
	}
}
