package request

import "testing"

func TestGeminiPath(t *testing.T) {
	for _, tt := range []struct{ path, model, method string }{
		{"/v1beta/models/gemini-2.0-flash:generateContent", "gemini-2.0-flash", "generateContent"},
		{"/v1/models/gemini-2.5-pro:streamGenerateContent", "gemini-2.5-pro", "streamGenerateContent"},
		{"/gemini/v1beta/models/text-embedding-004:embedContent", "text-embedding-004", "embedContent"},
		{"/v1beta/models/gemini-2.0-flash:countTokens", "gemini-2.0-flash", "countTokens"},
		{"/v1beta/models/gemini-2.0-flash", "", ""},                   // a model's info, no method
		{"/v1beta/models/gemini-2.0-flash:explode", "", ""},           // not a method
		{"/v1beta/models/:generateContent", "", ""},                   // no model
		{"/v1beta/models/a/b:generateContent", "", ""},                // a slash in the model
		{"/v1/chat/completions", "", ""},                              // not Gemini
		{"/v1beta/tunedModels/x:generateContent", "", ""},             // not a base model
		{"/v1beta/models/gemini-2.0-flash:generateContent/x", "", ""}, // a tail
	} {
		m, meth := GeminiPath(tt.path)
		if m != tt.model || meth != tt.method {
			t.Errorf("GeminiPath(%q) = %q, %q; want %q, %q", tt.path, m, meth, tt.model, tt.method)
		}
	}
}

func TestScanGeminiOutputLimit(t *testing.T) {
	for _, tt := range []struct {
		body string
		want int64
	}{
		{`{"contents":[],"generationConfig":{"temperature":0.2,"maxOutputTokens":256}}`, 256},
		{`{"generation_config":{"max_output_tokens":128},"contents":[]}`, 128},
		{`{"generationConfig":{"maxOutputTokens":0}}`, 0},
		{`{"generationConfig":{"maxOutputTokens":"12"}}`, 0},
		{`{"generationConfig":null}`, 0},
		{`{"generationConfig":{"nested":{"maxOutputTokens":9}}}`, 0}, // only one level down
		{`{"max_tokens":64,"generationConfig":{"maxOutputTokens":256}}`, 64},
		{`{"generationConfig":{"maxOutputTokens":300},"generationConfig":{"maxOutputTokens":5}}`, 300},
	} {
		f, err := Scan([]byte(tt.body))
		if err != nil || f.MaxTokens != tt.want {
			t.Errorf("Scan(%s).MaxTokens = %d, %v; want %d", tt.body, f.MaxTokens, err, tt.want)
		}
	}
}
