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
