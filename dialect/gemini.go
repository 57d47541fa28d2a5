package dialect

import (
	"bytes"
	"cmp"
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

// address: the Gemini API has one address, not one per region.
func (gemini) address(string) (string, bool) { return "", false }

func (gemini) Request(path string, body []byte) Request {
	r := bodyRequest(path, body)
	m, method := geminiPath(path)
	if method == "" {
		return r
	}
	r.ModelCall = true
	r.Stream = method == geminiStream
	n, err := geminiLimit(body)
	r.Ambiguous = cmp.Or(r.Ambiguous, err)
	if r.MaxTokens == 0 {
		r.MaxTokens = n
	}
	r.Operation = geminiOperation(method)
	r.Model, r.BadModel = m, request.CheckModel(m)
	if r.BadModel != nil {
		r.Model = ""
	}
	return r
}

// geminiLimit returns a Gemini body's generationConfig.maxOutputTokens
// (or its proto name, generation_config.max_output_tokens), when it is an
// object holding an integer above 0 there; else 0. The error is the
// *request.AmbiguousError of a body that names either member twice (by
// both names, or in another case).
func geminiLimit(body []byte) (int64, error) {
	if err := request.Unique(body, "generationConfig", "generation_config"); err != nil {
		return 0, err
	}
	var n int64
	var err error
	request.Walk(body, func(k, v []byte) bool {
		if string(k) != "generationConfig" && string(k) != "generation_config" {
			return true
		}
		if err = request.Unique(v, "maxOutputTokens", "max_output_tokens"); err != nil {
			return false
		}
		request.Walk(v, func(k, v []byte) bool {
			if string(k) == "maxOutputTokens" || string(k) == "max_output_tokens" {
				if i, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil && i > 0 {
					n = i
				}
				return false
			}
			return true
		})
		return false
	})
	return n, err
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

// Usage.

// Google's Gemini API reports usage in a top-level "usageMetadata" object,
// in whole answers and in every stream chunk, cumulatively: the last
// chunk's counts are the answer's.
//
//	promptTokenCount         the prompt, cached tokens included → Input
//	cachedContentTokenCount  the part of the prompt read from the cache → CacheRead
//	candidatesTokenCount     the answer → Output
//	thoughtsTokenCount       the model's thinking, billed as output → Output
//	toolUsePromptTokenCount  tool-use prompt tokens, billed as input → Input

func (gemini) Usage(body []byte) (Usage, bool) { return geminiUsage(body) }

func (gemini) StreamUsage() UsageReader { return newSSEUsage(geminiEvent) }

// geminiEvent reads the usageMetadata of a Gemini stream chunk: the last
// one wins, each being cumulative.
func geminiEvent(r *sseUsage, e sse.Event) {
	if u, ok := geminiUsage(e.Data); ok {
		r.set(u)
	}
}

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

// Rate limits.

// Windows reports nothing: Gemini sends no rate-limit headers, only a
// 429's retry delay (Judge).
func (gemini) Windows(h http.Header, now time.Time, fn func(Window)) {}

// The gateway's side.

// Gemini: the key in x-goog-api-key or the query (?key=), errors as a
// google.rpc status whose ErrorInfo reason is the gateway's code, a
// stream's error as a data event holding one, with an HTTP status for
// its code, which Google's SDKs raise.

func (gemini) Traits() Traits {
	return Traits{System: "gcp.gemini", KeyHeader: "X-Goog-Api-Key", StrictEnd: true}
}

func (gemini) Client() Client { return geminiClient{} }

type geminiClient struct{}

func (geminiClient) Key(r *http.Request) string {
	if k := clientKey(r, "X-Goog-Api-Key"); k != "" {
		return k
	}
	return queryKey(r.URL) // Google's SDKs may send ?key=
}

func (geminiClient) SetKey(r *http.Request, key string) { setKey(r, "X-Goog-Api-Key", key) }

func (geminiClient) Error(h http.Header, status int, code, message string) []byte {
	jsonError(h)
	return googleErrorBody(status, code, message)
}

func (geminiClient) ErrorEvent(code, message string) []byte {
	return dataEvent("", googleErrorBody(googleStreamStatus(code), code, message))
}

// AsksUsage: Gemini's chunks carry usageMetadata unasked; its API knows
// no stream_options.
func (geminiClient) AsksUsage(r *http.Request) bool { return false }

// EscapedModel finds none: no path of this dialect holds an escaped "/".
func (geminiClient) EscapedModel(p string) (start, end int) { return -1, -1 }

// googleStatuses are the google.rpc status names of the HTTP statuses the
// gateway answers with.
var googleStatuses = map[int]string{
	http.StatusBadRequest:            "INVALID_ARGUMENT",
	http.StatusUnauthorized:          "UNAUTHENTICATED",
	http.StatusNotFound:              "NOT_FOUND",
	http.StatusMethodNotAllowed:      "INVALID_ARGUMENT",
	http.StatusRequestEntityTooLarge: "INVALID_ARGUMENT",
	http.StatusTooManyRequests:       "RESOURCE_EXHAUSTED",
	http.StatusBadGateway:            "UNAVAILABLE",
	http.StatusServiceUnavailable:    "UNAVAILABLE",
	http.StatusGatewayTimeout:        "DEADLINE_EXCEEDED",
}

// googleErrorBody is a gateway error in Google's shape:
// {"error":{"code":503,"message":…,"status":"UNAVAILABLE","details":[
// {"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":code,"domain":"sluice"}]}}.
// The gateway's code is the ErrorInfo's reason, where Google's clients
// look for a machine-readable cause.
func googleErrorBody(status int, code, message string) []byte {
	name := googleStatuses[status]
	if name == "" {
		name = "INTERNAL"
		if status < 500 {
			name = "INVALID_ARGUMENT"
		}
	}
	type errorInfo struct {
		Type   string `json:"@type"`
		Reason string `json:"reason"`
		Domain string `json:"domain"`
	}
	var v struct {
		Error struct {
			Code    int         `json:"code"`
			Message string      `json:"message"`
			Status  string      `json:"status"`
			Details []errorInfo `json:"details"`
		} `json:"error"`
	}
	v.Error.Code, v.Error.Message, v.Error.Status = status, message, name
	v.Error.Details = []errorInfo{{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: code, Domain: "sluice"}}
	b, _ := json.Marshal(v) // plain strings and ints always marshal
	return b
}

// The gateway's codes that end a stream for want of time: the stream
// stalled, or the call ran past a limit.
const (
	codeStreamStalled = "stream_stalled"
	codeTimeout       = "timeout"
)

// googleStreamStatus is the HTTP status of the error event that ends a
// stream the gateway cannot finish, by its code: Google's SDKs raise an
// event's error only when its code is an HTTP error status.
func googleStreamStatus(code string) int {
	if code == codeStreamStalled || code == codeTimeout {
		return http.StatusGatewayTimeout
	}
	return http.StatusServiceUnavailable // cut, shutting down
}
