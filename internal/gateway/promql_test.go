package gateway

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// promqlWords are the PromQL words that are not metric names when they
// stand without a following '(': aggregation operators (written before
// "by"/"without"), binary and set operators, modifiers and number
// literals. PromQL reads them in any case. Functions need no list: a name
// followed by '(' is a call.
var promqlWords = map[string]bool{
	"sum": true, "min": true, "max": true, "avg": true, "group": true, "stddev": true, "stdvar": true,
	"count": true, "count_values": true, "bottomk": true, "topk": true, "quantile": true,
	"limitk": true, "limit_ratio": true,
	"and": true, "or": true, "unless": true, "atan2": true, "bool": true, "offset": true,
	"inf": true, "nan": true,
}

// promqlGrouping are the words followed by a list of label names in
// parentheses.
var promqlGrouping = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
}

// promqlMetrics returns the metric names that expr selects, each once, in
// the order they first appear: identifiers followed by '{' or '[' or
// standing alone as a selector, a matcher __name__="x", or a quoted name
// inside braces. It skips function names (followed by '('), the words of
// promqlWords, label names (inside braces and in by/without/on/ignoring/
// group_left/group_right lists, le among them), strings, numbers and
// durations, range and subquery brackets, comments, and Grafana variables
// ($name, ${name:format}). It fails on an unterminated string, brace or
// bracket, so a broken expression is not read as one without metrics.
func promqlMetrics(expr string) ([]string, error) {
	var names []string
	add := func(n string) {
		if !slices.Contains(names, n) {
			names = append(names, n)
		}
	}
	s := expr
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '#':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '"' || c == '\'' || c == '`':
			_, j, err := promqlString(s, i)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '$':
			i = skipGrafanaVariable(s, i)
		case c == '{':
			j, err := promqlMatchers(s, i, add)
			if err != nil {
				return nil, err
			}
			i = j
		case c == '[':
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				return nil, fmt.Errorf("promql: unclosed '[' at %d in %q", i, expr)
			}
			i += j + 1
		case promqlDigit(c) || c == '.' && i+1 < len(s) && promqlDigit(s[i+1]):
			for i < len(s) && (promqlIdent(s[i]) || s[i] == '.') {
				i++
			}
		case promqlIdentStart(c):
			j := i
			for j < len(s) && promqlIdent(s[j]) {
				j++
			}
			word, next := s[i:j], promqlNextByte(s, j)
			lower := strings.ToLower(word)
			switch {
			case promqlGrouping[lower]:
				j = promqlSkipLabels(s, j)
			case promqlWords[lower], next == '(':
			default:
				add(word)
			}
			i = j
		case c == '}' || c == ']':
			return nil, fmt.Errorf("promql: unmatched %q at %d in %q", c, i, expr)
		default:
			i++
		}
	}
	return names, nil
}

// promqlMatchers reads the label matchers of the '{' at s[i], calling add
// with a metric name they give (__name__="x", or a quoted name standing
// alone), and returns the index after the closing '}'.
func promqlMatchers(s string, i int, add func(string)) (int, error) {
	label, op := "", ""
	for i++; i < len(s); {
		c := s[i]
		switch {
		case c == '}':
			return i + 1, nil
		case c == '"' || c == '\'' || c == '`':
			v, j, err := promqlString(s, i)
			if err != nil {
				return 0, err
			}
			if op == "" || label == "__name__" && op == "=" {
				add(v)
			}
			i = j
		case c == ',':
			label, op = "", ""
			i++
		case c == '=' || c == '!' || c == '~':
			op += string(c)
			i++
		case c == '$':
			i = skipGrafanaVariable(s, i)
		case promqlIdentStart(c):
			j := i
			for j < len(s) && promqlIdent(s[j]) {
				j++
			}
			label, i = s[i:j], j
		default:
			i++
		}
	}
	return 0, fmt.Errorf("promql: unclosed '{' in %q", s)
}

// promqlString returns the text of the string quoted at s[i] and the index
// after its closing quote. Backquoted strings have no escapes.
func promqlString(s string, i int) (string, int, error) {
	q := s[i]
	var b strings.Builder
	for j := i + 1; j < len(s); j++ {
		switch {
		case s[j] == q:
			return b.String(), j + 1, nil
		case s[j] == '\\' && q != '`' && j+1 < len(s):
			j++
		}
		b.WriteByte(s[j])
	}
	return "", 0, fmt.Errorf("promql: unterminated string at %d in %q", i, s)
}

// promqlSkipLabels returns the index after the "(label, …)" that follows a
// grouping word ending before s[j], or j when none does (group_left may
// stand alone).
func promqlSkipLabels(s string, j int) int {
	k := j
	for k < len(s) && (s[k] == ' ' || s[k] == '\t' || s[k] == '\n') {
		k++
	}
	if k < len(s) && s[k] == '(' {
		if e := strings.IndexByte(s[k:], ')'); e >= 0 {
			return k + e + 1
		}
	}
	return j
}

// skipGrafanaVariable returns the index after the Grafana variable at s[i]:
// $name or ${name…}.
func skipGrafanaVariable(s string, i int) int {
	i++
	if i < len(s) && s[i] == '{' {
		if e := strings.IndexByte(s[i:], '}'); e >= 0 {
			return i + e + 1
		}
		return len(s)
	}
	for i < len(s) && promqlIdent(s[i]) {
		i++
	}
	return i
}

// promqlNextByte returns the first byte from s[j] on that is not a space, or 0.
func promqlNextByte(s string, j int) byte {
	for ; j < len(s); j++ {
		if c := s[j]; c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c
		}
	}
	return 0
}

func promqlDigit(c byte) bool { return '0' <= c && c <= '9' }
func promqlIdentStart(c byte) bool {
	return c == '_' || c == ':' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}
func promqlIdent(c byte) bool { return promqlIdentStart(c) || promqlDigit(c) }

func TestPromqlMetrics(t *testing.T) {
	for _, tt := range []struct {
		expr string
		want []string
	}{
		{`up`, []string{"up"}},
		{`sluice_attempts_total{provider=~"$provider",outcome="ok"}`, []string{"sluice_attempts_total"}},
		{`sum by (provider, le) (rate(x_bucket{provider=~"$provider"}[$__rate_interval]))`, []string{"x_bucket"}},
		{`histogram_quantile(0.95, sum by (le) (rate(a_bucket{le="+Inf"}[5m])))`, []string{"a_bucket"}},
		{`sum(rate(a_bucket[5m])) by (le, provider)`, []string{"a_bucket"}},
		{`count(max by (breaker) (b{breaker=~"${provider:regex}(/.*)?"}) > 0) or vector(0)`, []string{"b"}},
		{`a / on(provider) group_left(model) b * ignoring (x) c`, []string{"a", "b", "c"}},
		{`a * on (p) group_left b`, []string{"a", "b"}},
		{`SUM BY (provider) (a) AND ON() b`, []string{"a", "b"}},
		{`sum without (instance) (rate(x[5m:1m] offset 1h))`, []string{"x"}},
		{`rate(x[5m]) > bool 0 unless y`, []string{"x", "y"}},
		{`a @ start() + b @ 1609746000`, []string{"a", "b"}},
		{`a + a`, []string{"a"}},
		{`topk(3, a) + count_values("le", b) + quantile(0.9, c)`, []string{"a", "b", "c"}},
		{`label_replace(m, "dst", "$1", "src", "(.*)")`, []string{"m"}},
		{`{__name__="x_total", job="j"} + {__name__=~"re.*"}`, []string{"x_total"}},
		{`{"dotted.name", a="b"}`, []string{"dotted.name"}},
		{`1e3 * a - 0x1f + .5 + inf - NaN`, []string{"a"}},
		{"# a comment naming not_me\nc", []string{"c"}},
		{`sum(rate(a{s="}\"{"}[1m]))`, []string{"a"}},
		{`namespace:rule:rate5m`, []string{"namespace:rule:rate5m"}},
		{`vector(1)`, nil},
	} {
		got, err := promqlMetrics(tt.expr)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("promqlMetrics(%q) = %q, %v; want %q", tt.expr, got, err, tt.want)
		}
	}
	for _, bad := range []string{`a{b="c}`, `sum(a{b="c"`, `rate(a[5m)`, `a}`, `'x`} {
		if got, err := promqlMetrics(bad); err == nil {
			t.Errorf("promqlMetrics(%q) = %q, want an error", bad, got)
		}
	}
}
