package config

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/sluice-llm/sluice/internal/nearest"
)

// Error is a refused config: which key, what is wrong with it and how to
// fix it. Its message is one line:
//
//	config: policies.nightly.timeout.total: "30x" is not a duration (write e.g. 30s or 2m) at line 14
type Error struct {
	// Path is the key path, e.g. "routes[0].provider"; "" for the file as
	// a whole.
	Path string

	// Msg says what is wrong and how to fix it.
	Msg string

	// Line is the 1-based line in the file, 0 when unknown.
	Line int

	// File is the file name, set by Load.
	File string
}

// Error returns the one-line message.
func (e *Error) Error() string {
	s := "config: " + e.Msg
	if e.Path != "" {
		s = "config: " + e.Path + ": " + e.Msg
	}
	switch {
	case e.Line > 0 && e.File != "":
		s += fmt.Sprintf(" at %s:%d", e.File, e.Line)
	case e.Line > 0:
		s += fmt.Sprintf(" at line %d", e.Line)
	case e.File != "":
		s += " in " + e.File
	}
	return oneLine(s)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func errf(path, format string, args ...any) *Error { return errAt(0, path, format, args...) }

func errAt(line int, path, format string, args ...any) *Error {
	return &Error{Path: path, Msg: fmt.Sprintf(format, args...), Line: line}
}

// key returns the path of key under parent. A key with characters other
// than letters, digits, '_' and '-' is quoted: prices["gpt-4.1"].
func key(parent, k string) string {
	if !plainKey(k) {
		return parent + "[" + strconv.Quote(k) + "]"
	}
	if parent == "" {
		return k
	}
	return parent + "." + k
}

// index returns the path of item i of the list at parent.
func index(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

// plainKey is a key written bare in a path.
var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`).MatchString

// suggest returns " (did you mean X?)" for the candidate nearest got,
// or " (one of: a, b, c)" when none is near.
func suggest(got string, candidates []string) string {
	if len(candidates) == 0 {
		return ""
	}
	if m := nearest.Name(got, candidates); m != "" {
		return " (did you mean " + m + "?)"
	}
	return " (one of: " + strings.Join(slices.Sorted(slices.Values(candidates)), ", ") + ")"
}

// quote shows a value from the file in a message, cut short when long.
func quote(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:60]) + "…"
	}
	return strconv.Quote(s)
}
