package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/config"
)

// TestStartLineSaysWhereThingsGo: serve's one start line names the state
// directory and the attempt log's path.
func TestStartLineSaysWhereThingsGo(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	logPath := filepath.Join(dir, "logs", "attempts.jsonl")
	os.WriteFile(cfg, []byte("listen: 127.0.0.1:0\nstate: {backend: file, dir: "+dir+"}\nlog: {attempts: "+logPath+"}\n"), 0o600)
	p := startSluice(t, nil, "serve", "--config", cfg)
	var line string
	for _, l := range strings.Split(p.stderr.String(), "\n") {
		if strings.Contains(l, "sluice serving") {
			line = l
		}
	}
	for _, want := range []string{"state=file:" + dir, "attempts=" + logPath, "addr=http://" + p.addr} {
		if !strings.Contains(line, want) {
			t.Errorf("start line %q lacks %q", line, want)
		}
	}
}

func TestStateWhereHidesRedisPassword(t *testing.T) {
	c := &config.Config{State: config.State{Backend: config.BackendRedis, URL: "redis://user:s3cret@10.0.0.5:6379/0"}}
	if got, want := stateWhere(c), "redis://user@10.0.0.5:6379/0"; got != want {
		t.Errorf("stateWhere = %q, want %q", got, want)
	}
	c.State.URL = "redis://:s3cret@10.0.0.5:6379/0"
	if got := stateWhere(c); strings.Contains(got, "s3cret") {
		t.Errorf("stateWhere = %q shows the password", got)
	}
	c.Log.Attempts = "-"
	if got := attemptsWhere(c); got != "stdout" {
		t.Errorf("attemptsWhere = %q, want stdout", got)
	}
}
