package audit

// pyDef is what a file does with one module-wide name: how often it is
// bound, whether it is mutated in place, and the value of its binding.
type pyDef struct {
	binds   int
	mutated bool
	val     span
}

// pyMutators are the dict methods that change a dict in place.
var pyMutators = map[string]bool{"update": true, "setdefault": true, "pop": true, "popitem": true, "clear": true, "__setitem__": true}

// pyDefs collects the bindings of every name in the file. A name bound once
// and never mutated can be resolved to its value; anything else cannot.
func pyDefs(l *lexed) map[string]*pyDef {
	defs := map[string]*pyDef{}
	def := func(name string) *pyDef {
		if defs[name] == nil {
			defs[name] = &pyDef{}
		}
		return defs[name]
	}
	f := &pyFile{lexed: l}
	for i, t := range l.toks {
		if t.kind != tName {
			continue
		}
		switch {
		case f.stmtStart(i) && (l.is(i+1, "=") || l.is(i+1, ":")):
			if eq := f.assignEq(i + 1); eq > 0 {
				d := def(t.text)
				d.binds++
				d.val = span{eq + 1, f.stmtEnd(eq + 1)}
			}
		case f.stmtStart(i) && i+1 < len(l.toks) && l.toks[i+1].kind == tOp && isAugmented(l.toks[i+1].text):
			def(t.text).binds++
		case f.stmtStart(i) && l.is(i+1, "[") && l.is(l.closer(i+1)+1, "="):
			def(t.text).mutated = true
		case l.is(i+1, ".") && pyMutators[l.text(i+2)] && l.is(i+3, "("):
			def(t.text).mutated = true
		case l.is(i-1, "del") || l.is(i-1, "as") || l.is(i-1, "for") || l.is(i-1, "global") || l.is(i-1, "nonlocal"):
			def(t.text).binds += 2
		case t.text == "def" && l.name(i+1) && l.is(i+2, "("):
			for _, p := range l.split(i+2, l.closer(i+2)) {
				j := p.from
				for l.is(j, "*") || l.is(j, "**") {
					j++
				}
				if l.name(j) {
					def(l.text(j)).binds += 2
				}
			}
		}
	}
	return defs
}

// isAugmented reports whether op is an augmented assignment such as "+=".
func isAugmented(op string) bool {
	return len(op) >= 2 && op[len(op)-1] == '=' && op != "==" && op != "!=" && op != "<=" && op != ">=" && op != "->"
}

// assignEq returns the index of the "=" of an assignment whose target ends
// before i ("x = …" or "x: T = …"), or -1.
func (f *pyFile) assignEq(i int) int {
	if f.is(i, "=") {
		return i
	}
	for j := i; j < len(f.toks) && f.toks[j].kind != tNewline; j++ {
		if c := f.closer(j); c > j {
			j = c
			continue
		}
		if f.is(j, "=") {
			return j
		}
	}
	return -1
}

// stmtEnd returns the index just past the statement that contains i.
func (f *pyFile) stmtEnd(i int) int {
	for i < len(f.toks) && f.toks[i].kind != tNewline && !f.is(i, ";") {
		if c := f.closer(i); c > i {
			i = c
		}
		i++
	}
	return i
}

// resolve returns the value bound to name, when the file binds it exactly
// once and never mutates it.
func (f *pyFile) resolve(name string) (span, bool) {
	d := f.defs[name]
	if d == nil || d.binds != 1 || d.mutated || d.val.to <= d.val.from {
		return span{}, false
	}
	return d.val, true
}

// callArgs reads the keyword arguments of the call whose parentheses are at
// open and end.
func (f *pyFile) callArgs(open, end, nest int) options {
	var opts options
	for _, a := range f.split(open, end) {
		switch {
		case f.is(a.from, "**"):
			opts = append(opts, f.spread(span{a.from + 1, a.to}, nest)...)
		case f.name(a.from) && f.is(a.from+1, "="):
			opts = append(opts, event{key: f.text(a.from), val: f.value(span{a.from + 2, a.to}, nest), explicit: true})
		}
	}
	return opts
}

// spread reads the settings a **expr argument or dict entry contributes:
// those of a dict literal, a dict(…) call, or a name bound once to either;
// anything else may set any option.
func (f *pyFile) spread(sp span, nest int) options {
	unknown := options{{key: ""}}
	if nest >= maxNest || sp.to <= sp.from {
		return unknown
	}
	if sp.to-sp.from == 1 && f.name(sp.from) {
		name := f.text(sp.from)
		if opts, ok := f.spreads[name]; ok {
			return opts // resolved before, or being resolved (a cycle)
		}
		f.spreads[name] = unknown
		if v, ok := f.resolve(name); ok {
			f.spreads[name] = f.spread(v, nest+1)
		}
		return f.spreads[name]
	}
	if f.is(sp.from, "(") && f.closer(sp.from) == sp.to-1 {
		return f.spread(span{sp.from + 1, sp.to - 1}, nest+1)
	}
	if a, b, ok := f.conditional(sp, true); ok {
		return union(f.branch(a, nest+1), f.branch(b, nest+1))
	}
	var opts options
	switch {
	case f.is(sp.from, "{") && f.closer(sp.from) == sp.to-1:
		opts = f.dictLiteral(sp.from, sp.to-1, nest+1)
	case f.text(sp.from) == "dict" && f.is(sp.from+1, "(") && f.closer(sp.from+1) == sp.to-1:
		opts = f.callArgs(sp.from+1, sp.to-1, nest+1)
	default:
		return unknown
	}
	for i := range opts {
		opts[i].explicit = false
	}
	return opts.compact()
}

// branch reads one branch of a conditional spread: nothing for an absent
// branch or None, else the options it carries.
func (f *pyFile) branch(sp span, nest int) options {
	if sp.to <= sp.from || sp.to-sp.from == 1 && f.text(sp.from) == "None" {
		return options{}
	}
	return f.spread(sp, nest)
}

// dictLiteral reads the string-keyed entries of a dict literal. A key that
// is not a plain string, or a comprehension, may set any option.
func (f *pyFile) dictLiteral(open, end, nest int) options {
	var opts options
	for _, e := range f.split(open, end) {
		switch {
		case f.is(e.from, "**"):
			opts = append(opts, f.spread(span{e.from + 1, e.to}, nest)...)
		case f.toks[e.from].kind == tStr && f.is(e.from+1, ":") && !isFString(f.toks[e.from].text):
			opts = append(opts, event{key: unquote(f.toks[e.from].text), val: f.value(span{e.from + 2, e.to}, nest)})
		default:
			opts = append(opts, event{key: ""})
		}
	}
	return opts
}

// isFString reports whether a string token has an f or t prefix.
func isFString(s string) bool {
	for i := 0; i < len(s) && s[i] != '"' && s[i] != '\''; i++ {
		if c := s[i] | 0x20; c == 'f' || c == 't' {
			return true
		}
	}
	return false
}

// value classifies the expression sp given to an option.
func (f *pyFile) value(sp span, nest int) value {
	v := value{kind: vOther, sp: sp}
	switch n := sp.to - sp.from; {
	case n == 1 && f.toks[sp.from].kind == tNum:
		v = numValue(f.toks[sp.from].text, false)
	case n == 2 && (f.is(sp.from, "-") || f.is(sp.from, "+")) && f.toks[sp.from+1].kind == tNum:
		v = numValue(f.toks[sp.from+1].text, f.is(sp.from, "-"))
	case n == 1 && f.text(sp.from) == "None", f.noReadTimeout(sp):
		v.kind = vNull
	case f.text(sp.to-1) == "NOT_GIVEN" && (n == 1 || f.is(sp.to-2, ".")):
		v.kind = vUnset // the SDK's marker for "use the default"
	case n == 1 && f.name(sp.from) && nest < maxNest:
		if bound, ok := f.resolve(f.text(sp.from)); ok {
			if r := f.value(bound, nest+1); r.kind == vNum {
				v = r
			}
		}
	}
	v.sp = sp
	return v
}

// noReadTimeout reports whether sp is an httpx.Timeout(None, …) that sets
// no read timeout, which lets a stalled call wait forever.
func (f *pyFile) noReadTimeout(sp span) bool {
	root, open := f.dotted(sp.from)
	if root == "" || f.text(open-1) != "Timeout" || !f.is(open, "(") || f.closer(open) != sp.to-1 {
		return false
	}
	args := f.split(open, sp.to-1)
	if len(args) == 0 || args[0].to-args[0].from != 1 || f.text(args[0].from) != "None" {
		return false
	}
	for _, a := range args[1:] {
		if f.text(a.from) == "read" && f.is(a.from+1, "=") && f.text(a.from+2) != "None" {
			return false
		}
	}
	return true
}
