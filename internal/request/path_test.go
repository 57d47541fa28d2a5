package request

import (
	"strings"
	"testing"
)

func TestModelInPath(t *testing.T) {
	for _, tt := range []struct{ path, model, swapped string }{
		{"/v1beta/models/gemini-2.5-pro:streamGenerateContent", "gemini-2.5-pro", "/v1beta/models/NEW:streamGenerateContent"},
		{"/openai/deployments/gpt4o/chat/completions", "gpt4o", "/openai/deployments/NEW/chat/completions"},
		{"/openai/deployments/emb-3/embeddings", "emb-3", "/openai/deployments/NEW/embeddings"},
		{"/azure/openai/deployments/gpt4o/chat/completions", "gpt4o", "/azure/openai/deployments/NEW/chat/completions"}, // behind a base path
		{"/openai/deployments/gpt4o", "", ""}, // no operation
		{"/openai/deployments//chat/completions", "", ""},
		{"/openai/v1/chat/completions", "", ""}, // Azure's v1 API: the model is in the body
		{"/v1/chat/completions", "", ""},
		{"/v1beta/models/gemini-2.0-flash", "", ""},
	} {
		if got := ModelInPath(tt.path); got != tt.model {
			t.Errorf("ModelInPath(%q) = %q, want %q", tt.path, got, tt.model)
		}
		got, ok := WithModelInPath(tt.path, "NEW")
		if want := tt.swapped; ok != (want != "") || (ok && got != want) || (!ok && got != tt.path) {
			t.Errorf("WithModelInPath(%q) = %q, %v; want %q", tt.path, got, ok, want)
		}
	}
}

// FuzzModelInPath: any path is read without a panic, and a model put in a
// path that names one is the model read back from it.
func FuzzModelInPath(f *testing.F) {
	f.Add("/v1beta/models/gemini-2.5-pro:streamGenerateContent", "gemini-2.0-flash")
	f.Add("/x/openai/deployments/gpt4o/chat/completions", "backup")
	f.Add("/openai/deployments/a/openai/deployments/b/c", "m")
	f.Fuzz(func(t *testing.T, p, model string) {
		old := ModelInPath(p)
		q, ok := WithModelInPath(p, model)
		if ok != (old != "") {
			t.Fatalf("WithModelInPath(%q) ok %v, but ModelInPath says %q", p, ok, old)
		}
		if !ok {
			if q != p {
				t.Fatalf("a path naming no model changed: %q → %q", p, q)
			}
			return
		}
		if model == "" || strings.ContainsAny(model, "/:") {
			return // not a model a path can hold
		}
		if got := ModelInPath(q); got != model {
			t.Fatalf("ModelInPath(WithModelInPath(%q, %q) = %q) = %q", p, model, q, got)
		}
	})
}
