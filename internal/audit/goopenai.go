package audit

import (
	"go/ast"
	"time"
)

// goOpenAIPath is the module of the community Go client for OpenAI. It has
// no retries of its own, and its default http.Client has no timeout.
const goOpenAIPath = "github.com/sashabaranov/go-openai"

// goOpenAIClient returns the name of the go-openai constructor call is,
// "openai.NewClient" or "openai.NewClientWithConfig", or "".
func (g *goFile) goOpenAIClient(call *ast.CallExpr) string {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || !g.community[x.Name] {
		return ""
	}
	switch sel.Sel.Name {
	case "NewClient", "NewClientWithConfig":
		return "openai." + sel.Sel.Name
	}
	return ""
}

// goOpenAI returns the findings for one go-openai constructor call. The
// library never retries, so only the timeout is judged: NewClient always
// uses a client without one; NewClientWithConfig has one when its
// config's HTTPClient does.
func (g *goFile) goOpenAI(call *ast.CallExpr, name string, scopes []ast.Node) []issue {
	timeout := value{}
	if name == "openai.NewClientWithConfig" {
		timeout = value{kind: vUnknown}
		if len(call.Args) == 1 {
			timeout = g.goOpenAIConfig(call.Args[0], scopes, 0)
		}
	}
	line := g.fset.Position(call.Pos()).Line
	is := clientIssues(line, name, name+"(…)", value{kind: vNum}, timeout, false, time.Nanosecond)
	for i := range is {
		is[i].words = &goOpenAI
	}
	return is
}

// goOpenAIConfig returns the timeout a ClientConfig expression gives the
// client: that of its HTTPClient field, set in a composite literal or
// assigned to a variable anywhere in the file; unset for a config from
// DefaultConfig, DefaultAzureConfig or DefaultAnthropicConfig left alone;
// unknown for anything else.
func (g *goFile) goOpenAIConfig(e ast.Expr, scopes []ast.Node, nest int) value {
	unknown := value{kind: vUnknown}
	if nest >= maxNest {
		return unknown
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		return g.goOpenAIConfig(e.X, scopes, nest+1)
	case *ast.StarExpr:
		return g.goOpenAIConfig(e.X, scopes, nest+1)
	case *ast.CompositeLit:
		for _, elt := range e.Elts {
			if kv, ok := elt.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "HTTPClient" {
					return g.goOpenAIHTTP(kv.Value, scopes, nest+1)
				}
			}
		}
		return value{}
	case *ast.CallExpr:
		sel, ok := e.Fun.(*ast.SelectorExpr)
		if !ok {
			return unknown
		}
		if x, ok := sel.X.(*ast.Ident); ok && g.community[x.Name] {
			switch sel.Sel.Name {
			case "DefaultConfig", "DefaultAzureConfig", "DefaultAnthropicConfig":
				return value{}
			}
		}
	case *ast.Ident:
		if rhs, ok := g.fieldValue(e.Name, "HTTPClient"); ok {
			if rhs == nil {
				return unknown
			}
			return g.goOpenAIHTTP(rhs, scopes, nest+1)
		}
		if v, ok := g.resolve(e.Name, scopes); ok {
			return g.goOpenAIConfig(v, scopes, nest+1)
		}
	}
	return unknown
}

// goOpenAIHTTP returns the timeout an *http.Client expression sets.
func (g *goFile) goOpenAIHTTP(e ast.Expr, scopes []ast.Node, nest int) value {
	opts := g.httpClient(e, scopes, nest)
	if len(opts) == 0 {
		return value{}
	}
	return opts[0].val
}

// fieldValue returns the value assigned to name.field in the file, and
// whether there is such an assignment; the value is nil when it is
// assigned more than once.
func (g *goFile) fieldValue(name, field string) (ast.Expr, bool) {
	var vals []ast.Expr
	g.inspect(g.file, func(n ast.Node) {
		a, ok := n.(*ast.AssignStmt)
		if !ok || len(a.Lhs) != len(a.Rhs) {
			return
		}
		for i, lhs := range a.Lhs {
			if sel, ok := lhs.(*ast.SelectorExpr); ok && sel.Sel.Name == field {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == name {
					vals = append(vals, a.Rhs[i])
				}
			}
		}
	})
	switch len(vals) {
	case 0:
		return nil, false
	case 1:
		return vals[0], true
	}
	return nil, true
}
