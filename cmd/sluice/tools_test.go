package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/report"
)

// runTool runs a command in process and returns its exit code, stdout and
// stderr.
func runTool(args ...string) (int, string, string) {
	var out, errb strings.Builder
	code := run(args, strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// TestToolsFollowTheGateway: a gateway started with $SLUICE_CONFIG (no
// --config) opens its breaker; with the same environment, sluice
// breakers, report and keys read the state and the log that config
// names, not the default ones beside them, and each says what it read.
// The open breaker shows why it opened, not a failure count of 0, and
// only the breakers of the config's routes are listed.
func TestToolsFollowTheGateway(t *testing.T) {
	up := fake.NewServer("500")
	defer up.Close()
	defaults := t.TempDir() // the built-in defaults' state: must stay unread
	t.Setenv("XDG_STATE_HOME", defaults)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	logPath := filepath.Join(dir, "attempts.jsonl")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`listen: 127.0.0.1:0
state: {backend: file, dir: %s}
log: {attempts: %s}
providers:
  openai: {kind: openai, base_url: %s}
routes:
  - {prefix: /openai, provider: openai}
policies:
  interactive:
    retry: {max_attempts: 1}
    breaker: {failures: 2, cool: 1h}
`, dir, logPath, up.URL)), 0o600)
	gw := startSluice(t, []string{"SLUICE_CONFIG=" + cfg, "XDG_STATE_HOME=" + defaults}, "serve")
	postChat(t, gw)
	postChat(t, gw) // opens the breaker
	if got := postChat(t, gw); got != 503 {
		t.Fatalf("third call: %d, want the open breaker's 503", got)
	}
	t.Setenv("SLUICE_CONFIG", cfg)

	code, out, stderr := runTool("breakers")
	if want := "sluice breakers: reading state file:" + dir + " (config " + cfg + ", named by $SLUICE_CONFIG)\n"; code != exitOK || stderr != want {
		t.Errorf("sluice breakers: exit %d, stderr %q; want 0 and %q", code, stderr, want)
	}
	rows := strings.Split(strings.TrimSpace(out), "\n")
	if len(rows) != 2 || !strings.HasPrefix(rows[1], "openai") {
		t.Fatalf("sluice breakers listed:\n%s\nwant the config's one breaker, openai", out)
	}
	if f := strings.Fields(rows[1]); len(f) < 4 || f[1] != "open" || f[2] != "-" || !strings.Contains(rows[1], "failures (2 in a row)") {
		t.Errorf("the open breaker reads %q; want open, FAILURES -, REASON failures (2 in a row)", rows[1])
	}

	// The report reads the gateway's log: the third call, refused, is in it.
	var s report.Summary
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, out, stderr = runTool("report", "--json")
		if want := "sluice report: reading " + logPath + " (config " + cfg + ", named by $SLUICE_CONFIG)\n"; code != exitOK || stderr != want {
			t.Fatalf("sluice report: exit %d, stderr %q; want 0 and %q", code, stderr, want)
		}
		if err := json.Unmarshal([]byte(out), &s); err != nil {
			t.Fatal(err)
		}
		if s.Calls == 3 || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond) // the log is written after the answer
	}
	if s.Calls != 3 || s.Incident.FailedCalls != 3 || len(s.Inputs) != 1 || s.Inputs[0].Name != logPath {
		t.Errorf("the report read %+v: %d calls, %d failed; want the gateway's log, 3 calls failed", s.Inputs, s.Calls, s.Incident.FailedCalls)
	}

	code, _, stderr = runTool("keys")
	if want := "sluice keys: reading state file:" + dir + " (config " + cfg + ", named by $SLUICE_CONFIG)\n"; code != exitOK || stderr != want {
		t.Errorf("sluice keys: exit %d, stderr %q; want 0 and %q", code, stderr, want)
	}

	// --config wins over $SLUICE_CONFIG; with neither, the tools say they
	// use the built-in defaults, and which state that is.
	t.Setenv("SLUICE_CONFIG", filepath.Join(dir, "missing.yaml"))
	if code, _, stderr = runTool("breakers", "--config", cfg); code != exitOK || !strings.Contains(stderr, "(config "+cfg+")") {
		t.Errorf("sluice breakers --config: exit %d, stderr %q", code, stderr)
	}
	if code, _, stderr = runTool("breakers"); code != exitUsage || !strings.Contains(stderr, "missing.yaml") {
		t.Errorf("sluice breakers with a missing $SLUICE_CONFIG: exit %d, stderr %q; want 2 naming it", code, stderr)
	}
	t.Setenv("SLUICE_CONFIG", "")
	code, _, stderr = runTool("breakers")
	if want := "sluice breakers: reading state file:" + filepath.Join(defaults, "sluice") + " (no --config and no $SLUICE_CONFIG: the built-in defaults)\n"; code != exitOK || stderr != want {
		t.Errorf("sluice breakers, no config: exit %d, stderr %q; want %q", code, stderr, want)
	}
	code, _, stderr = runTool("breakers", "--state", dir)
	if want := "sluice breakers: reading state file:" + dir + " (--state, with the built-in providers and routes: no --config and no $SLUICE_CONFIG)\n"; code != exitOK || stderr != want {
		t.Errorf("sluice breakers --state: exit %d, stderr %q; want %q", code, stderr, want)
	}
}
