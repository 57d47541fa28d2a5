package check

import (
	"fmt"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// corpusFindings judges every unit under dirs against t and returns the
// findings as "file:line setting need_ms".
func corpusFindings(t *testing.T, tg target, dirs ...string) []string {
	t.Helper()
	units, err := collect(dirs)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range units {
		fs, err := judgeUnit(u, tg)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			need := int64(-1)
			if f.NeedMS != nil {
				need = *f.NeedMS
			}
			if f.Problem == "" || f.Fix == "" || f.Unit == "" {
				t.Errorf("incomplete finding %+v", f)
			}
			got = append(got, fmt.Sprintf("%s:%d %s %d", filepath.ToSlash(f.File), f.Line, f.Setting, need))
		}
	}
	return got
}

// interactive is the built-in interactive policy as units are judged
// against it by default: worst case 30s, margin 10s, drain 30s.
var interactive = target{Policy: "interactive", Worst: 30 * time.Second, Margin: 10 * time.Second, Drain: 30 * time.Second}

func TestCorpusClean(t *testing.T) {
	if got := corpusFindings(t, interactive, "testdata/clean"); len(got) != 0 {
		t.Errorf("clean units gave findings: %q", got)
	}
}

func TestCorpusBad(t *testing.T) {
	got := corpusFindings(t, interactive, "testdata/bad")
	want := []string{
		"testdata/bad/broken.service:4  -1", // systemd refuses the unit: nothing else is judged
		"testdata/bad/chat-worker.service:6 TimeoutStopSec 40000",
		"testdata/bad/chat-worker.service:7 RuntimeMaxSec 40000",
		"testdata/bad/gateway.service:3 TimeoutStopSec 40000",
		"testdata/bad/notify-agent.service:4 TimeoutStartSec 40000",
		"testdata/bad/report-job.service:7 TimeoutStartSec 40000",
		"testdata/bad/report-job.timer:0 RandomizedDelaySec -1",
		"testdata/bad/typo.service:4 TimeoutStopSec -1",
		"testdata/bad/zero-delay.timer:3 RandomizedDelaySec -1",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n got %q\nwant %q", got, want)
	}
}

// TestCorpusLongPolicy judges the clean units against nightly: a 90s stop
// timeout no longer covers a 10m call, and the gateway's unit, judged on
// drain, stays clean.
func TestCorpusLongPolicy(t *testing.T) {
	nightly := target{Policy: "nightly", Worst: 10 * time.Minute, Margin: 10 * time.Second, Drain: 30 * time.Second}
	got := corpusFindings(t, nightly, "testdata/clean")
	want := []string{
		"testdata/clean/agent-worker.service:17 TimeoutStopSec 610000", // after a continued line
		"testdata/clean/embeddings.service:0 TimeoutStopSec 610000",    // systemd's default
		"testdata/clean/nightly-summary.service:0 TimeoutStopSec 610000",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("findings:\n got %q\nwant %q", got, want)
	}
}

func TestFindingText(t *testing.T) {
	units, err := collect([]string{"testdata/bad/chat-worker.service", "testdata/dropins/foo.service"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range units {
		fs, err := judgeUnit(u, interactive)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range fs {
			got = append(got, f.String())
		}
	}
	want := []string{
		"testdata/bad/chat-worker.service:6: warning: TimeoutSec=15s (as TimeoutStopSec) is shorter than policy interactive's worst case 30s + margin 10s = 40s: on stop systemd sends SIGTERM and after 15s SIGKILL, killing the agent mid-retry, and the rerun pays for the call again — set TimeoutStopSec=40s or more, or shorten the policy's total",
		"testdata/bad/chat-worker.service:7: RuntimeMaxSec=30s is shorter than policy interactive's worst case 30s + margin 10s = 40s: systemd kills the service once it has run that long, mid-retry when a call is under way — set RuntimeMaxSec=40s or more, or remove it",
		"testdata/dropins/service.d/15-x.conf:2: foo.service: RuntimeMaxSec=25s is shorter than policy interactive's worst case 30s + margin 10s = 40s: systemd kills the service once it has run that long, mid-retry when a call is under way — set RuntimeMaxSec=40s or more, or remove it",
	}
	for i := range got {
		got[i] = filepath.ToSlash(got[i])
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("text:\n got %q\nwant %q", got, want)
	}
}

func TestDefaultValueFinding(t *testing.T) {
	sv := serviceOf(t, "[Service]\nType=oneshot\nExecStart=/bin/a\n")
	fs := judgeService(sv, target{Policy: "nightly", Worst: 10 * time.Minute, Margin: 10 * time.Second})
	if len(fs) != 1 {
		t.Fatalf("findings = %+v", fs)
	}
	want := "u.service: warning: TimeoutStopSec (systemd's default, 1m30s) is shorter than"
	if got := fs[0].String(); len(got) < len(want) || got[:len(want)] != want {
		t.Errorf("got %q, want it to start %q", got, want)
	}
	if fs[0].Fix != "add TimeoutStopSec=10m10s or more under [Service] (a drop-in will do), or shorten the policy's total" {
		t.Errorf("fix = %q", fs[0].Fix)
	}
}
