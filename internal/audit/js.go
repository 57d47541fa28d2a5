package audit

import (
	"strings"
	"time"
)

// jsPackage describes the client classes an npm package exports.
type jsPackage struct {
	def     string          // the class that is the default export
	classes map[string]bool // the client classes exported by name
}

// jsPackages lists the SDK packages by their npm names.
var jsPackages = map[string]jsPackage{
	"openai":                          {def: "OpenAI", classes: map[string]bool{"OpenAI": true, "AzureOpenAI": true}},
	"@anthropic-ai/sdk":               {def: "Anthropic", classes: map[string]bool{"Anthropic": true}},
	"@anthropic-ai/bedrock-sdk":       {def: "AnthropicBedrock", classes: map[string]bool{"AnthropicBedrock": true}},
	"@anthropic-ai/vertex-sdk":        {def: "AnthropicVertex", classes: map[string]bool{"AnthropicVertex": true}},
	"@google/genai":                   {classes: map[string]bool{"GoogleGenAI": true}},
	"@aws-sdk/client-bedrock-runtime": {classes: map[string]bool{"BedrockRuntimeClient": true, "BedrockRuntime": true}},
}

// jsPackageName returns the package a module specifier names, version and
// subpath dropped: "npm:openai@4/index.mjs" → "openai". JSR's
// "@openai/openai" is the same package as npm's "openai".
func jsPackageName(spec string) string {
	spec = strings.TrimPrefix(strings.TrimPrefix(spec, "npm:"), "jsr:")
	parts := strings.Split(spec, "/")
	n := 1
	if strings.HasPrefix(spec, "@") {
		n = 2
	}
	if len(parts) < n {
		return ""
	}
	name := strings.Join(parts[:n], "/")
	if i := strings.LastIndex(name, "@"); i > 0 {
		name = name[:i]
	}
	if name == "@openai/openai" {
		return "openai"
	}
	return name
}

// jsFile is one JavaScript or TypeScript file being audited.
type jsFile struct {
	*lexed
	classes  map[string]string // local name → client class
	spaces   map[string]string // local name → SDK package whose classes it holds
	scope    *jsScope
	spreads  map[int]options // settings of the bindings read as options so far, by value
	consumed map[int]bool    // withOptions tokens read as part of a construction
}

// auditJS returns the findings in JavaScript or TypeScript source and the
// lines that carry an ignore marker.
func auditJS(src []byte) ([]issue, map[int]bool) {
	f := &jsFile{lexed: lexJS(src), classes: map[string]string{}, spaces: map[string]string{}, spreads: map[int]options{}, consumed: map[int]bool{}}
	f.imports()
	if len(f.classes) == 0 && len(f.spaces) == 0 {
		return nil, nil
	}
	f.scope = jsScopes(f.lexed)
	var out []issue
	for i := range f.toks {
		if f.is(i, "new") {
			out = append(out, f.construction(i)...)
		}
	}
	for i := range f.toks {
		if (f.is(i, ".") || f.is(i, "?.")) && f.text(i+1) == "withOptions" && f.is(i+2, "(") && !f.consumed[i+1] {
			out = append(out, f.withOptions(i+1)...)
		}
	}
	return out, f.ignored
}

// classAt reports whether the tokens at i name a client class, which one,
// and the index after the reference: "OpenAI", "sdk.OpenAI", "sdk.default".
func (f *jsFile) classAt(i int) (string, int, bool) {
	if !f.name(i) {
		return "", i, false
	}
	local := f.text(i)
	if pkg, ok := f.spaces[local]; ok && f.is(i+1, ".") && f.name(i+2) {
		member, p := f.text(i+2), jsPackages[pkg]
		switch {
		case member == "default" && p.def != "":
			return p.def, i + 3, true
		case p.classes[member]:
			return member, i + 3, true
		}
		return "", i, false
	}
	class, ok := f.classes[local]
	if !ok || f.is(i+1, ".") {
		return "", i, false
	}
	return class, i + 1, true
}

// construction returns the findings for a "new" expression at i that builds
// a client, reading its options object and any .withOptions(…) chained on.
func (f *jsFile) construction(i int) []issue {
	class, k, ok := f.classAt(i + 1)
	if !ok {
		return nil
	}
	var opts options
	end := k - 1
	if f.is(k, "(") {
		end = f.closer(k)
		if end < 0 {
			return nil
		}
		if args := f.split(k, end); len(args) > 0 {
			opts = f.argument(args[0], 0)
		}
	}
	for j := end + 1; (f.is(j, ".") || f.is(j, "?.")) && f.text(j+1) == "withOptions" && f.is(j+2, "("); {
		c := f.closer(j + 2)
		if c < 0 {
			break
		}
		f.consumed[j+1] = true
		if args := f.split(j+2, c); len(args) > 0 {
			opts = append(opts, f.argument(args[0], 0)...)
		}
		j = c + 1
	}
	switch class {
	case "GoogleGenAI":
		return f.genai(i, opts)
	case "BedrockRuntimeClient", "BedrockRuntime":
		return f.bedrock(i, class, opts)
	}
	return clientIssues(f.toks[i].line, class, "new "+class+"(…)", opts.get("maxRetries"), opts.get("timeout"), true, time.Millisecond)
}

// withOptions returns the finding for a client.withOptions(…) call at i that
// is not part of a construction and turns retries back on.
func (f *jsFile) withOptions(i int) []issue {
	end := f.closer(i + 1)
	if end < 0 {
		return nil
	}
	args := f.split(i+1, end)
	if len(args) == 0 {
		return nil
	}
	r := f.argument(args[0], 0).get("maxRetries")
	if r.kind != vNum || r.num == 0 {
		return nil
	}
	return []issue{{line: f.toks[i].line, client: "withOptions", call: "withOptions(…)", problem: pRetriesOn, retries: r.text}}
}

// argument reads the settings an options argument carries: an object
// literal, or a name bound once to one. Anything else may set any option.
func (f *jsFile) argument(sp span, nest int) options {
	unknown := options{{key: ""}}
	sp = f.trimCast(sp)
	switch {
	case nest >= maxNest || sp.to <= sp.from:
		return unknown
	case f.is(sp.from, "{") && f.closer(sp.from) == sp.to-1:
		return f.object(sp.from, sp.to-1, nest+1).compact()
	case sp.to-sp.from == 1 && f.name(sp.from):
		obj, ok := f.resolve(f.text(sp.from), sp.from)
		if !ok || !f.is(obj.from, "{") {
			return unknown
		}
		if opts, ok := f.spreads[obj.from]; ok {
			return opts // read before, or being read (a cycle)
		}
		f.spreads[obj.from] = unknown
		f.spreads[obj.from] = f.argument(obj, nest+1)
		return f.spreads[obj.from]
	case f.is(sp.from, "(") && f.closer(sp.from) == sp.to-1:
		return f.argument(span{sp.from + 1, sp.to - 1}, nest+1)
	}
	if a, b, ok := f.conditional(sp, false); ok {
		return union(f.branch(a, nest+1), f.branch(b, nest+1))
	}
	return unknown
}

// branch reads one branch of a conditional spread: nothing for an absent
// branch or a literal that spreads no properties (null, undefined, false,
// a number), else the options it carries.
func (f *jsFile) branch(sp span, nest int) options {
	sp = f.trimCast(sp)
	switch {
	case sp.to <= sp.from:
		return options{}
	case sp.to-sp.from == 1 && (f.is(sp.from, "null") || f.is(sp.from, "undefined") || f.is(sp.from, "false") ||
		f.is(sp.from, "true") || f.toks[sp.from].kind == tNum || f.toks[sp.from].kind == tStr && len(f.toks[sp.from].text) == 2):
		return options{}
	}
	return f.argument(sp, nest)
}

// trimCast drops a TypeScript "as T", "satisfies T" or "!" that ends sp.
func (f *jsFile) trimCast(sp span) span {
	for i := sp.from; i < sp.to; i++ {
		if c := f.closer(i); c > i {
			i = c
			continue
		}
		if i > sp.from && (f.is(i, "as") || f.is(i, "satisfies")) {
			return span{sp.from, i}
		}
	}
	if sp.to-sp.from > 1 && f.is(sp.to-1, "!") {
		sp.to--
	}
	return sp
}

// object reads the properties of an object literal in order: a later
// property or spread overrides an earlier one.
func (f *jsFile) object(open, end, nest int) options {
	var opts options
	for _, p := range f.split(open, end) {
		t := f.toks[p.from]
		switch {
		case f.is(p.from, "..."):
			opts = append(opts, f.argument(span{p.from + 1, p.to}, nest)...)
		case t.kind != tOp && f.is(p.from+1, ":"):
			opts = append(opts, event{key: unquote(t.text), val: f.value(span{p.from + 2, p.to}, nest)})
		case t.kind == tName && p.to-p.from == 1:
			opts = append(opts, event{key: t.text, val: f.value(p, nest)})
		case f.is(p.from, "["):
			opts = append(opts, event{key: ""})
		}
	}
	return opts
}

// value classifies the expression sp given to an option.
func (f *jsFile) value(sp span, nest int) value {
	sp = f.trimCast(sp)
	v := value{kind: vOther, sp: sp}
	switch n := sp.to - sp.from; {
	case n == 1 && f.toks[sp.from].kind == tNum:
		v = numValue(f.toks[sp.from].text, false)
	case n == 2 && (f.is(sp.from, "-") || f.is(sp.from, "+")) && f.toks[sp.from+1].kind == tNum:
		v = numValue(f.toks[sp.from+1].text, f.is(sp.from, "-"))
	case n == 1 && (f.is(sp.from, "undefined") || f.is(sp.from, "null")),
		n == 2 && f.is(sp.from, "void") && f.toks[sp.from+1].kind == tNum:
		v.kind = vNull
	case n == 1 && f.name(sp.from) && nest < maxNest:
		if bound, ok := f.resolve(f.text(sp.from), sp.from); ok {
			if r := f.value(bound, nest+1); r.kind == vNum {
				v = r
			}
		}
	}
	v.sp = sp
	return v
}
