package dialect

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-llm/sluice/internal/request"
	"github.com/sluice-llm/sluice/internal/sse"
)

// Gemini is Google's Gemini API (generativelanguage.googleapis.com):
//
//   - the model is in the URL path (/v1beta/models/gemini-2.0-flash:
//     generateContent), not in the body, and a fallback's model goes there;
//   - a stream is asked for by the method (:streamGenerateContent?alt=sse)
//     and has no terminal event: it is whole when a chunk's candidates
//     carry a finishReason, and one that ends without such a chunk was cut;
//   - its errors are google.rpc statuses, {"error":{"code":429,"status":
//     "RESOURCE_EXHAUSTED","details":[…]}}: a QuotaFailure naming a
//     per-day quota is a used-up quota, and a RetryInfo's retryDelay is
//     the wait the provider asks for, as Retry-After is elsewhere;
//   - the key goes in x-goog-api-key, or in the query (?key=).
var Gemini Dialect = gemini{}

type gemini struct{}

func (gemini) Kind() string { return "gemini" }

// geminiMethods are the methods a Gemini model path may end in, after the
// colon.
var geminiMethods = [...]string{"generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"}

// geminiStream is the method of a streamed Gemini call.
const geminiStream = "streamGenerateContent"

// geminiPath returns the model and the method a Gemini API path names, as
// in /v1beta/models/gemini-2.0-flash:streamGenerateContent →
// "gemini-2.0-flash", "streamGenerateContent"; both "" when p is not such
// a path. The model is returned as written.
func geminiPath(p string) (model, method string) {
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

func (gemini) owns(p string) bool {
	_, method := geminiPath(p)
	return method != ""
}

func (gemini) Request(path string, body []byte) Request {
	r := bodyRequest(path, body)
	m, method := geminiPath(path)
	if method == "" {
		return r
	}
	r.ModelCall = true
	r.Stream = method == geminiStream
	r.Operation = geminiOperation(method)
	r.Model, r.BadModel = m, request.CheckModel(m)
	if r.BadModel != nil {
		r.Model = ""
	}
	return r
}

// geminiOperation is the gen_ai.operation.name of a Gemini method.
func geminiOperation(method string) string {
	switch method {
	case "generateContent", geminiStream:
		return "generate_content"
	case "embedContent", "batchEmbedContents":
		return "embeddings"
	}
	return "other"
}

func (gemini) Retarget(path string, body []byte, model string) (string, []byte, bool) {
	old, method := geminiPath(path)
	if old == "" {
		return bodyRetarget(path, body, model)
	}
	tail := old + ":" + method
	return path[:len(path)-len(tail)] + model + ":" + method, body, true
}

// rpcTypes is the prefix of the google.rpc detail types of an error body:
// the cheap test that spares decoding a body without any.
var rpcTypes = []byte("type.googleapis.com/google.rpc.")

// rpcError is the part of a Google error body Sluice reads.
type rpcError struct {
	Error struct {
		Code    any    `json:"code"`
		Status  string `json:"status"`
		Details []struct {
			Type       string `json:"@type"`
			RetryDelay string `json:"retryDelay"` // RetryInfo
			Violations []struct {
				QuotaID     string `json:"quotaId"`
				QuotaMetric string `json:"quotaMetric"`
			} `json:"violations"` // QuotaFailure
		} `json:"details"`
	} `json:"error"`
}

// Judge reads a google.rpc error: a 429 whose QuotaFailure names a PerDay
// quota (quotaId or quotaMetric) is a used-up quota, a per-minute one a
// rate limit; a RetryInfo's retryDelay, a protobuf Duration in JSON
// ("13s", "0.5s", "1.000340s"), is the wait asked for.
func (gemini) Judge(status int, h http.Header, body []byte) Judgment {
	var j Judgment
	var e rpcError
	if !bytes.Contains(body, rpcTypes) || json.Unmarshal(body, &e) != nil {
		return j
	}
	for _, d := range e.Error.Details {
		switch {
		case strings.HasSuffix(d.Type, ".QuotaFailure") && status == http.StatusTooManyRequests:
			for _, v := range d.Violations {
				if strings.Contains(v.QuotaID, "PerDay") || strings.Contains(v.QuotaMetric, "PerDay") {
					j.Quota = true
				}
			}
		case strings.HasSuffix(d.Type, ".RetryInfo") && !j.HasWait:
			s, ok := strings.CutSuffix(strings.TrimSpace(d.RetryDelay), "s")
			f, err := strconv.ParseFloat(s, 64)
			if ok && err == nil && f >= 0 && f <= 1e9 {
				j.Wait, j.HasWait = time.Duration(f*float64(time.Second)), true
			}
		}
	}
	return j
}

// rpcStatuses map google.rpc status names to the HTTP status Google gives
// with each.
var rpcStatuses = map[string]int{
	"INVALID_ARGUMENT":    http.StatusBadRequest,
	"FAILED_PRECONDITION": http.StatusBadRequest,
	"UNAUTHENTICATED":     http.StatusUnauthorized,
	"PERMISSION_DENIED":   http.StatusForbidden,
	"NOT_FOUND":           http.StatusNotFound,
	"RESOURCE_EXHAUSTED":  http.StatusTooManyRequests,
	"CANCELLED":           499,
	"INTERNAL":            http.StatusInternalServerError,
	"UNAVAILABLE":         http.StatusServiceUnavailable,
	"DEADLINE_EXCEEDED":   http.StatusGatewayTimeout,
}

// rpcEventStatus returns the HTTP status a Google error event stands for:
// its numeric code, else its status name's; 0 when it has neither.
func rpcEventStatus(data []byte) int {
	var ev struct {
		Error struct {
			Code   any    `json:"code"`
			Status string `json:"status"`
		} `json:"error"`
	}
	if json.Unmarshal(data, &ev) != nil {
		return 0
	}
	if n, ok := ev.Error.Code.(float64); ok && n >= 400 && n <= 599 {
		return int(n)
	}
	return rpcStatuses[ev.Error.Status]
}

func (gemini) Stream(h http.Header) Stream { return newSSEStream(h, classifyGemini) }

// classifyGemini judges a Gemini stream's event: a chunk with a
// finishReason ends it; an error event says its status itself.
func classifyGemini(ev sse.Event) (end bool, status int) {
	if isGeminiEnd(ev) {
		return true, 0
	}
	if isErrorEvent(ev) {
		if s := rpcEventStatus(ev.Data); s != 0 {
			return false, s
		}
		return false, errorEventStatus(ev.Data)
	}
	return false, 0
}

// finishReason is searched for before a chunk is decoded.
var finishReason = []byte(`"finishReason"`)

// isGeminiEnd reports whether a Gemini stream chunk ends the answer: one of
// its candidates has a finishReason.
func isGeminiEnd(ev sse.Event) bool {
	if !bytes.Contains(ev.Data, finishReason) {
		return false
	}
	var chunk struct {
		Candidates []struct {
			FinishReason string `json:"finishReason"`
		} `json:"candidates"`
	}
	if json.Unmarshal(ev.Data, &chunk) != nil {
		return false
	}
	for _, c := range chunk.Candidates {
		if c.FinishReason != "" {
			return true
		}
	}
	return false
}
