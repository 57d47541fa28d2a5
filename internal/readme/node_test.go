package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/nodetest"
)

// checkNodeSyntax checks a Node block with node --check.
func checkNodeSyntax(t *testing.T, b block) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; install Node.js 20 or later to check the Node blocks")
	}
	f := filepath.Join(t.TempDir(), "block.cjs")
	if err := os.WriteFile(f, []byte(b.text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(node, "--check", f).CombinedOutput(); err != nil {
		t.Errorf("%s: node --check: %v\n%s", b, err, out)
	}
}

var baseURLRE = regexp.MustCompile(`http://127\.0\.0\.1:8080`)

// runNodeBlock runs a Node block with the SDK of sdkDir (a testdata
// directory with a package-lock.json) against a gateway at addr, after
// require (what the block imports) and before call (what uses its
// client), and returns what it printed.
func runNodeBlock(t *testing.T, b block, sdkDir, sdk, require, call, addr string, env ...string) string {
	checkNodeSyntax(t, b)
	modules := filepath.Join(root(t), filepath.FromSlash(sdkDir), "node_modules")
	src := require + "\n" + baseURLRE.ReplaceAllString(b.text, "http://"+addr) + call +
		"\n  .catch((e) => { process.stderr.write(String(e)); process.exit(1); });\n"
	script := filepath.Join(t.TempDir(), "block.cjs")
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	out := nodetest.Run(t, t.TempDir(), script, filepath.Join(modules, filepath.FromSlash(sdk), "package.json"),
		"npm ci --prefix "+sdkDir+" (./scripts/test runs it)", append([]string{"NODE_PATH=" + modules}, env...)...)
	return string(out)
}

// yamlOf returns the README's YAML block that contains has, written to a
// file with its /etc/sluice/ paths made real (see writeConfig).
func yamlOf(t *testing.T, has string) string {
	t.Helper()
	for _, b := range readmeBlocks(t) {
		if b.lang == "yaml" && strings.Contains(b.text, has) {
			return writeConfig(t, b.text)
		}
	}
	t.Fatalf("README has no YAML block with %q", has)
	return ""
}

// checkNodeGemini runs the @google/genai block with the placeholder key
// through `sluice serve --fake` on the README's Gemini config.
func checkNodeGemini(t *testing.T, b block) {
	s := serve(t, []string{"GEMINI_API_KEY=gateway-key"}, "serve", "--fake", "--listen", "127.0.0.1:0",
		"--config", yamlOf(t, "gemini: {api_key_env: GEMINI_API_KEY}"))
	out := runNodeBlock(t, b, "internal/gateway/testdata/genai", "@google/genai", "const { GoogleGenAI } = require('@google/genai');",
		"ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' }).then((r) => process.stdout.write(r.text))",
		s.addr, "GEMINI_API_KEY=", "GOOGLE_API_KEY=")
	if out != "This is a fake answer." {
		t.Errorf("%s answered %q through the gateway; want the fake's answer", b, out)
	}
}

// checkNodeVertex runs the Vertex AI @google/genai block, with no Google
// credentials in its environment, through `sluice serve --fake` on the
// README's Vertex AI config: the stub is all the SDK needs.
func checkNodeVertex(t *testing.T, b block) {
	s := serve(t, nil, "serve", "--fake", "--listen", "127.0.0.1:0", "--config", yamlOf(t, "kind: vertex"))
	home := t.TempDir()
	out := runNodeBlock(t, b, "internal/gateway/testdata/genai", "@google/genai", "const { GoogleGenAI } = require('@google/genai');",
		"ai.models.generateContent({ model: 'gemini-2.0-flash', contents: 'hi' }).then((r) => process.stdout.write(r.text))",
		s.addr, "GOOGLE_APPLICATION_CREDENTIALS=", "HOME="+home, "CLOUDSDK_CONFIG="+home, "GCE_METADATA_HOST=127.0.0.1:1", "SLUICE_KEY=")
	if out != "This is a fake answer." {
		t.Errorf("%s answered %q through the gateway; want the fake's answer", b, out)
	}
}

// checkNodeAzure runs the AzureOpenAI block through `sluice serve --fake`
// on the README's Azure config.
func checkNodeAzure(t *testing.T, b block) {
	s := serve(t, []string{"AZURE_OPENAI_API_KEY=gateway-key"}, "serve", "--fake", "--listen", "127.0.0.1:0",
		"--config", yamlOf(t, "kind: azure"))
	out := runNodeBlock(t, b, "fake/testdata/node", "openai", "const { AzureOpenAI } = require('openai');",
		"client.chat.completions.create({ model: 'gpt4o', messages: [{ role: 'user', content: 'hi' }] })"+
			".then((r) => process.stdout.write(r.choices[0].message.content))",
		s.addr, "AZURE_OPENAI_API_KEY=", "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	if out != "This is a fake answer." {
		t.Errorf("%s answered %q through the gateway; want the fake's answer", b, out)
	}
}

// checkPython byte-compiles a Python block.
func checkPython(t *testing.T, b block) {
	py, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(py, "-c", "pass").Run()
	}
	if err != nil {
		t.Skipf("no working python3 (%v): the Python blocks are not checked", err)
	}
	f := filepath.Join(t.TempDir(), "block.py")
	if err := os.WriteFile(f, []byte(b.text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(py, "-m", "py_compile", f).CombinedOutput(); err != nil {
		t.Errorf("%s: python3 -m py_compile: %v\n%s", b, err, out)
	}
}
