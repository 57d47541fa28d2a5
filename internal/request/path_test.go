package request

import "testing"

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
