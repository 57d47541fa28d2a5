package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/internal/cmdline"
	"github.com/sluice-llm/sluice/internal/config"
)

// Exit codes of Run. A report has no thresholds: it exits 1 only when
// --request-id names no call of the log.
const (
	ExitOK      = 0 // the report was produced
	ExitNoMatch = 1 // --request-id: no call of the log has that id
	ExitUsage   = 2 // unusable input: a missing file, a bad flag, nothing readable
)

const usage = `usage: sluice report [--config FILE] [--since T] [--until T] [--json] [--html FILE] [FILE.jsonl ...]
       sluice report --request-id ID [--config FILE] [--json] [FILE.jsonl ...]

Reads attempt logs and reports, first, the calls that failed (per provider:
since when, still failing or ok again) and why (per reason and provider, with
sample request ids), then calls, attempts per call, outcome and status mix, latency and time-to-first-byte p50/p95/p99 (nearest rank) per provider
and model, retries and their waits, breaker openings, spend, and 429s by
minute of the hour.

Inputs are JSONL attempt logs; several files (rotated or written
concurrently) are merged by time, gzip files are read as they are, and - is
standard input. With no FILE, the log the gateway writes is read: the
config's log.attempts, else attempts.jsonl in its state directory, with the
config found as sluice serve finds it (--config, else $SLUICE_CONFIG, else
the built-in defaults: $XDG_STATE_HOME/sluice/attempts.jsonl or
~/.local/state/sluice/attempts.jsonl). The log read and the config that
named it are said on stderr. A malformed line is counted and skipped.

Flags:
  --config F   read the attempt log config F names (default $SLUICE_CONFIG,
               else the built-in defaults); not with FILE
  --since T    leave out attempts before T
  --until T    leave out attempts at or after T
               T is RFC 3339 (2025-03-04T10:00:00Z), a date (2025-03-04, UTC),
               or a duration back from now (90m, 2h, 7d)
  --json       print one JSON object with every figure instead of text
  --html FILE  also write a self-contained HTML page with charts to FILE
  --request-id ID
               show the attempts of the call with this id instead, and the
               answer it returned: its Sluice-Request-Id (a refused call is
               found among the refused_ids of the folded line that counts
               it) or the provider's x-request-id of one of its attempts
               (upstream_request_id), as the SDKs show it
  --help       print this help

Exit status: 0 report produced, 1 --request-id names no call of the log,
2 unusable input (missing file, bad flag, only malformed lines).
`

// options are the parsed command line.
type options struct {
	since, until time.Time
	json         bool
	html         string
	files        []string
	config       cmdline.Source // where the log to read comes from, with no files
	requestID    string         // --request-id: the one call to show
}

// Run runs `sluice report` with args (without the command names) and
// returns its exit code. The report goes to stdout, errors (one line each)
// to stderr.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(args, stdin, stdout, stderr, time.Now())
}

// run is Run with the current time given.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer, now time.Time) int {
	opt, err := parseArgs(args, now)
	if errors.Is(err, flag.ErrHelp) {
		io.WriteString(stdout, usage)
		return ExitOK
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice report: %v\n", err)
		return ExitUsage
	}
	s, lines, err := load(opt, stdin, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "sluice report: %v\n", err)
		return ExitUsage
	}
	if opt.requestID != "" {
		c := lookup(lines, opt.requestID)
		if err = writeCall(stdout, c, opt.json); err == nil && !c.Found {
			fmt.Fprintf(stderr, "sluice report: no call with id %s in the log (neither a Sluice-Request-Id nor an upstream x-request-id); check the id, the log read and --since/--until\n", opt.requestID)
			return ExitNoMatch
		}
	} else {
		err = write(opt, &s, stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice report: %v\n", err)
		return ExitUsage
	}
	return ExitOK
}

// parseArgs parses flags, which may come before or after the files; files
// after "--" are taken as they are.
func parseArgs(args []string, now time.Time) (options, error) {
	var opt options
	var since, until string
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfgPath := cmdline.ConfigFlag(fs, "config file whose attempt log to read")
	fs.StringVar(&since, "since", "", "")
	fs.StringVar(&until, "until", "", "")
	fs.BoolVar(&opt.json, "json", false, "")
	fs.StringVar(&opt.html, "html", "", "")
	fs.StringVar(&opt.requestID, "request-id", "", "")
	files, err := cmdline.Parse(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return opt, err
	}
	if err != nil {
		return opt, fmt.Errorf("%v (see sluice report --help)", err)
	}
	opt.files = files
	if *cfgPath != "" && len(files) > 0 {
		return opt, fmt.Errorf("--config %s names the attempt log to read, and so do %q: give one or the other", *cfgPath, files)
	}
	if opt.requestID != "" && opt.html != "" {
		return opt, errors.New("--request-id shows one call, --html the whole log: give one or the other")
	}
	opt.config = cmdline.LocateConfig(*cfgPath)
	if opt.since, err = parseWhen("--since", since, now); err != nil {
		return opt, err
	}
	if opt.until, err = parseWhen("--until", until, now); err != nil {
		return opt, err
	}
	if !opt.since.IsZero() && !opt.until.IsZero() && !opt.since.Before(opt.until) {
		return opt, fmt.Errorf("--since %s is not before --until %s; swap them", since, until)
	}
	return opt, nil
}

// parseWhen parses a --since or --until value: RFC 3339, a date (UTC), or a
// duration back from now, which may use d for days. Empty is the zero time.
func parseWhen(flagName, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, v); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, nil
	}
	if d, ok := parseAgo(v); ok {
		return now.Add(-d), nil
	}
	return time.Time{}, fmt.Errorf("%s %q: not a time; use RFC 3339 (2025-03-04T10:00:00Z), a date (2025-03-04) or a duration back from now (2h, 7d)", flagName, v)
}

// parseAgo parses a non-negative duration; "7d" is seven days.
func parseAgo(v string) (time.Duration, bool) {
	if days, ok := strings.CutSuffix(v, "d"); ok {
		n, err := strconv.Atoi(days)
		if err != nil || n < 0 || n > 100000 {
			return 0, false
		}
		return time.Duration(n) * 24 * time.Hour, true
	}
	d, err := time.ParseDuration(v)
	return d, err == nil && d >= 0
}

// load reads every input, keeps the attempts within the window (and, with
// --request-id, those of that call) and summarizes them. With no file, it
// reads the log the config names, and says which on stderr.
func load(opt options, stdin io.Reader, stderr io.Writer) (Summary, []Line, error) {
	files := opt.files
	if len(files) == 0 {
		p, err := configuredLog(opt.config)
		if err != nil {
			return Summary{}, nil, err
		}
		cmdline.Reading(stderr, "sluice report", p, opt.config)
		files = []string{p}
	}
	var lines []Line
	var inputs []Input
	malformed, outside := 0, 0
	for _, name := range files {
		in, err := readInput(name, stdin, func(l Line) {
			if (!opt.since.IsZero() && l.TS.Before(opt.since)) || (!opt.until.IsZero() && !l.TS.Before(opt.until)) {
				outside++
				return
			}
			lines = append(lines, l) // --request-id may name an upstream id: the call's lines are found after
		})
		if err != nil {
			return Summary{}, nil, err
		}
		inputs = append(inputs, in)
		malformed += in.Malformed
	}
	if len(lines) == 0 && outside == 0 && malformed > 0 && opt.requestID == "" {
		return Summary{}, nil, fmt.Errorf("no readable attempt lines, %d malformed; is this an attempt log (JSONL)?", malformed)
	}
	if opt.requestID != "" {
		return Summary{}, lines, nil
	}
	s := Summarize(lines)
	s.Inputs, s.Malformed, s.OutsideWindow = inputs, malformed, outside
	return s, lines, nil
}

// configuredLog returns the attempt log the config of src names, when it
// is a file that exists. Its error says which config named it and how to
// name another.
func configuredLog(src cmdline.Source) (string, error) {
	cfg, err := src.Load()
	if err != nil {
		return "", err
	}
	p, err := cfg.AttemptsPath()
	if err != nil {
		return "", fmt.Errorf("%v (%s)", err, src)
	}
	if p == "-" {
		return "", fmt.Errorf("the gateway writes its attempt log to its standard output (log.attempts: -, %s); give the file it was kept in, or - to read stdin", src)
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("no attempt log at %s (%s); name the gateway's config with --config or $%s, or give the log's path (sluice report FILE.jsonl) or - for stdin",
			p, src, config.EnvConfig)
	}
	return p, nil
}

// write prints s as text or JSON and writes the HTML page when asked.
func write(opt options, s *Summary, stdout io.Writer) error {
	if opt.html != "" {
		var page bytes.Buffer
		if err := WriteHTML(&page, s); err != nil {
			return err
		}
		if err := os.WriteFile(opt.html, page.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--html: %v", err)
		}
	}
	if opt.json {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	return WriteText(stdout, s)
}
