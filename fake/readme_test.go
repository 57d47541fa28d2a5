package fake

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/sluice-llm/sluice/internal/nodetest"
)

// readmeBlock returns the README's fenced code block whose first line is
// first.
func readmeBlock(t *testing.T, first string) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+first+"\n")
	block, _, closed := strings.Cut(rest, "\n```")
	if !ok || !closed {
		t.Fatalf("README has no code block starting %q", first)
	}
	return block
}

// TestREADMENodeSnippet runs the README's Node line that builds the OpenAI
// client against the fake, as a gateway that injects the key would be
// called: with no OPENAI_API_KEY, the official SDK must still build the
// client and make the call (without the placeholder key it throws
// "Missing credentials" before sending anything).
func TestREADMENodeSnippet(t *testing.T) {
	block := readmeBlock(t, "// Node (openai, @anthropic-ai/sdk)")
	line := regexp.MustCompile(`(?m)^const client = new OpenAI\(.*\);$`).FindString(block)
	if line == "" {
		t.Fatalf("README's Node block builds no OpenAI client:\n%s", block)
	}
	s := NewServer("")
	defer s.Close()
	line = strings.Replace(line, "http://127.0.0.1:8080/openai/v1", s.URL+"/v1", 1)
	script := filepath.Join(t.TempDir(), "readme.cjs")
	src := "const OpenAI = require('openai');\n" + line + "\n" +
		"client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] })\n" +
		"  .then((r) => process.stdout.write(r.choices[0].message.content))\n" +
		"  .catch((e) => { process.stderr.write(String(e)); process.exit(1); });\n"
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs(filepath.Join(nodeDir, "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	out := nodetest.Run(t, nodeDir, script, nodeDir+"/node_modules/openai/package.json", "npm ci --prefix fake/"+nodeDir,
		"NODE_PATH="+modules, "OPENAI_API_KEY=", "OPENAI_BASE_URL=")
	if got := string(out); got != "This is a fake answer." || s.Calls() != 1 {
		t.Errorf("the README's client answered %q after %d calls, want the fake's answer after 1", got, s.Calls())
	}
}

// TestREADMEGoAnthropicKey: anthropic-sdk-go sends nothing without a key,
// so the README's Go snippet gives it the placeholder, with which a call
// reaches the fake (as it would reach a gateway that injects the key).
func TestREADMEGoAnthropicKey(t *testing.T) {
	const placeholder = `aoption.WithAPIKey(cmp.Or(os.Getenv("ANTHROPIC_API_KEY"), "unused-when-injected"))`
	if block := readmeBlock(t, "// Go (openai-go, anthropic-sdk-go): openai-go sends a call without a key; anthropic-sdk-go does not"); !strings.Contains(block, placeholder) {
		t.Errorf("README's Go block lacks %s:\n%s", placeholder, block)
	}
	t.Setenv("ANTHROPIC_API_KEY", "")
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "")
	s := NewServer("")
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	params := asdk.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64,
		Messages: []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock("hi"))}}
	opts := []aoption.RequestOption{aoption.WithBaseURL(s.URL), aoption.WithMaxRetries(0)}
	bare := asdk.NewClient(opts...)
	if _, err := bare.Messages.New(ctx, params); err == nil || s.Calls() != 0 {
		t.Errorf("without a key: %v after %d calls; want an error before any call", err, s.Calls())
	}
	keyed := asdk.NewClient(append(opts, aoption.WithAPIKey("unused-when-injected"))...)
	msg, err := keyed.Messages.New(ctx, params)
	if err != nil || len(msg.Content) == 0 || s.Calls() != 1 {
		t.Errorf("with the placeholder: %+v, %v after %d calls; want the fake's answer", msg, err, s.Calls())
	}
}
