package fake

import (
	"cmp"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// This file holds AWS Bedrock Runtime: POST /model/{modelId}/converse,
// /converse-stream, /invoke and /invoke-with-response-stream, the model id
// URL-escaped in the path, every request signed with SigV4 (sigv4.go),
// streams in AWS event-stream frames (eventstream.go).

// The Bedrock Runtime operations, as the path's last segment names them.
const (
	opConverse       = "converse"
	opConverseStream = "converse-stream"
	opInvoke         = "invoke"
	opInvokeStream   = "invoke-with-response-stream"
)

// bedrock is what the Bedrock Runtime operations share: the model of the
// path, whether the operation streams, and Bedrock's errors.
type bedrock struct {
	model  string
	stream bool
}

// converse is Bedrock's Converse API, its answers in Bedrock's own shape.
type converse struct{ bedrock }

// invoke is Bedrock's InvokeModel with Anthropic's messages body: its
// answers are Anthropic's, its stream's chunk events hold Anthropic's
// stream events.
type invoke struct{ bedrock }

// bedrockDialectFor returns the Bedrock dialect of a request, or nil: a
// path under /model/{modelId}/ (any prefix before it), the model id one
// escaped segment, which may hold ":" and "." and, escaped, "/".
func bedrockDialectFor(r *http.Request) dialect {
	p := r.URL.EscapedPath()
	i := strings.LastIndex(p, "/model/")
	if i < 0 {
		return nil
	}
	seg, op, ok := strings.Cut(p[i+len("/model/"):], "/")
	model, err := url.PathUnescape(seg)
	if !ok || err != nil || model == "" {
		return nil
	}
	b := bedrock{model: model, stream: op == opConverseStream || op == opInvokeStream}
	switch op {
	case opConverse, opConverseStream:
		return converse{b}
	case opInvoke, opInvokeStream:
		return invoke{b}
	}
	return nil
}

// fields takes the model and whether the call streams from the path, and
// the output limit from Converse's inferenceConfig.maxTokens or the
// Anthropic body's max_tokens.
func (b bedrock) fields(in requestFields, body []byte) requestFields {
	var c struct {
		InferenceConfig struct {
			MaxTokens int `json:"maxTokens"`
		} `json:"inferenceConfig"`
	}
	_ = json.Unmarshal(body, &c)
	in.Model, in.Stream = b.model, b.stream
	in.MaxTokens = cmp.Or(c.InferenceConfig.MaxTokens, in.MaxTokens)
	in.MaxCompletionTokens, in.MaxOutputTokens = 0, 0
	return in
}

func (bedrock) idHeader() string     { return "x-amzn-RequestId" }
func (bedrock) defaultModel() string { return "anthropic.claude-3-haiku-20240307-v1:0" }

// bedrockErrors are the error types Bedrock gives per status; other
// statuses give ValidationException (4xx) or InternalServerException
// (5xx).
var bedrockErrors = map[int]string{
	400: "ValidationException",
	403: "AccessDeniedException",
	404: "ResourceNotFoundException",
	408: "ModelTimeoutException",
	424: "ModelErrorException",
	429: "ThrottlingException",
	500: "InternalServerException",
	503: "ServiceUnavailableException",
}

// bedrockMessages are the messages that go with an error type or a step's
// Error.
var bedrockMessages = map[string]string{
	"ValidationException":           "Malformed input request, please reformat your input and try again.",
	"AccessDeniedException":         "You don't have access to the model with the specified model ID.",
	"ResourceNotFoundException":     "The provided model identifier is invalid.",
	"ModelTimeoutException":         "Model has timed out in processing the request. Try your request again.",
	"ModelErrorException":           "The system encountered an unexpected error during processing. Try your request again.",
	"ModelNotReadyException":        "Model is not ready to serve inference requests. The AWS SDK will automatically retry the operation.",
	"ThrottlingException":           "Too many requests, please wait before trying again.",
	"InternalServerException":       "The server encountered an internal error while processing the request.",
	"ServiceUnavailableException":   "Bedrock is unable to process your request.",
	"ServiceQuotaExceededException": "Your request exceeds the service quota for your account.",
	"context_length_exceeded":       "Input is too long for requested model.",
	"content_policy":                "The request was blocked by the content filter.",
}

// bedrockError returns the type and message Bedrock gives for a status and
// a step's Error: insufficient_quota is ServiceQuotaExceededException,
// model_not_ready ModelNotReadyException, whatever the status.
func bedrockError(status int, kind string) (typ, message string) {
	typ, ok := bedrockErrors[status]
	switch {
	case kind == "insufficient_quota":
		typ = "ServiceQuotaExceededException"
	case kind == "model_not_ready":
		typ = "ModelNotReadyException"
	case ok:
	case status < 500:
		typ = "ValidationException"
	default:
		typ = "InternalServerException"
	}
	return typ, cmp.Or(bedrockMessages[kind], bedrockMessages[typ])
}

// bedrockErr is Bedrock's error body.
type bedrockErr struct {
	Message string `json:"message"`
}

func (bedrock) errorBody(status int, kind, message, _ string) []byte {
	_, msg := bedrockError(status, kind)
	return marshal(bedrockErr{cmp.Or(message, msg)})
}

// hinted names the error's type in x-amzn-ErrorType, which is how the AWS
// SDKs tell Bedrock's errors apart.
func (bedrock) hinted(h http.Header, status int, kind string) string {
	typ, msg := bedrockError(status, kind)
	h.Set("x-amzn-ErrorType", typ)
	return msg
}

// overloadedStatus is Bedrock's 503 ServiceUnavailableException.
func (bedrock) overloadedStatus() int { return http.StatusServiceUnavailable }

// limitHeaders sets no rate-limit header, Bedrock sends none; a refused
// call's 429 is a ThrottlingException.
func (bedrock) limitHeaders(h http.Header, q quota) {
	if !q.admitted {
		h.Set("x-amzn-ErrorType", "ThrottlingException")
	}
}

func (bedrock) limitError(quota, string) []byte {
	return marshal(bedrockErr{bedrockMessages["ThrottlingException"]})
}

// exception returns a stream's exception frame of a type, as Bedrock names
// it in :exception-type (throttlingException, …).
func exception(typ, message string) event {
	return event{name: typ, data: marshal(bedrockErr{message})}
}

// failEvent is Bedrock's exception frame: serviceUnavailableException as
// the first frame, modelStreamErrorException after the answer began.
func (bedrock) failEvent(_ reply, seq int) event {
	if seq == 0 {
		return exception("serviceUnavailableException", bedrockMessages["ServiceUnavailableException"])
	}
	return exception("modelStreamErrorException", "The model stream encountered an error. Try your request again.")
}

// throttleEvent is Bedrock's throttlingException frame.
func (bedrock) throttleEvent(reply) event {
	return exception("throttlingException", bedrockMessages["ThrottlingException"])
}

// converseUsage is the usage of a Converse answer or stream.
func (r reply) converseUsage() map[string]int {
	return map[string]int{"inputTokens": r.prompt, "outputTokens": len(r.chunks), "totalTokens": r.prompt + len(r.chunks)}
}

func (converse) answer(r reply) []byte {
	return marshal(map[string]any{
		"output": map[string]any{"message": map[string]any{
			"role": "assistant", "content": []any{map[string]string{"text": r.text()}},
		}},
		"stopReason": "end_turn",
		"usage":      r.converseUsage(),
		"metrics":    map[string]int{"latencyMs": 100},
	})
}

// events is ConverseStream's answer: messageStart, a contentBlockDelta per
// piece of text, contentBlockStop, messageStop, then metadata with the
// usage.
func (converse) events(r reply) []event {
	evs := []event{named("messageStart", map[string]string{"role": "assistant"})}
	for _, c := range r.chunks {
		evs = append(evs, named("contentBlockDelta", map[string]any{
			"contentBlockIndex": 0, "delta": map[string]string{"text": c},
		}))
	}
	return append(evs,
		named("contentBlockStop", map[string]int{"contentBlockIndex": 0}),
		named("messageStop", map[string]string{"stopReason": "end_turn"}),
		named("metadata", map[string]any{"usage": r.converseUsage(), "metrics": map[string]int{"latencyMs": 100}}),
	)
}

func (invoke) answer(r reply) []byte { return anthropic{}.answer(r) }

// usageHeaders sets the token counts and latency InvokeModel's answer
// carries in its headers.
func (invoke) usageHeaders(h http.Header, r reply) {
	h.Set("X-Amzn-Bedrock-Input-Token-Count", strconv.Itoa(r.prompt))
	h.Set("X-Amzn-Bedrock-Output-Token-Count", strconv.Itoa(len(r.chunks)))
	h.Set("X-Amzn-Bedrock-Invocation-Latency", "100")
}

// events is InvokeModelWithResponseStream's answer: Anthropic's stream
// events, each the base64 bytes of a chunk event; the last, message_stop,
// carries Bedrock's amazon-bedrock-invocationMetrics with the usage.
func (invoke) events(r reply) []event {
	evs := anthropic{}.events(r)
	out := make([]event, len(evs))
	for i, ev := range evs {
		data := ev.data
		if ev.name == "message_stop" {
			data = marshal(map[string]any{"type": "message_stop", "amazon-bedrock-invocationMetrics": map[string]int{
				"inputTokenCount": r.prompt, "outputTokenCount": len(r.chunks),
				"invocationLatency": 100, "firstByteLatency": 50,
			}})
		}
		out[i] = named("chunk", map[string]string{"bytes": base64.StdEncoding.EncodeToString(data)})
	}
	return out
}
