package audit

// imports records the names bound to SDK client classes and modules by
// import declarations, require calls and awaited dynamic imports.
func (f *jsFile) imports() {
	for i := range f.toks {
		switch {
		case f.is(i, "import") && !f.is(i-1, ".") && !f.is(i+1, "("):
			f.importDecl(i + 1)
		case f.is(i, "const") || f.is(i, "let") || f.is(i, "var"):
			f.requireDecl(i + 1)
		}
	}
}

// importDecl reads an import declaration after its "import" keyword:
// "Default, { A as B } from 'pkg'", "* as ns from 'pkg'", "X = require('pkg')".
func (f *jsFile) importDecl(i int) {
	if f.is(i, "type") && (f.name(i+1) || f.is(i+1, "{") || f.is(i+1, "*")) && !f.is(i+1, "from") {
		return // type-only imports bind nothing that can be constructed
	}
	var def, space string
	named := map[string]string{} // local → exported name
	if f.name(i) && !f.is(i, "from") {
		def = f.text(i)
		i++
		if f.is(i, "=") {
			f.requireValue(i+1, def, nil)
			return
		}
		if f.is(i, ",") {
			i++
		}
	}
	switch {
	case f.is(i, "*") && f.is(i+1, "as") && f.name(i+2):
		space, i = f.text(i+2), i+3
	case f.is(i, "{"):
		end := f.closer(i)
		if end < 0 {
			return
		}
		f.specifiers(i, end, "as", named)
		i = end + 1
	}
	if !f.is(i, "from") || i+1 >= len(f.toks) || f.toks[i+1].kind != tStr {
		return
	}
	f.bind(jsPackageName(unquote(f.toks[i+1].text)), def, space, named)
}

// specifiers reads "{ A, B as C, type D }" (with sep "as") or the
// destructuring "{ A, B: C, default: D }" (with sep ":") into named.
func (f *jsFile) specifiers(open, end int, sep string, named map[string]string) {
	for _, s := range f.split(open, end) {
		j := s.from
		if f.is(j, "type") && s.to-j > 1 && !f.is(j+1, sep) {
			continue
		}
		if j >= len(f.toks) || f.toks[j].kind == tOp {
			continue
		}
		exported, local := unquote(f.toks[j].text), f.text(j)
		if f.is(j+1, sep) && f.name(j+2) {
			local = f.text(j + 2)
		}
		named[local] = exported
	}
}

// requireDecl reads a declaration after const/let/var that loads an SDK:
// "X = require('pkg')", "X = require('pkg').Y", "{ A, B: C } = require('pkg')",
// or the same with "await import('pkg')".
func (f *jsFile) requireDecl(i int) {
	switch {
	case f.name(i) && f.is(i+1, "="):
		f.requireValue(i+2, f.text(i), nil)
	case f.is(i, "{"):
		end := f.closer(i)
		if end < 0 || !f.is(end+1, "=") {
			return
		}
		named := map[string]string{}
		f.specifiers(i, end, ":", named)
		f.requireValue(end+2, "", named)
	}
}

// requireValue reads "require('pkg')[.member]" or "await import('pkg')" at i
// and binds local (the whole module) or named (its members).
func (f *jsFile) requireValue(i int, local string, named map[string]string) {
	dynamic := false
	if f.is(i, "await") {
		i++
	}
	switch {
	case f.is(i, "require"):
	case f.is(i, "import"):
		dynamic = true
	default:
		return
	}
	if !f.is(i+1, "(") || i+2 >= len(f.toks) || f.toks[i+2].kind != tStr || !f.is(i+3, ")") {
		return
	}
	pkg := jsPackageName(unquote(f.toks[i+2].text))
	if _, ok := jsPackages[pkg]; !ok {
		return
	}
	switch {
	case named != nil:
		f.bind(pkg, "", "", named)
	case f.is(i+4, ".") && f.name(i+5):
		f.bind(pkg, "", "", map[string]string{local: f.text(i + 5)})
	case dynamic:
		f.bind(pkg, "", local, nil)
	default:
		// CommonJS: the module is the default class, with the others as
		// its properties.
		f.bind(pkg, local, local, nil)
	}
}

// bind records what an import of pkg binds: def to its default class,
// space to the module, and each local name in named to the class it
// exports under that name.
func (f *jsFile) bind(pkg, def, space string, named map[string]string) {
	p, ok := jsPackages[pkg]
	if !ok {
		return
	}
	if def != "" {
		if p.def != "" {
			f.classes[def] = p.def
		}
		f.spaces[def] = pkg
	}
	if space != "" {
		f.spaces[space] = pkg
	}
	for local, exported := range named {
		switch {
		case exported == "default" && p.def != "":
			f.classes[local] = p.def
		case p.classes[exported]:
			f.classes[local] = exported
		}
	}
}
