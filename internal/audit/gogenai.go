package audit

import (
	"go/ast"
	"time"
)

// genai returns the findings for one genai.NewClient(ctx, config) call of
// google.golang.org/genai. The SDK retries nothing unless
// HTTPOptions.RetryOptions is set (then 5 attempts unless its Attempts
// says otherwise), and has no timeout unless HTTPOptions.Timeout or the
// HTTPClient's Timeout is set.
func (g *goFile) genai(call *ast.CallExpr, scopes []ast.Node) []issue {
	var opts options
	if len(call.Args) == 2 {
		opts = g.genaiConfig(call.Args[1], scopes, 0)
	} else {
		opts = options{{key: ""}}
	}
	line := g.fset.Position(call.Pos()).Line
	name := "genai.NewClient"
	retries := attemptsIssue(line, name, name+"(…)", opts.get("attempts"), "", &genaiGo)
	return cloudIssues(line, name, name+"(…)", retries, opts.get("timeout"), false, time.Nanosecond, &genaiGo)
}

// genaiConfig returns the settings of a *genai.ClientConfig expression: a
// composite literal (or its address, or a name bound once to one and whose
// fields are never assigned); nil is the defaults.
func (g *goFile) genaiConfig(e ast.Expr, scopes []ast.Node, nest int) options {
	unknown := options{{key: ""}}
	if nest >= maxNest {
		return unknown
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		return g.genaiConfig(e.X, scopes, nest+1)
	case *ast.CompositeLit:
		var opts, client options
		for _, elt := range e.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			switch id, _ := kv.Key.(*ast.Ident); {
			case id == nil:
			case id.Name == "HTTPOptions":
				opts = append(opts, g.genaiHTTPOptions(kv.Value, scopes, nest+1)...)
			case id.Name == "HTTPClient":
				client = g.httpClient(kv.Value, scopes, nest+1)
			}
		}
		if opts.get("timeout").kind == vUnset {
			opts = append(opts, client...) // HTTPOptions.Timeout, when set, bounds each call
		}
		return opts
	case *ast.Ident:
		if e.Name == "nil" {
			return nil
		}
		if g.rootAssigned(e.Name) {
			return unknown
		}
		if v, ok := g.resolve(e.Name, scopes); ok {
			return g.genaiConfig(v, scopes, nest+1)
		}
	}
	return unknown
}

// genaiHTTPOptions returns the settings of a genai.HTTPOptions literal:
// its Timeout, and the attempts its RetryOptions allow.
func (g *goFile) genaiHTTPOptions(e ast.Expr, scopes []ast.Node, nest int) options {
	unknown := options{{key: ""}}
	if nest >= maxNest {
		return unknown
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.CompositeLit:
		var opts options
		for _, elt := range e.Elts {
			kv, ok := elt.(*ast.KeyValueExpr)
			if !ok {
				continue
			}
			switch id, _ := kv.Key.(*ast.Ident); {
			case id == nil:
			case id.Name == "Timeout":
				if v := g.genaiPtr(kv.Value, g.durValue, scopes, nest+1); v.kind != vUnset {
					opts = append(opts, event{key: "timeout", val: v})
				}
			case id.Name == "RetryOptions":
				opts = append(opts, event{key: "attempts", val: g.genaiRetry(kv.Value, scopes, nest+1)})
			}
		}
		return opts
	case *ast.Ident:
		if !g.rootAssigned(e.Name) {
			if v, ok := g.resolve(e.Name, scopes); ok {
				return g.genaiHTTPOptions(v, scopes, nest+1)
			}
		}
	}
	return unknown
}

// genaiRetry returns the attempts an *genai.HTTPRetryOptions expression
// allows: unset for nil, 5 (the SDK's default) for options whose Attempts
// is not set.
func (g *goFile) genaiRetry(e ast.Expr, scopes []ast.Node, nest int) value {
	if nest >= maxNest {
		return value{kind: vUnknown}
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		return g.genaiRetry(e.X, scopes, nest+1)
	case *ast.CompositeLit:
		for _, elt := range e.Elts {
			if kv, ok := elt.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Attempts" {
					if v := g.genaiPtr(kv.Value, g.intValue, scopes, nest+1); v.kind != vUnset {
						return v
					}
				}
			}
		}
		return value{kind: vNum, num: 5, text: "5 (the default once RetryOptions is set)"}
	case *ast.Ident:
		if e.Name == "nil" {
			return value{}
		}
		if v, ok := g.resolve(e.Name, scopes); ok && !g.rootAssigned(e.Name) {
			return g.genaiRetry(v, scopes, nest+1)
		}
	}
	return value{kind: vUnknown}
}

// genaiPtr reads a pointer-valued option: nil is unset; genai.Ptr(x),
// genai.Ptr[T](x) and &x are x read by read; anything else is set.
func (g *goFile) genaiPtr(e ast.Expr, read func(ast.Expr, []ast.Node, int) value, scopes []ast.Node, nest int) value {
	switch x := ast.Unparen(e).(type) {
	case *ast.Ident:
		if x.Name == "nil" {
			return value{}
		}
	case *ast.UnaryExpr:
		return read(x.X, scopes, nest+1)
	case *ast.CallExpr:
		if role, name := g.cloudCall(x); role == "genai" && name == "Ptr" && len(x.Args) == 1 {
			return read(x.Args[0], scopes, nest+1)
		}
	}
	return value{kind: vOther}
}

// rootAssigned reports whether the file assigns to a field of name, at
// any depth (cfg.HTTPOptions.Timeout = …).
func (g *goFile) rootAssigned(name string) bool {
	found := false
	g.inspect(g.file, func(n ast.Node) {
		a, ok := n.(*ast.AssignStmt)
		if !ok {
			return
		}
		for _, lhs := range a.Lhs {
			x := lhs
			for {
				sel, ok := x.(*ast.SelectorExpr)
				if !ok {
					break
				}
				x = sel.X
			}
			if id, ok := x.(*ast.Ident); ok && id.Name == name && x != lhs {
				found = true
			}
		}
	})
	return found
}
