package audit

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const (
	faultyPy = "from openai import OpenAI\n\nclient = OpenAI()\n"
	cleanPy  = "from openai import OpenAI\n\nclient = OpenAI(max_retries=0, timeout=30)\n"
)

// tree writes files (path → content) under a new temporary directory and
// returns it.
func tree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func run(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = Run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestRunExitCodes(t *testing.T) {
	clean := tree(t, map[string]string{"app/clean.py": cleanPy})
	faulty := tree(t, map[string]string{"app/faulty.py": faultyPy})
	missing := filepath.Join(t.TempDir(), "nope")
	tests := []struct {
		name       string
		args       []string
		code       int
		stdout     string // a substring; "" means stdout must be empty
		stderrLine string // a substring of stderr's one line
	}{
		{"clean", []string{clean}, 0, "", "no findings in 1 source file"},
		{"findings", []string{faulty}, 1, "faulty.py:3: OpenAI(…) leaves max_retries", "2 findings in 1 file of 1 source file scanned"},
		{"flag after path", []string{faulty, "--json"}, 1, `"line": 3`, "2 findings"},
		{"missing path", []string{clean, missing}, 2, "", "nope: no such file or directory; give an existing file or directory"},
		{"bad flag", []string{"--jsn", clean}, 2, "", "flag provided but not defined: -jsn"},
		{"help", []string{"--help"}, 0, "usage: sluice audit", ""},
		{"short help", []string{"-h"}, 0, "Exit status: 0 no findings, 1 findings, 2 unusable input", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(tt.args...)
			if code != tt.code {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.code, stderr)
			}
			if tt.stdout == "" && stdout != "" || !strings.Contains(stdout, tt.stdout) {
				t.Errorf("stdout = %q, want it to contain %q", stdout, tt.stdout)
			}
			if tt.stderrLine == "" {
				if stderr != "" {
					t.Errorf("stderr = %q, want none", stderr)
				}
				return
			}
			if strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, tt.stderrLine) || !strings.HasPrefix(stderr, "sluice audit: ") {
				t.Errorf("stderr = %q, want one line starting with \"sluice audit: \" and containing %q", stderr, tt.stderrLine)
			}
		})
	}
}

func TestRunJSON(t *testing.T) {
	dir := tree(t, map[string]string{
		"b.py":   faultyPy,
		"a/x.ts": "import OpenAI from 'openai';\nexport const c = new OpenAI({ timeout: 1000 });\n",
	})
	code, stdout, _ := run("--json", dir)
	if code != 1 {
		t.Fatalf("exit code = %d, want 1", code)
	}
	var got []Finding
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("output is not a JSON array of findings: %v\n%s", err, stdout)
	}
	want, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("JSON findings = %+v, want %+v", got, want)
	}
	wantFirst := Finding{
		File:    filepath.Join(dir, "a", "x.ts"),
		Line:    2,
		Client:  "OpenAI",
		Problem: "new OpenAI(…) leaves maxRetries at the SDK default of 2: the SDK obeys the gateway's x-should-retry: false, but still retries a connection error or its own timeout, sending the call again (up to 3 times) while the gateway may still be working on it",
		Fix:     "pass maxRetries: 0 and let the gateway retry",
	}
	if len(got) != 4 || got[0] != wantFirst {
		t.Errorf("findings = %+v, want 4 starting with %+v", got, wantFirst)
	}
	for _, key := range []string{`"file":`, `"line":`, `"client":`, `"problem":`, `"fix":`} {
		if !strings.Contains(stdout, key) {
			t.Errorf("JSON output lacks key %s", key)
		}
	}
}

func TestRunJSONClean(t *testing.T) {
	dir := tree(t, map[string]string{"ok.py": cleanPy})
	code, stdout, _ := run("--json", dir)
	if code != 0 || strings.TrimSpace(stdout) != "[]" {
		t.Errorf("exit %d, stdout %q; want 0 and []", code, stdout)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		args  []string
		json  bool
		paths []string
	}{
		{nil, false, nil},
		{[]string{"a", "b"}, false, []string{"a", "b"}},
		{[]string{"a", "--json", "b"}, true, []string{"a", "b"}},
		{[]string{"-json", "--", "-odd", "--json"}, true, []string{"-odd", "--json"}},
	}
	for _, tt := range tests {
		a, err := parseArgs(tt.args)
		if err != nil || a.json != tt.json || !slices.Equal(a.paths, tt.paths) {
			t.Errorf("parseArgs(%q) = %v, %q, %v; want %v, %q", tt.args, a.json, a.paths, err, tt.json, tt.paths)
		}
	}
}

// TestScanSkips checks that dependencies, virtualenvs, build output, big
// and binary files and symbolic links are not read.
func TestScanSkips(t *testing.T) {
	dir := tree(t, map[string]string{
		"app/main.py":                            faultyPy,
		"node_modules/openai/index.js":           "import OpenAI from 'openai'; new OpenAI();",
		".git/hooks/x.py":                        faultyPy,
		"vendor/github.com/x/y.go":               "package y\nimport \"github.com/openai/openai-go\"\nvar c = openai.NewClient()\n",
		".venv/lib/a.py":                         faultyPy,
		"venv/lib/a.py":                          faultyPy,
		"env/pyvenv.cfg":                         "home = /usr/bin\n",
		"env/lib/a.py":                           faultyPy,
		"tools/pyenv-3.12/pyvenv.cfg":            "home = /usr/bin\n",
		"tools/pyenv-3.12/lib/a.py":              faultyPy,
		"app/__pycache__/a.py":                   faultyPy,
		"lib/python3.12/site-packages/openai.py": faultyPy,
		"dist/bundle.js":                         "import OpenAI from 'openai'; new OpenAI();",
		"build/out.py":                           faultyPy,
		"types/client.d.ts":                      "import OpenAI from 'openai'; new OpenAI();",
		"big.py":                                 faultyPy + "#" + strings.Repeat("x", maxFileSize),
		"blob.py":                                faultyPy + "\x00",
		"notes.md":                               "client = OpenAI()",
	})
	if err := os.Symlink(filepath.Join(dir, "app", "main.py"), filepath.Join(dir, "link.py")); err != nil {
		t.Fatal(err)
	}
	got, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(dir, "app", "main.py")
	if len(got) != 2 || got[0].File != want || got[1].File != want {
		t.Errorf("Scan found %+v, want two findings in %s only", got, want)
	}
}

// TestScanExplicitRoot checks that a directory named on the command line
// is read even when its name would be skipped inside a tree.
func TestScanExplicitRoot(t *testing.T) {
	dir := tree(t, map[string]string{"build/gen.py": faultyPy})
	got, err := Scan(filepath.Join(dir, "build"))
	if err != nil || len(got) != 2 {
		t.Errorf("Scan(build) = %d findings, %v; want 2, nil", len(got), err)
	}
}

// TestRunExplicitFileWarnings checks that a named file that is skipped
// says so, without making the input unusable.
func TestRunExplicitFileWarnings(t *testing.T) {
	dir := tree(t, map[string]string{
		"notes.md": "OpenAI()",
		"big.py":   strings.Repeat("#", maxFileSize+1),
		"ok.py":    cleanPy,
	})
	code, _, stderr := run(filepath.Join(dir, "notes.md"), filepath.Join(dir, "big.py"), filepath.Join(dir, "ok.py"), filepath.Join(dir, "ok.py"))
	if code != 0 {
		t.Errorf("exit code = %d, want 0", code)
	}
	for _, want := range []string{
		"notes.md: not a Python, JavaScript, TypeScript or Go source file",
		"big.py: larger than 2 MiB",
		"no findings in 1 source file",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr = %q, want it to contain %q", stderr, want)
		}
	}
}

func TestScanSorted(t *testing.T) {
	dir := tree(t, map[string]string{
		"b.py": "from openai import OpenAI\n\n\nx = OpenAI(max_retries=0)\ny = OpenAI(timeout=3)\n",
		"a.go": "package a\n\nimport \"github.com/openai/openai-go\"\n\nvar c = openai.NewClient()\n",
	})
	got, err := Scan(dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, f := range got {
		keys = append(keys, filepath.Base(f.File)+":"+strconv.Itoa(f.Line))
	}
	want := []string{"a.go:5", "a.go:5", "b.py:4", "b.py:5", "b.py:5"}
	if !slices.Equal(keys, want) {
		t.Errorf("order = %q, want %q", keys, want)
	}
}

func TestScanMissing(t *testing.T) {
	got, err := Scan(filepath.Join(t.TempDir(), "missing"))
	if err == nil || got != nil {
		t.Fatalf("Scan(missing) = %v, %v; want an error", got, err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "audit: ") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line starting with \"audit: \"", msg)
	}
}
