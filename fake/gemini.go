package fake

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// gemini is Google's Gemini API dialect: POST
// {prefix}/models/{model}:{method}, the model in the path, the method one
// of generateContent, streamGenerateContent (a stream whatever the body
// says, as with ?alt=sse), countTokens, embedContent or
// batchEmbedContents.
type gemini struct{ method string }

// geminiFields adapts what the fake reads from a Gemini request: the model
// and whether it streams come from the path, the output limit from
// generationConfig.maxOutputTokens.
func geminiFields(in requestFields, path string, body []byte) requestFields {
	model, method := geminiModelPath(path)
	in.Model, in.Stream = model, method == "streamGenerateContent"
	var v struct {
		Camel *struct {
			MaxOutputTokens int64 `json:"maxOutputTokens"`
		} `json:"generationConfig"`
		Snake *struct {
			MaxOutputTokens int64 `json:"max_output_tokens"`
		} `json:"generation_config"`
	}
	json.Unmarshal(body, &v) // a body that does not decode sets no limit
	limit := int64(0)
	switch {
	case v.Camel != nil:
		limit = v.Camel.MaxOutputTokens
	case v.Snake != nil:
		limit = v.Snake.MaxOutputTokens
	}
	in.MaxTokens, in.MaxCompletionTokens, in.MaxOutputTokens = int(min(max(limit, 0), 1<<31-1)), 0, 0
	return in
}

// geminiMethods are the methods a Gemini model path may end in, after the
// colon.
var geminiMethods = []string{"generateContent", "streamGenerateContent", "countTokens", "embedContent", "batchEmbedContents"}

// geminiModelPath returns the model and the method a Gemini API path names
// (/v1beta/models/gemini-2.0-flash:streamGenerateContent), both "" when
// p is no such path.
func geminiModelPath(p string) (model, method string) {
	i := strings.LastIndex(p, "/models/")
	if i < 0 {
		return "", ""
	}
	model, method, ok := strings.Cut(p[i+len("/models/"):], ":")
	if !ok || model == "" || strings.ContainsRune(model, '/') || !slices.Contains(geminiMethods, method) {
		return "", ""
	}
	return model, method
}

func (gemini) idHeader() string     { return "x-request-id" }
func (gemini) defaultModel() string { return "gemini-2.0-flash" }

// geminiStatuses are the google.rpc status names Google gives per HTTP
// status; others give INVALID_ARGUMENT (4xx) or INTERNAL (5xx).
var geminiStatuses = map[int]string{
	400: "INVALID_ARGUMENT",
	401: "UNAUTHENTICATED",
	403: "PERMISSION_DENIED",
	404: "NOT_FOUND",
	409: "ABORTED",
	429: "RESOURCE_EXHAUSTED",
	499: "CANCELLED",
	500: "INTERNAL",
	503: "UNAVAILABLE",
	504: "DEADLINE_EXCEEDED",
}

// geminiMessages are the messages that go with a status name or a step's
// Error.
var geminiMessages = map[string]string{
	"INVALID_ARGUMENT":  "Request contains an invalid argument.",
	"UNAUTHENTICATED":   "API key not valid. Please pass a valid API key.",
	"PERMISSION_DENIED": "The caller does not have permission",
	"NOT_FOUND":         "models/unknown is not found for API version v1beta, or is not supported for generateContent.",
	"ABORTED":           "The operation was aborted.",
	"CANCELLED":         "The operation was cancelled.",
	"INTERNAL":          "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting",
	"UNAVAILABLE":       "The model is overloaded. Please try again later.",
	"DEADLINE_EXCEEDED": "Deadline expired before operation could complete.",
	"RESOURCE_EXHAUSTED": "You exceeded your current quota, please check your plan and billing details. " +
		"For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.",
	"context_length_exceeded": "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
	"content_policy":          "The request was blocked by the safety filters.",
}

// The quotas a 429 names: per minute is a rate limit, per day a quota
// used up (the script's insufficient_quota).
const (
	quotaMetric         = "generativelanguage.googleapis.com/generate_content_requests"
	quotaTokensMetric   = "generativelanguage.googleapis.com/generate_content_input_token_count"
	quotaPerMinute      = "GenerateRequestsPerMinutePerProjectPerModel"
	quotaTokensPerMin   = "GenerateContentInputTokensPerModelPerMinute"
	quotaPerDay         = "GenerateRequestsPerDayPerProjectPerModel-FreeTier"
	quotaPerDayMetric   = "generativelanguage.googleapis.com/generate_content_free_tier_requests"
	typeQuotaFailure    = "type.googleapis.com/google.rpc.QuotaFailure"
	typeRetryInfo       = "type.googleapis.com/google.rpc.RetryInfo"
	typeHelp            = "type.googleapis.com/google.rpc.Help"
	geminiRateLimitsDoc = "https://ai.google.dev/gemini-api/docs/rate-limits"
)

// geminiErr is Google's error body: {"error":{"code","message","status",
// "details"}}.
type geminiErr struct {
	Error struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
		Status  string `json:"status"`
		Details []any  `json:"details,omitempty"`
	} `json:"error"`
}

// newGeminiErr returns the error for a status and a step's Error, its
// message replaced by message when not empty, with a RetryInfo of delay
// when delay is not empty ("13s", "0.5s").
func newGeminiErr(status int, kind, message, delay string) geminiErr {
	name, ok := geminiStatuses[status]
	switch {
	case ok:
	case status < 500:
		name = "INVALID_ARGUMENT"
	default:
		name = "INTERNAL"
	}
	var e geminiErr
	e.Error.Code, e.Error.Status = status, name
	e.Error.Message = cmp.Or(message, geminiMessages[kind], geminiMessages[name])
	if status == http.StatusTooManyRequests {
		id, metric := quotaPerMinute, quotaMetric
		if kind == "insufficient_quota" {
			id, metric = quotaPerDay, quotaPerDayMetric
		}
		e.Error.Details = append(e.Error.Details,
			quotaFailure(id, metric, "15"),
			map[string]any{"@type": typeHelp, "links": []any{map[string]string{
				"description": "Learn more about Gemini API quotas", "url": geminiRateLimitsDoc}}})
	}
	if delay != "" {
		e.Error.Details = append(e.Error.Details, map[string]any{"@type": typeRetryInfo, "retryDelay": delay})
	}
	return e
}

func quotaFailure(id, metric, value string) map[string]any {
	return map[string]any{"@type": typeQuotaFailure, "violations": []any{map[string]any{
		"quotaMetric": metric, "quotaId": id, "quotaValue": value,
		"quotaDimensions": map[string]string{"location": "global", "model": "gemini-2.0-flash"},
	}}}
}

func (gemini) errorBody(status int, kind, message, _ string) []byte {
	return marshal(newGeminiErr(status, kind, message, ""))
}

// fail sends an error with the step's hints: Google gives the wait in the
// body, so retry-after=N and retry-after-ms=N become a RetryInfo's
// retryDelay ("2s", "0.5s") and send no header; the other hints are
// headers as in every dialect.
func (gemini) fail(c *call, status int, kind, message string) {
	now, delay := c.p.now(), ""
	for _, h := range c.step.Hints {
		switch h.Name {
		case "retry-after":
			delay = h.Value + "s"
		case "retry-after-ms":
			ms, _ := strconv.Atoi(h.Value)
			delay = strconv.FormatFloat(float64(ms)/1000, 'f', -1, 64) + "s"
		default:
			h.set(c.w.Header(), now)
		}
	}
	writeJSON(c.w, status, marshal(newGeminiErr(status, kind, message, delay)))
}

// candidate is one candidate of a generateContent answer or chunk.
func candidate(text, finish string) map[string]any {
	c := map[string]any{"content": map[string]any{"parts": []any{map[string]string{"text": text}}, "role": "model"}, "index": 0}
	if finish != "" {
		c["finishReason"] = finish
	}
	return c
}

// content is a generateContent answer, or one chunk of its stream, with
// the usage so far.
func (r reply) content(text, finish string, output int) map[string]any {
	return map[string]any{
		"candidates": []any{candidate(text, finish)},
		"usageMetadata": map[string]int{
			"promptTokenCount": r.prompt, "candidatesTokenCount": output, "totalTokenCount": r.prompt + output,
		},
		"modelVersion": r.model,
		"responseId":   r.id,
	}
}

func (g gemini) answer(r reply) []byte {
	switch g.method {
	case "countTokens":
		return marshal(map[string]int{"totalTokens": r.prompt})
	case "embedContent":
		return marshal(map[string]any{"embedding": embedding()})
	case "batchEmbedContents":
		return marshal(map[string]any{"embeddings": []any{embedding()}})
	}
	return marshal(r.content(r.text(), "STOP", len(r.chunks)))
}

func embedding() map[string]any {
	return map[string]any{"values": []float64{0.0125, -0.0431, 0.0078, 0.0312, -0.0196, 0.0054, 0.0267, -0.0089}}
}

// events is the stream of an answer: one chunk per piece of text, each with
// the usage so far, the last with finishReason STOP. Gemini sends no other
// end: a stream without that chunk was cut.
func (gemini) events(r reply) []event {
	evs := make([]event, len(r.chunks))
	for i, c := range r.chunks {
		finish := ""
		if i == len(r.chunks)-1 {
			finish = "STOP"
		}
		evs[i] = event{data: marshal(r.content(c, finish, i+1))}
	}
	return evs
}

func (gemini) failEvent(reply, int) event {
	return event{data: marshal(newGeminiErr(http.StatusServiceUnavailable, "", "", ""))}
}

// limitHeaders sets nothing: Google sends no rate-limit headers.
func (gemini) limitHeaders(http.Header, quota) {}

// limitError is a per-minute RESOURCE_EXHAUSTED with its QuotaFailure and
// a RetryInfo of the wait, in whole seconds.
func (gemini) limitError(q quota, _ string) []byte {
	id, metric, value := quotaPerMinute, quotaMetric, q.requestLimit
	if q.over != "requests" {
		id, metric, value = quotaTokensPerMin, quotaTokensMetric, q.tokenLimit
	}
	var e geminiErr
	e.Error.Code, e.Error.Status = http.StatusTooManyRequests, "RESOURCE_EXHAUSTED"
	e.Error.Message = fmt.Sprintf("You exceeded your current quota, please check your plan and billing details. "+
		"Quota exceeded for metric: %s, limit: %d. Please retry in %ds.", metric, value, q.retryAfter())
	e.Error.Details = []any{
		quotaFailure(id, metric, strconv.Itoa(value)),
		map[string]any{"@type": typeRetryInfo, "retryDelay": strconv.Itoa(q.retryAfter()) + "s"},
	}
	return marshal(e)
}

// geminiDialect returns the Gemini dialect of a path, or nil.
func geminiDialect(path string) dialect {
	if _, method := geminiModelPath(path); method != "" && !strings.HasSuffix(path, "/") {
		return gemini{method: method}
	}
	return nil
}

// overloadedStatus is Google's 503 UNAVAILABLE ("The model is
// overloaded.").
func (gemini) overloadedStatus() int { return http.StatusServiceUnavailable }
