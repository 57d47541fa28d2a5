package check

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// entry is one assignment of a unit file, as systemd reads it.
type entry struct {
	File    string // the file it is in
	Line    int    // 1-based line its key starts on
	Section string // the section it is in, e.g. "Service"
	Key     string // case-sensitive, e.g. "TimeoutStopSec"
	Value   string // stripped of surrounding whitespace; continuation lines joined
}

// where is the file and line of an entry, for a finding.
func (e entry) where() where { return where{File: e.File, Line: e.Line} }

// syntaxError is a line that makes systemd refuse the whole file.
type syntaxError struct {
	File string
	Line int
	Msg  string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
}

// parseUnit reads a unit file or drop-in the way systemd's config_parse
// does (systemd.syntax(7)) and returns its assignments in order:
//
//   - lines end at \n, \r or NUL, a run of different ones ("\r\n") being one
//     end; a UTF-8 byte order mark at the start is skipped;
//   - a line whose first non-blank character is # or ; is a comment, even
//     between continuation lines;
//   - a line ending in an odd number of backslashes continues on the next,
//     the backslash becoming a space;
//   - [Name] starts a section; assignments outside any section are ignored;
//   - Key=Value, with whitespace around both stripped; a line without '='
//     or with nothing before it is ignored, as is a line that is not UTF-8.
//
// A malformed section header makes systemd refuse the file: parseUnit
// then returns what it read before it and a *syntaxError. It never fails
// otherwise.
func parseUnit(file string, data []byte) ([]entry, error) {
	var (
		out     []entry
		section string
		cont    strings.Builder
		contAt  int  // line the pending continuation started on; 0 when none
		bomSeen bool // systemd skips the first byte order mark at a line start
	)
	lines := splitLines(data)
	for i, raw := range lines {
		n := i + 1
		if c := strings.TrimLeft(raw, whitespace); c != "" && (c[0] == '#' || c[0] == ';') {
			continue
		}
		if r, ok := strings.CutPrefix(raw, "\uFEFF"); ok && !bomSeen {
			raw, bomSeen = r, true
		}
		if contAt == 0 {
			contAt = n
		}
		cont.WriteString(raw)
		logical := cont.String()
		if continues(logical) {
			cont.Reset()
			cont.WriteString(logical[:len(logical)-1] + " ")
			continue
		}
		cont.Reset()
		at := contAt
		contAt = 0
		e, err := parseLine(file, at, logical, &section)
		if err != nil {
			return out, err
		}
		if e != nil {
			out = append(out, *e)
		}
	}
	if contAt != 0 {
		e, err := parseLine(file, contAt, cont.String(), &section)
		if err != nil {
			return out, err
		}
		if e != nil {
			out = append(out, *e)
		}
	}
	return out, nil
}

// continues reports whether s ends in an unescaped backslash.
func continues(s string) bool {
	escaped := false
	for i := 0; i < len(s); i++ {
		if escaped {
			escaped = false
		} else if s[i] == '\\' {
			escaped = true
		}
	}
	return escaped
}

// parseLine reads one logical line: a section header (which updates
// *section), an assignment, or nothing.
func parseLine(file string, n int, l string, section *string) (*entry, error) {
	l = strings.Trim(l, whitespace)
	if l == "" || !utf8.ValidString(l) {
		return nil, nil
	}
	if l[0] == '[' {
		if l[len(l)-1] != ']' {
			return nil, &syntaxError{file, n, fmt.Sprintf("invalid section header %q", l)}
		}
		name := l[1 : len(l)-1]
		if !safe(name) {
			return nil, &syntaxError{file, n, fmt.Sprintf("bad characters in section header %q", l)}
		}
		*section = name
		return nil, nil
	}
	k, v, ok := strings.Cut(l, "=")
	if *section == "" || !ok || k == "" {
		return nil, nil
	}
	return &entry{File: file, Line: n, Section: *section,
		Key: strings.Trim(k, whitespace), Value: strings.Trim(v, whitespace)}, nil
}

// safe is systemd's string_is_safe: no control characters, quotes or
// backslashes.
func safe(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == 0x7f || c == '"' || c == '\'' || c == '\\' {
			return false
		}
	}
	return true
}

// splitLines splits data at the line ends of systemd's read_line: \n, \r
// and NUL, where a run of different ones ("\r\n", "\n\r") ends one line
// and a repeated one ("\n\n") ends two.
func splitLines(data []byte) []string {
	var lines []string
	start := 0
	for i := 0; i < len(data); {
		m := eol(data[i])
		if m == 0 {
			i++
			continue
		}
		lines = append(lines, string(data[start:i]))
		seen := m
		for i++; i < len(data); i++ {
			m = eol(data[i])
			if m == 0 || seen&m != 0 {
				break
			}
			seen |= m
		}
		start = i
	}
	if start < len(data) {
		lines = append(lines, string(data[start:]))
	}
	return lines
}

// eol returns a bit for each end-of-line byte, 0 for any other.
func eol(c byte) int {
	switch c {
	case '\n':
		return 1
	case '\r':
		return 2
	case 0:
		return 4
	}
	return 0
}
