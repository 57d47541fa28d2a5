package gateway

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/sse"
)

// The type/code of the errors the gateway answers itself.
const (
	codeTimeout          = "timeout"                 // 504
	codeProviderDown     = "provider_down"           // 503, breaker open
	codeUnreachable      = "upstream_unreachable"    // 502
	codeBudgetExhausted  = "budget_exhausted"        // 429
	codeTooLarge         = "request_too_large"       // 413
	codeUnauthorized     = "unauthorized"            // 401
	codeBadRequest       = "invalid_request"         // 400
	codeNotFound         = "not_found"               // 404
	codeStreamStalled    = "stream_stalled"          // in a stream
	codeStreamCut        = "stream_cut"              // in a stream
	codeShuttingDown     = "shutting_down"           // in a stream, at the end of the drain
	codeMethodNotAllowed = "method_not_allowed"      // 405
	codeUnpricedModel    = "unpriced_model"          // 400, no price under a budget
	codeStateUnavailable = "state_unavailable"       // 503, admin endpoints: the state store failed
	codeKeyInProgress    = "idempotency_in_progress" // 409, a call with the same Idempotency-Key is in flight
	codeKeyReused        = "idempotency_key_reused"  // 422, the Idempotency-Key came with another request
)

// errorBody returns a gateway error in the dialect's error shape. Codes
// are the constants above; the message is escaped as a JSON string.
func errorBody(kind, code, message string) []byte {
	msg, _ := json.Marshal(message)
	var b []byte
	if kind == config.KindAnthropic {
		b = append(b, `{"type":"error","error":{"type":"`...)
		b = append(b, code...)
		b = append(b, `","message":`...)
		b = append(b, msg...)
		return append(b, "}}"...)
	}
	b = append(b, `{"error":{"message":`...)
	b = append(b, msg...)
	b = append(b, `,"type":"`...)
	b = append(b, code...)
	b = append(b, `","code":"`...)
	b = append(b, code...)
	return append(b, `","param":null}}`...)
}

// writeError answers a request with a gateway-made error.
func writeError(w http.ResponseWriter, kind string, status int, code, message string) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Should-Retry", "false")
	w.WriteHeader(status)
	if kind == config.KindGemini { // Google's shape carries the status
		w.Write(geminiErrorBody(status, code, message))
		return
	}
	w.Write(errorBody(kind, code, message))
}

// retryAfterSeconds is the Retry-After value for a breaker that may close
// at until: whole seconds, at least 1.
func retryAfterSeconds(until, now time.Time) string {
	d := until.Sub(now)
	s := int64((d + time.Second - 1) / time.Second)
	return strconv.FormatInt(max(s, 1), 10)
}

// errorEvent returns the event that ends a stream the gateway cannot
// finish, in the dialect's shape: for OpenAI-compatible streams a data
// event holding {"error": …}, which the OpenAI SDKs raise; for Anthropic an
// "event: error"; for Gemini a data event holding Google's error object.
func errorEvent(kind, code, message string) []byte {
	if kind == config.KindGemini {
		return geminiErrorEvent(code, message)
	}
	if kind == config.KindAnthropic {
		return sse.AppendEvent(nil, "error", errorBody(kind, code, message))
	}
	return sse.AppendEvent(nil, "", errorBody(kind, code, message))
}

// plural returns n and noun, with an s unless n is 1: "1 attempt",
// "3 attempts".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
