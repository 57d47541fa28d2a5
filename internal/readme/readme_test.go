package readme

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// sluiceBin is the sluice binary TestMain builds, as the README's
// Dockerfile.scratch line does (CGO_ENABLED=0, -trimpath); buildErr says
// why there is none.
var sluiceBin, buildErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sluice-readme-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	sluiceBin = filepath.Join(dir, "sluice")
	cmd := exec.Command("go", "build", "-trimpath", "-o", sluiceBin, "../../cmd/sluice")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		buildErr = fmt.Errorf("go build ./cmd/sluice: %v\n%s", err, out)
	}
	code := m.Run()
	os.RemoveAll(dir)
	if snippetModule.dir != "" {
		os.RemoveAll(snippetModule.dir)
	}
	os.Exit(code)
}

// binary returns the built sluice binary, failing t when it did not build.
func binary(t *testing.T) string {
	t.Helper()
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return sluiceBin
}

// row says how the README's blocks of one language that contain has are
// checked: check runs them, or, for what cannot run here, reason says why
// (and check runs what can: a syntax check, say). An empty has matches
// every block of the language not matched by an earlier row.
type row struct {
	lang, has string
	check     func(t *testing.T, b block)
	reason    string
}

// rows is the table: every block of the README is in exactly one row.
var rows = []row{
	{"sh", "serve --fake", checkTryIt, ""},
	{"sh", "go install github.com/sluice-llm/sluice/cmd/sluice@latest", checkShell,
		"go install …@latest needs the module proxy; the others run"},
	{"sh", "docker build -t sluice .", checkShell, "docker build needs Docker; the go build line runs and the Dockerfiles are checked to exist"},
	{"sh", "./scripts/test ", checkShell, "./scripts/test is the whole suite: scripts/testsummary's TestScriptListsSkips runs it on a module of its own"},
	{"sh", "serve --config sluice.yaml", checkShell, ""},

	{"go", "client := sluice.NewClient(sluice.Interactive())", checkGo, "run against the fake, its provider's address made the fake's"},
	{"go", "httpClient := &http.Client{Transport: &sluice.Transport{", checkGo, "run against the fake, the SDKs given its address per call"},
	{"go", "// Go (openai-go, anthropic-sdk-go)", checkGo, ""},
	{"go", "bedrockruntime.New(", checkGo, ""},
	{"go", "genai.BackendVertexAI", checkGo, ""},

	{"js", "new OpenAI({ baseURL:", checkNodeSyntax,
		"node --check; its OpenAI line runs in fake's TestREADMENodeSnippet; no Anthropic Node SDK is pinned here"},
	{"js", "new GoogleGenAI({ apiKey:", checkNodeGemini, ""},
	{"js", "vertexai: true", checkNodeVertex, ""},
	{"js", "new AzureOpenAI(", checkNodeAzure, ""},

	{"python", "", checkPython, "py_compile only: PyPI is not reachable here, so the Python SDKs cannot be installed"},

	{"yaml", "gemini: {api_key_env: GEMINI_API_KEY}", checkGeminiConfig, ""},
	{"yaml", "kind: bedrock", checkBedrockConfig, ""},
	{"yaml", "kind: vertex", checkVertexConfig, ""},
	{"yaml", "apiVersion: 1", checkGrafana, "Grafana's provisioning file, not Sluice's: parsed as YAML, its path checked"},
	{"yaml", "tracing:\n  enabled: true", checkTracingConfig, ""},
	{"yaml", "listen: 127.0.0.1:8080", checkFullConfig, ""},
	{"yaml", "mode: sentinel", checkRedisConfigs, "three alternative state sections: each parsed as a config of its own (no Redis is asked)"},
	{"yaml", "kind: azure", checkAzureConfig, ""},
	{"yaml", "vllm:", checkCompatConfig, ""},
	{"yaml", "name: per-agent", checkRatesConfig, ""},
	{"yaml", "promote_after: 30s", checkPriorityConfig, ""},
	{"yaml", "resume: true", checkResumeConfig, ""},
	{"yaml", "hedge: {after: p95", checkHedgeConfig, ""},
	{"yaml", "api_keys_env: [OPENAI_KEY_TEAM_A", checkPoolConfig, "parsed; the key variables are read by serve and check, not by the parser"},

	{"", "/var/lib/sluice/attempts.jsonl {", checkLogrotate, ""},
	{"", "sluice (root)", checkLayout, ""},
}

// TestREADMEBlocks runs every code block of the README by its row of the
// table; a block in no row, or a row that matches no block, fails.
func TestREADMEBlocks(t *testing.T) {
	used := make([]bool, len(rows))
	for _, b := range readmeBlocks(t) {
		i := rowOf(b)
		if i < 0 {
			t.Errorf("%s: no row of the table in internal/readme/readme_test.go checks this block: add one (a check, or the reason it cannot run)", b)
			continue
		}
		used[i] = true
		r := rows[i]
		t.Run(fmt.Sprintf("line%d_%s", b.line, r.lang), func(t *testing.T) {
			if r.reason != "" {
				t.Logf("%s: %s", b, r.reason)
			}
			r.check(t, b)
		})
	}
	for i, u := range used {
		if !u {
			t.Errorf("row %d (%s %q) matches no block of the README: remove it", i, rows[i].lang, rows[i].has)
		}
	}
}

// rowOf returns the index of b's row, -1 when none matches.
func rowOf(b block) int {
	for i, r := range rows {
		if r.lang == b.lang && strings.Contains(b.text, r.has) {
			return i
		}
	}
	return -1
}
