package audit

import (
	"cmp"
	"fmt"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Options changes what a scan reads. The zero value reads every source file
// except tests.
type Options struct {
	// IncludeTests reads test files and folders too (see isTest). By
	// default they are skipped: most SDK clients found there are test
	// doubles, not agents.
	IncludeTests bool
	// Exclude lists glob patterns of paths not to read. A pattern without
	// a slash matches a file or folder name at any depth ("*.gen.ts",
	// "examples"); one with a slash matches the path from the scanned
	// folder ("src/legacy/*.py"), where "**" stands for any number of
	// folders ("**/mocks/**"). Each element is matched with
	// path.Match. A folder that matches is skipped whole. Default: none.
	Exclude []string
	// Total is the gateway's total timeout that an SDK client's own
	// explicit timeout must be above: one not above it gives up while the
	// gateway is still working on the call. If zero, DefaultTotal.
	Total time.Duration
	// TotalFrom says where Total comes from, for the findings' words,
	// e.g. "policy interactive of sluice.yaml". If empty, "the built-in
	// interactive policy".
	TotalFrom string
}

// DefaultTotal is the total timeout of the gateway's built-in interactive
// policy, the one its routes use unless configured otherwise: 30s.
const DefaultTotal = 30 * time.Second

// total returns the total an SDK's timeout is judged against, and where
// it comes from.
func (o Options) total() (time.Duration, string) {
	if o.Total <= 0 {
		return DefaultTotal, "the built-in interactive policy"
	}
	return o.Total, cmp.Or(o.TotalFrom, "the configured policy")
}

// check returns an error naming the first pattern that is not a valid glob.
func (o Options) check() error {
	for _, p := range o.Exclude {
		if p == "" {
			return fmt.Errorf("--exclude needs a pattern, e.g. --exclude '**/examples/**'")
		}
		for _, el := range strings.Split(p, "/") {
			if _, err := path.Match(el, ""); err != nil {
				return fmt.Errorf("--exclude %q: bad pattern; use *, ?, [a-z] and ** as in '**/mocks/*.ts'", p)
			}
		}
	}
	return nil
}

// excluded reports whether rel, a slash-separated path below a scanned
// folder (or a path named on the command line), matches one of the
// patterns.
func (o Options) excluded(rel string) bool {
	rel = strings.TrimPrefix(filepath.ToSlash(filepath.Clean(rel)), "./")
	elems := strings.Split(rel, "/")
	for _, p := range o.Exclude {
		if !strings.Contains(p, "/") {
			if ok, _ := path.Match(p, elems[len(elems)-1]); ok {
				return true
			}
			continue
		}
		if globMatch(strings.Split(strings.Trim(p, "/"), "/"), elems) {
			return true
		}
	}
	return false
}

// globMatch matches path elements against pattern elements, "**" standing
// for zero or more elements.
func globMatch(pat, elems []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			for i := 0; i <= len(elems); i++ {
				if globMatch(pat[1:], elems[i:]) {
					return true
				}
			}
			return false
		}
		if len(elems) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], elems[0]); !ok {
			return false
		}
		pat, elems = pat[1:], elems[1:]
	}
	return len(elems) == 0
}

// testDirs are the names of folders that hold tests, fixtures and mocks.
var testDirs = map[string]bool{
	"test": true, "tests": true, "__tests__": true, "spec": true, "specs": true,
	"e2e": true, "fixtures": true, "__fixtures__": true, "__mocks__": true, "testdata": true,
}

// isTestDir reports whether a folder named name holds tests.
func isTestDir(name string) bool { return testDirs[strings.ToLower(name)] }

// isTestFile reports whether a file name is a test by the conventions of
// its language: Go's *_test.go; JavaScript and TypeScript's *.test.* and
// *.spec.*; pytest's test_*.py, *_test.py and conftest.py.
func isTestFile(name string) bool {
	base := strings.ToLower(filepath.Base(name))
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	switch ext {
	case ".go":
		return strings.HasSuffix(stem, "_test")
	case ".py":
		return strings.HasPrefix(stem, "test_") || strings.HasSuffix(stem, "_test") || stem == "conftest"
	case ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx":
		return strings.HasSuffix(stem, ".test") || strings.HasSuffix(stem, ".spec")
	}
	return false
}
