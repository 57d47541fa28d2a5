package spend

import (
	"bytes"
	"encoding/json"
	"math"
)

// Google's Gemini API reports usage in a top-level "usageMetadata" object,
// in whole answers and in every stream chunk, cumulatively: the last
// chunk's counts are the answer's.
//
//	promptTokenCount         the prompt, cached tokens included → Input
//	cachedContentTokenCount  the part of the prompt read from the cache → CacheRead
//	candidatesTokenCount     the answer → Output
//	thoughtsTokenCount       the model's thinking, billed as output → Output
//	toolUsePromptTokenCount  tool-use prompt tokens, billed as input → Input

// usageMetadataKey is searched for before a body is decoded.
var usageMetadataKey = []byte(`"usageMetadata"`)

// geminiUsageWire is Gemini's usageMetadata, counts decoded as numbers of
// any form and clamped by tokenCount.
type geminiUsageWire struct {
	Prompt     float64 `json:"promptTokenCount"`
	Candidates float64 `json:"candidatesTokenCount"`
	Thoughts   float64 `json:"thoughtsTokenCount"`
	Cached     float64 `json:"cachedContentTokenCount"`
	ToolPrompt float64 `json:"toolUsePromptTokenCount"`
}

func (w *geminiUsageWire) usage() Usage {
	return Usage{
		Input:            addCounts(tokenCount(w.Prompt), tokenCount(w.ToolPrompt)),
		Output:           addCounts(tokenCount(w.Candidates), tokenCount(w.Thoughts)),
		CacheRead:        tokenCount(w.Cached),
		CacheReadInInput: true, // promptTokenCount includes the cached tokens
	}
}

// addCounts adds two counts, at most math.MaxInt64.
func addCounts(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// geminiUsage reads the top-level usageMetadata of a Gemini answer or
// stream chunk; ok is false when there is none or b is not a JSON object.
func geminiUsage(b []byte) (u Usage, ok bool) {
	if !bytes.Contains(b, usageMetadataKey) {
		return Usage{}, false
	}
	var v struct {
		UsageMetadata *geminiUsageWire `json:"usageMetadata"`
	}
	if isSyntaxError(json.Unmarshal(b, &v)) || v.UsageMetadata == nil {
		return Usage{}, false
	}
	return v.UsageMetadata.usage(), true
}
