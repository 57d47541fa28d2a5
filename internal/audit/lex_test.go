package audit

import (
	"slices"
	"strconv"
	"testing"
)

// names returns "text@line" for every name token.
func names(l *lexed) []string {
	var out []string
	for _, t := range l.toks {
		if t.kind == tName {
			out = append(out, t.text+"@"+strconv.Itoa(t.line))
		}
	}
	return out
}

func TestLexPython(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"comment", "a # OpenAI()\nb", []string{"a@1", "b@2"}},
		{"strconv", `a = "OpenAI()" + 'x\'y' + b`, []string{"a@1", "b@1"}},
		{"triple", "a = '''\nOpenAI(\n'''\nb", []string{"a@1", "b@4"}},
		{"triple double with quote", "a = \"\"\"x \" y\"\"\"; b", []string{"a@1", "b@1"}},
		{"prefixes", `a = rb"\d" + Rb'x' + u"y" + f"z" + B"w"; b`, []string{"a@1", "b@1"}},
		{"raw backslash quote", `a = r"\"" ; b`, []string{"a@1", "b@1"}},
		{"fstring nested quotes", `a = f"{d["k"]} {'OpenAI()'}"; b`, []string{"a@1", "b@1"}},
		{"fstring escaped braces", `a = f"{{OpenAI()}}"; b`, []string{"a@1", "b@1"}},
		{"fstring spec", `a = f"{x:>{w}} {y!r:{'<'}10}"; b`, []string{"a@1", "b@1"}},
		{"fstring nested fstring", `a = f"{f'{f"{1}"}'}"; b`, []string{"a@1", "b@1"}},
		{"fstring triple multiline", "a = f'''\n{\n  x\n}\n'''\nb", []string{"a@1", "b@6"}},
		{"tstring", `a = t"{OpenAI()}"; b`, []string{"a@1", "b@1"}},
		{"unterminated", "a = 'oops\nb", []string{"a@1", "b@2"}},
		{"unterminated fstring field", "a = f\"{x\nb", []string{"a@1", "b@2"}},
		{"continuation", "a = 1 + \\\n  2\nb", []string{"a@1", "b@3"}},
		{"not a prefix", `fr = 1; rb = 2; rf"x"`, []string{"fr@1", "rb@1"}},
		{"string escape newline", "a = 'x\\\ny'\nb", []string{"a@1", "b@3"}},
		{"byte order mark", "\ufefffrom x import y", []string{"from@1", "x@1", "import@1", "y@1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(lexPython([]byte(tt.src))); !slices.Equal(got, tt.want) {
				t.Errorf("names = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestLexPythonNewlines(t *testing.T) {
	l := lexPython([]byte("a = (\n 1,\n 2)\nb = [\n]\n"))
	n := 0
	for _, tok := range l.toks {
		if tok.kind == tNewline {
			n++
		}
	}
	if n != 2 {
		t.Errorf("logical lines = %d, want 2 (no line ends inside brackets)", n)
	}
}

func TestLexJS(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"comments", "a // new OpenAI()\n/* new\nOpenAI() */ b", []string{"a@1", "b@3"}},
		{"strconv", `a = "new OpenAI()" + 'it\'s' + b`, []string{"a@1", "b@1"}},
		{"template", "a = `new OpenAI()\n${x + `${'}'}`}`; b", []string{"a@1", "b@2"}},
		{"template braces", "a = `${ {k: 1}.k }`; b", []string{"a@1", "b@1"}},
		{"regex", `a = /new OpenAI\(/g; b`, []string{"a@1", "b@1"}},
		{"regex class slash", `a = /[/]new OpenAI(/; b`, []string{"a@1", "b@1"}},
		{"regex after return", "function f() { return /x/.test(s) }", []string{"function@1", "f@1", "return@1", "test@1", "s@1"}},
		{"division", "a = b / c / d", []string{"a@1", "b@1", "c@1", "d@1"}},
		{"division after paren", "a = (b) / c; d = e / 2", []string{"a@1", "b@1", "c@1", "d@1", "e@1"}},
		{"lone slash", "a = b /\nc", []string{"a@1", "b@1", "c@2"}},
		{"shebang", "#!/usr/bin/env node\na", []string{"a@2"}},
		{"byte order mark", "\ufeffimport a", []string{"import@1", "a@1"}},
		{"unterminated", "a = 'oops\nb", []string{"a@1", "b@2"}},
		{"unterminated comment", "a /* b", []string{"a@1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(lexJS([]byte(tt.src))); !slices.Equal(got, tt.want) {
				t.Errorf("names = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestMatchBrackets(t *testing.T) {
	l := lexJS([]byte("f(a[1], {b: (c)}) ] )"))
	var pairs []string
	for i, m := range l.match {
		if m > i {
			pairs = append(pairs, l.toks[i].text+l.toks[m].text)
		}
	}
	want := []string{"()", "[]", "{}", "()"}
	if !slices.Equal(pairs, want) {
		t.Errorf("pairs = %q, want %q", pairs, want)
	}
}

func TestJSPackageName(t *testing.T) {
	tests := map[string]string{
		"openai":                      "openai",
		"openai/index.mjs":            "openai",
		"npm:openai@4.77.0":           "openai",
		"jsr:@openai/openai":          "openai",
		"@anthropic-ai/sdk":           "@anthropic-ai/sdk",
		"npm:@anthropic-ai/sdk@0.40":  "@anthropic-ai/sdk",
		"@anthropic-ai/sdk/resources": "@anthropic-ai/sdk",
		"@scope":                      "",
		"openai-edge":                 "openai-edge",
	}
	for in, want := range tests {
		if got := jsPackageName(in); got != want {
			t.Errorf("jsPackageName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGoImport(t *testing.T) {
	tests := []struct{ path, sdk, sub string }{
		{"github.com/openai/openai-go", "openai", ""},
		{"github.com/openai/openai-go/v3", "openai", ""},
		{"github.com/openai/openai-go/v2/option", "openai", "option"},
		{"github.com/openai/openai-go/azure", "openai", "azure"},
		{"github.com/anthropics/anthropic-sdk-go/option", "anthropic", "option"},
		{"github.com/openai/openai-go-extra", "", ""},
		{"github.com/sashabaranov/go-openai", "", ""},
	}
	for _, tt := range tests {
		if sdk, sub := goImport(tt.path); sdk != tt.sdk || sub != tt.sub {
			t.Errorf("goImport(%q) = %q, %q; want %q, %q", tt.path, sdk, sub, tt.sdk, tt.sub)
		}
	}
}
