package report

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fixedNow is the time the tests run the command at.
var fixedNow = time.Date(2025, 3, 4, 13, 0, 0, 0, time.UTC)

// runCmd runs the command and returns its exit code, stdout and stderr.
func runCmd(t *testing.T, stdin []byte, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, bytes.NewReader(stdin), &out, &errb, fixedNow)
	return code, out.String(), errb.String()
}

func TestGolden(t *testing.T) {
	g := generate()
	code, out, stderr := runCmd(t, jsonl(t, g.lines), "-")
	if code != ExitOK || stderr != "" {
		t.Fatalf("exit %d, stderr %q", code, stderr)
	}
	golden := filepath.Join("testdata", "report.golden")
	if *update {
		if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -run TestGolden -update to create it)", err)
	}
	if out != string(want) {
		t.Errorf("report differs from %s (go test -update rewrites it):\n--- got\n%s", golden, out)
	}
}

// nearestRank computes a percentile the long way, independently of
// Percentile: sort, then the value at rank ceil(p/100*n).
func nearestRank(vs []float64, p float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	rank := int(math.Ceil(p / 100 * float64(len(s))))
	return s[max(rank, 1)-1]
}

// latenciesOf returns the latency_ms of the generated attempts that went
// upstream (not circuit_open, not budget_exhausted), optionally of one
// provider and model.
func latenciesOf(lines []Line, provider, model string) []float64 {
	var vs []float64
	for _, l := range lines {
		if l.Outcome == "circuit_open" || l.Outcome == "budget_exhausted" {
			continue
		}
		if provider != "" && (l.Provider != provider || l.Model != model) {
			continue
		}
		vs = append(vs, l.LatencyMS)
	}
	return vs
}

// TestPrintedP95 checks that the p95 the text report prints, overall and
// per provider and model, is the one computed here independently.
func TestPrintedP95(t *testing.T) {
	g := generate()
	_, out, _ := runCmd(t, jsonl(t, g.lines), "-")
	rows := map[string][]string{}
	inTable := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "LATENCY") {
			inTable = true
			continue
		}
		if inTable && strings.TrimSpace(line) == "" {
			break
		}
		if f := strings.Fields(line); inTable && len(f) == 11 {
			rows[f[0]+"/"+f[1]] = f
		}
	}
	for _, tc := range []struct{ provider, model, row string }{
		{"", "", "all/all"},
		{"openai", "gpt-4o-mini", "openai/gpt-4o-mini"},
		{"openai", "gpt-4o", "openai/gpt-4o"},
		{"anthropic", "claude-sonnet-4", "anthropic/claude-sonnet-4"},
	} {
		row, found := rows[tc.row]
		if !found {
			t.Fatalf("no latency row %s in:\n%s", tc.row, out)
		}
		vs := latenciesOf(g.lines, tc.provider, tc.model)
		if got, want := row[2], strconv.Itoa(len(vs)); got != want {
			t.Errorf("%s n = %s, want %s", tc.row, got, want)
		}
		if got, want := row[4], fmt.Sprintf("%.1f", nearestRank(vs, 95)); got != want {
			t.Errorf("%s printed p95 = %s, want %s", tc.row, got, want)
		}
	}
}

// TestKnownFigures checks the summary of the generated log against what
// the generator scripted and what the test computes from the lines.
func TestKnownFigures(t *testing.T) {
	g := generate()
	s := Summarize(g.lines)
	if s.Calls != g.calls || s.Attempts != len(g.lines) {
		t.Errorf("calls, attempts = %d, %d; want %d, %d", s.Calls, s.Attempts, g.calls, len(g.lines))
	}
	all := latenciesOf(g.lines, "", "")
	if got, want := s.Overall.Latency.P95, nearestRank(all, 95); got != want {
		t.Errorf("overall p95 = %v, want %v", got, want)
	}
	if got, want := s.Overall.Latency.P99, nearestRank(all, 99); got != want {
		t.Errorf("overall p99 = %v, want %v", got, want)
	}
	var retries int
	var waited, spend float64
	var at429 [60]int
	for _, l := range g.lines {
		if l.Outcome == "retry" {
			retries++
			waited += l.RetryInMS
		}
		if l.Status == 429 {
			at429[l.TS.Minute()]++
		}
		spend += l.CostUSD
	}
	if s.Retries.Count != retries || math.Abs(s.Retries.WaitSumMS-waited) > 1e-6 {
		t.Errorf("retries = %d waiting %v ms, want %d waiting %v", s.Retries.Count, s.Retries.WaitSumMS, retries, waited)
	}
	if math.Abs(s.SpendUSD-spend) > 1e-9 {
		t.Errorf("spend = %v, want %v", s.SpendUSD, spend)
	}
	if s.RateLimited.ByMinute != at429 {
		t.Errorf("429s by minute = %v, want %v", s.RateLimited.ByMinute, at429)
	}
	if top := s.RateLimited.Top; len(top) == 0 || top[0].Minute != 0 || top[0].N < 3*genCronPerHour {
		t.Errorf("busiest minute = %+v, want :00 with at least %d", top, 3*genCronPerHour)
	}
	want := Opening{Provider: "anthropic", Start: genOpenAt, End: genCloseAt,
		DurationMS: 66000, FastFails: genFastFails, CallsFailedFast: genFastFails,
		FailedProbes: genFailedProbes, Before: []Count{{Key: "503", N: 5, Share: 1}}}
	if len(s.Openings) != 1 {
		t.Fatalf("openings = %+v, want one", s.Openings)
	}
	got := s.Openings[0]
	if len(got.Probes) != genProbes {
		t.Errorf("probes = %v, want %d", got.Probes, genProbes)
	}
	got.Probes = nil
	if !reflect.DeepEqual(got, want) {
		t.Errorf("opening = %+v\nwant      %+v", got, want)
	}
}
