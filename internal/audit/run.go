package audit

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/sluice-llm/sluice/internal/cmdline"
)

// Exit codes of Run.
const (
	exitClean    = 0 // no findings
	exitFindings = 1 // at least one finding
	exitUsage    = 2 // unusable input: a bad flag or a path that cannot be read
)

const usage = `usage: sluice audit [--json] [--include-tests] [--exclude GLOB]… [--config FILE] [--policy NAME] [PATH…]

Finds model API clients (OpenAI, Anthropic, AWS Bedrock Runtime, Google's
genai) built without their own retries set to 0, without an explicit
timeout, or with a timeout not above the gateway's total, in Python, JavaScript/TypeScript and Go. Behind the
Sluice gateway, which retries in one place, the SDKs obey the gateway's
x-should-retry: false, so its answers are not retried; but an SDK timeout
that fires while the gateway is still working (retrying, or waiting for a
slow answer) abandons the call, and the SDK's own retries send it again
while the first still runs: each one paid for. An SDK left at its default
timeout can hold a worker for 10 minutes. The advice: retries 0 and a
timeout a little above the gateway's total (e.g. total + 5 s), so that
the gateway's own answer or 504 comes first. Anthropic's Bedrock and
Vertex AI clients are advised the same way: the gateway fronts both.

The AWS SDKs (Bedrock Runtime: BedrockRuntimeClient in JavaScript,
bedrockruntime in Go, boto3's client("bedrock-runtime") in Python) and
Google's google-genai do not read x-should-retry: they retry the
gateway's own final answers. Their retries must be one attempt
(maxAttempts: 1, RetryMaxAttempts 1 or aws.NopRetryer{},
retries={'total_max_attempts': 1}; google-genai's retry options left out
or attempts 1), and their timeouts (requestHandler's requestTimeout, the
HTTP client's, botocore's read_timeout, google-genai's timeout) are
checked as above.

The total is the policy's in the gateway's config: --config FILE (default
$SLUICE_CONFIG, else the built-in defaults) and --policy NAME (default
interactive when the config has it, else its policy with the shortest
total); with neither, the built-in interactive policy's 30s.

Each PATH is a file or a directory (default "."). Directories are walked
without following symbolic links; node_modules, .git, vendor, virtualenvs
(.venv, venv, any directory holding pyvenv.cfg), __pycache__,
site-packages, dist and build are skipped, as are files over 2 MiB and
binary files. Files read: .py, .js .mjs .cjs .jsx .ts .mts .cts .tsx
(not .d.ts), .go.

Tests are skipped unless --include-tests is given: folders named test,
tests, __tests__, spec, specs, e2e, fixtures, __fixtures__, __mocks__ or
testdata, and files named *_test.go, *.test.* and *.spec.* (JavaScript
and TypeScript), test_*.py, *_test.py and conftest.py. A file named on
the command line is read even when it is a test.

Output: one line per finding, "file:line: finding — fix", sorted by file
and line, then a summary on stderr. A comment containing "sluice:ignore"
on a finding's line silences it.

Flags:
  --json             print the findings as a JSON array of objects with
                     the keys file, line, client, problem and fix ([] when
                     none)
  --include-tests    read test files and folders too
  --config FILE      the gateway's config, for the policy's total
                     (default $SLUICE_CONFIG, else the built-in defaults)
  --policy NAME      the policy whose total SDK timeouts must be above
  --exclude GLOB     do not read paths matching GLOB (repeatable). Without
                     a slash GLOB matches a file or folder name at any
                     depth ('*.gen.ts', 'examples'); with one it matches
                     the path below the scanned folder, ** standing for any
                     number of folders ('**/mocks/**', 'src/legacy/*.py');
                     each element is matched as by Go's path.Match
  --help             print this help

Exit status: 0 no findings, 1 findings, 2 unusable input (a bad flag,
pattern, config or policy, or a path that does not exist or cannot be
read).
`

// Run runs "sluice audit" with args (the arguments after "audit"), writes
// findings to stdout and the summary, warnings and errors to stderr, and
// returns the exit code: 0 when clean, 1 when it found anything, 2 on
// unusable input. Flags may come before or after the paths; "--" ends
// them.
func Run(args []string, stdout, stderr io.Writer) int {
	a, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return exitClean
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice audit: %v; see sluice audit --help\n", err)
		return exitUsage
	}
	if a.opts.Total, a.opts.TotalFrom, err = gatewayTotal(a.config, a.policy); err != nil {
		fmt.Fprintf(stderr, "sluice audit: %v\n", err)
		return exitUsage
	}
	s := &scanner{opts: a.opts}
	if err := s.scan(a.paths); err != nil {
		fmt.Fprintf(stderr, "sluice %v\n", err)
		return exitUsage
	}
	for _, w := range s.warnings {
		fmt.Fprintf(stderr, "sluice audit: %s\n", w)
	}
	if err := write(stdout, s.findings, a.json); err != nil {
		fmt.Fprintf(stderr, "sluice audit: writing output: %v\n", err)
		return exitUsage
	}
	fmt.Fprintln(stderr, summary(s))
	if len(s.findings) > 0 {
		return exitFindings
	}
	return exitClean
}

// args are the parsed command line.
type args struct {
	json           bool
	config, policy string
	opts           Options
	paths          []string
}

// patterns is a repeatable string flag.
type patterns []string

func (p *patterns) String() string     { return strings.Join(*p, ",") }
func (p *patterns) Set(v string) error { *p = append(*p, v); return nil }

// parseArgs reads the flags and paths, which may be interleaved.
func parseArgs(argv []string) (args, error) {
	var a args
	fs := flag.NewFlagSet("sluice audit", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.BoolVar(&a.json, "json", false, "")
	fs.BoolVar(&a.opts.IncludeTests, "include-tests", false, "")
	fs.Var((*patterns)(&a.opts.Exclude), "exclude", "")
	fs.StringVar(&a.config, "config", "", "")
	fs.StringVar(&a.policy, "policy", "", "")
	paths, err := cmdline.Parse(fs, argv)
	if err != nil {
		return args{}, err
	}
	a.paths = paths
	return a, nil
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
	tests := ""
	if s.tests > 0 {
		what := "test files and folders"
		if s.tests == 1 {
			what = "test file or folder"
		}
		tests = fmt.Sprintf(" (%d %s skipped; --include-tests reads them)", s.tests, what)
	}
	if len(s.findings) == 0 {
		return fmt.Sprintf("sluice audit: no findings in %s%s", scanned, tests)
	}
	return fmt.Sprintf("sluice audit: %s in %s of %s scanned%s", plural(len(s.findings), "finding"), plural(len(files), "file"), scanned, tests)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
