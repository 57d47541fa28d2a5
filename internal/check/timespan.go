package check

import (
	"errors"
	"math"
	"strings"
	"time"
)

// infinity is a systemd time span of "infinity": no limit. Finite spans too
// long for a time.Duration (about 292 years) are reckoned as infinity too.
const infinity = time.Duration(math.MaxInt64)

// usecInfinity is systemd's USEC_INFINITY; no finite span reaches it.
const usecInfinity = math.MaxUint64

// The units of systemd.time(7), in the order systemd tries them: the first
// that the text starts with wins, so "ms" is tried before "m" and "min"
// before "m".
var spanUnits = []struct {
	suffix string
	usec   uint64
}{
	{"seconds", 1e6}, {"second", 1e6}, {"sec", 1e6}, {"s", 1e6},
	{"minutes", 60e6}, {"minute", 60e6}, {"min", 60e6},
	{"months", 2629800e6}, {"month", 2629800e6}, {"M", 2629800e6},
	{"msec", 1e3}, {"ms", 1e3}, {"m", 60e6},
	{"hours", 3600e6}, {"hour", 3600e6}, {"hr", 3600e6}, {"h", 3600e6},
	{"days", 86400e6}, {"day", 86400e6}, {"d", 86400e6},
	{"weeks", 604800e6}, {"week", 604800e6}, {"w", 604800e6},
	{"years", 31557600e6}, {"year", 31557600e6}, {"y", 31557600e6},
	{"usec", 1}, {"us", 1}, {"\u03bcs", 1}, {"\u00b5s", 1},
}

// Errors of parseSpan, each naming what systemd would reject.
var (
	errSpanEmpty    = errors.New("an empty value is not a time span")
	errSpanNegative = errors.New("a negative time span is not allowed")
	errSpanRange    = errors.New("the time span is too large")
	errSpanSyntax   = errors.New("not a time span")
)

// systemd's WHITESPACE.
const whitespace = " \t\n\r"

// parseSpan parses a time span as systemd's parse_sec does (systemd.time(7)):
// "infinity", or numbers each with an optional unit, with or without
// spaces between them ("1min 30s", "1h30m", "2.5s"); a number without a
// unit is seconds. Infinity, and spans past what a time.Duration holds,
// come back as infinity.
func parseSpan(s string) (time.Duration, error) {
	usec, err := parseUsec(s)
	if err != nil {
		return 0, err
	}
	if usec > uint64(math.MaxInt64)/1000 {
		return infinity, nil
	}
	return time.Duration(usec) * time.Microsecond, nil
}

// parseUsec is systemd's parse_time(s, USEC_PER_SEC), step for step.
func parseUsec(s string) (uint64, error) {
	p := strings.TrimLeft(s, whitespace)
	if rest, ok := strings.CutPrefix(p, "infinity"); ok {
		if strings.Trim(rest, whitespace) != "" {
			return 0, errSpanSyntax
		}
		return usecInfinity, nil
	}
	var sum uint64
	for something := false; ; something = true {
		p = strings.TrimLeft(p, whitespace)
		if p == "" {
			if !something {
				return 0, errSpanEmpty
			}
			return sum, nil
		}
		var err error
		if p, sum, err = spanTerm(p, sum); err != nil {
			return 0, err
		}
	}
}

// spanTerm reads one number and its unit from the start of p (not
// empty, no leading whitespace), adds it to sum and returns the rest of p
// and the new sum.
func spanTerm(p string, sum uint64) (string, uint64, error) {
	if p[0] == '-' {
		return "", 0, errSpanNegative
	}
	whole, e, err := strtoll(p)
	if err != nil {
		return "", 0, err
	}
	dot := e < len(p) && p[e] == '.'
	frac := ""
	switch {
	case dot:
		frac = p[e+1:]
		frac = frac[:len(frac)-len(strings.TrimLeft(frac, "0123456789"))]
		p = p[e+1+len(frac):]
	case e == 0:
		return "", 0, errSpanSyntax
	default:
		p = p[e:]
	}
	mult, rest := unit(strings.TrimLeft(p, whitespace))
	if len(rest) == len(p) && rest != "" {
		return "", 0, errSpanSyntax // "12.34.56", "5x"
	}
	if whole >= usecInfinity/mult {
		return "", 0, errSpanRange
	}
	k := whole * mult
	if k >= usecInfinity-sum {
		return "", 0, errSpanRange
	}
	sum += k
	if !dot {
		return rest, sum, nil
	}
	if frac == "" {
		return "", 0, errSpanSyntax // "3.", "3.s"
	}
	for m, i := mult/10, 0; i < len(frac); i, m = i+1, m/10 {
		k = uint64(frac[i]-'0') * m
		if k >= usecInfinity-sum {
			return "", 0, errSpanRange
		}
		sum += k
	}
	return rest, sum, nil
}

// unit reads a unit from the start of s and returns its length in
// microseconds and the rest of s; without a unit, seconds and s itself.
func unit(s string) (uint64, string) {
	for _, u := range spanUnits {
		if rest, ok := strings.CutPrefix(s, u.suffix); ok {
			return u.usec, rest
		}
	}
	return 1e6, s
}

// strtoll reads a decimal integer from the start of p as C's strtoll does
// (an optional sign, then digits) and returns it and the index just past
// it; 0 when p does not start with one. p starts with no whitespace and no
// '-'.
func strtoll(p string) (uint64, int, error) {
	i := 0
	if i < len(p) && p[i] == '+' {
		i++
	}
	start := i
	var n uint64
	for ; i < len(p) && p[i] >= '0' && p[i] <= '9'; i++ {
		d := uint64(p[i] - '0')
		if n > (math.MaxInt64-d)/10 {
			return 0, 0, errSpanRange
		}
		n = n*10 + d
	}
	if i == start {
		return 0, 0, nil
	}
	return n, i, nil
}
