package readme

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
)

var etcRE = regexp.MustCompile(`/etc/sluice/[\w.-]+`)

// writeConfig writes a config block to a file, each /etc/sluice/ file it
// names (a credentials file, a CA) made to exist in a temporary directory
// in its place, since the parser checks that they can be read.
func writeConfig(t *testing.T, text string) string {
	t.Helper()
	dir := t.TempDir()
	text = etcRE.ReplaceAllStringFunc(text, func(p string) string {
		f := filepath.Join(dir, filepath.Base(p))
		if err := os.WriteFile(f, []byte("{}"), 0o600); err != nil {
			t.Fatal(err)
		}
		return f
	})
	path := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// parse parses a config block as `sluice check` and serve read it.
func parse(t *testing.T, b block) *config.Config {
	t.Helper()
	c, err := config.Load(writeConfig(t, b.text))
	if err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return c
}

func checkGeminiConfig(t *testing.T, b block) {
	c := parse(t, b)
	if p := c.Providers["gemini"]; p.Kind != "gemini" || p.BaseURL != "https://generativelanguage.googleapis.com" || p.APIKeyEnv != "GEMINI_API_KEY" {
		t.Errorf("gemini is %+v; the README says the preset gives kind gemini and its base_url", p)
	}
	if _, ok := c.Prices.Of("gemini-2.5-flash-lite"); !ok {
		t.Error("gemini-2.5-flash* prices no gemini-2.5-flash model")
	}
	// Run too: checkNodeGemini serves this config.
}

func checkBedrockConfig(t *testing.T, b block) {
	if p := parse(t, b).Providers["bedrock"]; p.BaseURL != "https://bedrock-runtime.us-east-1.amazonaws.com" || p.Region != "us-east-1" {
		t.Errorf("bedrock is %+v; the block says base_url https://bedrock-runtime.us-east-1.amazonaws.com", p)
	}
}

func checkVertexConfig(t *testing.T, b block) {
	if p := parse(t, b).Providers["vertex"]; p.BaseURL != "https://us-central1-aiplatform.googleapis.com" || p.CredentialsFile == "" {
		t.Errorf("vertex is %+v; the block says base_url https://us-central1-aiplatform.googleapis.com", p)
	}
	// Run too: checkNodeVertex serves this config.
}

func checkGrafana(t *testing.T, b block) {
	var v struct {
		APIVersion int `yaml:"apiVersion"`
		Providers  []struct {
			Options struct{ Path string } `yaml:"options"`
		} `yaml:"providers"`
	}
	if err := yaml.Unmarshal([]byte(b.text), &v); err != nil || v.APIVersion != 1 || len(v.Providers) != 1 || v.Providers[0].Options.Path == "" {
		t.Errorf("%s: %v, %+v", b, err, v)
	}
	if _, err := os.Stat(filepath.Join(root(t), "deploy", "grafana", "sluice.json")); err != nil {
		t.Errorf("the dashboard to copy there: %v", err)
	}
}

func checkTracingConfig(t *testing.T, b block) {
	tr := parse(t, b).Tracing
	if !tr.Enabled || tr.SampleRatio != 0.25 || tr.ServiceName != "sluice-edge" || tr.Endpoint != "http://127.0.0.1:4318/v1/traces" {
		t.Errorf("tracing is %+v", tr)
	}
}

func checkFullConfig(t *testing.T, b block) {
	c := parse(t, b)
	if c.Drain != 10*time.Minute {
		t.Errorf("drain is %v; the block says nightly's 10m", c.Drain)
	}
	if n := c.Policies["nightly"]; n.Priority != sluice.PriorityBatch || n.Timeout.Total != 600*time.Second {
		t.Errorf("nightly: {} is %+v; the block says the built-in nightly values, priority batch", n)
	}
	if p, ok := c.Prices.Of("claude-sonnet-4-5"); !ok || p.CacheWrite != 3.75 {
		t.Errorf("claude-sonnet* prices %+v, %v", p, ok)
	}
}

// checkRedisConfigs parses each of the block's three state sections as a
// config: the parser asks no Redis (serve and check do, at start).
func checkRedisConfigs(t *testing.T, b block) {
	parts := strings.Split(strings.TrimSpace(b.text), "\n\n")
	if len(parts) != 3 {
		t.Fatalf("%s: %d sections, want 3 (single, sentinel, cluster)", b, len(parts))
	}
	for i, want := range []string{"single", "sentinel", "cluster"} {
		c := parse(t, block{line: b.line, lang: b.lang, text: parts[i]})
		if got := c.State.Redis.Mode; got != want && !(want == "single" && got == "") {
			t.Errorf("section %d: mode %q, want %s", i+1, got, want)
		}
	}
}

func checkAzureConfig(t *testing.T, b block) {
	if p := parse(t, b).Providers["azure"]; p.Kind != "azure" {
		t.Errorf("azure is %+v", p)
	}
	// Run too: checkNodeAzure serves this config.
}

func checkCompatConfig(t *testing.T, b block) {
	c := parse(t, b)
	for name, p := range c.Providers {
		if p.Kind != "openai" || strings.HasSuffix(p.BaseURL, "/v1") {
			t.Errorf("%s is %+v; the README gives each without /v1, kind openai", name, p)
		}
	}
}

func checkRatesConfig(t *testing.T, b block) {
	c := parse(t, b)
	if n := c.Policies["nightly"]; n.MaxQueue != 120*time.Second {
		t.Errorf("nightly's max_queue is %v, want 120s", n.MaxQueue)
	}
	if len(c.Limits.Rates) != 2 {
		t.Errorf("%d limits, want 2", len(c.Limits.Rates))
	}
}

// checkPriorityConfig parses the Priorities block, and checks what the
// README says a policy of a new name inherits: everything interactive's,
// its max_queue what its own total leaves after first_byte.
func checkPriorityConfig(t *testing.T, b block) {
	c := parse(t, b)
	cron := c.Policies["cron"]
	if cron.Priority != sluice.PriorityBatch || cron.MaxQueue != 240*time.Second || cron.Timeout.Total != 300*time.Second {
		t.Errorf("cron is %+v; the block says batch, total 300s, max_queue 240s", cron)
	}
	if _, ok := c.Policies["interactive"]; !ok || c.Policies["nightly"].Priority != sluice.PriorityBatch {
		t.Errorf("the block's policies are %v; it keeps interactive and nightly", c.Policies)
	}
	if len(c.Limits.Rates) != 1 || c.Limits.Rates[0].Reserve != 0.2 || c.Limits.PromoteAfter != 30*time.Second {
		t.Errorf("rates %+v, promote_after %v", c.Limits.Rates, c.Limits.PromoteAfter)
	}

	bare, err := config.Parse([]byte("policies:\n  interactive:\n  cron: {priority: batch}\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, want := bare.Policies["cron"], sluice.Interactive()
	if got.Timeout != want.Timeout || got.Retry.MaxAttempts != 3 || got.Retry.Budget != want.Retry.Budget ||
		got.Breaker.Failures != 5 || got.Breaker.Cool != 30*time.Second || got.Breaker.Slow != want.Breaker.Slow || got.BreakerScope != sluice.ScopeProvider {
		t.Errorf("cron: {priority: batch} is %+v; the README says it is interactive's but for its priority", got)
	}
	if q := got.Timeout.Total - got.Timeout.FirstByte; got.MaxQueue != 0 || q != 10*time.Second {
		t.Errorf("cron's max_queue is %v (0: total − first_byte, %v); the README says 10s", got.MaxQueue, q)
	}
	if _, err := config.Parse([]byte("policies:\n  cron: {priority: batch}\n")); err == nil {
		t.Error("a policies: section without interactive parses, though the default routes name it; the README says it replaces the built-in ones")
	}
}

func checkPoolConfig(t *testing.T, b block) {
	if p := parse(t, b).Providers["openai"]; len(p.APIKeys) != 2 || p.APIKeys[1].Weight != 2 {
		t.Errorf("openai's pool is %+v", p.APIKeys)
	}
}

// checkLogrotate: the block is deploy/logrotate/sluice's stanza, as the
// README says, less the file's comments.
func checkLogrotate(t *testing.T, b block) {
	f, err := os.ReadFile(filepath.Join(root(t), "deploy", "logrotate", "sluice"))
	if err != nil {
		t.Fatal(err)
	}
	var stanza strings.Builder
	for _, l := range strings.Split(string(f), "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			stanza.WriteString(l + "\n")
		}
	}
	if stanza.String() != b.text {
		t.Errorf("deploy/logrotate/sluice, comments left out, is not the README's stanza:\n%s", stanza.String())
	}
}

// checkLayout: every directory the Layout block names exists.
func checkLayout(t *testing.T, b block) {
	n := 0
	for _, l := range strings.Split(b.text, "\n") {
		for _, w := range strings.Fields(l) {
			if !regexp.MustCompile(`^[a-z][a-z0-9/]*/$`).MatchString(w) {
				break
			}
			n++
			if fi, err := os.Stat(filepath.Join(root(t), w)); err != nil || !fi.IsDir() {
				t.Errorf("Layout names %s: %v", w, err)
			}
		}
	}
	if n < 20 {
		t.Errorf("Layout names %d directories; the parse went wrong", n)
	}
}

func checkResumeConfig(t *testing.T, b block) {
	c := parse(t, b)
	p := c.Policies["interactive"]
	if !p.Resume || p.ResumeMax != 1 || c.Policies["nightly"].Resume {
		t.Errorf("interactive is %+v, nightly resumes %v; the block says resume on interactive, at most once", p, c.Policies["nightly"].Resume)
	}
}

func checkHedgeConfig(t *testing.T, b block) {
	c := parse(t, b)
	h := c.Policies["interactive"].Hedge
	if h.After != (sluice.HedgeAfter{Quantile: 0.95}) || h.MaxShare != 0.05 {
		t.Errorf("interactive's hedge is %+v; the block says after p95, max_share 5%%", h)
	}
}
