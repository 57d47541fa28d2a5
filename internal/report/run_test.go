package report

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
)

// writeFile writes data to name in dir, gzipped when name ends in .gz,
// and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	if strings.HasSuffix(name, ".gz") {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(data)
		zw.Close()
		data = b.Bytes()
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// summaryOf runs the command with --json and decodes its output.
func summaryOf(t *testing.T, stdin []byte, args ...string) Summary {
	t.Helper()
	code, out, stderr := runCmd(t, stdin, append([]string{"--json"}, args...)...)
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var s Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil {
		t.Fatalf("--json output does not decode: %v", err)
	}
	return s
}

// TestInputsMerge splits the generated log into a plain file, a rotated
// gzip file and stdin, and checks that together they give the same figures
// as the whole log.
func TestInputsMerge(t *testing.T) {
	g := generate()
	whole := summaryOf(t, jsonl(t, g.lines), "-")
	var a, b, c []Line
	for i, l := range g.lines {
		switch i % 3 {
		case 0:
			a = append(a, l)
		case 1:
			b = append(b, l)
		default:
			c = append(c, l)
		}
	}
	dir := t.TempDir()
	pa := writeFile(t, dir, "attempts.jsonl", jsonl(t, a))
	pb := writeFile(t, dir, "attempts.jsonl.1.gz", jsonl(t, b))
	split := summaryOf(t, jsonl(t, c), pa, pb, "-")
	if len(split.Inputs) != 3 || split.Inputs[1].Lines != len(b) {
		t.Errorf("inputs = %+v", split.Inputs)
	}
	split.Inputs, whole.Inputs = nil, nil
	gotJSON, _ := json.Marshal(split)
	wantJSON, _ := json.Marshal(whole)
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Error("merged inputs give other figures than the whole log")
	}
}

func TestMalformedCounted(t *testing.T) {
	g := generate()
	data := append([]byte("garbage\n{\"ts\":1}\n"), jsonl(t, g.lines)...)
	data = append(data, `{"ts":"2025-03-04T13:00:00Z","outcome":"ok"`...) // cut mid-write
	code, out, stderr := runCmd(t, data, "-")
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(out, "3 malformed skipped") {
		t.Errorf("report does not count the 3 malformed lines:\n%s", out)
	}
	s := summaryOf(t, data, "-")
	if s.Malformed != 3 || s.Attempts != len(g.lines) {
		t.Errorf("malformed, attempts = %d, %d; want 3, %d", s.Malformed, s.Attempts, len(g.lines))
	}
}

func TestTruncatedGzip(t *testing.T) {
	g := generate()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write(jsonl(t, g.lines))
	zw.Close()
	cut := b.Bytes()[:b.Len()/2]
	s := summaryOf(t, cut, "-")
	if !s.Inputs[0].Truncated || s.Attempts == 0 || s.Attempts >= len(g.lines) {
		t.Errorf("truncated gzip: inputs %+v, %d attempts", s.Inputs, s.Attempts)
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	empty := writeFile(t, dir, "empty.jsonl", nil)
	junk := writeFile(t, dir, "junk.jsonl", []byte("not\na log\n"))
	badGzip := writeFile(t, dir, "bad-gzip", []byte{0x1f, 0x8b, 0, 0})
	tests := []struct {
		name    string
		args    []string
		code    int
		message string // in stderr when the code is 2, in stdout otherwise
	}{
		{"help", []string{"--help"}, 0, "usage: sluice report"},
		{"short help", []string{"-h"}, 0, "Exit status"},
		{"empty file", []string{empty}, 0, "no attempts to report"},
		{"missing file", []string{filepath.Join(dir, "nope.jsonl")}, 2, "nope.jsonl: no such file"},
		{"directory", []string{dir}, 2, "read failed"},
		{"only malformed", []string{junk}, 2, "no readable attempt lines, 2 malformed"},
		{"bad gzip", []string{badGzip}, 2, "looks like gzip"},
		{"unknown flag", []string{"--frobnicate"}, 2, "-frobnicate"},
		{"bad since", []string{"--since", "last tuesday", "-"}, 2, `--since "last tuesday": not a time`},
		{"since after until", []string{"--since", "2h", "--until", "3h", "-"}, 2, "is not before --until"},
		{"flags after files", []string{empty, "--json"}, 0, `"attempts": 0`},
		{"files after --", []string{"--", empty}, 0, "no attempts to report"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, stderr := runCmd(t, nil, tc.args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tc.code, stderr)
			}
			where := out
			if code == 2 {
				where = stderr
				if strings.Count(stderr, "\n") != 1 {
					t.Errorf("error is not one line: %q", stderr)
				}
			}
			if !strings.Contains(where, tc.message) {
				t.Errorf("output lacks %q:\n%s%s", tc.message, out, stderr)
			}
		})
	}
}

// logLine is an attempt line whose request id says which log it is in.
func logLine(id string) []byte {
	return []byte(`{"ts":"2025-03-04T10:00:00Z","request_id":"` + id + `","attempt":1,"outcome":"ok","status":200}` + "\n")
}

// readsLog runs the report with args and returns the log it read and its
// stderr.
func readsLog(t *testing.T, args ...string) (string, string) {
	t.Helper()
	code, out, stderr := runCmd(t, nil, append([]string{"--json"}, args...)...)
	if code != ExitOK {
		t.Fatalf("sluice report %q: exit %d: %s", args, code, stderr)
	}
	var s Summary
	if err := json.Unmarshal([]byte(out), &s); err != nil || len(s.Inputs) != 1 || s.Calls != 1 {
		t.Fatalf("sluice report %q: %v, %d calls", args, err, s.Calls)
	}
	return s.Inputs[0].Name, stderr
}

// TestDefaultLog: with no file, no --config and no $SLUICE_CONFIG, the
// report reads the built-in defaults' log, and says so.
func TestDefaultLog(t *testing.T) {
	t.Setenv(config.EnvConfig, "")
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	want := filepath.Join(state, "sluice", "attempts.jsonl")
	code, _, stderr := runCmd(t, nil)
	if code != ExitUsage || !strings.Contains(stderr, "no attempt log at "+want+" (no --config and no $SLUICE_CONFIG: the built-in defaults)") {
		t.Errorf("no log: exit %d, %q; want 2 naming the default path and why", code, stderr)
	}
	os.MkdirAll(filepath.Dir(want), 0o755)
	writeFile(t, filepath.Dir(want), "attempts.jsonl", logLine("default"))
	if id, stderr := readsLog(t); id != want || stderr != "sluice report: reading "+want+" (no --config and no $SLUICE_CONFIG: the built-in defaults)\n" {
		t.Errorf("read %q, stderr %q; want the default log, said", id, stderr)
	}
	t.Setenv("XDG_STATE_HOME", "relative/ignored")
	t.Setenv("HOME", state)
	home := filepath.Join(state, ".local", "state", "sluice")
	os.MkdirAll(home, 0o755)
	writeFile(t, home, "attempts.jsonl", logLine("home"))
	if id, _ := readsLog(t); id != filepath.Join(home, "attempts.jsonl") {
		t.Errorf("read %q; want ~/.local/state/sluice/attempts.jsonl", id)
	}
}

// TestReportFollowsConfig: the report reads the log the gateway's config
// names, found as sluice serve finds it (--config, else $SLUICE_CONFIG),
// never the default one beside it, and says which it read.
func TestReportFollowsConfig(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	os.MkdirAll(filepath.Join(state, "sluice"), 0o755)
	writeFile(t, filepath.Join(state, "sluice"), "attempts.jsonl", logLine("default"))

	dir := t.TempDir()
	envDir, flagLog := filepath.Join(dir, "env-state"), filepath.Join(dir, "flag.jsonl")
	os.MkdirAll(envDir, 0o755)
	writeFile(t, envDir, "attempts.jsonl", logLine("env"))
	writeFile(t, dir, "flag.jsonl", logLine("flag"))
	envCfg := writeFile(t, dir, "env.yaml", []byte("state: {backend: file, dir: "+envDir+"}\n"))
	flagCfg := writeFile(t, dir, "flag.yaml", []byte("log: {attempts: "+flagLog+"}\n"))
	emptyCfg := writeFile(t, dir, "empty.yaml", []byte("state: {backend: file, dir: "+t.TempDir()+"}\n"))
	stdoutCfg := writeFile(t, dir, "stdout.yaml", []byte("log: {attempts: \"-\"}\n"))
	t.Setenv(config.EnvConfig, envCfg)

	id, stderr := readsLog(t)
	if want := "sluice report: reading " + filepath.Join(envDir, "attempts.jsonl") + " (config " + envCfg + ", named by $SLUICE_CONFIG)\n"; id != filepath.Join(envDir, "attempts.jsonl") || stderr != want {
		t.Errorf("$SLUICE_CONFIG: read %q, stderr %q; want the log of its state dir, and %q", id, stderr, want)
	}
	id, stderr = readsLog(t, "--config", flagCfg)
	if want := "sluice report: reading " + flagLog + " (config " + flagCfg + ")\n"; id != flagLog || stderr != want {
		t.Errorf("--config: read %q, stderr %q; want its log.attempts, and %q", id, stderr, want)
	}
	named := filepath.Join(state, "sluice", "attempts.jsonl")
	if id, stderr = readsLog(t, named); id != named || stderr != "" {
		t.Errorf("a file named: read %q, stderr %q; want that file, nothing said", id, stderr)
	}
	for _, tc := range []struct {
		name    string
		args    []string
		message string
	}{
		{"config and file", []string{"--config", flagCfg, flagLog}, "give one or the other"},
		{"log to stdout", []string{"--config", stdoutCfg}, "log.attempts: -, config " + stdoutCfg + "); give the file"},
		{"missing config", []string{"--config", filepath.Join(dir, "nope.yaml")}, "nope.yaml"},
		{"no log", []string{"--config", emptyCfg}, "attempts.jsonl (config " + emptyCfg + "); name the gateway's config with --config or $SLUICE_CONFIG"},
	} {
		code, _, stderr := runCmd(t, nil, tc.args...)
		if code != ExitUsage || !strings.Contains(stderr, tc.message) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, stderr %q; want 2 and one line with %q", tc.name, code, stderr, tc.message)
		}
	}
}

func TestSinceUntil(t *testing.T) {
	data := jsonl(t, generate().lines)
	at := func(h, m int) time.Time { return time.Date(2025, 3, 4, h, m, 0, 0, time.UTC) }
	tests := []struct {
		name     string
		args     []string
		from, to time.Time // the window the kept attempts must lie in
	}{
		{"rfc3339", []string{"--since", "2025-03-04T11:00:00Z", "--until", "2025-03-04T12:00:00Z"}, at(11, 0), at(12, 0)},
		{"offset zone", []string{"--since", "2025-03-04T12:00:00+01:00"}, at(11, 0), at(13, 0)},
		{"duration back from now", []string{"--since", "90m"}, fixedNow.Add(-90 * time.Minute), fixedNow},
		{"until a duration ago", []string{"--until", "2h"}, genStart, fixedNow.Add(-2 * time.Hour)},
		{"date", []string{"--since", "2025-03-04"}, genStart, fixedNow},
		{"days", []string{"--since", "1d"}, genStart, fixedNow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := summaryOf(t, data, append(tc.args, "-")...)
			want := 0
			for _, l := range generate().lines {
				if !l.TS.Before(tc.from) && l.TS.Before(tc.to) {
					want++
				}
			}
			if s.Attempts != want || s.Attempts+s.OutsideWindow != len(generate().lines) {
				t.Errorf("kept %d, left out %d; want %d kept", s.Attempts, s.OutsideWindow, want)
			}
			if s.Attempts > 0 && (s.From.Before(tc.from) || !s.To.Before(tc.to)) {
				t.Errorf("window %v … %v outside %v … %v", s.From, s.To, tc.from, tc.to)
			}
		})
	}
}

func TestJSONHasEveryFigure(t *testing.T) {
	code, out, _ := runCmd(t, jsonl(t, generate().lines), "--json", "-")
	if code != ExitOK {
		t.Fatal(code)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"inputs", "malformed", "calls", "attempts", "attempts_per_call", "call_results",
		"outcomes", "statuses", "latency_overall", "latency", "retries", "breaker_openings",
		"spend_usd", "spend", "rate_limited", "over_time"} {
		if _, ok := m[k]; !ok {
			t.Errorf("--json lacks %q", k)
		}
	}
}
