package sluice

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/chat"
	"github.com/sluice-llm/sluice/dialect/googleauth"
	"github.com/sluice-llm/sluice/fake"
)

// Translated fallbacks to the cloud kinds: Azure OpenAI at its v1 API,
// and Vertex AI, whose publisher the target's model decides (Anthropic's
// for claude-…, else Google's), each on a strict fake that refuses what
// the provider would.

// cloudClients are the clients' dialects a cloud target is tried from.
var cloudClients = []struct {
	d     dialect.Dialect
	codec chat.Codec
	path  string
	body  string
}{
	{dialect.OpenAI, chat.OpenAI, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`},
	{dialect.Anthropic, chat.Anthropic, "/v1/messages", `{"model":"claude-haiku-4-5","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`},
}

// streamed returns the client's body asking for a stream (and, from
// OpenAI, its usage).
func streamed(d dialect.Dialect, body string) string {
	body = strings.Replace(body, `{`, `{"stream":true,`, 1)
	if d == dialect.OpenAI {
		body = strings.Replace(body, `{`, `{"stream_options":{"include_usage":true},`, 1)
	}
	return body
}

// readAnswer reads the client's answer, whole or streamed, with its codec.
func readAnswer(t *testing.T, c chat.Codec, stream bool, got []byte) *chat.Answer {
	t.Helper()
	if !stream {
		a, err := c.DecodeAnswer(got)
		if err != nil {
			t.Fatalf("the client's codec cannot read %s: %v", got, err)
		}
		return a
	}
	a, e, done := collect(t, c, got)
	if e != nil || !done {
		t.Fatalf("stream ended with %v, done %v:\n%s", e, done, got)
	}
	return a
}

// checkCloudAnswer checks what the client read and what the log said.
func checkCloudAnswer(t *testing.T, r *xlRig, resp *http.Response, a *chat.Answer, label, model string) {
	t.Helper()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if h := resp.Header.Get("Sluice-Translated"); h != label {
		t.Errorf("Sluice-Translated %q, want %q", h, label)
	}
	if p, m := resp.Header.Get("Sluice-Provider"), resp.Header.Get("Sluice-Model"); p != "backup" || m != model {
		t.Errorf("answered by %s %s, want backup %s", p, m, model)
	}
	if len(a.Content) != 1 || a.Content[0].Text != fakeText || a.Stop != chat.StopEndTurn {
		t.Errorf("answer %+v, want the fake's text ending the turn", a)
	}
	if a.Usage.Output == 0 || a.Usage.Prompt() == 0 {
		t.Errorf("usage %+v: the target's counts lost", a.Usage)
	}
	var said []string // each line's translated field
	for l := range strings.Lines(r.logs.String()) {
		var line struct{ Translated string }
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatal(err)
		}
		said = append(said, line.Translated)
	}
	if len(said) != 2 || said[0] != "" || said[1] != label {
		t.Errorf("the lines' translated fields %q, want the fallback's alone to say %s", said, label)
	}
}

// An OpenAI client and an Anthropic client whose primary is down are
// answered by an Azure OpenAI fallback: the request goes to Azure's v1
// API, /openai/v1/chat/completions with no api-version, the deployment
// as the body's model (OpenAI's body, stream_options when streamed), and
// the answer comes back in the client's shape.
func TestTranslatedToAzure(t *testing.T) {
	const deployment = "gpt-4o-mini-eu"
	for _, cl := range cloudClients {
		for _, stream := range []bool{false, true} {
			label := cl.d.Kind() + "->azure"
			name := label
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				backup := fake.NewServer("200")
				backup.Provider.Strict = true
				t.Cleanup(backup.Close)
				tg := to("backup", deployment, dialect.Azure, backup.URL)
				rewrite := tg.Rewrite
				tg.Rewrite = func(r *http.Request) { // as the gateway does: the target's key in its header
					rewrite(r)
					dialect.Azure.Client().SetKey(r, "az-key-1")
				}
				r := newXLRig(t, cl.d, cl.path, tg)
				body := cl.body
				if stream {
					body = streamed(cl.d, body)
				}
				resp, got := r.post(t, body)
				if n := backup.Provider.Calls(); n != 1 {
					t.Fatalf("the fallback got %d calls, want 1: %s", n, got)
				}
				sent := backup.Provider.Requests()[0]
				if sent.Path != "/openai/v1/chat/completions" || sent.Step == "" {
					t.Fatalf("the fallback was asked at %s (step %q): %s", sent.Path, sent.Step, got)
				}
				var b struct {
					Model         string `json:"model"`
					Stream        bool   `json:"stream"`
					StreamOptions *struct {
						IncludeUsage bool `json:"include_usage"`
					} `json:"stream_options"`
				}
				if err := json.Unmarshal(sent.Body, &b); err != nil || b.Model != deployment || b.Stream != stream ||
					stream != (b.StreamOptions != nil && b.StreamOptions.IncludeUsage) {
					t.Errorf("the fallback got %s, want OpenAI's body for model %s", sent.Body, deployment)
				}
				if k := sent.Header.Get("Api-Key"); k != "az-key-1" || sent.Header.Get("Authorization") != "" {
					t.Errorf("the fallback got api-key %q, Authorization %q", k, sent.Header.Get("Authorization"))
				}
				checkCloudAnswer(t, r, resp, readAnswer(t, cl.codec, stream, got), label, deployment)
			})
		}
	}
}

// vertexLocation is the project's location the Vertex AI targets' Rewrite
// puts in front of the engine's path, as the gateway does.
const vertexLocation = "/v1/projects/p1/locations/us-east5"

// vertexTarget is a Target of Vertex AI at srv for model, its requests
// under vertexLocation, signed with the fake's service account.
func vertexTarget(t *testing.T, srv *fake.Server, model string) Target {
	t.Helper()
	path, err := srv.WriteServiceAccount(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s, err := googleauth.New(dialect.SignerOptions{CredentialsFile: path})
	if err != nil {
		t.Fatal(err)
	}
	tg := to("backup", model, dialect.Vertex, srv.URL)
	rewrite := tg.Rewrite
	tg.Rewrite = func(r *http.Request) {
		rewrite(r)
		r.URL.Path = vertexLocation + r.URL.Path
	}
	tg.Signer = s
	return tg
}

// An OpenAI client and an Anthropic client whose primary is down are
// answered by a Vertex AI fallback of either publisher: a claude-… model
// at publishers/anthropic's :rawPredict (:streamRawPredict), Anthropic's
// body without "model" and with "anthropic_version"; any other at
// publishers/google's :generateContent (:streamGenerateContent), Gemini's
// body; each signed with the gateway's token, and read back by the
// publisher's codec into the client's shape.
func TestTranslatedToVertex(t *testing.T) {
	isolateGoogleEnv(t)
	for _, pub := range []struct {
		name, model, path, streamPath string
	}{
		{"anthropic", "claude-haiku-4-5@20251001", "/publishers/anthropic/models/claude-haiku-4-5@20251001:rawPredict",
			"/publishers/anthropic/models/claude-haiku-4-5@20251001:streamRawPredict"},
		{"google", "gemini-2.0-flash", "/publishers/google/models/gemini-2.0-flash:generateContent",
			"/publishers/google/models/gemini-2.0-flash:streamGenerateContent"},
	} {
		for _, cl := range cloudClients {
			for _, stream := range []bool{false, true} {
				label := cl.d.Kind() + "->vertex"
				name := label + "/" + pub.name
				if stream {
					name += "/stream"
				}
				t.Run(name, func(t *testing.T) {
					backup := fake.NewServer("200")
					backup.Provider.Strict = true
					t.Cleanup(backup.Close)
					r := newXLRig(t, cl.d, cl.path, vertexTarget(t, backup, pub.model))
					body := cl.body
					wantPath := vertexLocation + pub.path
					if stream {
						body, wantPath = streamed(cl.d, body), vertexLocation+pub.streamPath
					}
					resp, got := r.post(t, body)
					if n := backup.Provider.Calls(); n != 1 {
						t.Fatalf("the fallback got %d calls, want 1: %s", n, got)
					}
					sent := backup.Provider.Requests()[0]
					if sent.Path != wantPath || sent.Step == "" {
						t.Fatalf("the fallback was asked at %s (step %q), want %s: %s", sent.Path, sent.Step, wantPath, got)
					}
					if a := sent.Header.Get("Authorization"); !strings.HasPrefix(a, "Bearer ") || backup.Provider.TokensIssued() != 1 {
						t.Errorf("the fallback got Authorization %q, %d tokens issued; want the signer's", a, backup.Provider.TokensIssued())
					}
					var b map[string]json.RawMessage
					if err := json.Unmarshal(sent.Body, &b); err != nil {
						t.Fatal(err)
					}
					_, model := b["model"]
					_, contents := b["contents"]
					switch {
					case pub.name == "anthropic" && (model || string(b["anthropic_version"]) != `"vertex-2023-10-16"` || b["messages"] == nil):
						t.Errorf("the fallback got %s, want Anthropic's body without model, with anthropic_version", sent.Body)
					case pub.name == "google" && (model || !contents):
						t.Errorf("the fallback got %s, want Gemini's body", sent.Body)
					}
					checkCloudAnswer(t, r, resp, readAnswer(t, cl.codec, stream, got), label, pub.model)
				})
			}
		}
	}
}

// A Gemini stream at Vertex AI is asked for with alt=sse, as at the
// Gemini API: without it Google answers a JSON array, not events.
func TestTranslatedToVertexAsksSSE(t *testing.T) {
	for _, tt := range []struct {
		model, query string
		stream       bool
	}{
		{"gemini-2.0-flash", "alt=sse", true},
		{"gemini-2.0-flash", "", false},
		{"claude-haiku-4-5", "", true},
		{"claude-haiku-4-5", "", false},
	} {
		_, _, q, ok := endpoint(dialect.Vertex, tt.model, tt.stream)
		if !ok || q != tt.query {
			t.Errorf("endpoint(vertex, %s, stream %v): query %q, %v; want %q", tt.model, tt.stream, q, ok, tt.query)
		}
	}
}

// Every pair is translated to Azure OpenAI and Vertex AI from the
// dialects translated at all, none from Vertex AI or Bedrock.
func TestTranslatesToCloudKinds(t *testing.T) {
	for _, tt := range []struct {
		from, to dialect.Dialect
		want     bool
	}{
		{dialect.OpenAI, dialect.Azure, true},
		{dialect.Anthropic, dialect.Azure, true},
		{dialect.Gemini, dialect.Azure, true},
		{dialect.OpenAI, dialect.Vertex, true},
		{dialect.Anthropic, dialect.Vertex, true},
		{dialect.Azure, dialect.Vertex, true},
		{dialect.Vertex, dialect.OpenAI, false},
		{dialect.Bedrock, dialect.Vertex, false},
	} {
		if got := Translates(tt.from, tt.to); got != tt.want {
			t.Errorf("Translates(%s, %s) = %v, want %v", tt.from.Kind(), tt.to.Kind(), got, tt.want)
		}
	}
}

// A stream cut after 40 words, resumed on a Vertex AI fallback serving a
// Claude model, is continued with the publisher's codec (Anthropic's),
// the words already sent not relayed twice: Vertex AI takes no prefill
// here, so the call starts again and its repeat is suppressed.
func TestResumeOnVertexFallback(t *testing.T) {
	for _, d := range []dialect.Dialect{dialect.Anthropic, dialect.OpenAI} {
		primary := newWordy(t, d, []breakKind{cutAt}, []int{40})
		backup := newWordy(t, dialect.Anthropic, nil, nil) // Claude's events, at any path
		r := newResumeRig(t, d, primary, 1, to("backup", "claude-haiku-4-5@20251001", dialect.Vertex, backup.srv.URL))
		_, got := r.stream(t)
		text, _, e := read(t, d, got)
		if e != nil || text != wordsText {
			t.Fatalf("%s client: got %q, error %v", d.Kind(), text, e)
		}
		if primary.calls() != 1 || backup.calls() != 1 {
			t.Fatalf("%s client: calls %d and %d, want 1 and 1", d.Kind(), primary.calls(), backup.calls())
		}
		var b map[string]json.RawMessage
		if err := json.Unmarshal(backup.body(0), &b); err != nil || b["model"] != nil || string(b["anthropic_version"]) != `"vertex-2023-10-16"` {
			t.Errorf("%s client: the fallback got %s", d.Kind(), backup.body(0))
		}
		lines := r.lines()
		if len(lines) != 2 || lines[0]["outcome"] != "resumed" || lines[1]["provider"] != "backup" || lines[1]["outcome"] != "ok" {
			t.Errorf("%s client: lines %v", d.Kind(), lines)
		}
	}
}
