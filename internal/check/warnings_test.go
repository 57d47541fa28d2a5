package check

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/config"
)

func TestDrainWarning(t *testing.T) {
	tests := []struct {
		name  string
		drain time.Duration
		want  string // "" for no warning
	}{
		{"built-in: 30s against nightly's 10m", 30 * time.Second, "drain 30s is shorter than the total 10m of policy nightly"},
		{"as long as the longest total", 10 * time.Minute, ""},
		{"longer", time.Hour, ""},
	}
	for _, tt := range tests {
		c := config.Default()
		c.Drain = tt.drain
		got := drainWarning(c)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: drainWarning = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestStateWarning(t *testing.T) {
	tmp := t.TempDir()
	magicOf := func(m uint32) func(string) (uint32, error) {
		return func(string) (uint32, error) { return m, nil }
	}
	tests := []struct {
		name  string
		dir   string
		magic func(string) (uint32, error)
		want  string
	}{
		{"NFS", tmp, magicOf(0x6969), "is on NFS, where flock is unreliable"},
		{"CIFS", tmp, magicOf(0xFF534D42), "is on CIFS"},
		{"SMB2", tmp, magicOf(0xFE534D42), "is on SMB2"},
		{"SMB", tmp, magicOf(0x517B), "is on SMB"},
		{"ext4", tmp, magicOf(0xEF53), ""},
		{"tmpfs", tmp, magicOf(0x01021994), ""},
		{"not created yet: the parent is checked", filepath.Join(tmp, "a", "b"), magicOf(0x6969),
			"(not created yet; its parent " + tmp + ")"},
		{"unknown filesystem", tmp, func(string) (uint32, error) { return 0, errors.ErrUnsupported }, ""},
	}
	for _, tt := range tests {
		got := stateWarning(tt.dir, tt.magic)
		if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: stateWarning = %q, want %q", tt.name, got, tt.want)
		}
	}
	if _, err := os.Stat(filepath.Join(tmp, "a")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stateWarning created the state directory (%v)", err)
	}
}

func TestNearestExisting(t *testing.T) {
	tmp := t.TempDir()
	for _, tt := range []struct{ in, want string }{
		{tmp, tmp},
		{filepath.Join(tmp, "x", "y", "z"), tmp},
	} {
		got, err := nearestExisting(tt.in)
		if err != nil || got != tt.want {
			t.Errorf("nearestExisting(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
}

func TestWarnings(t *testing.T) {
	nfs := func(string) (uint32, error) { return 0x6969, nil }
	c := config.Default()
	c.Drain = 10 * time.Minute
	c.State.Dir = t.TempDir()
	c.Routes[0].Fallbacks = []config.Target{{Provider: "openai", Model: "gpt-4o-mini"}}
	got := warnings(c, nfs)
	var kinds []string
	for _, w := range got {
		kinds = append(kinds, w.Kind)
	}
	if strings.Join(kinds, ",") != "config,state" {
		t.Errorf("warnings = %+v, want a config one (shared breaker) and a state one", got)
	}

	c.State = config.State{Backend: config.BackendRedis, URL: "redis://127.0.0.1:6379/0"}
	c.Routes[0].Fallbacks = nil
	c.Policies["interactive"] = sluice.Interactive()
	if got := warnings(c, nfs); len(got) != 0 {
		t.Errorf("redis state, no fallbacks: warnings = %+v, want none", got)
	}
}
