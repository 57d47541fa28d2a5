package audit

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const faultyTS = "import OpenAI from 'openai';\nexport const c = new OpenAI();\n"

// testTree is a project whose only agent code is app/main.py; everything
// else is a test, a fixture or a mock by its language's conventions.
var testTree = map[string]string{
	"app/main.py":                     faultyPy,
	"app/test_main.py":                faultyPy,
	"app/main_test.py":                faultyPy,
	"conftest.py":                     faultyPy,
	"tests/helpers.py":                faultyPy,
	"test/client.mjs":                 faultyTS,
	"src/__tests__/client.ts":         faultyTS,
	"src/client.test.ts":              faultyTS,
	"src/client.spec.js":              faultyTS,
	"spec/support/openai.ts":          faultyTS,
	"src/__mocks__/openai.ts":         faultyTS,
	"e2e/run.ts":                      faultyTS,
	"pkg/fixtures/client.py":          faultyPy,
	"pkg/agent_test.go":               "package agent\nimport \"github.com/openai/openai-go\"\nvar c = openai.NewClient()\n",
	"pkg/testdata/gen.go":             "package gen\nimport \"github.com/openai/openai-go\"\nvar c = openai.NewClient()\n",
	"src/latest.ts":                   "// no SDK here\n",
	"src/contest.py":                  "# no SDK here\n",
	"src/testing_helpers_are_code.py": faultyPy,
}

// TestScanSkipsTests checks that test files and folders are not read by
// default, that the summary says how many were skipped, and that
// --include-tests reads them.
func TestScanSkipsTests(t *testing.T) {
	dir := tree(t, testTree)
	got, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, f := range got {
		rel, _ := filepath.Rel(dir, f.File)
		files = append(files, filepath.ToSlash(rel))
	}
	files = slices.Compact(files)
	if want := []string{"app/main.py", "src/testing_helpers_are_code.py"}; !slices.Equal(files, want) {
		t.Errorf("files with findings = %q, want %q", files, want)
	}

	code, _, stderr := run(dir)
	if code != 1 || !strings.Contains(stderr, "4 findings in 2 files of 4 source files scanned (14 test files and folders skipped; --include-tests reads them)") {
		t.Errorf("exit %d, stderr %q; want 1 and the skipped tests counted", code, stderr)
	}
	code, stdout, stderr := run("--include-tests", dir)
	if n := strings.Count(stdout, "\n"); code != 1 || n != 2*(len(testTree)-2) || strings.Contains(stderr, "skipped") {
		t.Errorf("--include-tests: exit %d, %d findings, stderr %q; want 1, %d, no tests skipped", code, n, stderr, 2*(len(testTree)-2))
	}
}

// TestScanNamedTestFile checks that a test file named on the command line
// is read.
func TestScanNamedTestFile(t *testing.T) {
	dir := tree(t, map[string]string{"tests/test_a.py": faultyPy})
	got, err := Scan(filepath.Join(dir, "tests", "test_a.py"))
	if err != nil || len(got) != 2 {
		t.Errorf("Scan(tests/test_a.py) = %d findings, %v; want 2", len(got), err)
	}
}

func TestExcluded(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"examples", "examples", true},
		{"examples", "src/examples", true},
		{"examples", "src/examples.py", false},
		{"*.gen.ts", "src/api/client.gen.ts", true},
		{"*.gen.ts", "src/api/client.ts", false},
		{"src/legacy/*.py", "src/legacy/a.py", true},
		{"src/legacy/*.py", "src/legacy/old/a.py", false},
		{"src/legacy/*.py", "lib/src/legacy/a.py", false},
		{"**/mocks/**", "mocks/a.ts", true},
		{"**/mocks/**", "src/deep/mocks/b/c.ts", true},
		{"**/mocks/**", "src/mocks", true},
		{"**/mocks/**", "src/mockserver/a.ts", false},
		{"src/**/*.py", "src/a.py", true},
		{"src/**/*.py", "src/x/y/a.py", true},
		{"src/**/*.py", "lib/a.py", false},
		{"/src/a.py", "src/a.py", true},
		{"ap?/[a-c]*.py", "app/b.py", true},
		{"ap?/[a-c]*.py", "app/d.py", false},
	}
	for _, tt := range tests {
		if got := (Options{Exclude: []string{tt.pattern}}).excluded(tt.path); got != tt.want {
			t.Errorf("--exclude %q on %q = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

// TestRunExclude checks --exclude end to end: repeatable, folders skipped
// whole, a named file excluded too, and a bad pattern refused.
func TestRunExclude(t *testing.T) {
	dir := tree(t, map[string]string{
		"app/main.py":           faultyPy,
		"app/generated/api.py":  faultyPy,
		"examples/demo/demo.ts": faultyTS,
		"scripts/once.py":       faultyPy,
	})
	code, stdout, _ := run("--exclude", "**/generated/**", dir, "--exclude", "examples", "--exclude=scripts/*.py")
	if code != 1 || strings.Count(stdout, "\n") != 2 || !strings.Contains(stdout, filepath.Join("app", "main.py")) {
		t.Errorf("exit %d, stdout %q; want the two findings of app/main.py only", code, stdout)
	}
	code, stdout, _ = run("--exclude", "main.py", filepath.Join(dir, "app", "main.py"))
	if code != 0 || stdout != "" {
		t.Errorf("named but excluded file: exit %d, stdout %q; want 0 and nothing", code, stdout)
	}
	code, _, stderr := run("--exclude", "src/[a-", dir)
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, `--exclude "src/[a-": bad pattern`) {
		t.Errorf("bad pattern: exit %d, stderr %q; want 2 and one line naming it", code, stderr)
	}
}

func TestIsTestFile(t *testing.T) {
	for name, want := range map[string]bool{
		"a_test.go": true, "a.go": false, "test_a.go": false,
		"test_a.py": true, "a_test.py": true, "conftest.py": true, "testing.py": false, "contest.py": false,
		"a.test.ts": true, "a.spec.tsx": true, "a.test.mjs": true, "a.spec.cjs": true, "latest.ts": false, "a.tests.ts": false,
	} {
		if got := isTestFile(name); got != want {
			t.Errorf("isTestFile(%q) = %v, want %v", name, got, want)
		}
	}
}
