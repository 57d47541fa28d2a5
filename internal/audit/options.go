package audit

import (
	"slices"
	"strconv"
	"time"
)

// valKind classifies the value an option is given.
type valKind uint8

const (
	vUnset   valKind = iota // not given
	vNum                    // a number known where the client is built
	vNull                   // None, null or undefined
	vOther                  // given, but its value is not known statically
	vUnknown                // maybe given: a spread or options built elsewhere
)

// value is an option's value as far as it can be known without running
// the program.
type value struct {
	kind valKind
	num  float64
	text string // the number as written, for messages
	sp   span   // the tokens of the value expression, when lexed
}

// event is one setting of an option in source order. An event with key ""
// may have set any option (a spread of something unknown).
type event struct {
	key      string
	val      value
	explicit bool // a Python keyword argument, which nothing can override
}

// options is the ordered list of settings a client is built with.
type options []event

// get returns the value key ends up with. An explicit event wins (Python
// refuses a keyword given twice, so a spread cannot override it); otherwise
// the last event that may set key decides.
func (o options) get(key string) value {
	for i := len(o) - 1; i >= 0; i-- {
		if o[i].explicit && o[i].key == key {
			return o[i].val
		}
	}
	for i := len(o) - 1; i >= 0; i-- {
		switch o[i].key {
		case key:
			return o[i].val
		case "":
			return value{kind: vUnknown}
		}
	}
	return value{}
}

// compact returns settings that read the same through get as o, for o
// without explicit events, with at most one event per key: those an
// unknown spread or a later setting overrides are dropped. It keeps nested
// spreads of spreads from growing without bound.
func (o options) compact() options {
	seen := map[string]bool{}
	var rev options
	for i := len(o) - 1; i >= 0; i-- {
		if seen[o[i].key] {
			continue
		}
		seen[o[i].key] = true
		rev = append(rev, o[i])
		if o[i].key == "" {
			break
		}
	}
	out := make(options, len(rev))
	for i, e := range rev {
		out[len(rev)-1-i] = e
	}
	return out
}

// problem is one kind of finding.
type problem uint8

const (
	pRetries      problem = iota + 1 // retries left at the SDK default
	pRetriesOn                       // retries set to a non-zero number
	pTimeout                         // no explicit timeout
	pNoTimeout                       // the timeout explicitly disabled
	pShortTimeout                    // a timeout known, maybe not above the gateway's total
)

// issue is a finding before it is worded.
type issue struct {
	line    int
	client  string // e.g. "OpenAI", "openai.NewClient", "with_options"
	call    string // how the call reads in a message, e.g. "new OpenAI(…)"
	problem problem
	retries string   // the retry count as written, for pRetriesOn
	sends   string   // how many times a cloud SDK may send the call (see dialect.cloud)
	words   *dialect // the words for this client's SDK, when not its language's usual ones
	// timeout is the explicit timeout of a pShortTimeout issue; the scan
	// keeps the issue only when it is not above the gateway's total.
	timeout time.Duration
}

// retriesIssue returns the finding for a client whose retries setting is v,
// if there is one. nullUnset says whether null means "not given" (it does
// in JavaScript, where the SDK then applies its default).
func retriesIssue(v value, nullUnset bool) (problem, string) {
	switch {
	case v.kind == vUnset, v.kind == vNull && nullUnset:
		return pRetries, ""
	case v.kind == vNum && v.num != 0:
		return pRetriesOn, v.text
	}
	return 0, ""
}

// timeoutIssue returns the finding for a client whose timeout setting is v,
// if there is one. In Python None disables the timeout; in JavaScript null
// and undefined leave the SDK default.
func timeoutIssue(v value, nullUnset bool) problem {
	switch {
	case v.kind == vUnset, v.kind == vNull && nullUnset:
		return pTimeout
	case v.kind == vNull:
		return pNoTimeout
	}
	return 0
}

// clientIssues returns the findings for one client construction of an SDK
// that obeys x-should-retry: its retries setting must be 0, and its
// timeout explicit. AnthropicBedrock and AnthropicVertex are such clients:
// the gateway fronts Bedrock and Vertex AI. unit is what one of the timeout's numbers
// stands for (time.Second in Python's OpenAI and Anthropic SDKs,
// time.Millisecond in JavaScript's and Google's, 1 for a Go duration): a
// timeout known as a number gives a pShortTimeout issue, which the scan
// keeps when it is not above the gateway's total.
func clientIssues(line int, client, call string, retries, timeout value, nullUnset bool, unit time.Duration) []issue {
	var out []issue
	if p, n := retriesIssue(retries, nullUnset); p != 0 {
		out = append(out, issue{line: line, client: client, call: call, problem: p, retries: n})
	}
	if p := timeoutIssue(timeout, nullUnset); p != 0 {
		out = append(out, issue{line: line, client: client, call: call, problem: p})
	} else if d := known(timeout, unit); d > 0 {
		out = append(out, issue{line: line, client: client, call: call, problem: pShortTimeout, timeout: d})
	}
	return out
}

// known returns the duration a numeric value stands for in unit, 0 when it
// is not a positive number known where the client is built.
func known(v value, unit time.Duration) time.Duration {
	if v.kind != vNum || v.num <= 0 || unit <= 0 || v.num*float64(unit) > float64(1<<62) {
		return 0
	}
	return time.Duration(v.num * float64(unit))
}

// numValue returns the value of a numeric literal written as text, with
// sign applied.
func numValue(text string, neg bool) value {
	n, ok := parseNumber(text)
	if !ok {
		return value{kind: vOther}
	}
	if neg {
		n, text = -n, "-"+text
	}
	return value{kind: vNum, num: n, text: text}
}

// calls returns how many times an SDK with retries retries may send one
// call (after a connection error or its own timeout), as text; "" when
// retries is not a whole number.
func calls(retries string) string {
	n, ok := parseNumber(retries)
	if !ok || n < 0 || n != float64(int64(n)) || n > 1e6 {
		return ""
	}
	return strconv.FormatInt(int64(n)+1, 10)
}

// union returns the settings of an expression that yields either a or b,
// such as a conditional spread: a key both set alike keeps its value, one
// both set differently is set to something unknown, and one only a sets
// (or only b) may or may not be set, so that no finding comes of it. Keys
// neither sets stay unset, so a missing timeout is still found. When a or
// b may set anything, so may the union.
func union(a, b options) options {
	unknown := options{{key: ""}}
	if a.mayAll() || b.mayAll() {
		return unknown
	}
	var out options
	seen := map[string]bool{}
	for _, e := range append(slices.Clone(a), b...) {
		if seen[e.key] {
			continue
		}
		seen[e.key] = true
		va, vb := a.get(e.key), b.get(e.key)
		v := value{kind: vOther}
		switch {
		case va.kind == vUnset || vb.kind == vUnset:
			v = value{kind: vUnknown}
		case va.kind == vb.kind && va.num == vb.num && va.text == vb.text:
			v = va
		}
		out = append(out, event{key: e.key, val: v})
	}
	return out
}

// mayAll reports whether o has a setting that may set any option.
func (o options) mayAll() bool {
	return slices.ContainsFunc(o, func(e event) bool { return e.key == "" })
}

// conditional finds the parts of a conditional expression in the tokens
// of sp, brackets skipped: for "c ? a : b" (JavaScript) or "a if c else b"
// (Python) the two branches; for "c && a" or "c and a" the one branch and
// an empty second; for "a || b", "a ?? b" or "a or b" both sides. ok is
// false for anything else.
func (l *lexed) conditional(sp span, python bool) (a, b span, ok bool) {
	var q, colon, and, or = -1, -1, -1, -1
	depth := 0
	for i := sp.from; i < sp.to; i++ {
		if c := l.closer(i); c > i {
			i = c
			continue
		}
		t := l.text(i)
		switch {
		case python && t == "if", !python && t == "?" && l.toks[i].kind == tOp:
			if q < 0 {
				q = i
			}
			depth++
		case python && t == "else", !python && t == ":" && l.toks[i].kind == tOp:
			depth--
			if depth == 0 && colon < 0 && q >= 0 {
				colon = i
			}
		case q < 0 && (t == "&&" || python && t == "and"):
			and = i
		case q < 0 && (t == "||" || t == "??" || python && t == "or"):
			or = i
		}
	}
	switch {
	case q > sp.from && colon > q && python:
		return span{sp.from, q}, span{colon + 1, sp.to}, true
	case q > sp.from && colon > q:
		return span{q + 1, colon}, span{colon + 1, sp.to}, true
	case or > sp.from:
		return span{sp.from, or}, span{or + 1, sp.to}, true
	case and > sp.from:
		return span{and + 1, sp.to}, span{}, true
	}
	return span{}, span{}, false
}
