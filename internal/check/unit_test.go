package check

import (
	"strings"
	"testing"
	"time"
)

// service parses one unit file's text as readService sees it.
func serviceOf(t *testing.T, text string) service {
	t.Helper()
	es, err := parseUnit("u.service", []byte(text))
	if err != nil {
		t.Fatal(err)
	}
	return readService("u.service", es)
}

func TestReadService(t *testing.T) {
	const s = time.Second
	tests := []struct {
		name                 string
		in                   string
		typ                  string
		start, stop, runtime time.Duration
		startAt, stopAt      int // line that set it; 0 for the default
		problems             int
	}{
		{"defaults", "[Service]\nExecStart=/bin/a\n",
			"simple", 90 * s, 90 * s, infinity, 0, 0, 0},
		{"TimeoutSec sets both", "[Service]\nExecStart=/bin/a\nTimeoutSec=1min 30s\n",
			"simple", 90 * s, 90 * s, infinity, 3, 3, 0},
		{"a later specific one overrides TimeoutSec", "[Service]\nTimeoutSec=20s\nTimeoutStopSec=50s\nExecStart=/bin/a\n",
			"simple", 20 * s, 50 * s, infinity, 2, 3, 0},
		{"a later TimeoutSec overrides a specific one", "[Service]\nTimeoutStopSec=50s\nTimeoutSec=20s\nExecStart=/bin/a\n",
			"simple", 20 * s, 20 * s, infinity, 3, 3, 0},
		{"later assignment wins", "[Service]\nTimeoutStopSec=5s\nTimeoutStopSec=2min\nExecStart=/bin/a\n",
			"simple", 90 * s, 120 * s, infinity, 0, 3, 0},
		{"empty assignment is ignored, not a reset", "[Service]\nTimeoutStopSec=5s\nTimeoutStopSec=\nExecStart=/bin/a\n",
			"simple", 90 * s, 5 * s, infinity, 0, 2, 1},
		{"bad value is ignored", "[Service]\nTimeoutStopSec=5s\nTimeoutStopSec=ten seconds\nExecStart=/bin/a\n",
			"simple", 90 * s, 5 * s, infinity, 0, 2, 1},
		{"0 means no timeout", "[Service]\nTimeoutStartSec=0\nTimeoutStopSec=0\nRuntimeMaxSec=0\nExecStart=/bin/a\n",
			"simple", infinity, infinity, 0, 2, 3, 0},
		{"infinity", "[Service]\nTimeoutStopSec=infinity\nRuntimeMaxSec=1h\nExecStart=/bin/a\n",
			"simple", 90 * s, infinity, time.Hour, 0, 2, 0},
		{"oneshot has no start timeout by default", "[Service]\nType=oneshot\nExecStart=/bin/a\n",
			"oneshot", infinity, 90 * s, infinity, 0, 0, 0},
		{"oneshot with TimeoutSec", "[Service]\nType=oneshot\nTimeoutSec=10min\nExecStart=/bin/a\n",
			"oneshot", 10 * time.Minute, 10 * time.Minute, infinity, 3, 3, 0},
		{"oneshot with only a stop timeout", "[Service]\nType=oneshot\nTimeoutStopSec=10s\nExecStart=/bin/a\n",
			"oneshot", infinity, 10 * s, infinity, 0, 3, 0},
		{"no ExecStart is oneshot", "[Service]\nExecStop=/bin/a\n",
			"oneshot", infinity, 90 * s, infinity, 0, 0, 0},
		{"empty ExecStart empties the list", "[Service]\nExecStart=/bin/a\nExecStart=\n",
			"oneshot", infinity, 90 * s, infinity, 0, 0, 0},
		{"BusName makes dbus", "[Service]\nBusName=org.example.A\nExecStart=/bin/a\n",
			"dbus", 90 * s, 90 * s, infinity, 0, 0, 0},
		{"bad Type is ignored", "[Service]\nType=daemon\nExecStart=/bin/a\n",
			"simple", 90 * s, 90 * s, infinity, 0, 0, 1},
		{"other sections do not count", "[Unit]\nTimeoutStopSec=1s\n[Install]\nTimeoutStopSec=1s\n[Service]\nExecStart=/bin/a\n",
			"simple", 90 * s, 90 * s, infinity, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sv := serviceOf(t, tt.in)
			if sv.Type != tt.typ {
				t.Errorf("Type = %q, want %q", sv.Type, tt.typ)
			}
			for _, c := range []struct {
				what       string
				got        limit
				want       time.Duration
				wantAt     int
				checkWhere bool
			}{
				{"start", sv.Start, tt.start, tt.startAt, true},
				{"stop", sv.Stop, tt.stop, tt.stopAt, true},
				{"runtime", sv.Runtime, tt.runtime, 0, false},
			} {
				if c.got.D != c.want {
					t.Errorf("%s = %v, want %v", c.what, c.got.D, c.want)
				}
				if c.checkWhere && (c.got.At.Line != c.wantAt || c.got.At.File != "u.service") {
					t.Errorf("%s set at %v, want line %d", c.what, c.got.At, c.wantAt)
				}
			}
			if len(sv.Problems) != tt.problems {
				t.Errorf("problems = %v, want %d", sv.Problems, tt.problems)
			}
		})
	}
}

func TestEmptyAssignmentFinding(t *testing.T) {
	sv := serviceOf(t, "[Service]\nExecStart=/bin/a\nTimeoutStopSec=\n")
	if len(sv.Problems) != 1 {
		t.Fatalf("problems = %v", sv.Problems)
	}
	p := sv.Problems[0]
	if p.Line != 3 || p.Setting != "TimeoutStopSec" || !strings.Contains(p.Problem, "does not reset it") ||
		!strings.Contains(p.Problem, "systemd ignores the line") {
		t.Errorf("finding = %+v", p)
	}
}

func TestReadTimer(t *testing.T) {
	tests := []struct {
		name     string
		in       string
		calendar int
		delay    time.Duration
		delayAt  int
		problems int
	}{
		{"calendar, no delay", "[Timer]\nOnCalendar=hourly\n", 1, 0, 0, 0},
		{"two calendars and a delay", "[Timer]\nOnCalendar=Mon 09:00\nOnCalendar=Fri 17:00\nRandomizedDelaySec=5min\n",
			2, 5 * time.Minute, 4, 0},
		{"empty OnCalendar empties the list", "[Timer]\nOnCalendar=hourly\nOnCalendar=\nOnBootSec=5min\n", 0, 0, 0, 0},
		{"bad delay is ignored", "[Timer]\nOnCalendar=daily\nRandomizedDelaySec=1h\nRandomizedDelaySec=soon\n",
			1, time.Hour, 3, 1},
		{"delay in the wrong section", "[Service]\nRandomizedDelaySec=1h\n[Timer]\nOnCalendar=daily\n", 1, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, err := parseUnit("u.timer", []byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			tm := readTimer("u.timer", es)
			if len(tm.Calendar) != tt.calendar || tm.Delay.D != tt.delay || tm.Delay.At.Line != tt.delayAt ||
				len(tm.Problems) != tt.problems {
				t.Errorf("got %d calendars, delay %v at %v, problems %v; want %d, %v at line %d, %d",
					len(tm.Calendar), tm.Delay.D, tm.Delay.At, tm.Problems, tt.calendar, tt.delay, tt.delayAt, tt.problems)
			}
		})
	}
}

func TestServesGateway(t *testing.T) {
	tests := []struct {
		exec []string
		want bool
	}{
		{[]string{"/usr/local/bin/sluice serve --config /etc/sluice.yaml"}, true},
		{[]string{"sluice serve"}, true},
		{[]string{"-/usr/bin/sluice serve"}, true},
		{[]string{"@/usr/bin/sluice sluice serve"}, true},
		{[]string{"/usr/bin/env sluice serve --listen :8080"}, true},
		{[]string{"/usr/bin/sluice fake --listen 127.0.0.1:9090"}, false},
		{[]string{"/usr/bin/sluice check --config /etc/sluice.yaml"}, false},
		{[]string{"/srv/agent/run serve"}, false},
		{nil, false},
	}
	for _, tt := range tests {
		got := service{Exec: tt.exec}.servesGateway()
		if got != tt.want {
			t.Errorf("servesGateway(%q) = %v, want %v", tt.exec, got, tt.want)
		}
	}
}
