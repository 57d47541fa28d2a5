package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

func TestVersionLine(t *testing.T) {
	vcs := func(v string, s ...string) *debug.BuildInfo {
		info := &debug.BuildInfo{Main: debug.Module{Path: "github.com/sluice-llm/sluice", Version: v}}
		for i := 0; i+1 < len(s); i += 2 {
			info.Settings = append(info.Settings, debug.BuildSetting{Key: s[i], Value: s[i+1]})
		}
		return info
	}
	tests := []struct {
		override string
		info     *debug.BuildInfo
		ok       bool
		want     string
	}{
		{"", vcs("v1.2.0"), true, "v1.2.0"},
		{"", vcs("(devel)", "vcs.revision", "0123456789abcdef0123", "vcs.time", "2026-11-30T18:00:00Z", "vcs.modified", "false"), true,
			"(devel) (rev 0123456789ab 2026-11-30T18:00:00Z)"},
		{"", vcs("(devel)", "vcs.revision", "0123456789abcdef0123", "vcs.modified", "true"), true, "(devel) (rev 0123456789ab, modified)"},
		{"", vcs("(devel)"), true, "(devel), no VCS revision recorded (built with -buildvcs=false or outside a git checkout)"},
		{"", vcs(""), true, "(devel), no VCS revision recorded"},
		{"v9.9.9", vcs("(devel)"), true, "v9.9.9"},
		{"", nil, false, "(unknown)"},
	}
	for _, tt := range tests {
		if got := versionLine(tt.override, tt.info, tt.ok); !strings.HasPrefix(got, tt.want) {
			t.Errorf("versionLine(%q, %+v) = %q, want it to start with %q", tt.override, tt.info, got, tt.want)
		}
	}
}

// TestVersionOfBuiltBinary builds sluice in a fresh git checkout of this
// module: a plain go build reports the checkout's revision, and one with
// -buildvcs=false says that none was recorded. It compiles the whole
// module twice (minutes on a busy machine), so it runs only with
// SLUICE_TEST_BUILD=1.
func TestVersionOfBuiltBinary(t *testing.T) {
	if os.Getenv("SLUICE_TEST_BUILD") != "1" {
		t.Skip("set SLUICE_TEST_BUILD=1 to build the binary in a fresh git checkout")
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(root)); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, ".git"))
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("add", "-A")
	git("commit", "-q", "-m", "build")
	rev := git("rev-parse", "HEAD")

	build := func(vcsFlag string) string {
		t.Helper()
		bin := filepath.Join(t.TempDir(), "sluice")
		// -trimpath keeps the build cache valid across temporary directories.
		cmd := exec.Command("go", "build", "-trimpath", vcsFlag, "-o", bin, "./cmd/sluice")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", vcsFlag, err, out)
		}
		out, err := exec.Command(bin, "version").CombinedOutput()
		if err != nil {
			t.Fatalf("sluice version: %v\n%s", err, out)
		}
		return string(out)
	}
	start := time.Now()
	got := build("-buildvcs=true") // the flag wins over a GOFLAGS=-buildvcs=false in the environment
	if !strings.Contains(got, "rev "+rev[:12]) || strings.Contains(got, "modified") {
		t.Errorf("built in a clean checkout at %s, sluice version says %q; want the revision, unmodified", rev[:12], got)
	}
	if got := build("-buildvcs=false"); !strings.Contains(got, "no VCS revision recorded") {
		t.Errorf("built with -buildvcs=false, sluice version says %q; want it to say no revision was recorded", got)
	}
	t.Logf("two builds took %v", time.Since(start).Round(time.Millisecond))
}
