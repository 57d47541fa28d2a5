package check

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCheck runs Run with a clean environment: no $SLUICE_CONFIG and a
// state directory under a temporary directory.
func runCheck(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	t.Setenv("SLUICE_CONFIG", "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	var out, errOut bytes.Buffer
	code = Run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRunExitCodes(t *testing.T) {
	const quiet = "testdata/config/quiet.yaml"
	tests := []struct {
		name    string
		args    []string
		code    int
		stderr  string // part of the one line on stderr; "" for none
		stdout  string // part of stdout
		lineOut bool   // stderr is exactly one line
	}{
		{"help", []string{"--help"}, 0, "", "usage: sluice check", false},
		{"clean config, clean units", []string{"--config", quiet, "testdata/clean"}, 0, "", "sluice check: clean (6 units)", false},
		{"clean config, no units", []string{"--config", quiet}, 0, "", "Units: none given", false},
		{"built-in defaults pass", nil, 0, "", "sluice check: clean (0 units)", false},
		{"built-in defaults pass --strict: drain is the longest total", []string{"--strict"}, 0, "", "sluice check: clean (0 units)", false},
		{"a drain shorter than a total warns", []string{"--config", "testdata/config/short-drain.yaml"}, 0, "",
			"drain 30s is shorter than the total 10m of policy nightly", false},
		{"a drain shorter than a total with --strict", []string{"--strict", "--config", "testdata/config/short-drain.yaml"}, 1, "",
			"sluice check: 1 warning, 0 findings", false},
		{"findings", []string{"--config", quiet, "testdata/bad/report-job.timer"}, 1, "",
			"testdata/bad/report-job.timer: OnCalendar=hourly fires on the clock", false},
		{"flags after paths", []string{"testdata/bad/gateway.service", "--config", quiet, "--margin", "0s"}, 0, "",
			"warning: TimeoutStopSec=20s is shorter than the config's drain 30s + margin 0s = 30s", false},
		{"a stop timeout is a warning, failing with --strict", []string{"testdata/bad/gateway.service", "--strict", "--config", quiet}, 1, "",
			"warning: TimeoutStopSec=20s is shorter than the config's drain 30s", false},
		{"a longer margin", []string{"--config", quiet, "--margin", "1m", "testdata/clean/sluice.service"}, 0, "",
			"set TimeoutStopSec=1m30s or more", false},
		{"a start timeout is a finding", []string{"--config", quiet, "testdata/bad/notify-agent.service"}, 1, "",
			"TimeoutStartSec", false},
		{"a unit systemd refuses", []string{"--config", quiet, "testdata/bad/broken.service"}, 1, "",
			"testdata/bad/broken.service:4: invalid section header \"[Service\": systemd refuses to load the unit", false},
		{"bad config", []string{"--config", "testdata/config/bad.yaml"}, 2,
			"sluice check: config: policies.interactive.retry.max_atempts: unknown key (did you mean max_attempts?) at testdata/config/bad.yaml:3", "", true},
		{"missing config", []string{"--config", "testdata/config/missing.yaml"}, 2, "sluice check: config:", "", true},
		{"azure without base_url", []string{"--config", "testdata/config/azure-no-url.yaml"}, 2,
			"providers.azure.base_url: missing; kind azure needs your resource's address, e.g. https://my-resource.openai.azure.com", "", true},
		{"azure off Azure", []string{"--config", "testdata/config/azure-wrong-host.yaml"}, 0, "",
			`"https://api.openai.com" is not an Azure OpenAI resource's address`, false},
		{"missing path", []string{"--config", quiet, "testdata/nope.service"}, 2, "testdata/nope.service: no such file or directory", "", true},
		{"not a unit", []string{"--config", quiet, "testdata/config/quiet.yaml"}, 2, "not a .service or .timer file", "", true},
		{"unknown policy", []string{"--policy", "batch"}, 2, "--policy batch: the config has no such policy", "", true},
		{"bad margin", []string{"--margin", "ten"}, 2, `"ten" is not a duration`, "", true},
		{"negative margin", []string{"--margin", "-1s"}, 2, "is not a duration of 0 or more", "", true},
		{"unknown flag", []string{"--verbose"}, 2, "flag provided but not defined: -verbose", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCheck(t, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.code, out, errOut)
			}
			if tt.stderr == "" && errOut != "" || !strings.Contains(errOut, tt.stderr) {
				t.Errorf("stderr = %q, want %q", errOut, tt.stderr)
			}
			if tt.lineOut && strings.Count(errOut, "\n") != 1 {
				t.Errorf("stderr is not one line: %q", errOut)
			}
			if !strings.Contains(out, tt.stdout) {
				t.Errorf("stdout lacks %q:\n%s", tt.stdout, out)
			}
			if code == 2 && out != "" {
				t.Errorf("unusable input, yet stdout: %q", out)
			}
		})
	}
}

func TestRunText(t *testing.T) {
	code, out, _ := runCheck(t, "testdata/bad/report-job.service")
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	for _, want := range []string{
		"config: built-in defaults",
		"  interactive  3         25s          30s    1m59s      30s         30s             10s        total bounds it",
		"  nightly      5         2m10s        10m    19m38s     10m         10m             8m         total bounds it",
		"Rate limits: a call over one (or over its provider's max_concurrent) waits for its slot",
		"  none configured (pauses the providers ask for are still kept)",
		"  /openai     openai     interactive  none       1m59s      30s         total bounds it",
		"Units: 1 checked against policy interactive (the default; choose another with --policy): worst case 30s + margin 10s = 40s",
		"\ntestdata/bad/report-job.service:7: TimeoutStartSec=20s is shorter than",
		"sluice check: 0 warnings, 1 finding in 1 unit\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
}

func TestRunJSON(t *testing.T) {
	code, out, errOut := runCheck(t, "--json", "--config", "testdata/config/fallbacks.yaml", "testdata/bad/chat-worker.service")
	if code != 1 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	var r struct {
		Config   string
		Policies []struct {
			Name            string
			WorstCaseMS     int64 `json:"worst_case_ms"`
			WithFallbacksMS int64 `json:"with_fallbacks_ms"`
			UnitsJudged     bool  `json:"units_judged"`
			BoundedByTotal  bool  `json:"bounded_by_total"`
		}
		Routes []struct {
			Prefix      string
			Fallbacks   []struct{ Provider, Model string }
			WorstCaseMS int64 `json:"worst_case_ms"`
		}
		Warnings      []struct{ Kind, Message string }
		JudgedAgainst struct {
			Policy string
			NeedMS int64 `json:"need_ms"`
		} `json:"judged_against"`
		Units    []string
		Findings []struct {
			File, Unit, Setting, Value, Problem, Fix string
			Line                                     int
			ValueMS                                  *int64 `json:"value_ms"`
			NeedMS                                   *int64 `json:"need_ms"`
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("decoding %s: %v", out, err)
	}
	if r.Config != "testdata/config/fallbacks.yaml" || len(r.Policies) != 2 || len(r.Routes) != 2 {
		t.Errorf("config %q, %d policies, %d routes", r.Config, len(r.Policies), len(r.Routes))
	}
	// No interactive policy: units are judged against the longest, batch.
	if p := r.Policies[0]; p.Name != "batch" || p.WorstCaseMS != 120000 || !p.UnitsJudged || !p.BoundedByTotal {
		t.Errorf("policies[0] = %+v", p)
	}
	if p := r.Policies[1]; p.Name != "chat" || p.WorstCaseMS != 29500 || p.WithFallbacksMS != 59000 || p.UnitsJudged {
		t.Errorf("policies[1] = %+v", p)
	}
	if rt := r.Routes[0]; rt.Prefix != "/chat" || len(rt.Fallbacks) != 1 || rt.WorstCaseMS != 59000 {
		t.Errorf("routes[0] = %+v", rt)
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings = %+v, want none (drain 2m covers batch's total, memory state)", r.Warnings)
	}
	if r.JudgedAgainst.Policy != "batch" || r.JudgedAgainst.NeedMS != 130000 {
		t.Errorf("judged_against = %+v", r.JudgedAgainst)
	}
	if len(r.Units) != 1 || len(r.Findings) != 2 {
		t.Fatalf("units %q, findings %+v", r.Units, r.Findings)
	}
	f := r.Findings[0]
	if f.File != "testdata/bad/chat-worker.service" || f.Line != 6 || f.Setting != "TimeoutStopSec" ||
		f.Value != "15s" || *f.ValueMS != 15000 || *f.NeedMS != 130000 || f.Unit != "chat-worker.service" {
		t.Errorf("findings[0] = %+v", f)
	}
}

func TestRunJSONEmptyLists(t *testing.T) {
	_, out, _ := runCheck(t, "--json", "--config", "testdata/config/quiet.yaml")
	for _, want := range []string{`"warnings": []`, `"units": []`, `"findings": []`} {
		if !strings.Contains(out, want) {
			t.Errorf("JSON lacks %s:\n%s", want, out)
		}
	}
}

func TestRunConfigFromEnv(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	abs, err := filepath.Abs("testdata/config/quiet.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SLUICE_CONFIG", abs)
	var out bytes.Buffer
	if code := Run(nil, nil, &out, os.Stderr); code != 0 || !strings.Contains(out.String(), "config: "+abs) {
		t.Errorf("exit %d, output:\n%s", code, out.String())
	}
}

func TestRunStateOnNetworkFS(t *testing.T) {
	t.Setenv("SLUICE_CONFIG", "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	nfs := func(string) (uint32, error) { return 0x6969, nil }
	var out bytes.Buffer
	code := run([]string{"--config", "testdata/config/fallbacks.yaml"}, &out, os.Stderr, nfs)
	if code != 0 {
		t.Errorf("memory state: exit %d, want 0 (no flock check)", code)
	}
	out.Reset()
	code = run([]string{"--strict"}, &out, os.Stderr, nfs)
	if code != 1 || !strings.Contains(out.String(), "is on NFS, where flock is unreliable") {
		t.Errorf("file state on NFS: exit %d, output:\n%s", code, out.String())
	}
}
