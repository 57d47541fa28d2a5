package dialecttest

import (
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/fake"
)

// Vertex is Google Vertex AI with Gemini's models: Gemini's bodies,
// answers, streams and errors under a project's and a region's path
// (…/projects/P/locations/R/publishers/google/models/M:generateContent);
// the gateway calls with a bearer token of its own, from its service
// account's token endpoint, the client's dropped.
var Vertex = Speaker{
	Kind:     "vertex",
	Model:    "gemini-test",
	Fallback: "gemini-backup",
	Call: func(model string, stream bool) Call {
		c := Gemini.Call(model, stream)
		c.Path = vertexModels + strings.TrimPrefix(c.Path, geminiModels)
		return c
	},
	Scripts:     Gemini.Scripts,
	InvalidType: Gemini.InvalidType,
	Answer:      Gemini.Answer,
	Stream:      Gemini.Stream,
	Error:       Gemini.Error,
	Quota:       Gemini.Quota,
	ModelOf: func(r fake.Request) string {
		rest, ok := strings.CutPrefix(r.Path, vertexModels)
		m, _, named := strings.Cut(rest, ":")
		if !ok || !named {
			return ""
		}
		return m
	},
	Prepare: func(t testing.TB, up *fake.Server) Upstream {
		t.Setenv("GCE_METADATA_HOST", "127.0.0.1:1") // never the metadata server
		path, err := up.WriteServiceAccount(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return Upstream{Region: "us-central1", CredentialsFile: path}
	},
}

// vertexModels is the path under which Vertex AI names a Gemini model.
const vertexModels = "/v1/projects/p1/locations/us-central1/publishers/google/models/"
