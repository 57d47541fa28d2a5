package main

import (
	"fmt"
	"strconv"
	"strings"
)

// namedList is a repeatable flag of name=value pairs, kept in order.
type namedList struct {
	names  []string
	values []string
}

func (l *namedList) String() string {
	var parts []string
	for i := range l.names {
		parts = append(parts, l.names[i]+"="+l.values[i])
	}
	return strings.Join(parts, ",")
}

func (l *namedList) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" || value == "" {
		return fmt.Errorf("%q: write name=value, e.g. floor=http://127.0.0.1:9101/openai", s)
	}
	l.names = append(l.names, name)
	l.values = append(l.values, value)
	return nil
}

// get returns the value given for name, or "".
func (l *namedList) get(name string) string {
	for i, n := range l.names {
		if n == name {
			return l.values[i]
		}
	}
	return ""
}

// parsePIDs reads a comma-separated list of process ids; "" is none.
func parsePIDs(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("pid %q is not a process id", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// parseInts reads a comma-separated list of positive integers.
func parseInts(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a positive integer", f)
		}
		out = append(out, n)
	}
	return out, nil
}
