package audit

import "time"

// pyClasses maps each Python SDK package to the client classes it exports,
// each name to the class it stands for (openai.Client is OpenAI).
var pyClasses = map[string]map[string]string{
	"openai": {
		"OpenAI": "OpenAI", "AsyncOpenAI": "AsyncOpenAI",
		"AzureOpenAI": "AzureOpenAI", "AsyncAzureOpenAI": "AsyncAzureOpenAI",
		"Client": "OpenAI", "AsyncClient": "AsyncOpenAI",
	},
	"anthropic": {
		"Anthropic": "Anthropic", "AsyncAnthropic": "AsyncAnthropic",
		"AnthropicBedrock": "AnthropicBedrock", "AsyncAnthropicBedrock": "AsyncAnthropicBedrock",
		"AnthropicVertex": "AnthropicVertex", "AsyncAnthropicVertex": "AsyncAnthropicVertex",
		"AnthropicFoundry": "AnthropicFoundry", "AsyncAnthropicFoundry": "AsyncAnthropicFoundry",
		"Client": "Anthropic", "AsyncClient": "AsyncAnthropic",
	},
	"google.genai": {"Client": genaiClass},
}

// pyFile is one Python file being audited.
type pyFile struct {
	*lexed
	classes  map[string]string  // local name → client class, from "from openai import …"
	modules  map[string]string  // local name → SDK package, from "import openai …"
	defs     map[string]*pyDef  // module-wide assignments by name
	spreads  map[string]options // settings of the names spread so far
	consumed map[int]bool       // with_options tokens read as part of a construction
}

// auditPython returns the findings in Python source and the lines that
// carry an ignore marker.
func auditPython(src []byte) ([]issue, map[int]bool) {
	f := &pyFile{lexed: lexPython(src), classes: map[string]string{}, modules: map[string]string{}, spreads: map[string]options{}, consumed: map[int]bool{}}
	f.imports()
	boto := f.importsBoto()
	if len(f.classes) == 0 && len(f.modules) == 0 && !boto {
		return nil, nil
	}
	f.defs = pyDefs(f.lexed)
	var out []issue
	for i := range f.toks {
		if class, ok := f.construction(i); ok {
			out = append(out, f.client(i, class)...)
		} else if boto && f.botoClient(i) {
			out = append(out, f.bedrock(i)...)
		}
	}
	for i := range f.toks {
		if f.is(i, ".") && f.text(i+1) == "with_options" && f.is(i+2, "(") && !f.consumed[i+1] {
			out = append(out, f.withOptions(i+1)...)
		}
	}
	return out, f.ignored
}

// stmtStart reports whether token i begins a statement.
func (f *pyFile) stmtStart(i int) bool {
	return i == 0 || f.toks[i-1].kind == tNewline || f.is(i-1, ";") || f.is(i-1, ":")
}

// imports records the names bound to SDK modules and client classes.
func (f *pyFile) imports() {
	for i := range f.toks {
		if !f.stmtStart(i) {
			continue
		}
		switch f.text(i) {
		case "import":
			f.importModules(i + 1)
		case "from":
			f.importFrom(i + 1)
		}
	}
}

// dotted reads a dotted name at i and returns it, its first part and the
// index after it.
func (f *pyFile) dotted(i int) (root string, next int) {
	if !f.name(i) {
		return "", i
	}
	root = f.text(i)
	i++
	for f.is(i, ".") && f.name(i+1) {
		i += 2
	}
	return root, i
}

// importModules reads "import a.b [as c], d" from i.
func (f *pyFile) importModules(i int) {
	for {
		root, next := f.dotted(i)
		if root == "" {
			return
		}
		local, path := root, f.path(i, next)
		if f.is(next, "as") && f.name(next+1) {
			local, next = f.text(next+1), next+2
		}
		if _, ok := pyClasses[path]; ok && (local != root || path == root) {
			f.modules[local] = path
		}
		if !f.is(next, ",") {
			return
		}
		i = next + 1
	}
}

// importFrom reads "from pkg.sub import (A as B, C)" or "… import *" from i.
func (f *pyFile) importFrom(i int) {
	root, next := f.dotted(i)
	if root == "" || !f.is(next, "import") {
		return
	}
	path := f.path(i, next)
	classes, ok := pyClasses[path]
	if !ok {
		f.importSubmodules(path, next+1)
		return
	}
	i = next + 1
	if f.is(i, "*") {
		for name, class := range classes {
			f.classes[name] = class
		}
		return
	}
	f.importList(i, func(name, local string) {
		if class, ok := classes[name]; ok {
			f.classes[local] = class
		} else {
			delete(f.classes, local)
		}
	})
}

// importList reads the names imported from i, "(A as B, C)" or "A, B",
// and calls bind with each name and the local name it is bound to.
func (f *pyFile) importList(i int, bind func(name, local string)) {
	if f.is(i, "(") {
		i++
	}
	for f.name(i) {
		name, local := f.text(i), f.text(i)
		i++
		if f.is(i, "as") && f.name(i+1) {
			local, i = f.text(i+1), i+2
		}
		bind(name, local)
		if !f.is(i, ",") {
			return
		}
		i++
	}
}

// construction reports whether the name at i is a client class being
// called, and which class.
func (f *pyFile) construction(i int) (string, bool) {
	if !f.name(i) || !f.is(i+1, "(") || f.is(i-1, "def") || f.is(i-1, "class") {
		return "", false
	}
	if !f.is(i-1, ".") {
		class, ok := f.classes[f.text(i)]
		return class, ok
	}
	k := i
	for f.is(k-1, ".") && f.name(k-2) {
		k -= 2
	}
	if k == i || f.is(k-1, ".") {
		return "", false
	}
	class, ok := pyClasses[f.modules[f.text(k)]][f.text(i)]
	return class, ok
}

// client returns the findings for the client class called at i, reading
// the call's keyword arguments and any .with_options(…) or .copy(…)
// chained onto it.
func (f *pyFile) client(i int, class string) []issue {
	end := f.closer(i + 1)
	if end < 0 {
		return nil
	}
	opts := f.callArgs(i+1, end, 0)
	for j := end + 1; f.is(j, ".") && (f.text(j+1) == "with_options" || f.text(j+1) == "copy") && f.is(j+2, "("); {
		c := f.closer(j + 2)
		if c < 0 {
			break
		}
		f.consumed[j+1] = true
		opts = append(opts, f.callArgs(j+2, c, 0)...)
		j = c + 1
	}
	if class == genaiClass {
		return f.genai(i, opts)
	}
	timeout := opts.get("timeout")
	if timeout.kind == vUnset {
		timeout = f.httpClientTimeout(opts.get("http_client"))
	}
	return clientIssues(f.toks[i].line, class, class+"(…)", opts.get("max_retries"), timeout, false, time.Second)
}

// withOptions returns the findings for a client.with_options(…) call at i
// that is not part of a construction: turning retries back on, or
// disabling the timeout.
func (f *pyFile) withOptions(i int) []issue {
	end := f.closer(i + 1)
	if end < 0 {
		return nil
	}
	opts := f.callArgs(i+1, end, 0)
	line := f.toks[i].line
	var out []issue
	if r := opts.get("max_retries"); r.kind == vNum && r.num != 0 {
		out = append(out, issue{line: line, client: "with_options", call: "with_options(…)", problem: pRetriesOn, retries: r.text})
	}
	if opts.get("timeout").kind == vNull {
		out = append(out, issue{line: line, client: "with_options", call: "with_options(…)", problem: pNoTimeout})
	}
	return out
}

// httpClientTimeout returns the timeout an http_client= argument gives the
// client: the SDK adopts an httpx client's own timeout when no timeout= is
// passed.
func (f *pyFile) httpClientTimeout(v value) value {
	switch v.kind {
	case vUnset, vUnknown:
		return v
	}
	sp := v.sp
	root, next := f.dotted(sp.from)
	if root == "" || !f.is(next, "(") || f.closer(next) != sp.to-1 {
		return value{kind: vUnknown}
	}
	return f.callArgs(next, sp.to-1, 0).get("timeout")
}
