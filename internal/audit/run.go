package audit

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/sluice-llm/sluice/internal/cmdline"
)

// Exit codes of Run.
const (
	exitClean    = 0 // no findings
	exitFindings = 1 // at least one finding
	exitUsage    = 2 // unusable input: a bad flag or a path that cannot be read
)

const usage = `usage: sluice audit [--json] [PATH…]

Finds OpenAI and Anthropic SDK clients built without their own retries set
to 0 or without an explicit timeout, in Python, JavaScript/TypeScript and Go.
Behind the Sluice gateway, which retries in one place, an SDK left at its
default of 2 retries turns every gateway attempt into up to 3 calls during
an outage, and an SDK left at its default timeout can hold a worker for
10 minutes.

Each PATH is a file or a directory (default "."). Directories are walked
without following symbolic links; node_modules, .git, vendor, virtualenvs
(.venv, venv, any directory holding pyvenv.cfg), __pycache__,
site-packages, dist and build are skipped, as are files over 2 MiB and
binary files. Files read: .py, .js .mjs .cjs .jsx .ts .mts .cts .tsx
(not .d.ts), .go.

Output: one line per finding, "file:line: finding — fix", sorted by file
and line, then a summary on stderr. A comment containing "sluice:ignore"
on a finding's line silences it.

Flags:
  --json   print the findings as a JSON array of objects with the keys
           file, line, client, problem and fix ([] when none)
  --help   print this help

Exit status: 0 no findings, 1 findings, 2 unusable input (a bad flag, or a
path that does not exist or cannot be read).
`

// Run runs "sluice audit" with args (the arguments after "audit"), writes
// findings to stdout and the summary, warnings and errors to stderr, and
// returns the exit code: 0 when clean, 1 when it found anything, 2 on
// unusable input. Flags may come before or after the paths; "--" ends
// them.
func Run(args []string, stdout, stderr io.Writer) int {
	jsonOut, paths, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return exitClean
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice audit: %v; see sluice audit --help\n", err)
		return exitUsage
	}
	s := &scanner{}
	if err := s.scan(paths); err != nil {
		fmt.Fprintf(stderr, "sluice %v\n", err)
		return exitUsage
	}
	for _, w := range s.warnings {
		fmt.Fprintf(stderr, "sluice audit: %s\n", w)
	}
	if err := write(stdout, s.findings, jsonOut); err != nil {
		fmt.Fprintf(stderr, "sluice audit: writing output: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(stderr, summary(s))
	if len(s.findings) > 0 {
		return exitFindings
	}
	return exitClean
}

// parseArgs reads the flags and paths, which may be interleaved.
func parseArgs(args []string) (jsonOut bool, paths []string, err error) {
	fs := flag.NewFlagSet("sluice audit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&jsonOut, "json", false, "")
	paths, err = cmdline.Parse(fs, args)
	return jsonOut, paths, err
}

// write prints the findings as text lines or as a JSON array.
func write(w io.Writer, findings []Finding, jsonOut bool) error {
	if jsonOut {
		if findings == nil {
			findings = []Finding{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		return enc.Encode(findings)
	}
	for _, f := range findings {
		if _, err := fmt.Fprintln(w, f.String()); err != nil {
			return err
		}
	}
	return nil
}

// summary returns the closing line: what was found in how many files.
func summary(s *scanner) string {
	files := map[string]bool{}
	for _, f := range s.findings {
		files[f.File] = true
	}
	scanned := plural(s.files, "source file")
	if len(s.findings) == 0 {
		return fmt.Sprintf("sluice audit: no findings in %s", scanned)
	}
	return fmt.Sprintf("sluice audit: %s in %s of %s scanned", plural(len(s.findings), "finding"), plural(len(files), "file"), scanned)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
