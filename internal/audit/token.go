package audit

import (
	"strconv"
	"strings"
)

// tokKind is the class of a token read by the Python and JavaScript lexers.
type tokKind uint8

const (
	tName    tokKind = iota + 1 // identifier or keyword
	tNum                        // numeric literal
	tStr                        // string literal, quotes and prefix included
	tOp                         // operator or punctuation
	tNewline                    // end of a Python logical line
)

// lexToken is one lexed token. Comments and white space never become tokens.
type lexToken struct {
	kind tokKind
	text string
	line int
}

// ignoreMarker in a comment on a finding's line suppresses that finding.
const ignoreMarker = "sluice:ignore"

// maxNest bounds recursion in the lexers and in option resolution, so that
// hostile input can neither exhaust the stack nor loop.
const maxNest = 64

// lexed is a lexer's output: the tokens, the partner of every bracket, and
// the lines whose comments carry ignoreMarker.
type lexed struct {
	toks    []lexToken
	match   []int // index of the partner bracket, -1 when none
	ignored map[int]bool
}

// is reports whether token i exists and is an operator or name spelled s.
func (l *lexed) is(i int, s string) bool {
	return i >= 0 && i < len(l.toks) && (l.toks[i].kind == tOp || l.toks[i].kind == tName) && l.toks[i].text == s
}

// name reports whether token i exists and is a name.
func (l *lexed) name(i int) bool {
	return i >= 0 && i < len(l.toks) && l.toks[i].kind == tName
}

// text returns the text of token i, or "" past either end.
func (l *lexed) text(i int) string {
	if i < 0 || i >= len(l.toks) {
		return ""
	}
	return l.toks[i].text
}

// closer returns the index of the bracket that closes the one at i, or -1.
func (l *lexed) closer(i int) int {
	if i < 0 || i >= len(l.match) || l.match[i] < i {
		return -1
	}
	return l.match[i]
}

// matchBrackets pairs (), [] and {} tokens. Stray closers are left unpaired.
func matchBrackets(toks []lexToken) []int {
	match := make([]int, len(toks))
	var stack []int
	for i, t := range toks {
		match[i] = -1
		if t.kind != tOp || len(t.text) != 1 {
			continue
		}
		switch c := t.text[0]; c {
		case '(', '[', '{':
			stack = append(stack, i)
		case ')', ']', '}':
			// A closer pairs with one of the few innermost openers; looking
			// deeper would make unbalanced input quadratic.
			for n := len(stack) - 1; n >= 0 && n >= len(stack)-8; n-- {
				if toks[stack[n]].text[0] == opener(c) {
					match[stack[n]], match[i] = i, stack[n]
					stack = stack[:n]
					break
				}
			}
		}
	}
	return match
}

func opener(c byte) byte {
	switch c {
	case ')':
		return '('
	case ']':
		return '['
	}
	return '{'
}

// span is a half-open range [from, to) of token indexes.
type span struct{ from, to int }

// split cuts the tokens strictly between the brackets at open and end into
// the spans separated by top-level commas, empty spans dropped.
func (l *lexed) split(open, end int) []span {
	var out []span
	start := open + 1
	for i := open + 1; i < end; i++ {
		if c := l.closer(i); c > i && c < end {
			i = c
			continue
		}
		if l.is(i, ",") {
			if i > start {
				out = append(out, span{start, i})
			}
			start = i + 1
		}
	}
	if end > start {
		out = append(out, span{start, end})
	}
	return out
}

// unquote returns the body of a string literal token, prefix and quotes
// removed, escapes left as written.
func unquote(s string) string {
	i := strings.IndexAny(s, "\"'`")
	if i < 0 {
		return s
	}
	s = s[i:]
	for _, q := range []string{`"""`, `'''`, `"`, `'`, "`"} {
		if len(s) >= 2*len(q) && strings.HasPrefix(s, q) && strings.HasSuffix(s, q) {
			return s[len(q) : len(s)-len(q)]
		}
	}
	return strings.Trim(s, "\"'`")
}

// parseNumber reads a Python, JavaScript or Go numeric literal.
func parseNumber(s string) (float64, bool) {
	s = strings.ReplaceAll(s, "_", "")
	s = strings.TrimSuffix(strings.TrimSuffix(s, "n"), "j")
	if n, err := strconv.ParseInt(s, 0, 64); err == nil {
		return float64(n), true
	}
	if len(s) > 1 && s[0] == '0' && s[1] >= '0' && s[1] <= '9' {
		// A legacy octal literal such as 010 in JavaScript.
		if n, err := strconv.ParseInt(s[1:], 8, 64); err == nil {
			return float64(n), true
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err == nil
}

// oneByte holds the text of every one-byte ASCII token, so that lexing
// punctuation does not allocate.
var oneByte = func() (t [128]string) {
	for i := range t {
		t[i] = string(rune(i))
	}
	return t
}()

// tokenText returns b as a string, without allocating for one ASCII byte.
func tokenText(b []byte) string {
	if len(b) == 1 && b[0] < 128 {
		return oneByte[b[0]]
	}
	return string(b)
}

// bomLen returns the length of the UTF-8 byte order mark src starts with:
// 3 or 0.
func bomLen(src []byte) int {
	if len(src) >= 3 && src[0] == 0xEF && src[1] == 0xBB && src[2] == 0xBF {
		return 3
	}
	return 0
}

// isIdentStart reports whether c may begin an identifier.
func isIdentStart(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// isIdentPart reports whether c may continue an identifier.
func isIdentPart(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// scanNumber returns the end of the numeric literal that starts at i.
func scanNumber(src []byte, i int) int {
	hex := i+1 < len(src) && src[i] == '0' && src[i+1]|0x20 == 'x'
	for i < len(src) {
		c := src[i]
		switch {
		case isIdentPart(c) || c == '.':
			i++
		case (c == '+' || c == '-') && !hex && i > 0 && src[i-1]|0x20 == 'e':
			i++
		default:
			return i
		}
	}
	return i
}
