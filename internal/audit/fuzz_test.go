package audit

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// addCorpus seeds f with the corpus files whose names end in one of exts.
func addCorpus(f *testing.F, dir string, exts ...string) {
	entries, err := os.ReadDir(filepath.Join("testdata", dir))
	if err != nil {
		f.Fatal(err)
	}
	for _, e := range entries {
		for _, ext := range exts {
			if strings.HasSuffix(e.Name(), ext) {
				src, err := os.ReadFile(filepath.Join("testdata", dir, e.Name()))
				if err != nil {
					f.Fatal(err)
				}
				f.Add(src)
			}
		}
	}
}

// checkTokens asserts the invariants every lexer output keeps.
func checkTokens(t *testing.T, src []byte, l *lexed) {
	t.Helper()
	lines := bytes.Count(src, []byte("\n")) + 1
	if len(l.toks) > len(src)+1 {
		t.Fatalf("%d tokens from %d bytes", len(l.toks), len(src))
	}
	prev := 1
	for i, tok := range l.toks {
		if tok.line < prev || tok.line > lines {
			t.Fatalf("token %d %q on line %d (previous %d, last %d)", i, tok.text, tok.line, prev, lines)
		}
		if tok.text == "" {
			t.Fatalf("token %d is empty", i)
		}
		prev = tok.line
		if m := l.match[i]; m >= 0 && l.match[m] != i {
			t.Fatalf("bracket %d pairs with %d, which pairs with %d", i, m, l.match[m])
		}
	}
}

func FuzzPython(f *testing.F) {
	addCorpus(f, "python", ".py")
	for _, s := range []string{
		`f"{`, `f"{x:{`, `f'{"`, `f"""{'''`, `rb'\`, "'''", `"\`, "\\", "(((", ")))]]]}}}",
		`f"{f"{f"{f"{1}"}"}"}"`, "OpenAI(**A)\nA = {**A, **A}", "from openai import OpenAI\nOpenAI(",
		"from openai import OpenAI\nA={**B,**B}\nB={**A}\nOpenAI(**A).with_options(",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkTokens(t, src, lexPython(src))
		auditPython(src)
		auditPython(append([]byte("from openai import OpenAI, AsyncOpenAI\nimport anthropic\n"), src...))
	})
}

func FuzzJS(f *testing.F) {
	addCorpus(f, "js", ".js", ".mjs", ".cjs")
	addCorpus(f, "ts", ".ts", ".tsx")
	for _, s := range []string{
		"`${", "`${`${`${'", "/[/", "a / b / c", "/*", "'\\", "new", "({[", ")]}",
		"import OpenAI from 'openai'; const a = {...a, ...a}; new OpenAI(a)",
		"const { default: X } = require('openai'); new X({...X}).withOptions(",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkTokens(t, src, lexJS(src))
		auditJS(src)
		auditJS(append([]byte("import OpenAI, * as ns from 'openai';\nconst A = require('@anthropic-ai/sdk');\n"), src...))
	})
}

func FuzzGo(f *testing.F) {
	addCorpus(f, "go", ".go")
	f.Add([]byte("package p\nimport \"github.com/openai/openai-go\"\nfunc f() { o := append(o, o...); openai.NewClient(o...) }"))
	f.Fuzz(func(t *testing.T, src []byte) {
		auditGo("fuzz.go", src)
	})
}

// TestHostileInput checks that pathological input finishes and yields
// nothing absurd: deep nesting, unbalanced brackets, endless strings.
func TestHostileInput(t *testing.T) {
	deep := strings.Repeat("(", 20000) + strings.Repeat("]", 20000)
	nestedF := strings.Repeat(`f"{`, 2000) + strings.Repeat(`}"`, 2000)
	nestedT := strings.Repeat("`${", 2000) + strings.Repeat("}`", 2000)
	spreads := "from openai import OpenAI\n"
	js := "import OpenAI from 'openai';\n"
	const levels = 30 // 2^30 settings if spreads were expanded naively
	for i := 0; i < levels; i++ {
		spreads += "A" + suffix(i) + " = {**A" + suffix(i+1) + ", **A" + suffix(i+1) + "}\n"
		js += "const A" + suffix(i) + " = {...A" + suffix(i+1) + ", ...A" + suffix(i+1) + "};\n"
	}
	spreads += "A" + suffix(levels) + " = {'timeout': 1}\nOpenAI(**A" + suffix(0) + ")\n"
	js += "const A" + suffix(levels) + " = {timeout: 1};\nnew OpenAI(A" + suffix(0) + ");\n"
	for _, src := range []string{deep, nestedF, spreads, "from openai import OpenAI\n" + deep} {
		checkTokens(t, []byte(src), lexPython([]byte(src)))
		auditPython([]byte(src))
	}
	for _, src := range []string{deep, nestedT, js, "import OpenAI from 'openai';" + deep} {
		checkTokens(t, []byte(src), lexJS([]byte(src)))
		auditJS([]byte(src))
	}
	// Names each spreading the next twice: resolved once each, they set
	// the timeout (1 s in Python, 1 ms in JavaScript, both shorter than
	// any total) and leave the retries.
	if got, _ := auditPython([]byte(spreads)); len(got) != 2 || got[0].problem != pRetries ||
		got[1].problem != pShortTimeout || got[1].timeout != time.Second {
		t.Errorf("Python spread chain: findings %+v, want retries and a 1s timeout", got)
	}
	if got, _ := auditJS([]byte(js)); len(got) != 2 || got[0].problem != pRetries ||
		got[1].problem != pShortTimeout || got[1].timeout != time.Millisecond {
		t.Errorf("JS spread chain: findings %+v, want retries and a 1ms timeout", got)
	}
}

// suffix returns a short distinct name suffix for i.
func suffix(i int) string {
	return string(rune('a'+i/26%26)) + string(rune('a'+i%26))
}
