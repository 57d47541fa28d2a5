package audit

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/golden.txt from the current output")

// problemNames are the words the corpus uses for each problem in its
// "want:" markers.
var problemNames = map[problem]string{
	pRetries:   "retries",
	pRetriesOn: "retries-on",
	pTimeout:   "timeout",
	pNoTimeout: "no-timeout",

	pShortTimeout: "short-timeout",
}

// wantMarker matches a "# want: …" or "// want: …" comment.
var wantMarker = regexp.MustCompile(`(?:#|//) want: ([a-z -]+)$`)

// corpusFiles returns the source files of the corpus.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{"python", "js", "ts", "go"} {
		err := filepath.WalkDir(filepath.Join("testdata", dir), func(p string, d fs.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return files
}

// wants returns the findings a corpus file's markers expect, one
// "line problem" string each.
func wants(src []byte) []string {
	var out []string
	for i, line := range strings.Split(string(src), "\n") {
		m := wantMarker.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		for _, p := range strings.Fields(m[1]) {
			out = append(out, lineProblem(i+1, p))
		}
	}
	return out
}

func lineProblem(line int, p string) string {
	return strconv.Itoa(line) + " " + p
}

// TestCorpus checks every corpus file against its markers: each faulty case
// found on its line with the right problem, nothing else, and no finding
// at all in a clean file.
func TestCorpus(t *testing.T) {
	files := corpusFiles(t)
	if len(files) < 16 {
		t.Fatalf("corpus has %d files, want at least 16", len(files))
	}
	for _, p := range files {
		t.Run(filepath.ToSlash(p), func(t *testing.T) {
			src, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			a := language(p)
			if a == nil {
				t.Fatalf("no auditor for %s", p)
			}
			s := &scanner{}
			var got []string
			for _, is := range s.audit(a, p, src) {
				got = append(got, lineProblem(is.line, problemNames[is.problem]))
			}
			want := wants(src)
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("findings (line problem):\n got %q\nwant %q", got, want)
			}
			base := filepath.Base(p)
			switch {
			case strings.HasPrefix(base, "clean_") && len(want) > 0:
				t.Errorf("clean file has want markers")
			case strings.HasPrefix(base, "faulty_") && len(want) == 0:
				t.Errorf("faulty file has no want markers")
			case !strings.HasPrefix(base, "clean_") && !strings.HasPrefix(base, "faulty_"):
				t.Errorf("corpus file name must start with clean_ or faulty_")
			}
		})
	}
}

// TestGolden compares the whole text output over the corpus, messages and
// order included, with testdata/golden.txt. Run with -update to rewrite it.
func TestGolden(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := Run([]string{"testdata"}, &stdout, &stderr)
	if code != exitFindings {
		t.Fatalf("Run = %d, want %d; stderr:\n%s", code, exitFindings, stderr.String())
	}
	golden := filepath.Join("testdata", "golden.txt")
	if *update {
		if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got := stdout.String(); got != string(want) {
		t.Errorf("output differs from %s (go test -run TestGolden -update to accept):\n%s", golden, lineDiff(got, string(want)))
	}
}

// lineDiff lists the lines only in got (+) or only in want (-).
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	for _, l := range g {
		if !slices.Contains(w, l) {
			b.WriteString("+ " + l + "\n")
		}
	}
	for _, l := range w {
		if !slices.Contains(g, l) {
			b.WriteString("- " + l + "\n")
		}
	}
	return b.String()
}
