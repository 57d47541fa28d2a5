package audit

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strconv"
	"strings"
	"time"
)

// goSDKs maps the module path of each Go SDK to its name.
var goSDKs = []struct{ path, sdk string }{
	{"github.com/openai/openai-go", "openai"},
	{"github.com/anthropics/anthropic-sdk-go", "anthropic"},
}

// goImport returns the SDK an import path belongs to and the package path
// inside the SDK's module, major version dropped: "github.com/openai/
// openai-go/v3/option" → ("openai", "option").
func goImport(path string) (sdk, sub string) {
	for _, m := range goSDKs {
		if path != m.path && !strings.HasPrefix(path, m.path+"/") {
			continue
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(path, m.path), "/")
		first, after, _ := strings.Cut(rest, "/")
		if len(first) > 1 && first[0] == 'v' && isNumber(first[1:]) {
			rest = after
		}
		return m.sdk, rest
	}
	return "", ""
}

func isNumber(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

// goFile is one Go file being audited.
type goFile struct {
	fset      *token.FileSet
	file      *ast.File
	clients   map[string]string // local package name → SDK, for NewClient
	options   map[string]bool   // local names of the SDKs' option packages
	others    map[string]bool   // local names of the SDKs' other packages
	community map[string]bool   // local names of the go-openai package
	cloud     map[string]string // local names of the cloud SDKs' packages → their roles (see goCloudPkgs)
	dot       string            // the SDK whose root package is dot-imported
	binds     map[bindKey][]goBind
	work      int // AST nodes visited while resolving names, against maxWork
}

// bindKey identifies the bindings of a name in a function (nil: the file).
type bindKey struct {
	scope ast.Node
	name  string
}

// maxWork bounds the AST nodes one file may visit while resolving names, so
// that a huge generated file costs linear time; past it, names resolve to
// nothing (and so can hide, never invent, a finding).
const maxWork = 1 << 22

// inspect walks the tree at n like ast.Inspect, within the file's budget.
// It reports false when the budget ran out.
func (g *goFile) inspect(n ast.Node, fn func(ast.Node)) bool {
	ast.Inspect(n, func(n ast.Node) bool {
		if n == nil || g.work > maxWork {
			return false
		}
		g.work++
		fn(n)
		return true
	})
	return g.work <= maxWork
}

// auditGo returns the findings in Go source. A file that does not parse is
// audited as far as the parser got.
func auditGo(name string, src []byte) ([]issue, map[int]bool) {
	fset := token.NewFileSet()
	file, _ := parser.ParseFile(fset, name, src, parser.ParseComments|parser.SkipObjectResolution)
	if file == nil {
		return nil, nil
	}
	g := &goFile{fset: fset, file: file, clients: map[string]string{}, options: map[string]bool{}, others: map[string]bool{}, community: map[string]bool{}, cloud: map[string]string{}, binds: map[bindKey][]goBind{}}
	g.imports()
	if len(g.clients) == 0 && g.dot == "" && len(g.community) == 0 && !g.hasCloudClients() {
		return nil, nil
	}
	var out []issue
	var stack []ast.Node
	ast.Inspect(file, func(n ast.Node) bool {
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		stack = append(stack, n)
		if call, ok := n.(*ast.CallExpr); ok {
			if sdk := g.newClient(call); sdk != "" {
				out = append(out, g.client(call, sdk, g.scopes(stack))...)
			} else if name := g.goOpenAIClient(call); name != "" {
				out = append(out, g.goOpenAI(call, name, g.scopes(stack))...)
			} else if name := g.cloudClient(call); name == "genai.NewClient" {
				out = append(out, g.genai(call, g.scopes(stack))...)
			} else if name != "" {
				out = append(out, g.bedrock(call, name, g.scopes(stack))...)
			}
		}
		return true
	})
	return out, g.ignored()
}

// imports records the local names of the SDK packages the file imports.
func (g *goFile) imports() {
	for _, spec := range g.file.Imports {
		path, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue
		}
		if g.cloudImport(path, spec) {
			continue
		}
		sdk, sub := goImport(path)
		if path == goOpenAIPath {
			local := "openai"
			if spec.Name != nil {
				local = spec.Name.Name
			}
			g.community[local] = true
			continue
		}
		if sdk == "" {
			continue
		}
		local := sdk
		if sub != "" {
			local = sub[strings.LastIndex(sub, "/")+1:]
		}
		if spec.Name != nil {
			local = spec.Name.Name
		}
		switch {
		case local == "_":
		case local == ".":
			if sub == "" {
				g.dot = sdk
			}
		case sub == "":
			g.clients[local] = sdk
		case sub == "option":
			g.options[local] = true
		default:
			g.others[local] = true
		}
	}
}

// ignored returns the lines whose comments carry the ignore marker.
func (g *goFile) ignored() map[int]bool {
	lines := map[int]bool{}
	for _, cg := range g.file.Comments {
		for _, c := range cg.List {
			if strings.Contains(c.Text, ignoreMarker) {
				lines[g.fset.Position(c.Slash).Line] = true
			}
		}
	}
	return lines
}

// newClient returns the SDK whose NewClient call is call, or "".
func (g *goFile) newClient(call *ast.CallExpr) string {
	switch fun := call.Fun.(type) {
	case *ast.SelectorExpr:
		if x, ok := fun.X.(*ast.Ident); ok && fun.Sel.Name == "NewClient" {
			return g.clients[x.Name]
		}
	case *ast.Ident:
		if fun.Name == "NewClient" {
			return g.dot
		}
	}
	return ""
}

// scopes returns the functions enclosing the innermost node of stack,
// innermost first.
func (g *goFile) scopes(stack []ast.Node) []ast.Node {
	var out []ast.Node
	for i := len(stack) - 1; i >= 0; i-- {
		switch stack[i].(type) {
		case *ast.FuncDecl, *ast.FuncLit:
			out = append(out, stack[i])
		}
	}
	return out
}

// client returns the findings for one NewClient call.
func (g *goFile) client(call *ast.CallExpr, sdk string, scopes []ast.Node) []issue {
	var opts options
	for i, arg := range call.Args {
		if i == len(call.Args)-1 && call.Ellipsis.IsValid() {
			opts = append(opts, g.optionList(arg, scopes, 0)...)
			continue
		}
		opts = append(opts, g.option(arg, scopes, 0)...)
	}
	name := sdk + ".NewClient"
	line := g.fset.Position(call.Pos()).Line
	return clientIssues(line, name, name+"(…)", opts.get("retries"), opts.get("timeout"), false, time.Nanosecond)
}

// option returns the settings one request option expression makes.
func (g *goFile) option(e ast.Expr, scopes []ast.Node, nest int) options {
	unknown := options{{key: ""}}
	if nest >= maxNest {
		return unknown
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.CallExpr:
		return g.optionCall(e, scopes, nest)
	case *ast.Ident:
		if v, ok := g.resolve(e.Name, scopes); ok {
			return g.option(v, scopes, nest+1)
		}
	}
	return unknown
}

// optionCall returns the settings made by a call that returns an option:
// option.WithMaxRetries(n), option.WithRequestTimeout(d) and
// option.WithHTTPClient(c) matter; other options of the SDK do not; a call
// to anything else may return any option.
func (g *goFile) optionCall(call *ast.CallExpr, scopes []ast.Node, nest int) options {
	sel, ok := call.Fun.(*ast.SelectorExpr)
	if !ok {
		return options{{key: ""}}
	}
	x, ok := sel.X.(*ast.Ident)
	switch {
	case !ok:
		return options{{key: ""}}
	case g.options[x.Name]:
	case g.others[x.Name] || g.clients[x.Name] != "":
		return nil
	default:
		return options{{key: ""}}
	}
	if len(call.Args) != 1 {
		return nil
	}
	switch sel.Sel.Name {
	case "WithMaxRetries":
		return options{{key: "retries", val: g.intValue(call.Args[0], scopes, nest+1)}}
	case "WithRequestTimeout":
		return options{{key: "timeout", val: g.durValue(call.Args[0], scopes, nest+1)}}
	case "WithHTTPClient":
		return g.httpClient(call.Args[0], scopes, nest+1)
	}
	return nil
}

// intValue classifies an integer expression: a literal, or a name bound
// once to one.
func (g *goFile) intValue(e ast.Expr, scopes []ast.Node, nest int) value {
	switch e := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		if e.Kind == token.INT || e.Kind == token.FLOAT {
			return numValue(e.Value, false)
		}
	case *ast.UnaryExpr:
		if lit, ok := e.X.(*ast.BasicLit); ok && e.Op == token.SUB && lit.Kind == token.INT {
			return numValue(lit.Value, true)
		}
	case *ast.Ident:
		if v, ok := g.resolve(e.Name, scopes); ok && nest < maxNest {
			return g.intValue(v, scopes, nest+1)
		}
	}
	return value{kind: vOther}
}

// timeUnits are the duration constants of package time, in nanoseconds.
var timeUnits = map[string]float64{
	"Nanosecond": 1, "Microsecond": 1e3, "Millisecond": 1e6,
	"Second": 1e9, "Minute": 60e9, "Hour": 3600e9,
}

// durValue classifies a time.Duration expression: a number of nanoseconds
// when it is a product of literals and time's units (35 * time.Second,
// time.Minute, time.Duration(35) * time.Second) or a name bound once to
// one; otherwise set, to something not known here.
func (g *goFile) durValue(e ast.Expr, scopes []ast.Node, nest int) value {
	other := value{kind: vOther}
	if nest >= maxNest {
		return other
	}
	switch e := ast.Unparen(e).(type) {
	case *ast.BasicLit:
		if e.Kind == token.INT || e.Kind == token.FLOAT {
			return numValue(e.Value, false)
		}
	case *ast.SelectorExpr:
		if x, ok := e.X.(*ast.Ident); ok && x.Name == "time" && timeUnits[e.Sel.Name] > 0 {
			return value{kind: vNum, num: timeUnits[e.Sel.Name], text: "time." + e.Sel.Name}
		}
	case *ast.CallExpr: // time.Duration(n)
		if sel, ok := e.Fun.(*ast.SelectorExpr); ok && len(e.Args) == 1 && sel.Sel.Name == "Duration" {
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == "time" {
				return g.durValue(e.Args[0], scopes, nest+1)
			}
		}
	case *ast.BinaryExpr:
		a, b := g.durValue(e.X, scopes, nest+1), g.durValue(e.Y, scopes, nest+1)
		if e.Op == token.MUL && a.kind == vNum && b.kind == vNum {
			return value{kind: vNum, num: a.num * b.num, text: a.text + "*" + b.text}
		}
	case *ast.Ident:
		if v, ok := g.resolve(e.Name, scopes); ok {
			return g.durValue(v, scopes, nest+1)
		}
	}
	return other
}
