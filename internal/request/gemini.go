package request

import (
	"bytes"
	"strings"
)

// Google's Gemini API names its model in the URL path, not in the body:
// /v1beta/models/gemini-2.0-flash:generateContent. The functions here read
// and rewrite that name, and the output limit Gemini keeps one level down,
// at generationConfig.maxOutputTokens.

// geminiMethods are the methods a Gemini model path may end in, after the
// colon.
var geminiMethods = [...]string{"generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"}

// GeminiStream is the method of a streamed Gemini call.
const GeminiStream = "streamGenerateContent"

// GeminiPath returns the model and the method a Gemini API path names, as
// in /v1beta/models/gemini-2.0-flash:streamGenerateContent →
// "gemini-2.0-flash", "streamGenerateContent"; both "" when p is not such
// a path. The model is returned as written: check it with CheckModel
// before it names anything.
func GeminiPath(p string) (model, method string) {
	i := strings.LastIndex(p, "/models/")
	if i < 0 {
		return "", ""
	}
	model, method, ok := strings.Cut(p[i+len("/models/"):], ":")
	if !ok || model == "" || strings.ContainsRune(model, '/') {
		return "", ""
	}
	for _, m := range geminiMethods {
		if method == m {
			return model, method
		}
	}
	return "", ""
}

// withGeminiModel returns the Gemini API path p with its model replaced
// by model, and true; p itself and false when p names no model
// (GeminiPath).
func withGeminiModel(p, model string) (string, bool) {
	old, method := GeminiPath(p)
	if old == "" {
		return p, false
	}
	tail := old + ":" + method
	return p[:len(p)-len(tail)] + model + ":" + method, true
}

// generationLimit returns a Gemini body's generationConfig.maxOutputTokens
// (or its proto name generation_config.max_output_tokens) when v, the
// value of a top-level generationConfig member, is an object holding an
// integer above 0 there; else 0.
func generationLimit(v []byte) int64 {
	var n int64
	Walk(v, func(k, val []byte) bool {
		if string(k) == "maxOutputTokens" || string(k) == "max_output_tokens" {
			if i, ok := parseInt(bytes.TrimSpace(val)); ok && i > 0 {
				n = i
			}
			return false
		}
		return true
	})
	return n
}

// isGenerationConfig reports whether k names Gemini's generationConfig.
func isGenerationConfig(k []byte) bool {
	return string(k) == "generationConfig" || string(k) == "generation_config"
}
