package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArgumentsEverySubcommand: every subcommand reads flags wherever they
// stand, and refuses (exit 2, saying what it expected) any argument it does
// not use.
func TestArgumentsEverySubcommand(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("state: {backend: file, dir: "+dir+"}\nlog: {attempts: \"-\"}\ndrain: 10m\nlisten: 127.0.0.1:0\n"), 0o600)
	logf := filepath.Join(dir, "attempts.jsonl")
	os.WriteFile(logf, nil, 0o600)
	src := filepath.Join(dir, "agent.py")
	os.WriteFile(src, []byte("print('hi')\n"), 0o600)
	missing := filepath.Join(dir, "missing.yaml")
	tests := []struct {
		args []string
		code int
		out  string
	}{
		// leftovers
		{[]string{"serve", "extra"}, exitUsage, `sluice serve: unexpected argument "extra" (want flags only`},
		{[]string{"serve", "--config", cfg, "extra", "more"}, exitUsage, `unexpected arguments ["extra" "more"]`},
		{[]string{"fake", "503,200"}, exitUsage, `sluice fake: unexpected argument "503,200" (want flags only; a script goes in --script)`},
		{[]string{"version", "now"}, exitUsage, `sluice version: unexpected argument "now" (want no arguments)`},
		{[]string{"help", "fake", "serve"}, exitUsage, `sluice help: unexpected argument "serve"`},
		{[]string{"help", "nope"}, exitUsage, `sluice help: unknown command "nope"`},
		{[]string{"breakers", "--config", cfg, "list"}, exitUsage, `unexpected argument "list" (want no argument to list the breakers, or reset NAME)`},
		{[]string{"breakers", "reset", "a", "b", "--config", cfg}, exitUsage, `unexpected argument "b"`},
		// misplaced flags are read, wherever they stand
		{[]string{"serve", "--listen", "127.0.0.1:0", "--config", missing}, exitUsage, "sluice serve: config:"},
		{[]string{"fake", "--script", "5o3", "--listen", "127.0.0.1:0"}, exitUsage, "--script"},
		{[]string{"fake", "--listen", "127.0.0.1:0", "--tpm", "-5"}, exitUsage, "sluice fake: --tpm -5: a limit per minute is 0 or more"},
		{[]string{"breakers", "--json", "--config", cfg}, exitOK, `{"breakers":`},
		{[]string{"check", "--config", cfg}, exitOK, "config: " + cfg},
		{[]string{"check", dir + "/nope.service", "--config", cfg}, exitUsage, "nope.service"},
		{[]string{"audit", src, "--json"}, exitOK, "[]"},
		{[]string{"audit", "--json", "--", src}, exitOK, "[]"},
		{[]string{"report", logf, "--json"}, exitOK, `"calls"`},
		{[]string{"version", "--help"}, exitOK, "Usage: sluice version"},
	}
	for _, tt := range tests {
		var out strings.Builder
		code := run(tt.args, strings.NewReader(""), &out, &out)
		if code != tt.code || !strings.Contains(out.String(), tt.out) {
			t.Errorf("sluice %q: exit %d, output %q; want exit %d with %q", tt.args, code, out.String(), tt.code, tt.out)
		}
	}
}

// TestCheckRefusesWhatServeRefuses: a key variable that is not set makes
// serve exit 2, and check too, with the same message.
func TestCheckRefusesWhatServeRefuses(t *testing.T) {
	t.Setenv("SLUICE_TEST_NO_SUCH_KEY", "")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\nstate: {backend: memory}\nlog: {attempts: \"-\"}\n"+
		"providers:\n  openai: {kind: openai, base_url: https://api.openai.com, api_key_env: SLUICE_TEST_NO_SUCH_KEY}\n"+
		"routes:\n  - {prefix: /openai, provider: openai}\n"), 0o600)
	msg := func(cmd string) (int, string) {
		var out, errOut strings.Builder
		code := run([]string{cmd, "--config", cfg}, strings.NewReader(""), &out, &errOut)
		return code, strings.TrimPrefix(strings.TrimSpace(errOut.String()), "sluice "+cmd+": ")
	}
	serveCode, serveMsg := msg("serve")
	checkCode, checkMsg := msg("check")
	if serveCode != exitUsage || checkCode != exitUsage || checkMsg != serveMsg || !strings.Contains(serveMsg, "SLUICE_TEST_NO_SUCH_KEY") {
		t.Errorf("serve: exit %d %q; check: exit %d %q; want both exit 2 with the same message", serveCode, serveMsg, checkCode, checkMsg)
	}
}
