package audit

import "bytes"

// pyLexer turns Python source into tokens. It drops comments and reads
// string literals of every kind (prefixed, triple-quoted, f-strings with
// nested replacement fields as Python 3.12 allows) as single tokens, so
// that nothing inside a string or a comment is ever taken for code.
type pyLexer struct {
	src     []byte
	pos     int
	line    int
	depth   int // open brackets; newlines inside brackets do not end a line
	toks    []lexToken
	ignored map[int]bool
}

// lexPython lexes src. It never fails: malformed input yields some tokens.
func lexPython(src []byte) *lexed {
	lx := &pyLexer{src: src, line: 1, ignored: map[int]bool{}, toks: make([]lexToken, 0, len(src)/4+16)}
	lx.pos = bomLen(src)
	for lx.pos < len(src) {
		lx.next()
	}
	return &lexed{toks: lx.toks, match: matchBrackets(lx.toks), ignored: lx.ignored}
}

func (lx *pyLexer) emit(kind tokKind, from, line int) {
	lx.toks = append(lx.toks, lexToken{kind: kind, text: tokenText(lx.src[from:lx.pos]), line: line})
}

// next reads one token or skips one run of white space or one comment.
// Every call advances pos by at least one byte.
func (lx *pyLexer) next() {
	src, start, line := lx.src, lx.pos, lx.line
	c := src[start]
	switch {
	case c == '\n':
		lx.pos++
		lx.line++
		if lx.depth == 0 && len(lx.toks) > 0 && lx.toks[len(lx.toks)-1].kind != tNewline {
			lx.toks = append(lx.toks, lexToken{kind: tNewline, text: "\n", line: line})
		}
	case c == ' ' || c == '\t' || c == '\r' || c == '\f':
		lx.pos++
	case c == '\\' && start+1 < len(src) && (src[start+1] == '\n' || src[start+1] == '\r'):
		// A line continuation: the backslash and the line break after it
		// are skipped. Lines are counted at "\n" only.
		lx.pos += 2
		if src[start+1] == '\r' && lx.pos < len(src) && src[lx.pos] == '\n' {
			lx.pos++
		}
		if src[lx.pos-1] == '\n' {
			lx.line++
		}
	case c == '#':
		end := bytes.IndexByte(src[start:], '\n')
		if end < 0 {
			end = len(src) - start
		}
		if bytes.Contains(src[start:start+end], []byte(ignoreMarker)) {
			lx.ignored[line] = true
		}
		lx.pos = start + end
	case c == '"' || c == '\'':
		lx.pyString(start, 0, 0)
		lx.emit(tStr, start, line)
	case isIdentStart(c):
		lx.pos = start + 1
		for lx.pos < len(src) && isIdentPart(src[lx.pos]) {
			lx.pos++
		}
		if flags, ok := stringPrefix(src[start:lx.pos]); ok && lx.pos < len(src) && (src[lx.pos] == '"' || src[lx.pos] == '\'') {
			lx.pyString(lx.pos, flags, 0)
			lx.emit(tStr, start, line)
			return
		}
		lx.emit(tName, start, line)
	case isDigit(c) || (c == '.' && start+1 < len(src) && isDigit(src[start+1])):
		lx.pos = scanNumber(src, start)
		lx.emit(tNum, start, line)
	default:
		lx.pos = start + opLen(src[start:], pyOps)
		switch c {
		case '(', '[', '{':
			lx.depth++
		case ')', ']', '}':
			if lx.depth > 0 {
				lx.depth--
			}
		}
		lx.emit(tOp, start, line)
	}
}

// String flags taken from a literal's prefix.
const (
	strRaw = 1 << iota
	strFormat
)

// stringPrefix reports whether b is a valid string prefix (r, b, u, f, t and
// their two-letter combinations) and which flags it sets.
func stringPrefix(b []byte) (int, bool) {
	if len(b) > 2 {
		return 0, false
	}
	flags := 0
	for _, c := range b {
		switch c | 0x20 {
		case 'r':
			flags |= strRaw
		case 'f', 't':
			flags |= strFormat
		case 'b', 'u':
		default:
			return 0, false
		}
	}
	return flags, true
}

// pyString skips the string literal whose opening quote is at q. A
// single-quoted string that meets an unescaped line break ends there, which
// keeps a stray quote from swallowing the rest of the file.
func (lx *pyLexer) pyString(q, flags, nest int) {
	src := lx.src
	quote := src[q]
	triple := q+2 < len(src) && src[q+1] == quote && src[q+2] == quote
	lx.pos = q + 1
	if triple {
		lx.pos = q + 3
	}
	for lx.pos < len(src) {
		c := src[lx.pos]
		switch {
		case c == '\\':
			lx.pos++
			if lx.pos < len(src) {
				if src[lx.pos] == '\n' {
					lx.line++
				}
				lx.pos++
			}
		case c == '\n':
			if !triple {
				return
			}
			lx.line++
			lx.pos++
		case c == quote && (!triple || (lx.pos+2 < len(src) && src[lx.pos+1] == quote && src[lx.pos+2] == quote)):
			lx.pos++
			if triple {
				lx.pos += 2
			}
			return
		case c == '{' && flags&strFormat != 0:
			if lx.pos+1 < len(src) && src[lx.pos+1] == '{' {
				lx.pos += 2
				continue
			}
			lx.pos++
			if !lx.pyField(quote, triple, nest+1) {
				if lx.pos < len(src) && src[lx.pos] == quote && !triple {
					lx.pos++
				}
				return
			}
		default:
			lx.pos++
		}
	}
}

// pyField skips an f-string replacement field up to and including its
// closing brace. It reports false when the enclosing string was found to end
// inside the field (malformed input), in which case pos is left there.
func (lx *pyLexer) pyField(quote byte, triple bool, nest int) bool {
	src := lx.src
	depth := 0
	for lx.pos < len(src) {
		c := src[lx.pos]
		switch {
		case c == '\n':
			if !triple && depth == 0 {
				return false
			}
			lx.line++
			lx.pos++
		case c == '"' || c == '\'':
			if nest >= maxNest || (c == quote && !triple && depth == 0 && lx.nextIsEnd()) {
				return false
			}
			lx.pyString(lx.pos, 0, nest+1)
		case isIdentStart(c):
			start := lx.pos
			for lx.pos < len(src) && isIdentPart(src[lx.pos]) {
				lx.pos++
			}
			if flags, ok := stringPrefix(src[start:lx.pos]); ok && nest < maxNest && lx.pos < len(src) && (src[lx.pos] == '"' || src[lx.pos] == '\'') {
				lx.pyString(lx.pos, flags, nest+1)
			}
		case c == '(' || c == '[' || c == '{':
			depth++
			lx.pos++
		case c == ')' || c == ']':
			if depth > 0 {
				depth--
			}
			lx.pos++
		case c == '}':
			lx.pos++
			if depth == 0 {
				return true
			}
			depth--
		case c == ':' && depth == 0:
			lx.pos++
			return lx.pySpec(quote, triple, nest)
		default:
			lx.pos++
		}
	}
	return true
}

// nextIsEnd reports whether the quote at pos, met inside a replacement field
// of a single-quoted f-string, is followed by the end of the line, which
// means it closes the string (a malformed field) rather than opening a
// nested one.
func (lx *pyLexer) nextIsEnd() bool {
	rest := lx.src[lx.pos+1:]
	i := bytes.IndexByte(rest, '\n')
	if i < 0 {
		i = len(rest)
	}
	return bytes.IndexByte(rest[:i], lx.src[lx.pos]) < 0
}

// pySpec skips the format spec of a replacement field, nested fields
// included, up to and including the field's closing brace.
func (lx *pyLexer) pySpec(quote byte, triple bool, nest int) bool {
	src := lx.src
	for lx.pos < len(src) {
		switch c := src[lx.pos]; {
		case c == '}':
			lx.pos++
			return true
		case c == '{' && nest < maxNest:
			lx.pos++
			if !lx.pyField(quote, triple, nest+1) {
				return false
			}
		case (c == quote || c == '\n') && !triple:
			return false
		case c == '\n':
			lx.line++
			lx.pos++
		default:
			lx.pos++
		}
	}
	return true
}

// pyOps lists Python's multi-character operators, longest first.
var pyOps = []string{
	"**=", "//=", ">>=", "<<=", "...",
	"**", "//", "==", "!=", "<=", ">=", ":=", "->", "+=", "-=", "*=", "/=",
	"%=", "&=", "|=", "^=", "@=", "<<", ">>",
}

// opLen returns the length of the operator at the start of b: the longest
// entry of ops it begins with, else one byte.
func opLen(b []byte, ops []string) int {
	switch b[0] {
	case '(', ')', '[', ']', '{', '}', ',', ';':
		return 1
	}
	for _, op := range ops {
		if len(b) >= len(op) && string(b[:len(op)]) == op {
			return len(op)
		}
	}
	return 1
}
