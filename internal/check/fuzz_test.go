package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func FuzzParseUnit(f *testing.F) {
	paths, _ := filepath.Glob("testdata/*/*.service")
	timers, _ := filepath.Glob("testdata/*/*.timer")
	for _, p := range append(paths, timers...) {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("[Service]\nA=x\\\n# c\n y\\"))
	f.Add([]byte("\uFEFF[Timer]\r\nOnCalendar=\r\n[Bad\n"))
	f.Add([]byte("[Service]\x00TimeoutSec=1min 30s\rType=oneshot\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := parseUnit("f.service", data)
		if err != nil {
			if _, ok := err.(*syntaxError); !ok {
				t.Fatalf("error %v is not a *syntaxError", err)
			}
		}
		lines := len(splitLines(data))
		for _, e := range es {
			if e.Line < 1 || e.Line > lines {
				t.Fatalf("line %d outside 1..%d: %+v", e.Line, lines, e)
			}
			if e.Section == "" || e.Key == "" || e.File != "f.service" {
				t.Fatalf("incomplete entry %+v", e)
			}
			if strings.Trim(e.Key, whitespace) != e.Key || strings.Trim(e.Value, whitespace) != e.Value {
				t.Fatalf("untrimmed entry %+v", e)
			}
		}
		tg := target{Policy: "p", Worst: 30 * time.Second, Margin: 10 * time.Second, Drain: 30 * time.Second}
		for _, f := range judgeService(readService("f.service", es), tg) {
			if f.Problem == "" || f.Fix == "" {
				t.Fatalf("incomplete finding %+v", f)
			}
		}
		judgeTimer(readTimer("f.timer", es))
	})
}

func FuzzParseSpan(f *testing.F) {
	for _, s := range []string{"90", "1min 30s", "1h30m", "2.5s", "500ms", "infinity", "1y", ".5", "3.", "-1", "1 2", "7µs", "99999999999999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := parseSpan(s)
		if err != nil {
			return
		}
		if d < 0 || d%time.Microsecond != 0 && d != infinity {
			t.Fatalf("parseSpan(%q) = %v", s, d)
		}
		// What fmtDur writes, systemd reads back as the same span.
		if back, err := parseSpan(fmtDur(d)); err != nil || back != d {
			t.Fatalf("parseSpan(%q) = %v; fmtDur gives %q, read back as %v, %v", s, d, fmtDur(d), back, err)
		}
	})
}
