package audit

import "bytes"

// jsLexer turns JavaScript or TypeScript source into tokens. It drops
// comments, reads string literals, template literals (with their ${…}
// substitutions, nested to any depth) and regular expression literals as
// single tokens, so that nothing inside them is ever taken for code.
type jsLexer struct {
	src     []byte
	pos     int
	line    int
	toks    []lexToken
	ignored map[int]bool
	last    lexToken // the last token read, inside substitutions too
}

// lexJS lexes src. It never fails: malformed input yields some tokens.
func lexJS(src []byte) *lexed {
	lx := &jsLexer{src: src, line: 1, ignored: map[int]bool{}, toks: make([]lexToken, 0, len(src)/4+16)}
	lx.pos = bomLen(src)
	if bytes.HasPrefix(src[lx.pos:], []byte("#!")) {
		lx.skipLine()
	}
	for lx.pos < len(src) {
		if t, ok := lx.next(0); ok {
			lx.toks = append(lx.toks, t)
		}
	}
	return &lexed{toks: lx.toks, match: matchBrackets(lx.toks), ignored: lx.ignored}
}

func (lx *jsLexer) skipLine() {
	end := bytes.IndexByte(lx.src[lx.pos:], '\n')
	if end < 0 {
		end = len(lx.src) - lx.pos
	}
	lx.pos += end
}

// next reads one token, or skips one run of white space or one comment and
// reports false. Every call advances pos by at least one byte. nest counts
// the template substitutions being read, to bound recursion.
func (lx *jsLexer) next(nest int) (lexToken, bool) {
	src, start, line := lx.src, lx.pos, lx.line
	c := src[start]
	kind := tOp
	switch {
	case c == '\n':
		lx.pos++
		lx.line++
		return lexToken{}, false
	case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
		lx.pos++
		return lexToken{}, false
	case c == '/' && start+1 < len(src) && src[start+1] == '/':
		lx.comment(start, start+2+lineEnd(src[start+2:]))
		return lexToken{}, false
	case c == '/' && start+1 < len(src) && src[start+1] == '*':
		end := bytes.Index(src[start+2:], []byte("*/"))
		if end < 0 {
			end = len(src) - start - 4
		}
		lx.comment(start, start+2+end+2)
		return lexToken{}, false
	case c == '"' || c == '\'':
		lx.quoted(c)
		kind = tStr
	case c == '`':
		lx.template(nest)
		kind = tStr
	case c == '/' && lx.regexAllowed() && lx.regex():
		kind = tStr
	case isIdentStart(c) || c == '\\':
		lx.pos++
		for lx.pos < len(src) && (isIdentPart(src[lx.pos]) || src[lx.pos] == '\\') {
			lx.pos++
		}
		kind = tName
	case isDigit(c) || (c == '.' && start+1 < len(src) && isDigit(src[start+1])):
		lx.pos = scanNumber(src, start)
		kind = tNum
	default:
		lx.pos = start + opLen(src[start:], jsOps)
	}
	lx.last = lexToken{kind: kind, text: tokenText(src[start:lx.pos]), line: line}
	return lx.last, true
}

func lineEnd(b []byte) int {
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return i
	}
	return len(b)
}

// comment skips the comment src[from:to], noting an ignore marker in it.
func (lx *jsLexer) comment(from, to int) {
	if to > len(lx.src) {
		to = len(lx.src)
	}
	body := lx.src[from:to]
	if bytes.Contains(body, []byte(ignoreMarker)) {
		lx.ignored[lx.line] = true
	}
	lx.line += bytes.Count(body, []byte("\n"))
	lx.pos = to
}

// quoted skips a '…' or "…" string. An unescaped line break ends it, which
// keeps a stray quote (say, an apostrophe in JSX text) from swallowing the
// rest of the file.
func (lx *jsLexer) quoted(quote byte) {
	src := lx.src
	lx.pos++
	for lx.pos < len(src) {
		switch c := src[lx.pos]; c {
		case '\\':
			lx.pos++
			if lx.pos < len(src) {
				if src[lx.pos] == '\n' {
					lx.line++
				}
				lx.pos++
			}
		case '\n':
			return
		case quote:
			lx.pos++
			return
		default:
			lx.pos++
		}
	}
}

// template skips a `…` template literal, reading each ${…} substitution as
// code up to its closing brace.
func (lx *jsLexer) template(nest int) {
	src := lx.src
	lx.pos++
	for lx.pos < len(src) {
		switch c := src[lx.pos]; {
		case c == '\\':
			lx.pos++
			if lx.pos < len(src) {
				if src[lx.pos] == '\n' {
					lx.line++
				}
				lx.pos++
			}
		case c == '\n':
			lx.line++
			lx.pos++
		case c == '`':
			lx.pos++
			return
		case c == '$' && lx.pos+1 < len(src) && src[lx.pos+1] == '{' && nest < maxNest:
			lx.pos += 2
			lx.substitution(nest + 1)
		default:
			lx.pos++
		}
	}
}

// substitution reads the code of a ${…} substitution and its closing brace.
// Its tokens are dropped: they belong to a string literal.
func (lx *jsLexer) substitution(nest int) {
	depth := 0
	for lx.pos < len(lx.src) {
		t, ok := lx.next(nest)
		if !ok || t.kind != tOp {
			continue
		}
		switch t.text {
		case "{":
			depth++
		case "}":
			if depth == 0 {
				return
			}
			depth--
		}
	}
}

// regexAllowed reports whether a '/' here starts a regular expression
// rather than a division, judged by the token before it.
func (lx *jsLexer) regexAllowed() bool {
	p := lx.last
	switch p.kind {
	case 0:
		return true
	case tNum, tStr:
		return false
	case tName:
		switch p.text {
		case "return", "typeof", "instanceof", "in", "of", "new", "delete",
			"void", "throw", "case", "do", "else", "yield", "await":
			return true
		}
		return false
	}
	switch p.text {
	case ")", "]", "}", "++", "--":
		return false
	}
	return true
}

// regex skips a regular expression literal and its flags. It reports false,
// leaving pos alone, when no closing '/' comes before the end of the line:
// the '/' was a division after all.
func (lx *jsLexer) regex() bool {
	src := lx.src
	i, class := lx.pos+1, false
	for i < len(src) {
		switch c := src[i]; {
		case c == '\n':
			return false
		case c == '\\':
			i++
			if i < len(src) && src[i] == '\n' {
				return false
			}
		case c == '[':
			class = true
		case c == ']':
			class = false
		case c == '/' && !class:
			i++
			for i < len(src) && isIdentPart(src[i]) {
				i++
			}
			lx.pos = i
			return true
		}
		i++
	}
	return false
}

// jsOps lists the multi-character operators that matter when reading
// calls and object literals, longest first: "=" must not be read out of
// "==", "=>" or "===", nor "..." as three dots.
var jsOps = []string{
	">>>=", "===", "!==", "**=", "<<=", ">>=", ">>>", "...", "&&=", "||=", "??=",
	"=>", "==", "!=", "<=", ">=", "&&", "||", "??", "?.", "**", "++", "--",
	"+=", "-=", "*=", "/=", "%=", "&=", "|=", "^=", "<<", ">>",
}
