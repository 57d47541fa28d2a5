package sluice

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

// Google's Gemini API differs from the others in three ways the engine
// must know, all read from the call itself, never from configuration:
//
//   - the model is in the URL path (/v1beta/models/gemini-2.0-flash:
//     generateContent), not in the body: pathModel reads it, and a
//     fallback's Model rewrites the path (as for Azure OpenAI's
//     deployments; pathmodel.go);
//   - its errors are google.rpc statuses, {"error":{"code":429,"status":
//     "RESOURCE_EXHAUSTED","details":[…]}}: a QuotaFailure naming a
//     per-day quota is a used-up quota (never retried, never counted by the
//     breaker), and a RetryInfo's retryDelay is the wait the provider asks
//     for, as Retry-After is elsewhere;
//   - a stream (:streamGenerateContent?alt=sse) has no terminal event: it
//     is whole when a chunk's candidates carry a finishReason, and one that
//     ends without such a chunk was cut.

// isGeminiStream reports whether p is the path of a streamed Gemini call.
func isGeminiStream(p string) bool {
	_, method := request.GeminiPath(p)
	return method == request.GeminiStream
}

// isGeminiPath reports whether p is a Gemini model call, for the default
// RetrySafe.
func isGeminiPath(p string) bool {
	_, method := request.GeminiPath(p)
	return method != ""
}

// rpcTypes is the prefix of the google.rpc detail types of an error body:
// the cheap test that spares decoding a body without any.
var rpcTypes = []byte("type.googleapis.com/google.rpc.")

// rpcError is the part of a Google error body the engine reads.
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

// readRPCError decodes a Google error body that has google.rpc details;
// false for any other body.
func readRPCError(body []byte) (rpcError, bool) {
	var e rpcError
	if !bytes.Contains(body, rpcTypes) || json.Unmarshal(body, &e) != nil {
		return e, false
	}
	return e, true
}

// isDailyQuota reports whether a 429 body is Google's RESOURCE_EXHAUSTED
// for a per-day quota: a google.rpc.QuotaFailure violation whose quotaId
// or quotaMetric names a PerDay quota. A per-minute one is a rate limit.
func isDailyQuota(body []byte) bool {
	e, ok := readRPCError(body)
	if !ok {
		return false
	}
	for _, d := range e.Error.Details {
		if !strings.HasSuffix(d.Type, ".QuotaFailure") {
			continue
		}
		for _, v := range d.Violations {
			if strings.Contains(v.QuotaID, "PerDay") || strings.Contains(v.QuotaMetric, "PerDay") {
				return true
			}
		}
	}
	return false
}

// rpcRetryDelay returns the wait a Google error body's
// google.rpc.RetryInfo asks for: its retryDelay, a protobuf Duration in
// JSON ("13s", "0.5s", "1.000340s"). ok is false when there is none or it
// does not parse.
func rpcRetryDelay(body []byte) (time.Duration, bool) {
	e, ok := readRPCError(body)
	if !ok {
		return 0, false
	}
	for _, d := range e.Error.Details {
		if !strings.HasSuffix(d.Type, ".RetryInfo") {
			continue
		}
		s, ok := strings.CutSuffix(strings.TrimSpace(d.RetryDelay), "s")
		f, err := strconv.ParseFloat(s, 64)
		if !ok || err != nil || !(f >= 0) || f > 1e9 {
			return 0, false
		}
		return time.Duration(f * float64(time.Second)), true
	}
	return 0, false
}

// retryHint returns the wait an error answer asks for: its headers'
// (retry-after-ms, Retry-After), else its body's google.rpc.RetryInfo.
func retryHint(h http.Header, body []byte, now time.Time) (time.Duration, bool) {
	if d, ok := retryAfter(h, now); ok {
		return d, true
	}
	return rpcRetryDelay(body)
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
func rpcEventStatus(code any, status string) int {
	if n, ok := code.(float64); ok && n >= 400 && n <= 599 {
		return int(n)
	}
	return rpcStatuses[status]
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
