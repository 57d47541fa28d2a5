package check

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/internal/cmdline"
	"github.com/sluice-llm/sluice/internal/config"
)

// Exit codes of Run.
const (
	exitClean    = 0 // no findings, no warnings
	exitFindings = 1 // a finding or a warning
	exitUsage    = 2 // unusable input: a bad flag, config or path
)

const usage = `usage: sluice check [--config FILE] [--policy NAME] [--margin DUR] [--strict] [--json] [UNIT…]

Validates the config (the same messages as sluice serve) and prints, per
policy, the worst case one call can take: every attempt's connect and
first_byte, plus the longest backoff or max_retry_after wait before each
retry, bounded by total; and per route, the same with its fallbacks.

Each UNIT is a systemd .service or .timer file, or a directory whose
.service and .timer files are all checked, in its subdirectories too
(not in drop-in directories, hidden ones or the *.wants, *.requires and
*.upholds links of enabled units). Drop-ins are applied as
systemd applies them: the *.conf files of foo.service.d/, of the
template's and dash prefixes' directories, and of service.d/ next to the
unit, in the order of their file names.

A .service is judged against one policy's worst case (fallbacks
included) plus the margin: TimeoutStopSec, TimeoutStartSec (for the types
whose start-up the program's own work runs in: oneshot, forking, dbus,
notify) and RuntimeMaxSec shorter than that would let systemd kill the
agent mid-retry, and its rerun pays for the call again. A unit running
"sluice serve" is judged instead on TimeoutStopSec against the config's
drain plus the margin. A .timer with OnCalendar= and no
RandomizedDelaySec is flagged: agents fired at :00 make the 429s cluster.
Keys systemd does not know (TimeoutStartsec=; X- keys are allowed) and
OnCalendar= expressions it cannot parse are findings.
Values are read as systemd reads them (90s, "1min 30s", 1h30m, 2.5s,
infinity); a value systemd would ignore is a finding too.

Warns about the config's own warnings, a drain shorter than the longest
total of a policy (a stream may run that long), a state directory on
a network filesystem where flock is unreliable, and a state Redis that
serve would start on local state, or start with less than it was given:
a sentinel that does not answer or does not know the master, a cluster
seed node that does not answer (each named), a master or server that
does not answer. A state.url that is a sentinel, a cluster node or a replica is
refused, as serve refuses it.

Flags:
  --config FILE  the config (default $SLUICE_CONFIG, else the built-in defaults)
  --policy NAME  the policy the units' agents call with (default
                 interactive if the config has it, else the longest)
  --margin DUR   added to the worst case and to drain (default 10s)
  --strict       exit 1 on warnings too
  --json         print one JSON object: config, policies, routes,
                 warnings, judged_against, units, findings
  --help         print this help

Findings are what cuts calls in normal operation: a TimeoutStartSec or
RuntimeMaxSec below the worst case, a timer with no RandomizedDelaySec, a
line systemd ignores or rejects. Warnings are what bites only when
someone stops a unit (TimeoutStopSec) or restarts the gateway (drain),
and the config's own warnings: printed, exit 0 unless --strict.

Exit status: 0 clean or warnings only, 1 findings (or warnings with
--strict), 2 unusable input (a bad
flag or config, or a path that does not exist, cannot be read, or is not
a .service, .timer or directory).
`

// options are the parsed command line.
type options struct {
	config, policy string
	margin         time.Duration
	json, strict   bool
	paths          []string
}

// maxUnitSize caps a unit file; systemd refuses lines over 1 MiB, and
// real units are a few hundred bytes.
const maxUnitSize = 1 << 20

// Run runs `sluice check` with args (the arguments after "check"), writes
// the report to stdout and errors to stderr, one line each, and returns the
// exit code: 0 when clean, 1 on any finding or warning, 2 on unusable
// input. Flags may come before or after the unit paths; "--" ends them.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return run(args, stdout, stderr, fsMagic)
}

// run is Run with the filesystem probe given.
func run(args []string, stdout, stderr io.Writer, magic func(string) (uint32, error)) int {
	opt, err := parseArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		io.WriteString(stdout, usage)
		return exitClean
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice check: %v; see sluice check --help\n", err)
		return exitUsage
	}
	r, err := check(opt, magic)
	if err != nil {
		fmt.Fprintf(stderr, "sluice check: %v\n", err)
		return exitUsage
	}
	if opt.json {
		err = r.writeJSON(stdout)
	} else {
		err = r.writeText(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "sluice check: writing the report: %v\n", err)
		return exitUsage
	}
	if r.failed(opt.strict) {
		return exitFindings
	}
	return exitClean
}

// check does the work: loads the config and the units and judges them.
func check(opt options, magic func(string) (uint32, error)) (*report, error) {
	path := cmdline.LocateConfig(opt.config).Path
	c, err := config.Load(path)
	if err == nil {
		err = c.Validate()
	}
	if err == nil {
		err = serveRefuses(c)
	}
	var stateWarnings []warning
	if err == nil {
		stateWarnings, err = askRedis(c)
	}
	if err != nil {
		return nil, err
	}
	t, err := judgeTarget(c, opt)
	if err != nil {
		return nil, err
	}
	units, err := collect(opt.paths)
	if err != nil {
		return nil, err
	}
	pools, err := poolRows(c)
	if err != nil {
		return nil, err
	}
	r := &report{Config: path, Policies: policyRows(c), Routes: routeRows(c), Rates: rateRows(c), Pools: pools,
		Idempotency: idempotencyOf(c), Priorities: prioritiesOf(c),
		Warnings: append(warnings(c, magic), stateWarnings...), Target: t, Units: []string{}, Findings: []finding{}}
	for i := range r.Policies {
		r.Policies[i].Judged = len(units) > 0 && r.Policies[i].Name == t.Policy
	}
	tg := target{Policy: t.Policy, Worst: time.Duration(t.WorstMS) * time.Millisecond,
		Margin: opt.margin, Drain: c.Drain}
	if c.Idempotency.Enabled {
		tg.KeepFor = c.Idempotency.TTL
	}
	for _, u := range units {
		f, err := judgeUnit(u, tg)
		if err != nil {
			return nil, err
		}
		r.Units = append(r.Units, u.Path)
		for _, x := range f {
			if x.Severity == "" {
				x.Severity = severityFinding
			}
			r.Findings = append(r.Findings, x)
		}
	}
	return r, nil
}

// judgeTarget works out what the units are judged against.
func judgeTarget(c *config.Config, opt options) (judgedBy, error) {
	name, reason, err := chooseTarget(c, opt.policy)
	if err != nil {
		return judgedBy{}, err
	}
	worst := withFallbacks(c, name)
	if name == "" {
		name, reason = "interactive", "built in, as the config has no policy"
		worst = worstCase(sluice.Interactive())
	}
	return judgedBy{Policy: name, Reason: reason, WorstMS: worst.Milliseconds(),
		MarginMS: opt.margin.Milliseconds(), NeedMS: addSat(worst, opt.margin).Milliseconds(),
		DrainMS: c.Drain.Milliseconds()}, nil
}

// judgeUnit reads the unit u with its drop-ins and returns its findings.
func judgeUnit(u unitFiles, t target) ([]finding, error) {
	var entries []entry
	for _, f := range append([]string{u.Path}, u.DropIns...) {
		data, err := readUnitFile(f)
		if err != nil {
			return nil, err
		}
		es, err := parseUnit(f, data)
		var se *syntaxError
		if errors.As(err, &se) {
			return []finding{refused(u.Path, se)}, nil
		}
		entries = append(entries, es...)
	}
	var out []finding
	for _, e := range entries {
		if f, ok := unknownKey(u.Path, e); ok {
			out = append(out, f)
		}
		if e.Section == "Timer" && e.Key == "OnCalendar" && e.Value != "" {
			if err := parseCalendar(e.Value); err != nil {
				out = append(out, badCalendar(u.Path, e, err))
			}
		}
	}
	if u.kind() == "timer" {
		return append(out, judgeTimer(readTimer(u.Path, entries))...), nil
	}
	return append(out, judgeService(readService(u.Path, entries), t)...), nil
}

// refused is the finding for a file systemd refuses to load.
func refused(unitPath string, se *syntaxError) finding {
	return finding{File: se.File, Line: se.Line, Unit: unitName(unitPath),
		Problem: se.Msg + ": systemd refuses to load the unit",
		Fix:     "write the section header as [Unit], [Service], [Timer] or [Install] on a line of its own"}
}

// readUnitFile reads a unit file or drop-in, refusing one too large to be
// a unit.
func readUnitFile(p string) ([]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, pathError(p, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxUnitSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %v", p, err)
	}
	if len(data) > maxUnitSize {
		return nil, fmt.Errorf("%s: larger than 1 MiB, so not a unit file", p)
	}
	return data, nil
}

// parseArgs reads the flags and paths, which may be interleaved.
func parseArgs(args []string) (options, error) {
	opt := options{margin: 10 * time.Second}
	fs := flag.NewFlagSet("sluice check", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&opt.config, "config", "", "")
	fs.StringVar(&opt.policy, "policy", "", "")
	fs.BoolVar(&opt.json, "json", false, "")
	fs.BoolVar(&opt.strict, "strict", false, "")
	fs.Func("margin", "", func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			return fmt.Errorf("%q is not a duration of 0 or more (write e.g. 10s or 1m)", s)
		}
		opt.margin = d
		return nil
	})
	paths, err := cmdline.Parse(fs, args)
	opt.paths = paths
	return opt, err
}
