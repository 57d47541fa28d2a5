package check

import (
	"errors"
	"fmt"
	"path/filepath"
	"time"
)

// finding is one thing to fix in a unit file.
type finding struct {
	File    string `json:"file"`
	Line    int    `json:"line"` // 0 when the value is systemd's default
	Unit    string `json:"unit"`
	Setting string `json:"setting"`
	Value   string `json:"value"`              // as written, or the default
	ValueMS *int64 `json:"value_ms,omitempty"` // the limit in effect, for a limit too short
	NeedMS  *int64 `json:"need_ms,omitempty"`  // the least it should be
	Problem string `json:"problem"`
	Fix     string `json:"fix"`
	// Severity is "finding" for what cuts calls in normal operation (exit
	// 1), or "warning" for what bites only when someone stops the unit or
	// restarts the gateway (exit 0 unless --strict).
	Severity string `json:"severity"`
}

// Severities of a finding.
const (
	severityFinding = "finding"
	severityWarning = "warning"
)

// warn marks f as a warning.
func warn(f finding) finding {
	f.Severity = severityWarning
	return f
}

// String formats f as "file:line: problem — fix"; for a drop-in, the
// unit it applies to comes first: "file:line: foo.service: problem — fix".
func (f finding) String() string {
	unit := ""
	if filepath.Base(f.File) != f.Unit {
		unit = f.Unit + ": "
	}
	if f.Severity == severityWarning {
		unit = "warning: " + unit
	}
	return fmt.Sprintf("%s: %s%s — %s", where{f.File, f.Line}, unit, f.Problem, f.Fix)
}

// badSpan is the finding for a time setting systemd cannot parse.
func badSpan(unitPath string, e entry, err error) finding {
	what := fmt.Sprintf("%s=%s: %v", e.Key, e.Value, err)
	if errors.Is(err, errSpanEmpty) {
		what = fmt.Sprintf("%s= with no value does not reset it: systemd cannot parse an empty time span", e.Key)
	}
	return finding{
		File: e.File, Line: e.Line, Unit: unitName(unitPath), Setting: e.Key, Value: e.Value,
		Problem: what + "; systemd ignores the line and keeps the value set before it (or its default)",
		Fix:     fmt.Sprintf("write the value meant, e.g. %s=90s, 1min 30s or infinity, or remove the line", e.Key),
	}
}

// badType is the finding for a Type= systemd does not know.
func badType(unitPath string, e entry) finding {
	return finding{
		File: e.File, Line: e.Line, Unit: unitName(unitPath), Setting: e.Key, Value: e.Value,
		Problem: fmt.Sprintf("Type=%s is not a service type; systemd ignores the line", e.Value),
		Fix:     "write one of simple, exec, forking, oneshot, dbus, notify, notify-reload or idle",
	}
}

// tooShort is the finding for a limit l of setting key that is shorter
// than need: why says what goes wrong, fix how to mend it.
func tooShort(unitPath, key string, l limit, need time.Duration, why, fix string) finding {
	v, n := l.D.Milliseconds(), need.Milliseconds()
	value, said := l.Raw, l.set()
	if l.Key != "" && l.Key != key {
		said += " (as " + key + ")"
	}
	if said == "" {
		value = fmtDur(l.D)
		said = fmt.Sprintf("%s (systemd's default, %s)", key, value)
	}
	return finding{
		File: l.At.File, Line: l.At.Line, Unit: unitName(unitPath), Setting: key, Value: value,
		ValueMS: &v, NeedMS: &n,
		Problem: said + " " + why,
		Fix:     fix,
	}
}

// setHint is how to set key to at least need: in place, or as a new line.
func setHint(key string, l limit, need time.Duration, section string) string {
	if l.Key == "" {
		return fmt.Sprintf("add %s=%s or more under [%s] (a drop-in will do)", key, fmtDur(roundUp(need)), section)
	}
	return fmt.Sprintf("set %s=%s or more", key, fmtDur(roundUp(need)))
}

// roundUp rounds d up to a whole second.
func roundUp(d time.Duration) time.Duration {
	if r := d % time.Second; r != 0 {
		return d + time.Second - r
	}
	return d
}
