package audit

import (
	"go/ast"
	"go/token"
)

// goBind is one binding of a name: a declaration, an assignment, or an
// append to itself. An opaque binding's value cannot be known (a
// parameter, a range variable, a multi-value assignment).
type goBind struct {
	value  ast.Expr
	append bool
	opaque bool
}

// bindings returns the bindings of name visible from the innermost of
// scopes: those of the first enclosing function that binds it, else the
// file's.
func (g *goFile) bindings(name string, scopes []ast.Node) []goBind {
	for i := 0; i <= len(scopes); i++ {
		var s ast.Node // nil: the file
		if i < len(scopes) {
			s = scopes[i]
		}
		key := bindKey{s, name}
		b, ok := g.binds[key]
		if !ok {
			if s == nil {
				b = g.fileBindings(name)
			} else {
				b = g.funcBindings(s, name)
			}
			g.binds[key] = b
		}
		if len(b) > 0 {
			return b
		}
	}
	return nil
}

// funcBindings returns the bindings of name in a function: its parameters,
// results and receiver, and every binding in its body (nested function
// literals included, which can only make a name less resolvable).
func (g *goFile) funcBindings(fn ast.Node, name string) []goBind {
	var ft *ast.FuncType
	var body *ast.BlockStmt
	var out []goBind
	switch fn := fn.(type) {
	case *ast.FuncDecl:
		ft, body = fn.Type, fn.Body
		out = fieldBindings(fn.Recv, name, out)
	case *ast.FuncLit:
		ft, body = fn.Type, fn.Body
	}
	out = fieldBindings(ft.Params, name, out)
	out = fieldBindings(ft.Results, name, out)
	if body != nil && !g.inspect(body, func(n ast.Node) { out = nodeBindings(n, name, out) }) {
		return []goBind{{opaque: true}}
	}
	return out
}

func fieldBindings(fl *ast.FieldList, name string, out []goBind) []goBind {
	if fl == nil {
		return out
	}
	for _, f := range fl.List {
		for _, id := range f.Names {
			if id.Name == name {
				out = append(out, goBind{opaque: true})
			}
		}
	}
	return out
}

// nodeBindings appends the bindings of name that node n makes.
func nodeBindings(n ast.Node, name string, out []goBind) []goBind {
	switch n := n.(type) {
	case *ast.AssignStmt:
		for i, lhs := range n.Lhs {
			if id, ok := lhs.(*ast.Ident); ok && id.Name == name {
				out = append(out, assignBinding(n, i, name))
			}
		}
	case *ast.ValueSpec:
		for i, id := range n.Names {
			if id.Name != name {
				continue
			}
			switch {
			case len(n.Values) == 0:
				out = append(out, goBind{})
			case len(n.Values) == len(n.Names):
				out = append(out, goBind{value: n.Values[i]})
			default:
				out = append(out, goBind{opaque: true})
			}
		}
	case *ast.RangeStmt:
		for _, e := range []ast.Expr{n.Key, n.Value} {
			if id, ok := e.(*ast.Ident); ok && id.Name == name {
				out = append(out, goBind{opaque: true})
			}
		}
	case *ast.IncDecStmt:
		if id, ok := n.X.(*ast.Ident); ok && id.Name == name {
			out = append(out, goBind{opaque: true})
		}
	case *ast.UnaryExpr:
		if id, ok := n.X.(*ast.Ident); ok && n.Op == token.AND && id.Name == name {
			out = append(out, goBind{opaque: true}) // its address escapes
		}
	}
	return out
}

// assignBinding returns the binding that the i-th target of an assignment
// makes.
func assignBinding(n *ast.AssignStmt, i int, name string) goBind {
	if len(n.Lhs) != len(n.Rhs) || (n.Tok != token.ASSIGN && n.Tok != token.DEFINE) {
		return goBind{opaque: true}
	}
	rhs := n.Rhs[i]
	if call, ok := rhs.(*ast.CallExpr); ok && isAppend(call) && len(call.Args) > 0 {
		if id, ok := call.Args[0].(*ast.Ident); ok && id.Name == name {
			return goBind{value: call, append: true}
		}
	}
	return goBind{value: rhs}
}

func isAppend(call *ast.CallExpr) bool {
	id, ok := call.Fun.(*ast.Ident)
	return ok && id.Name == "append"
}

// fileBindings returns the package-level bindings of name in the file, and
// any assignment to it inside a function.
func (g *goFile) fileBindings(name string) []goBind {
	var out []goBind
	for _, d := range g.file.Decls {
		switch d := d.(type) {
		case *ast.GenDecl:
			for _, s := range d.Specs {
				out = nodeBindings(s, name, out)
			}
		case *ast.FuncDecl:
			if d.Name.Name == name {
				out = append(out, goBind{opaque: true})
			}
			if d.Body == nil {
				continue
			}
			ok := g.inspect(d.Body, func(n ast.Node) {
				if a, ok := n.(*ast.AssignStmt); ok && a.Tok != token.DEFINE {
					out = nodeBindings(a, name, out)
				}
			})
			if !ok {
				return []goBind{{opaque: true}}
			}
		}
	}
	return out
}

// resolve returns the one value name is bound to, when it is bound exactly
// once.
func (g *goFile) resolve(name string, scopes []ast.Node) (ast.Expr, bool) {
	b := g.bindings(name, scopes)
	if len(b) != 1 || b[0].opaque || b[0].append || b[0].value == nil {
		return nil, false
	}
	return b[0].value, true
}

// optionList returns the settings a slice of options passed as opts...
// makes: a slice literal, an append, or a name declared once and then only
// appended to.
func (g *goFile) optionList(e ast.Expr, scopes []ast.Node, nest int) options {
	unknown := options{{key: ""}}
	if nest >= maxNest {
		return unknown
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.CompositeLit:
		var opts options
		for _, elt := range e.Elts {
			opts = append(opts, g.option(elt, scopes, nest+1)...)
		}
		return opts
	case *ast.CallExpr:
		if !isAppend(e) || len(e.Args) == 0 {
			return unknown
		}
		return append(g.optionList(e.Args[0], scopes, nest+1), g.appended(e, scopes, nest)...)
	case *ast.Ident:
		return g.namedList(e.Name, scopes, nest)
	}
	return unknown
}

// namedList returns the settings of a slice variable: its declaration
// followed by every append to it, in source order.
func (g *goFile) namedList(name string, scopes []ast.Node, nest int) options {
	unknown := options{{key: ""}}
	b := g.bindings(name, scopes)
	if len(b) == 0 || b[0].opaque || b[0].append {
		return unknown
	}
	var opts options
	if b[0].value != nil {
		opts = g.optionList(b[0].value, scopes, nest+1)
	}
	for _, a := range b[1:] {
		if !a.append {
			return unknown
		}
		opts = append(opts, g.appended(a.value.(*ast.CallExpr), scopes, nest)...)
	}
	return opts
}

// appended returns the settings of the elements an append call adds.
func (g *goFile) appended(call *ast.CallExpr, scopes []ast.Node, nest int) options {
	var opts options
	for i, arg := range call.Args[1:] {
		if i == len(call.Args)-2 && call.Ellipsis.IsValid() {
			opts = append(opts, g.optionList(arg, scopes, nest+1)...)
			continue
		}
		opts = append(opts, g.option(arg, scopes, nest+1)...)
	}
	return opts
}

// httpClient returns the timeout setting an option.WithHTTPClient(c) makes:
// set when the client's Timeout is, nothing when it is not (the SDK's own
// request timeout still applies), unknown when the client cannot be read.
func (g *goFile) httpClient(e ast.Expr, scopes []ast.Node, nest int) options {
	set := options{{key: "timeout", val: value{kind: vOther}}}
	unknown := options{{key: "timeout", val: value{kind: vUnknown}}}
	if nest >= maxNest {
		return unknown
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		if e.Op == token.AND {
			return g.httpClient(e.X, scopes, nest+1)
		}
	case *ast.CompositeLit:
		for _, elt := range e.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Timeout" {
				if lit, ok := kv.Value.(*ast.BasicLit); ok && lit.Value == "0" {
					return nil
				}
				return options{{key: "timeout", val: g.durValue(kv.Value, scopes, nest+1)}}
			}
		}
		return nil
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "http" && e.Sel.Name == "DefaultClient" {
			return nil
		}
	case *ast.Ident:
		if g.fieldAssigned(e.Name, "Timeout") {
			return set
		}
		if v, ok := g.resolve(e.Name, scopes); ok {
			return g.httpClient(v, scopes, nest+1)
		}
	}
	return unknown
}

// fieldAssigned reports whether the file assigns name.field anywhere.
func (g *goFile) fieldAssigned(name, field string) bool {
	found := false
	g.inspect(g.file, func(n ast.Node) {
		a, ok := n.(*ast.AssignStmt)
		if !ok {
			return
		}
		for _, lhs := range a.Lhs {
			if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == field {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
					found = true
				}
			}
		}
	})
	return found
}
