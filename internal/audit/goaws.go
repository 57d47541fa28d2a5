package audit

import (
	"go/ast"
	"go/token"
	"strings"
	"time"
)

// goCloudPkgs maps the import paths of the cloud SDKs' packages the audit
// reads to their roles.
var goCloudPkgs = map[string]string{
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime": "bedrockruntime",
	"github.com/aws/aws-sdk-go-v2/config":                 "config",
	"github.com/aws/aws-sdk-go-v2/aws":                    "aws",
	"github.com/aws/aws-sdk-go-v2/aws/retry":              "retry",
	"github.com/aws/aws-sdk-go-v2/aws/transport/http":     "awshttp",
	"google.golang.org/genai":                             "genai",
}

// cloudImport records spec when it imports a cloud SDK package, and
// reports whether it does.
func (g *goFile) cloudImport(path string, spec *ast.ImportSpec) bool {
	role, ok := goCloudPkgs[path]
	if !ok {
		return false
	}
	local := path[strings.LastIndex(path, "/")+1:]
	if spec.Name != nil {
		local = spec.Name.Name
	}
	if local != "_" && local != "." {
		g.cloud[local] = role
	}
	return true
}

// hasCloudClients reports whether the file imports a package whose
// clients the audit reads: bedrockruntime or genai.
func (g *goFile) hasCloudClients() bool {
	for _, role := range g.cloud {
		if role == "bedrockruntime" || role == "genai" {
			return true
		}
	}
	return false
}

// cloudCall returns the role of the package and the name of the function
// call calls, when it is a function of a cloud SDK package.
func (g *goFile) cloudCall(call *ast.CallExpr) (role, name string) {
	fun := call.Fun
	if ix, ok := fun.(*ast.IndexExpr); ok { // genai.Ptr[int32](…)
		fun = ix.X
	}
	sel, ok := fun.(*ast.SelectorExpr)
	if !ok {
		return "", ""
	}
	x, ok := sel.X.(*ast.Ident)
	if !ok || g.cloud[x.Name] == "" {
		return "", ""
	}
	return g.cloud[x.Name], sel.Sel.Name
}

// cloudClient returns the name of the cloud client constructor call is,
// "bedrockruntime.NewFromConfig", "bedrockruntime.New" or
// "genai.NewClient", or "".
func (g *goFile) cloudClient(call *ast.CallExpr) string {
	switch role, name := g.cloudCall(call); {
	case role == "bedrockruntime" && (name == "NewFromConfig" || name == "New"),
		role == "genai" && name == "NewClient":
		return role + "." + name
	}
	return ""
}

// bedrock returns the findings for one bedrockruntime.NewFromConfig(cfg,
// fns…) or bedrockruntime.New(options, fns…) call. aws-sdk-go-v2 makes 3
// attempts (standard mode) unless RetryMaxAttempts (0 means the default)
// or a Retryer says otherwise, and its HTTP client has no timeout.
func (g *goFile) bedrock(call *ast.CallExpr, name string, scopes []ast.Node) []issue {
	var opts options
	for i, arg := range call.Args {
		switch {
		case i == len(call.Args)-1 && call.Ellipsis.IsValid():
			opts = append(opts, event{key: ""})
		case i == 0 && name == "bedrockruntime.NewFromConfig":
			opts = append(opts, g.awsConfig(arg, scopes, 0)...)
		case i == 0:
			opts = append(opts, g.awsFields(arg, scopes, 0)...)
		default:
			opts = append(opts, g.awsOptFn(arg, scopes, 0)...)
		}
	}
	attempts := opts.get("attempts")
	if attempts.kind == vUnset {
		attempts = opts.get("retryer")
	}
	line := g.fset.Position(call.Pos()).Line
	what := name + "(…)"
	retries := attemptsIssue(line, name, what, attempts, "3", &awsGo)
	return cloudIssues(line, name, what, retries, opts.get("timeout"), false, time.Nanosecond, &awsGo)
}

// awsField returns the setting that assigning v to a field of
// bedrockruntime.Options or aws.Config makes: RetryMaxAttempts, Retryer
// (in aws.Config a func returning one) and HTTPClient matter.
func (g *goFile) awsField(field string, v ast.Expr, scopes []ast.Node, nest int) options {
	switch field {
	case "RetryMaxAttempts":
		n := g.intValue(v, scopes, nest+1)
		if n.kind == vNum && n.num == 0 {
			return nil // 0 is ignored: the default stays
		}
		return options{{key: "attempts", val: n}}
	case "Retryer":
		return options{{key: "retryer", val: g.awsRetryer(v, scopes, nest+1)}}
	case "HTTPClient":
		return g.awsHTTP(v, scopes, nest+1)
	}
	return nil
}

// awsFields returns the settings of a bedrockruntime.Options or aws.Config
// composite literal (or a pointer to one, or a name bound once to one).
func (g *goFile) awsFields(e ast.Expr, scopes []ast.Node, nest int) options {
	unknown := options{{key: ""}}
	if nest >= maxNest {
		return unknown
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		return g.awsFields(e.X, scopes, nest+1)
	case *ast.CompositeLit:
		var opts options
		for _, elt := range e.Elts {
			if kv, ok := elt.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok {
					opts = append(opts, g.awsField(id.Name, kv.Value, scopes, nest)...)
				}
			}
		}
		return opts
	case *ast.Ident:
		if v, ok := g.resolve(e.Name, scopes); ok {
			return append(g.awsFields(v, scopes, nest+1), g.awsAssigned(e.Name, scopes, nest)...)
		}
	}
	return unknown
}

// awsAssigned returns the settings made by assignments to name's fields
// anywhere in the file (cfg.RetryMaxAttempts = 1).
func (g *goFile) awsAssigned(name string, scopes []ast.Node, nest int) options {
	var opts options
	for _, field := range []string{"RetryMaxAttempts", "Retryer", "HTTPClient"} {
		if v, ok := g.fieldValue(name, field); ok {
			if v == nil {
				opts = append(opts, event{key: ""})
				continue
			}
			opts = append(opts, g.awsField(field, v, scopes, nest)...)
		}
	}
	return opts
}

// awsConfig returns the settings an aws.Config expression carries into
// NewFromConfig: those of config.LoadDefaultConfig's options (the config
// bound by cfg, err := config.LoadDefaultConfig(…)), of an aws.Config
// literal, and of assignments to its fields.
func (g *goFile) awsConfig(e ast.Expr, scopes []ast.Node, nest int) options {
	unknown := options{{key: ""}}
	if nest >= maxNest {
		return unknown
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.StarExpr:
		return g.awsConfig(e.X, scopes, nest+1)
	case *ast.CompositeLit:
		return g.awsFields(e, scopes, nest+1)
	case *ast.CallExpr:
		if role, name := g.cloudCall(e); role != "config" || name != "LoadDefaultConfig" {
			return unknown
		}
		var opts options
		for i, arg := range e.Args[min(1, len(e.Args)):] {
			if i == len(e.Args)-2 && e.Ellipsis.IsValid() {
				return append(opts, event{key: ""})
			}
			opts = append(opts, g.loadOption(arg, scopes, nest+1)...)
		}
		return opts
	case *ast.Ident:
		v, ok := g.firstResult(e.Name, scopes)
		if !ok {
			return unknown
		}
		return append(g.awsConfig(v, scopes, nest+1), g.awsAssigned(e.Name, scopes, nest)...)
	}
	return unknown
}

// loadOption returns the settings one option of config.LoadDefaultConfig
// makes: WithRetryMaxAttempts, WithRetryer and WithHTTPClient matter;
// the package's other options do not; anything else may set anything.
func (g *goFile) loadOption(e ast.Expr, scopes []ast.Node, nest int) options {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok {
		return options{{key: ""}}
	}
	role, name := g.cloudCall(call)
	if role != "config" {
		return options{{key: ""}}
	}
	if len(call.Args) != 1 {
		return nil
	}
	switch name {
	case "WithRetryMaxAttempts":
		return g.awsField("RetryMaxAttempts", call.Args[0], scopes, nest)
	case "WithRetryer":
		return g.awsField("Retryer", call.Args[0], scopes, nest)
	case "WithHTTPClient":
		return g.awsField("HTTPClient", call.Args[0], scopes, nest)
	}
	return nil
}

// awsOptFn returns the settings a func(*bedrockruntime.Options) makes: the
// assignments to its parameter's fields in a function literal (or a name
// bound once to one); bedrockruntime's own option functions set nothing
// that matters here; anything else may set anything.
func (g *goFile) awsOptFn(e ast.Expr, scopes []ast.Node, nest int) options {
	unknown := options{{key: ""}}
	if nest >= maxNest {
		return unknown
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.FuncLit:
		return g.litAssigns(e, func(field string, v ast.Expr) options { return g.awsField(field, v, scopes, nest+1) })
	case *ast.CallExpr:
		if role, _ := g.cloudCall(e); role == "bedrockruntime" {
			return nil
		}
	case *ast.Ident:
		if v, ok := g.resolve(e.Name, scopes); ok {
			return g.awsOptFn(v, scopes, nest+1)
		}
	}
	return unknown
}

// litAssigns returns the settings fn's assignments to its one parameter's
// fields make (p.Field = v), each read by field, in source order.
func (g *goFile) litAssigns(fn *ast.FuncLit, field func(name string, v ast.Expr) options) options {
	params := fn.Type.Params.List
	if len(params) != 1 || len(params[0].Names) != 1 {
		return options{{key: ""}}
	}
	p := params[0].Names[0].Name
	var opts options
	g.inspect(fn.Body, func(n ast.Node) {
		a, ok := n.(*ast.AssignStmt)
		if !ok || a.Tok != token.ASSIGN || len(a.Lhs) != len(a.Rhs) {
			return
		}
		for i, lhs := range a.Lhs {
			if sel, ok := lhs.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && id.Name == p {
					opts = append(opts, field(sel.Sel.Name, a.Rhs[i])...)
				}
			}
		}
	})
	return opts
}

// awsRetryer returns the attempts a Retryer expression allows:
// aws.NopRetryer{} 1, retry.AddWithMaxAttempts(r, n) n, retry.NewStandard
// its options' MaxAttempts (3 by default); a func returning one (aws.Config's
// Retryer, config.WithRetryer) what it returns; else set, to something not
// known here.
func (g *goFile) awsRetryer(e ast.Expr, scopes []ast.Node, nest int) value {
	other := value{kind: vOther}
	if nest >= maxNest {
		return other
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.UnaryExpr:
		return g.awsRetryer(e.X, scopes, nest+1)
	case *ast.CompositeLit:
		if sel, ok := e.Type.(*ast.SelectorExpr); ok && sel.Sel.Name == "NopRetryer" {
			if x, ok := sel.X.(*ast.Ident); ok && g.cloud[x.Name] == "aws" {
				return value{kind: vNum, num: 1, text: "1"}
			}
		}
	case *ast.FuncLit:
		if len(e.Body.List) == 1 {
			if r, ok := e.Body.List[0].(*ast.ReturnStmt); ok && len(r.Results) == 1 {
				return g.awsRetryer(r.Results[0], scopes, nest+1)
			}
		}
	case *ast.CallExpr:
		switch role, name := g.cloudCall(e); {
		case role == "retry" && name == "AddWithMaxAttempts" && len(e.Args) == 2:
			return g.intValue(e.Args[1], scopes, nest+1)
		case role == "retry" && name == "NewStandard" && !e.Ellipsis.IsValid():
			n := value{kind: vNum, num: 3, text: "3"}
			for _, arg := range e.Args {
				fn, ok := arg.(*ast.FuncLit)
				if !ok {
					return other
				}
				if v := g.litAssigns(fn, func(f string, v ast.Expr) options {
					if f != "MaxAttempts" {
						return nil
					}
					return options{{key: f, val: g.intValue(v, scopes, nest+1)}}
				}).get("MaxAttempts"); v.kind != vUnset {
					n = v
				}
			}
			return n
		}
	case *ast.Ident:
		if v, ok := g.resolve(e.Name, scopes); ok {
			return g.awsRetryer(v, scopes, nest+1)
		}
	}
	return other
}

// awsHTTP returns the timeout setting an HTTP client for the AWS SDK
// makes: awshttp.NewBuildableClient() has none until .WithTimeout(d)
// (.WithReadTimeout(d) bounds a stall, so it counts as set); an
// *http.Client is read as for option.WithHTTPClient.
func (g *goFile) awsHTTP(e ast.Expr, scopes []ast.Node, nest int) options {
	set := options{{key: "timeout", val: value{kind: vOther}}}
	if nest >= maxNest {
		return options{{key: "timeout", val: value{kind: vUnknown}}}
	}
	switch x := ast.Unparen(e).(type) {
	case *ast.CallExpr:
		if role, name := g.cloudCall(x); role == "awshttp" && name == "NewBuildableClient" {
			return nil
		}
		sel, ok := x.Fun.(*ast.SelectorExpr)
		if !ok {
			break
		}
		switch sel.Sel.Name {
		case "WithTimeout":
			if len(x.Args) == 1 {
				return options{{key: "timeout", val: g.durValue(x.Args[0], scopes, nest+1)}}
			}
		case "WithReadTimeout":
			if inner := g.awsHTTP(sel.X, scopes, nest+1); inner.get("timeout").kind != vUnset {
				return inner
			}
			return set
		case "WithTransportOptions", "WithDialerOptions":
			return g.awsHTTP(sel.X, scopes, nest+1)
		}
	case *ast.Ident:
		if !g.fieldAssigned(x.Name, "Timeout") {
			if v, ok := g.resolve(x.Name, scopes); ok {
				return g.awsHTTP(v, scopes, nest+1)
			}
		}
	}
	return g.httpClient(e, scopes, nest)
}

// firstResult returns the expression whose first result name is bound to,
// when the innermost function binding name binds it once: x := f(),
// x, err := f(), var x = f().
func (g *goFile) firstResult(name string, scopes []ast.Node) (ast.Expr, bool) {
	for _, s := range scopes {
		var ft *ast.FuncType
		var body *ast.BlockStmt
		switch fn := s.(type) {
		case *ast.FuncDecl:
			ft, body = fn.Type, fn.Body
		case *ast.FuncLit:
			ft, body = fn.Type, fn.Body
		}
		if len(fieldBindings(ft.Params, name, nil)) > 0 || body == nil {
			return nil, false
		}
		var found []ast.Expr
		n := 0
		g.inspect(body, func(node ast.Node) {
			var lhs []ast.Expr
			var rhs []ast.Expr
			switch st := node.(type) {
			case *ast.AssignStmt:
				lhs, rhs = st.Lhs, st.Rhs
			case *ast.ValueSpec:
				for _, id := range st.Names {
					lhs = append(lhs, id)
				}
				rhs = st.Values
			default:
				return
			}
			for i, l := range lhs {
				if id, ok := l.(*ast.Ident); ok && id.Name == name {
					n++
					switch {
					case len(lhs) == len(rhs):
						found = append(found, rhs[i])
					case len(rhs) == 1 && i == 0:
						found = append(found, rhs[0])
					}
				}
			}
		})
		if n == 0 {
			continue
		}
		if n == 1 && len(found) == 1 {
			return found[0], true
		}
		return nil, false
	}
	return nil, false
}
