package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParseCalendar(t *testing.T) {
	valid := []string{
		"daily", "hourly", "weekly", "minutely", "monthly", "yearly", "annually", "quarterly", "semiannually",
		"*-*-* 02:00:00", "*-*-* 2:00", "Mon..Fri *-*-* 9:00", "Mon..Fri 09:00", "Sat,Sun 10:30",
		"Mon,Wed..Fri *-*-* 00:00:00", "*-*-1 00:00", "2026-11-30 18:00:00", "*-02~1 00:00", "*-*~07/1 03:00",
		"*:0/15", "*:*:00", "*-*-* *:00/5:00", "*-*-01/2 04:00", "2026..2030-01-01", "12-25",
		"*-*-* 02:00:00 UTC", "daily UTC", "Mon 09:00 Europe/Berlin", "*-*-* 00:00:00.500", "04:00", "Fri",
		"monday..friday 08,12,18:00",
	}
	invalid := []string{
		"", "dialy", "hourlyy", "every day", "*-*-* 25:00", "*-*-* 02:60", "*-13-01", "*-*-32 00:00",
		"Mon..Funday 09:00", "09:00 Mon", "*-*-* 02:00:00:00", "*:0/0", "*-*-* 2:", "*-*-* :00",
		"1-2-3-4", "Mon Tue", "*,1-*-*", "*-*-* 02:00 Mars/Olympus Mons", "5..3:00", "*-*-* 02:00:00 02:00",
		"--", "0:0:0.5.5", "*-*-* 1e3:00",
	}
	for _, s := range valid {
		if err := parseCalendar(s); err != nil {
			t.Errorf("parseCalendar(%q) = %v, want nil", s, err)
		}
	}
	for _, s := range invalid {
		if err := parseCalendar(s); err == nil {
			t.Errorf("parseCalendar(%q) = nil, want an error", s)
		}
	}
}

func FuzzParseCalendar(f *testing.F) {
	for _, s := range []string{"daily", "Mon..Fri *-*-* 9:00", "*-02~1 00:00 UTC", "*:0/15", "2026-11-30 18:00:00.5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := parseCalendar(s)
		if err == nil && strings.TrimSpace(s) == "" {
			t.Errorf("parseCalendar(%q) accepted an empty expression", s)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("parseCalendar(%q): error over several lines: %q", s, err)
		}
	})
}

// TestUnknownKeysAndBadCalendars: what systemd ignores in a unit is a
// finding with file:line, X- keys excepted.
func TestUnknownKeysAndBadCalendars(t *testing.T) {
	dir := t.TempDir()
	svc := filepath.Join(dir, "agent.service")
	os.WriteFile(svc, []byte("[Unit]\nDescription=a\nX-Owner=ops\n[Service]\nType=oneshot\nExecStart=/bin/agent\nTimeoutStartsec=5min\nTimeoutStartSec=infinity\nDynamicUser=yes\nProtectSystem=strict\n"), 0o600)
	tmr := filepath.Join(dir, "agent.timer")
	os.WriteFile(tmr, []byte("[Timer]\nOnCalendar=dialy\nOnCalendar=*-*-* 02:00:00\nRandomizedDelaySec=5min\nPersistant=true\n[Install]\nWantedBy=timers.target\n"), 0o600)
	code, out, errOut := runCheck(t, "--config", "testdata/config/quiet.yaml", svc, tmr)
	if code != exitFindings {
		t.Errorf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		svc + ":7: unknown key TimeoutStartsec= in [Service]: systemd ignores the line — did you mean TimeoutStartSec=?",
		tmr + ":2: OnCalendar=dialy is not a calendar event",
		tmr + ":5: unknown key Persistant= in [Timer]",
		"did you mean Persistent=?",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "X-Owner") || strings.Contains(out, "DynamicUser") {
		t.Errorf("X- key or hardening key reported:\n%s", out)
	}
	if n := strings.Count(out, "unknown key") + strings.Count(out, "not a calendar event"); n != 3 {
		t.Errorf("%d findings of unknown keys and calendars, want 3:\n%s", n, out)
	}
}
