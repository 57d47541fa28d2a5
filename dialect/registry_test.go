package dialect

import "testing"

// A Transport that names no dialect speaks the one its call's path says.
func TestForPath(t *testing.T) {
	for p, want := range map[string]Dialect{
		"/v1/chat/completions": OpenAI,
		"/v1/embeddings":       OpenAI,
		"/v1/messages":         Anthropic,
		"/openai/deployments/gpt4o/chat/completions":                                           Azure,
		"/openai/v1/responses":                                                                 Azure,
		"/v1beta/models/gemini-2.0-flash:generateContent":                                      Gemini,
		"/model/anthropic.claude-3-haiku-20240307-v1:0/invoke":                                 Bedrock,
		"/v1/projects/p/locations/l/publishers/google/models/gemini-2.0-flash:generateContent": Vertex,
	} {
		if got := ForPath(p); got != want {
			t.Errorf("ForPath(%s) = %s, want %s", p, got.Kind(), want.Kind())
		}
	}
	for _, k := range Kinds() {
		if d, ok := Lookup(k); !ok || d.Kind() != k {
			t.Errorf("Lookup(%s) = %v, %v", k, d, ok)
		}
	}
	if _, ok := Lookup("mystery"); ok {
		t.Error("Lookup found a dialect for an unknown kind")
	}
	// The registry holds the exported dialects themselves, each once.
	for _, d := range []Dialect{OpenAI, Azure, Anthropic, Vertex, Gemini, Bedrock} {
		if got, ok := Lookup(d.Kind()); !ok || got != d {
			t.Errorf("Lookup(%s) = %v, want the exported %s", d.Kind(), got, d.Kind())
		}
	}
	if len(Kinds()) != 6 {
		t.Errorf("Kinds() = %v, want the six dialects", Kinds())
	}
}

// A regional dialect's address follows from its region, written into a
// host name only when it looks like one; any other dialect's does not.
func TestRegionalBaseURL(t *testing.T) {
	for _, tc := range []struct {
		kind, region, want string
		regional           bool
	}{
		{"bedrock", "us-east-1", "https://bedrock-runtime.us-east-1.amazonaws.com", true},
		{"bedrock", "eu-central-2", "https://bedrock-runtime.eu-central-2.amazonaws.com", true},
		{"vertex", "us-central1", "https://us-central1-aiplatform.googleapis.com", true},
		{"vertex", "global", "https://aiplatform.googleapis.com", true},
		{"vertex", "", "", true},
		{"bedrock", "evil.example/x", "", true},
		{"bedrock", "US-EAST-1", "", true},
		{"bedrock", "us-east-", "", true},
		{"openai", "us-east-1", "", false},
		{"azure", "us-east-1", "", false},
		{"anthropic", "us-east-1", "", false},
		{"gemini", "us-east-1", "", false},
		{"mystery", "us-east-1", "", false},
	} {
		if got, regional := RegionalBaseURL(tc.kind, tc.region); got != tc.want || regional != tc.regional {
			t.Errorf("RegionalBaseURL(%q, %q) = %q, %v; want %q, %v", tc.kind, tc.region, got, regional, tc.want, tc.regional)
		}
	}
}

// BenchmarkForPath is what a library Transport that names no dialect pays
// per call to find one and read its path.
func BenchmarkForPath(b *testing.B) {
	const p = "/v1/chat/completions"
	b.ReportAllocs()
	for b.Loop() {
		ForPath(p).Request(p, nil)
	}
}
