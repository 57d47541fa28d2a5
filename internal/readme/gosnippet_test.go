package readme

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// goFrame is what a Go block leaves to its reader: the imports, the
// variables it uses (prelude) and a use of those it declares (epilogue).
// A block with a run is run as a program, run making a call with its
// client and printing the answer's text, through `sluice serve --fake`
// (on the README's YAML block that holds config, with env), its calls to
// the gateway's address going there and those to https://api.openai.com
// to the fake (also $FAKE_URL).
type goFrame struct {
	imports, prelude, epilogue string
	run, config                string
	env                        []string
}

// goFrames gives each Go row's frame, by the row's has.
var goFrames = map[string]goFrame{
	"client := sluice.NewClient(sluice.Interactive())": {
		imports: `"bytes"; "context"; "errors"; "fmt"; "io"; "net/http"; "os"; "strings"; "github.com/sluice-llm/sluice"`,
		prelude: "ctx := context.Background()\n" +
			"body := []byte(`{\"model\":\"gpt-4o-mini\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}`)",
		run: `if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), "This is a fake answer.") {
			fmt.Fprintf(os.Stderr, "%d %s", resp.StatusCode, b)
			os.Exit(1)
		}
		fmt.Print("This is a fake answer.")`,
	},
	"httpClient := &http.Client{Transport: &sluice.Transport{": {
		imports: `"context"; "fmt"; "net/http"; "os"; "time"; "github.com/sluice-llm/sluice"; "github.com/openai/openai-go/v3"; "github.com/openai/openai-go/v3/option"; ` +
			`"github.com/anthropics/anthropic-sdk-go/v2"; aoption "github.com/anthropics/anthropic-sdk-go/v2/option"`,
		prelude: "ctx := context.Background()",
		run: strings.NewReplacer("client.", "oai.", "OPENAI_OPTS", `option.WithBaseURL(os.Getenv("FAKE_URL")+"/v1/"), option.WithAPIKey("k")`,
			"CLAUDE_OPTS", `aoption.WithBaseURL(os.Getenv("FAKE_URL")), aoption.WithAPIKey("k")`).Replace(bothCalls),
	},
	"// Go (openai-go, anthropic-sdk-go)": {
		imports: `"cmp"; "context"; "fmt"; "os"; "time"; "github.com/openai/openai-go/v3"; "github.com/openai/openai-go/v3/option"; ` +
			`"github.com/anthropics/anthropic-sdk-go/v2"; aoption "github.com/anthropics/anthropic-sdk-go/v2/option"`,
		prelude: "ctx := context.Background()",
		run:     strings.NewReplacer("OPENAI_OPTS", "", "CLAUDE_OPTS", "").Replace(bothCalls),
	},
	"bedrockruntime.New(": {
		imports: `"context"; "fmt"; "net/http"; "os"; "time"; "github.com/aws/aws-sdk-go-v2/aws"; "github.com/aws/aws-sdk-go-v2/credentials"; ` +
			`"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"; "github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"`,
		prelude: `clientToken := "any-client-token"`,
		run: `out, err := client.Converse(context.Background(), &bedrockruntime.ConverseInput{
			ModelId: aws.String("anthropic.claude-3-5-sonnet-20240620-v1:0"),
			Messages: []types.Message{{Role: types.ConversationRoleUser, Content: []types.ContentBlock{&types.ContentBlockMemberText{Value: "hi"}}}}})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(out.Output.(*types.ConverseOutputMemberMessage).Value.Content[0].(*types.ContentBlockMemberText).Value)`,
		config: "kind: bedrock",
		env:    []string{"AWS_ACCESS_KEY_ID=", "AWS_SECRET_ACCESS_KEY=", "AWS_SESSION_TOKEN=", "AWS_PROFILE=", "AWS_EC2_METADATA_DISABLED=true"},
	},
	"genai.BackendVertexAI": {
		imports: `"cmp"; "context"; "fmt"; "os"; "time"; "cloud.google.com/go/auth"; "google.golang.org/genai"`,
		prelude: "ctx := context.Background()",
		run: `if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		resp, err := client.Models.GenerateContent(ctx, "gemini-2.0-flash", genai.Text("hi"), nil)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		fmt.Print(resp.Text())`,
		config: "kind: vertex",
	},
}

// bothCalls makes a call with an openai-go client and one with an
// anthropic-sdk-go client, claude, and prints the first answer when both
// are the fake's.
const bothCalls = `c, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o-mini",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}, OPENAI_OPTS)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		m, err := claude.Messages.New(ctx, anthropic.MessageNewParams{Model: "claude-haiku-4-5", MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}, CLAUDE_OPTS)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if m.Content[0].Text != c.Choices[0].Message.Content {
			fmt.Fprintf(os.Stderr, "claude answered %q", m.Content[0].Text)
			os.Exit(1)
		}
		fmt.Print(c.Choices[0].Message.Content)`

// snippetModule is a module beside the checkout that requires it
// (replaced by the checkout) with the checkout's own requirements, so
// that the README's Go builds as a user's program would, offline.
var snippetModule struct {
	once sync.Once
	dir  string
	err  error
}

func snippetDir(t *testing.T) string {
	t.Helper()
	m := &snippetModule
	m.once.Do(func() {
		r := root(t)
		mod, err := os.ReadFile(filepath.Join(r, "go.mod"))
		if err != nil {
			m.err = err
			return
		}
		sum, err := os.ReadFile(filepath.Join(r, "go.sum"))
		if err != nil {
			m.err = err
			return
		}
		m.dir, m.err = os.MkdirTemp("", "sluice-readme-go-")
		if m.err != nil {
			return
		}
		text := strings.Replace(string(mod), "module github.com/sluice-llm/sluice", "module readmesnippets", 1) +
			"\nrequire github.com/sluice-llm/sluice v0.0.0\n\nreplace github.com/sluice-llm/sluice => " + r + "\n"
		if m.err = os.WriteFile(filepath.Join(m.dir, "go.mod"), []byte(text), 0o644); m.err == nil {
			m.err = os.WriteFile(filepath.Join(m.dir, "go.sum"), sum, 0o644)
		}
	})
	if m.err != nil {
		t.Fatal(m.err)
	}
	return m.dir
}

// goSource frames a Go block as a file: its type and func declarations
// (paragraphs that start with one, after their comments) at the top level, the rest in a
// function's body.
func goSource(pkg string, f goFrame, text string) string {
	fn, end := "func _() {\n", f.epilogue
	if f.run != "" {
		pkg, fn, end = "main", "func main() {\n", f.run
	}
	var top, body []string
	for _, para := range strings.Split(text, "\n\n") {
		code := para
		for strings.HasPrefix(code, "//") {
			_, code, _ = strings.Cut(code, "\n")
		}
		if strings.HasPrefix(code, "type ") || strings.HasPrefix(code, "func ") {
			top = append(top, para)
		} else {
			body = append(body, para)
		}
	}
	var imports string
	for _, i := range strings.Split(f.imports, ";") {
		imports += "\t" + strings.TrimSpace(i) + "\n"
	}
	return "package " + pkg + "\n\nimport (\n" + imports + ")\n\n" + strings.Join(top, "\n\n") +
		"\n\n" + fn + f.prelude + "\n" + strings.Join(body, "\n") + "\n" + end + "\n}\n"
}

// checkGo compiles a Go block and runs go vet on it; one with a run in its
// frame is run through the gateway and must print the fake's answer.
func checkGo(t *testing.T, b block) {
	var f goFrame
	ok := false
	for has, fr := range goFrames {
		if strings.Contains(b.text, has) {
			f, ok = fr, true
		}
	}
	if !ok {
		t.Fatalf("%s: no frame in goFrames", b)
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	pkg := "line" + strconv.Itoa(b.line)
	dir := filepath.Join(snippetDir(t), pkg)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text, fakeURL := b.text, ""
	if f.run != "" {
		args := []string{"serve", "--fake", "--listen", "127.0.0.1:0"}
		if f.config != "" {
			args = append(args, "--config", yamlOf(t, f.config))
		}
		s := serve(t, f.env, args...)
		text = baseURLRE.ReplaceAllString(text, "http://"+s.addr)
		text = strings.ReplaceAll(text, "https://api.openai.com", s.fake) // the library's own calls
		fakeURL = s.fake
	}
	src := goSource(pkg, f, text)
	if err := os.WriteFile(filepath.Join(dir, "snippet.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(goCmd, "vet", "./"+pkg)
	cmd.Dir = snippetDir(t)
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s does not build as a program would hold it: %v\n%s\n%s", b, err, out, src)
	}
	if f.run == "" {
		return
	}
	run := exec.Command(goCmd, "run", "./"+pkg)
	run.Dir, run.Env = cmd.Dir, append(cmd.Env, "SLUICE_KEY=", "GOOGLE_APPLICATION_CREDENTIALS=", "FAKE_URL="+fakeURL,
		"OPENAI_API_KEY=", "OPENAI_BASE_URL=", "ANTHROPIC_API_KEY=", "ANTHROPIC_AUTH_TOKEN=", "ANTHROPIC_BASE_URL=")
	out, err := run.Output()
	if err != nil || string(out) != "This is a fake answer." {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Errorf("%s, run through sluice serve --fake: %v, printed %q\n%s", b, err, out, stderr)
	}
}
