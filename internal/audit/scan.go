package audit

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Finding is one SDK client construction that multiplies the gateway's
// retries or can hang a worker. A construction with both problems yields
// two findings on the same line.
type Finding struct {
	// File is the source file's path, as reached from the scanned path.
	File string `json:"file"`
	// Line is the 1-based line where the construction starts.
	Line int `json:"line"`
	// Client names what is built: an SDK class such as "OpenAI" or
	// "AsyncAnthropic", a Go constructor such as "openai.NewClient", or
	// "with_options" / "withOptions" for a later change to a client.
	Client string `json:"client"`
	// Problem says what is wrong and why it matters, in one sentence.
	Problem string `json:"problem"`
	// Fix says what to change.
	Fix string `json:"fix"`
}

// String returns the finding as one line of text output:
// "file:line: problem — fix".
func (f Finding) String() string {
	return fmt.Sprintf("%s:%d: %s — %s", f.File, f.Line, f.Problem, f.Fix)
}

// maxFileSize is the size above which a file is skipped: at that size it is
// generated or minified, not written by hand.
const maxFileSize = 2 << 20

// skipDirs are the directories never entered: dependencies, virtualenvs,
// caches and build output.
var skipDirs = map[string]bool{
	"node_modules": true, ".git": true, "vendor": true, ".venv": true, "venv": true,
	"__pycache__": true, "site-packages": true, "dist": true, "build": true,
}

// Scan audits the files and directory trees at paths ("." when none) and
// returns the findings sorted by file, then line. Directories are walked
// without following symbolic links, skipping dependencies, virtualenvs
// (any directory holding a pyvenv.cfg), caches and build output, files
// larger than 2 MiB and binary files. It returns an error, and no
// findings, when a path cannot be read.
// Test files and folders are skipped (see Options).
func Scan(paths ...string) ([]Finding, error) {
	return ScanWith(Options{}, paths...)
}

// ScanWith is Scan with options: tests included, paths excluded. It
// returns an error naming the pattern when an Exclude pattern is not a
// valid glob.
func ScanWith(o Options, paths ...string) ([]Finding, error) {
	s := &scanner{opts: o}
	err := s.scan(paths)
	return s.findings, err
}

// scanner accumulates the results of one scan.
type scanner struct {
	opts     Options
	findings []Finding
	files    int      // source files audited
	tests    int      // test files and folders skipped
	warnings []string // files skipped, one line each
	seen     map[string]bool
}

func (s *scanner) warn(format string, args ...any) {
	s.warnings = append(s.warnings, fmt.Sprintf(format, args...))
}

// scan audits paths; see Scan.
func (s *scanner) scan(paths []string) error {
	if err := s.opts.check(); err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if len(paths) == 0 {
		paths = []string{"."}
	}
	infos := make([]fs.FileInfo, len(paths))
	for i, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return pathError(p, err)
		}
		infos[i] = info
	}
	s.seen = map[string]bool{}
	for i, p := range paths {
		if !infos[i].IsDir() {
			if !s.opts.excluded(p) {
				s.file(p, true)
			}
			continue
		}
		if err := s.walk(p); err != nil {
			return pathError(p, err)
		}
	}
	slices.SortStableFunc(s.findings, func(a, b Finding) int {
		return cmp.Or(strings.Compare(a.File, b.File), cmp.Compare(a.Line, b.Line))
	})
	return nil
}

// pathError words a path that cannot be read as one line with the fix.
func pathError(p string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("audit: %s: no such file or directory; give an existing file or directory", p)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("audit: %s: permission denied; give a path this user can read", p)
	}
	return fmt.Errorf("audit: %s: cannot be read (%v); give a readable file or directory", p, err)
}

// walk audits the tree at root. Entries below root that cannot be read are
// skipped with a warning.
func (s *scanner) walk(root string) error {
	return filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			s.warn("skipped %s: %v", p, err)
			return nil
		}
		if p == root {
			return nil
		}
		if d.IsDir() && skipDir(p, d.Name()) {
			return filepath.SkipDir
		}
		if !d.IsDir() && (!d.Type().IsRegular() || language(p) == nil) {
			return nil
		}
		if s.skip(root, p, d) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			s.file(p, false)
		}
		return nil
	})
}

// skip reports whether the entry d at p, below root, is a test (unless
// tests are included) or excluded, counting the tests skipped.
func (s *scanner) skip(root, p string, d fs.DirEntry) bool {
	if rel, err := filepath.Rel(root, p); err == nil && s.opts.excluded(rel) {
		return true
	}
	if s.opts.IncludeTests {
		return false
	}
	if d.IsDir() && isTestDir(d.Name()) || !d.IsDir() && isTestFile(d.Name()) {
		s.tests++
		return true
	}
	return false
}

// skipDir reports whether the directory at p, named name, is not to be
// entered.
func skipDir(p, name string) bool {
	if skipDirs[name] {
		return true
	}
	_, err := os.Stat(filepath.Join(p, "pyvenv.cfg"))
	return err == nil
}

// auditor audits one language's source and returns its issues and the lines
// that carry an ignore marker.
type auditor struct {
	audit   func(name string, src []byte) ([]issue, map[int]bool)
	dialect dialect
}

var (
	pyAuditor = &auditor{audit: func(_ string, src []byte) ([]issue, map[int]bool) { return auditPython(src) }, dialect: python}
	jsAuditor = &auditor{audit: func(_ string, src []byte) ([]issue, map[int]bool) { return auditJS(src) }, dialect: javascript}
	goAuditor = &auditor{audit: auditGo, dialect: golang}
)

// language returns the auditor for a file name, or nil when the file is
// not Python, JavaScript, TypeScript (declaration files excepted) or Go.
func language(name string) *auditor {
	base := strings.ToLower(filepath.Base(name))
	for _, d := range []string{".d.ts", ".d.mts", ".d.cts"} {
		if strings.HasSuffix(base, d) {
			return nil
		}
	}
	switch filepath.Ext(base) {
	case ".py":
		return pyAuditor
	case ".js", ".mjs", ".cjs", ".jsx", ".ts", ".mts", ".cts", ".tsx":
		return jsAuditor
	case ".go":
		return goAuditor
	}
	return nil
}

// file audits one file. explicit says the file was named on the command
// line, so that skipping it deserves a warning.
func (s *scanner) file(p string, explicit bool) {
	key := filepath.Clean(p)
	if s.seen[key] {
		return
	}
	s.seen[key] = true
	a := language(p)
	if a == nil {
		s.warn("skipped %s: not a Python, JavaScript, TypeScript or Go source file", p)
		return
	}
	src, err := readSource(p)
	if err != nil {
		if explicit || !(errors.Is(err, errTooLarge) || errors.Is(err, errBinary)) {
			s.warn("skipped %s: %v", p, err)
		}
		return
	}
	s.files++
	total, from := s.opts.total()
	for _, is := range s.audit(a, p, src) {
		d := a.dialect
		if is.words != nil {
			d = *is.words
		}
		f := d.finding(p, is)
		if is.problem == pShortTimeout {
			f = d.shortTimeout(f, is, total, from)
		}
		s.findings = append(s.findings, f)
	}
}

// audit runs a on one file's source and drops the issues on ignored lines.
// A failure inside the auditor costs that file, not the run.
func (s *scanner) audit(a *auditor, p string, src []byte) (out []issue) {
	defer func() {
		if r := recover(); r != nil {
			s.warn("skipped %s: internal error: %v", p, r)
			out = nil
		}
	}()
	issues, ignored := a.audit(p, src)
	total, _ := s.opts.total()
	for _, is := range issues {
		if is.problem == pShortTimeout && is.timeout >= total {
			continue // above the gateway's total (or equal): no finding
		}
		if !ignored[is.line] {
			out = append(out, is)
		}
	}
	return out
}

// Files skipped by design, silently unless named on the command line.
var (
	errTooLarge = errors.New("larger than 2 MiB")
	errBinary   = errors.New("binary file")
)

// readSource reads a source file, refusing files over maxFileSize and
// files that look binary (a NUL byte in the first 8 KiB).
func readSource(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	switch {
	case err != nil:
		return nil, err
	case len(src) > maxFileSize:
		return nil, errTooLarge
	case bytes.IndexByte(src[:min(len(src), 8<<10)], 0) >= 0:
		return nil, errBinary
	}
	return src, nil
}
