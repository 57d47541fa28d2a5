package audit

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain runs the tests without $SLUICE_CONFIG, so that the gateway's
// total is the built-in one unless a test sets it.
func TestMain(m *testing.M) {
	os.Unsetenv("SLUICE_CONFIG")
	os.Exit(m.Run())
}

// TestShortTimeout: a client whose explicit timeout is shorter than the
// gateway's total (the built-in interactive 30s when no config is given)
// is named, in every language and SDK, with the timeout it has, the total
// and where that comes from, and a fix a little above the total; a
// timeout equal to the total or longer is no finding.
func TestShortTimeout(t *testing.T) {
	t.Setenv("SLUICE_CONFIG", "")
	const (
		goOAI    = "package a\nimport (\n\"time\"\n\"github.com/openai/openai-go/v3\"\n\"github.com/openai/openai-go/v3/option\"\n)\n"
		goCommon = "package a\nimport (\n\"net/http\"\n\"time\"\nopenai \"github.com/sashabaranov/go-openai\"\n)\n"
	)
	tests := []struct {
		name, file, src string
		short           string // the timeout named; "" for no finding
		fix             string
	}{
		{"python seconds", "a.py", "from openai import OpenAI\nc = OpenAI(max_retries=0, timeout=20)\n", "20s", "pass timeout=35 (seconds)"},
		{"python at total", "a.py", "from openai import OpenAI\nc = OpenAI(max_retries=0, timeout=30)\n", "", ""},
		{"python httpx client", "a.py", "import httpx\nfrom anthropic import Anthropic\nc = Anthropic(max_retries=0, http_client=httpx.Client(timeout=12.5))\n", "12.5s", "timeout=35"},
		{"js milliseconds", "a.ts", "import OpenAI from 'openai';\nconst c = new OpenAI({ maxRetries: 0, timeout: 10_000 });\n", "10s", "pass timeout: 35000 (milliseconds)"},
		{"js above total", "a.ts", "import OpenAI from 'openai';\nconst c = new OpenAI({ maxRetries: 0, timeout: 35_000 });\n", "", ""},
		{"go request timeout", "a.go", goOAI + "var c = openai.NewClient(option.WithMaxRetries(0), option.WithRequestTimeout(20*time.Second))\n", "20s", "option.WithRequestTimeout(35*time.Second)"},
		{"go named duration", "a.go", goOAI + "const limit = 2 * time.Second\nvar c = openai.NewClient(option.WithMaxRetries(0), option.WithRequestTimeout(limit))\n", "2s", "35*time.Second"},
		{"go above total", "a.go", goOAI + "var c = openai.NewClient(option.WithMaxRetries(0), option.WithRequestTimeout(time.Minute))\n", "", ""},
		{"go http client", "a.go", goOAI + "var c = openai.NewClient(option.WithMaxRetries(0), option.WithHTTPClient(&http.Client{Timeout: 15 * time.Second}))\n", "15s", "35*time.Second"},
		{"go-openai", "a.go", goCommon + "func f() *openai.Client {\ncfg := openai.DefaultConfig(\"k\")\ncfg.HTTPClient = &http.Client{Timeout: 10 * time.Second}\nreturn openai.NewClientWithConfig(cfg)\n}\n", "10s", "config.HTTPClient's Timeout to 35*time.Second"},
		{"google-genai python", "a.py", "from google import genai\nc = genai.Client(http_options={'timeout': 5000})\n", "5s", "HttpOptions(timeout=35000)"},
		{"google-genai js", "a.ts", "import { GoogleGenAI } from '@google/genai';\nconst ai = new GoogleGenAI({ httpOptions: { timeout: 20_000 } });\n", "20s", "httpOptions: {timeout: 35000}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Scan(tree(t, map[string]string{tt.file: tt.src}))
			if err != nil {
				t.Fatal(err)
			}
			var short []Finding
			for _, f := range got {
				if strings.Contains(f.Problem, "gives up after") {
					short = append(short, f)
				}
			}
			if tt.short == "" {
				if len(short) != 0 {
					t.Errorf("findings %+v, want no short timeout", short)
				}
				return
			}
			if len(short) != 1 {
				t.Fatalf("findings %+v, want one short timeout", got)
			}
			f := short[0]
			for _, want := range []string{"gives up after " + tt.short + ",", "before the gateway's total of 30s (the built-in interactive policy)",
				"an SDK retry sends each again", "x-should-retry: false"} {
				if !strings.Contains(f.Problem, want) {
					t.Errorf("problem %q lacks %q", f.Problem, want)
				}
			}
			if !strings.Contains(f.Fix, tt.fix) {
				t.Errorf("fix %q lacks %q", f.Fix, tt.fix)
			}
		})
	}
}

// TestShortTimeoutAgainstConfig: with --config (or $SLUICE_CONFIG) the
// total is the config's policy's: interactive when it has one, else the
// one --policy names; the finding names the policy and the file.
func TestShortTimeoutAgainstConfig(t *testing.T) {
	t.Setenv("SLUICE_CONFIG", "")
	dir := tree(t, map[string]string{"agent.py": "from openai import OpenAI\nc = OpenAI(max_retries=0, timeout=45)\n"})
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(cfg, []byte("policies:\n  interactive: {timeout: {total: 60s}}\n  nightly:\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	// Built in: 45 s is above 30 s.
	if code, out, errOut := run(dir); code != exitClean {
		t.Errorf("no config: exit %d, %s%s; want clean (45s is above the built-in 30s)", code, out, errOut)
	}
	for _, tt := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"--config", []string{"--config", cfg, dir}, "", "before the gateway's total of 1m (policy interactive of " + cfg + ")"},
		{"$SLUICE_CONFIG", []string{dir}, cfg, "before the gateway's total of 1m (policy interactive of " + cfg + ")"},
		{"--policy nightly", []string{"--config", cfg, "--policy", "nightly", dir}, "", "before the gateway's total of 10m (policy nightly of " + cfg + ")"},
		{"--policy, built-in defaults", []string{"--policy", "nightly", dir}, "", "before the gateway's total of 10m (policy nightly of the built-in defaults)"},
	} {
		t.Setenv("SLUICE_CONFIG", tt.env)
		code, out, _ := run(tt.args...)
		if code != exitFindings || !strings.Contains(out, "agent.py:2: OpenAI(…) gives up after 45s, "+tt.want) {
			t.Errorf("%s: exit %d, output %q; want the finding %q", tt.name, code, out, tt.want)
		}
		if !strings.Contains(out, "pass timeout=") {
			t.Errorf("%s: output %q lacks the fix", tt.name, out)
		}
	}
	t.Setenv("SLUICE_CONFIG", "")
	if code, _, errOut := run("--config", cfg, "--policy", "batch", dir); code != exitUsage || !strings.Contains(errOut, "--policy batch: the config has no such policy") {
		t.Errorf("unknown policy: exit %d, stderr %q; want 2 naming it", code, errOut)
	}
	if code, _, errOut := run("--config", filepath.Join(t.TempDir(), "missing.yaml"), dir); code != exitUsage || errOut == "" {
		t.Errorf("missing config: exit %d, stderr %q; want 2", code, errOut)
	}
}
