package audit

// jsBinding is one declaration of a name: the tokens where it is visible,
// and the value it is bound to (empty when unknown: a parameter, a
// function, a value longer than one token that is not an object literal).
type jsBinding struct {
	region span
	val    span
}

// jsScope records the bindings of every name in a file, by block.
type jsScope struct {
	binds   map[string][]jsBinding
	changed map[string]bool // assigned after its declaration, or mutated
}

// jsNotFunctions are the keywords that a parenthesis followed by a block
// can follow without being a parameter list.
var jsNotFunctions = map[string]bool{"if": true, "for": true, "while": true, "switch": true, "catch": true, "with": true, "return": true}

// jsScopes collects the bindings in a file: declarations (visible in their
// block), parameters (visible in their function) and function names, and
// the names that are assigned again or changed in place.
func jsScopes(l *lexed) *jsScope {
	f := &jsFile{lexed: l}
	sc := &jsScope{binds: map[string][]jsBinding{}, changed: map[string]bool{}}
	encl := enclosingBraces(l)
	block := func(i int) span {
		if o := encl[i]; o >= 0 {
			return span{o, l.closer(o) + 1}
		}
		return span{0, len(l.toks)}
	}
	for i, t := range l.toks {
		if body, ok := f.paramsRegion(i); ok {
			for _, p := range l.split(i, l.closer(i)) {
				j := p.from
				if l.is(j, "...") {
					j++
				}
				if l.name(j) {
					sc.add(l.text(j), jsBinding{region: body})
				}
			}
		}
		if t.kind != tName || l.is(i-1, ".") || l.is(i-1, "?.") {
			continue
		}
		switch {
		case l.is(i-1, "const") || l.is(i-1, "let") || l.is(i-1, "var"):
			b := jsBinding{region: block(i)}
			if v := f.declValue(i + 1); v >= 0 {
				b.val = f.declSpan(v)
			}
			sc.add(t.text, b)
		case l.is(i-1, "function") || l.is(i-1, "class"):
			sc.add(t.text, jsBinding{region: block(i)})
		case l.is(i+1, "=>"):
			sc.add(t.text, jsBinding{region: f.arrowRegion(i, i+1)})
		case f.reassigned(i):
			sc.changed[t.text] = true
		}
	}
	return sc
}

func (sc *jsScope) add(name string, b jsBinding) {
	sc.binds[name] = append(sc.binds[name], b)
}

// reassigned reports whether the name at i is assigned or changed in place
// there: "x = …", "x += …", "x++", "x.k = …", "x[k] = …", "delete x.k",
// "Object.assign(x, …)".
func (f *jsFile) reassigned(i int) bool {
	next := f.text(i + 1)
	switch {
	case next == "=" || next == "++" || next == "--" || f.is(i-1, "++") || f.is(i-1, "--"):
		return true
	case i+1 < len(f.toks) && f.toks[i+1].kind == tOp && isAugmented(next) && next != "=>":
		return true
	case f.is(i+1, ".") && f.name(i+2) && (f.is(i+3, "=") || f.is(i+3, "++") || f.is(i+3, "--")):
		return true
	case f.is(i+1, "[") && f.is(f.closer(i+1)+1, "="):
		return true
	}
	return f.is(i-1, "delete") || (f.is(i-1, "(") && f.is(i-2, "assign"))
}

// enclosingBraces returns, for every token, the index of the innermost
// matched "{" around it, or -1.
func enclosingBraces(l *lexed) []int {
	encl := make([]int, len(l.toks))
	var stack []int
	for i := range l.toks {
		if o := l.match[i]; l.is(i, "}") && o >= 0 {
			for len(stack) > 0 && stack[len(stack)-1] >= o {
				stack = stack[:len(stack)-1]
			}
		}
		encl[i] = -1
		if len(stack) > 0 {
			encl[i] = stack[len(stack)-1]
		}
		if l.is(i, "{") && l.closer(i) > i {
			stack = append(stack, i)
		}
	}
	return encl
}

// paramsRegion reports whether token i opens the parameter list of an
// arrow function, a function or a method, and where the parameters are
// visible.
func (f *jsFile) paramsRegion(i int) (span, bool) {
	end := f.closer(i)
	if !f.is(i, "(") || end < 0 {
		return span{}, false
	}
	next := f.skipReturnType(end + 1)
	switch {
	case f.is(next, "=>"):
		return f.arrowRegion(i, next), true
	case f.is(next, "{") && f.closer(next) > next && f.name(i-1) && !jsNotFunctions[f.text(i-1)]:
		return span{i, f.closer(next) + 1}, true
	}
	return span{}, false
}

// skipReturnType skips a TypeScript return type annotation (": T") at i
// and returns the index of the "{" or "=>" after it, or i.
func (f *jsFile) skipReturnType(i int) int {
	if !f.is(i, ":") {
		return i
	}
	for j := i + 1; j < len(f.toks) && j < i+64; j++ {
		if f.is(j, "{") && !f.is(j-1, ":") && !f.is(j-1, "|") && !f.is(j-1, "&") && !f.is(j-1, "<") && !f.is(j-1, ",") {
			return j
		}
		if f.is(j, "=>") {
			return j
		}
		if c := f.closer(j); c > j {
			j = c
		}
	}
	return i
}

// arrowRegion returns the tokens of an arrow function that starts at start
// and whose "=>" is at arrow: through its block, or its expression body.
func (f *jsFile) arrowRegion(start, arrow int) span {
	if f.is(arrow+1, "{") && f.closer(arrow+1) > arrow {
		return span{start, f.closer(arrow+1) + 1}
	}
	j := arrow + 1
	for ; j < len(f.toks); j++ {
		if c := f.closer(j); c > j {
			j = c
			continue
		}
		switch f.text(j) {
		case ",", ";", ")", "]", "}":
			return span{start, j}
		}
	}
	return span{start, j}
}

// declValue returns the index of the first token of the value in a
// declaration whose name ended just before i ("= v" or ": T = v"), or -1.
func (f *jsFile) declValue(i int) int {
	if f.is(i, "=") {
		return i + 1
	}
	if !f.is(i, ":") {
		return -1
	}
	for j := i + 1; j < len(f.toks) && j < i+64; j++ {
		if c := f.closer(j); c > j {
			j = c
			continue
		}
		switch {
		case f.is(j, "="):
			return j + 1
		case f.is(j, ";") || f.is(j, ","):
			return -1
		}
	}
	return -1
}

// declSpan returns the value expression that starts at i, as far as it can
// be read without a full parser: an object literal or a single token.
// Anything longer yields an empty span, which resolves to nothing.
func (f *jsFile) declSpan(i int) span {
	switch {
	case i >= len(f.toks):
		return span{}
	case f.is(i, "{"):
		if c := f.closer(i); c > i {
			return span{i, c + 1}
		}
	case f.is(i, "-") || f.is(i, "+"):
		if i+1 < len(f.toks) && f.toks[i+1].kind == tNum && f.endsExpr(i+2) {
			return span{i, i + 2}
		}
	case f.endsExpr(i + 1):
		return span{i, i + 1}
	}
	return span{}
}

// endsExpr reports whether an expression can end before token i: at the
// end of input, at ";", ",", a closing bracket, or at a name that cannot
// continue an expression (the next statement's first word).
func (f *jsFile) endsExpr(i int) bool {
	if i >= len(f.toks) {
		return true
	}
	t := f.toks[i]
	if t.kind == tOp {
		switch t.text {
		case ";", ",", ")", "]", "}":
			return true
		}
		return false
	}
	return t.kind == tName && t.text != "as" && t.text != "satisfies" && t.text != "in" && t.text != "instanceof"
}

// resolve returns the value name is bound to where it is used, at token
// at: the binding of the innermost block around at that declares it, when
// that block declares it once and the name is never assigned again.
func (f *jsFile) resolve(name string, at int) (span, bool) {
	if f.scope.changed[name] {
		return span{}, false
	}
	var best jsBinding
	n := 0
	for _, b := range f.scope.binds[name] {
		switch {
		case at < b.region.from || at >= b.region.to:
		case n == 0 || b.region.from > best.region.from:
			best, n = b, 1
		case b.region.from == best.region.from:
			n++
		}
	}
	if n != 1 || best.val.to <= best.val.from {
		return span{}, false
	}
	return best.val, true
}
