package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestScriptListsSkips runs scripts/test, as it is, on a module of one
// package with a test that passes, one that skips and one that fails: it
// must print the failure and the package's FAIL line as go test does, list
// the skipped test with its reason, end on "1 passed, 1 failed, 1 skipped"
// and exit with go test's code, 1; with the failing test left out, 0.
func TestScriptListsSkips(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	script, err := os.ReadFile("../test")
	if err != nil {
		t.Fatal(err)
	}
	summary, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	files := map[string]string{
		"go.mod":                      "module example.com/tiny\n\ngo 1.26\n",
		"scripts/test":                string(script),
		"scripts/testsummary/main.go": string(summary),
		"p/p_test.go": "package p\n\nimport (\n\t\"os\"\n\t\"testing\"\n)\n\n" +
			"func TestOK(t *testing.T) { t.Log(\"fine\") }\n" +
			"func TestSkip(t *testing.T) { t.Skip(\"no redis-server: apt-get install redis-server\") }\n" +
			"func TestFail(t *testing.T) {\n\tif os.Getenv(\"TINY_FAIL\") != \"\" {\n\t\tt.Error(\"the upstream was called 2 times, want 1\")\n\t}\n}\n",
	}
	for name, text := range files {
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	run := func(env ...string) (string, int) {
		cmd := exec.Command(bash, filepath.Join(mod, "scripts", "test"))
		cmd.Dir = mod
		cmd.Env = append(os.Environ(), append([]string{"SLUICE_TEST_INSTALL=0", "SLUICE_ARTIFACTS=", "GOFLAGS=", "GOWORK=off", "GOPROXY=off", "GOTOOLCHAIN=local", "TINY_FAIL="}, env...)...)
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			t.Fatalf("scripts/test: %v\n%s", err, out)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}

	out, code := run("TINY_FAIL=1")
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	for _, want := range []string{
		"p_test.go:12: the upstream was called 2 times, want 1",
		"--- FAIL: TestFail",
		"FAIL\texample.com/tiny/p\t",
		"skipped: example.com/tiny/p TestSkip: p_test.go:9: no redis-server: apt-get install redis-server\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("with a failing test, the output lacks %q:\n%s", want, out)
		}
	}
	if last := lines[len(lines)-1]; last != "1 passed, 1 failed, 1 skipped" || code != 1 {
		t.Errorf("with a failing test: exit %d, last line %q; want 1 and \"1 passed, 1 failed, 1 skipped\"\n%s", code, last, out)
	}
	if strings.Contains(out, "fine") {
		t.Errorf("a passing test's log is printed without -v:\n%s", out)
	}

	out, code = run()
	lines = strings.Split(strings.TrimRight(out, "\n"), "\n")
	if last := lines[len(lines)-1]; last != "2 passed, 0 failed, 1 skipped" || code != 0 ||
		!strings.Contains(out, "ok  \texample.com/tiny/p\t") || !strings.Contains(out, "skipped: example.com/tiny/p TestSkip: ") {
		t.Errorf("all passing: exit %d, output\n%s\nwant 0, the ok line, the skip and \"2 passed, 0 failed, 1 skipped\" last", code, out)
	}
	if _, err := os.Stat(filepath.Join(mod, ".artifacts", "test.json")); err != nil {
		t.Errorf("the run's events were not kept: %v", err)
	}
}
