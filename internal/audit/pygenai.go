package audit

import (
	"strings"
	"time"
)

// genaiClass is how Google's google-genai client (google.genai.Client) is
// named in findings.
const genaiClass = "genai.Client"

// path returns the dotted name written from token i up to next.
func (f *pyFile) path(i, next int) string {
	var b strings.Builder
	for ; i < next; i++ {
		b.WriteString(f.text(i))
	}
	return b.String()
}

// importSubmodules reads "from pkg import sub [as x], …" from i, where
// pkg.sub is an SDK package ("from google import genai").
func (f *pyFile) importSubmodules(pkg string, i int) {
	f.importList(i, func(name, local string) {
		if _, ok := pyClasses[pkg+"."+name]; ok {
			f.modules[local] = pkg + "." + name
		} else {
			delete(f.modules, local)
		}
	})
}

// genai returns the findings for a google-genai Client built at i with
// opts. The SDK retries nothing unless http_options has retry_options
// (then 5 attempts unless its attempts says otherwise), and has no timeout
// unless http_options' timeout (milliseconds) is given (None means none).
func (f *pyFile) genai(i int, opts options) []issue {
	http := f.httpOptions(opts.get("http_options"), 0)
	timeout := http.get("timeout")
	if timeout.kind == vNull {
		timeout = value{}
	}
	line, call := f.toks[i].line, genaiClass+"(…)"
	retries := attemptsIssue(line, genaiClass, call, f.retryAttempts(http.get("retry_options"), 0), "", &genaiPython)
	return cloudIssues(line, genaiClass, call, retries, timeout, false, time.Millisecond, &genaiPython)
}

// httpOptions returns the settings an http_options= argument carries: a
// dict literal, an HttpOptions(…) or dict(…) call, or a name bound once
// to one of those; nothing for None or no argument; anything for the
// rest.
func (f *pyFile) httpOptions(v value, nest int) options {
	sp, nest, out, done := f.settingsValue(v, nest)
	if done {
		return out
	}
	unknown := options{{key: ""}}
	if f.is(sp.from, "{") && f.closer(sp.from) == sp.to-1 {
		return f.dictLiteral(sp.from, sp.to-1, nest+1)
	}
	root, open := f.dotted(sp.from)
	if root == "" || !f.is(open, "(") || f.closer(open) != sp.to-1 {
		return unknown
	}
	switch f.text(open - 1) {
	case "HttpOptions", "HttpOptionsDict", "dict":
		return f.callArgs(open, sp.to-1, nest+1)
	}
	return unknown
}
