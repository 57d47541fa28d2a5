// Command testsummary reads the events of `go test -json` on its standard
// input and writes what a plain `go test` would (each package's ok or FAIL
// line, the output of the tests that failed, build errors), then every
// skipped test with the reason it gave, then one closing line: "N passed,
// N failed, N skipped". scripts/test pipes the test run through it, so that
// a run that skipped a suite (no redis-server, no node_modules) says so
// without -v. With -v it writes every line of output as it comes.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
)

// event is one line of go test -json (cmd/test2json).
type event struct {
	Action     string
	Package    string
	Test       string
	Output     string
	ImportPath string // build-output and build-fail events
}

// line is one line of a test's output, with the test that wrote it.
type line struct{ test, text string }

// pkg is what a package in progress has written so far.
type pkg struct {
	lines  []line          // every test's output, in order
	own    []string        // the package's own output (ok/FAIL lines, panics)
	failed map[string]bool // the tests that failed
}

// skip is one skipped test and its reason.
type skip struct{ pkg, test, reason string }

// summary accumulates a run.
type summary struct {
	out                     io.Writer
	verbose                 bool
	pkgs                    map[string]*pkg
	skips                   []skip
	passed, failed, skipped int
	anyFail                 bool
}

func main() {
	verbose := flag.Bool("v", false, "write every line of output as it comes, as go test -v does")
	flag.Parse()
	s := &summary{out: os.Stdout, verbose: *verbose, pkgs: map[string]*pkg{}}
	if err := s.read(os.Stdin); err != nil {
		fmt.Fprintf(os.Stderr, "testsummary: %v\n", err)
		os.Exit(1)
	}
	s.close()
}

// read consumes the event stream. A line that is no event (go test
// printed it itself, or was not run with -json) is copied through.
func (s *summary) read(r io.Reader) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 64<<20)
	for sc.Scan() {
		var e event
		if b := sc.Bytes(); len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &e) != nil {
			fmt.Fprintln(s.out, sc.Text())
			continue
		}
		s.event(e)
	}
	return sc.Err()
}

func (s *summary) event(e event) {
	switch e.Action {
	case "build-output":
		io.WriteString(s.out, e.Output)
		return
	case "build-fail":
		s.anyFail = true
		return
	}
	p := s.pkgs[e.Package]
	if p == nil {
		p = &pkg{failed: map[string]bool{}}
		s.pkgs[e.Package] = p
	}
	switch e.Action {
	case "output":
		if s.verbose {
			io.WriteString(s.out, e.Output)
		}
		if e.Test == "" {
			p.own = append(p.own, e.Output)
		} else {
			p.lines = append(p.lines, line{e.Test, e.Output})
		}
	case "pass", "fail", "skip":
		if e.Test == "" {
			s.done(e.Package, p, e.Action == "fail")
			return
		}
		switch e.Action {
		case "pass":
			s.passed++
		case "fail":
			s.failed++
			p.failed[e.Test] = true
		case "skip":
			s.skipped++
			s.skips = append(s.skips, skip{e.Package, e.Test, reason(p.lines, e.Test)})
		}
	}
}

// done writes what go test writes when a package ends: the output of its
// failed tests, then its own lines (ok, FAIL, a panic), less the PASS the
// test binary prints.
func (s *summary) done(name string, p *pkg, failed bool) {
	delete(s.pkgs, name)
	if failed {
		s.anyFail = true
	}
	if s.verbose {
		return
	}
	if failed {
		for _, l := range p.lines {
			if p.failed[l.test] && !strings.HasPrefix(l.text, "=== ") {
				io.WriteString(s.out, l.text)
			}
		}
	}
	for _, o := range p.own {
		if o != "PASS\n" && !strings.HasPrefix(o, "=== ") {
			io.WriteString(s.out, o)
		}
	}
}

// reason is what a skipped test logged: its lines other than go test's
// own (=== RUN, --- SKIP), joined into one.
func reason(lines []line, test string) string {
	var parts []string
	for _, l := range lines {
		t := strings.TrimSpace(l.text)
		if l.test != test || t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		parts = append(parts, t)
	}
	if len(parts) == 0 {
		return "(no reason given)"
	}
	return strings.Join(parts, " ")
}

// close writes the packages that never ended (the run was cut), the skips
// and the closing line.
func (s *summary) close() {
	for name, p := range s.pkgs {
		s.done(name, p, len(p.failed) > 0)
	}
	if len(s.skips) > 0 {
		fmt.Fprintf(s.out, "\n%d skipped:\n", len(s.skips))
		for _, k := range s.skips {
			fmt.Fprintf(s.out, "skipped: %s %s: %s\n", k.pkg, k.test, k.reason)
		}
	}
	if s.anyFail {
		fmt.Fprintln(s.out, "FAIL")
	}
	fmt.Fprintf(s.out, "%d passed, %d failed, %d skipped\n", s.passed, s.failed, s.skipped)
}
