package fake

// responses is the OpenAI Responses API dialect (POST …/responses): one
// assistant message of output text with usage, and its stream of response.*
// events, complete enough for the official SDKs' stream helpers, which
// rebuild the response from the events (openai-node's
// responses.stream(…).finalResponse(), openai-go's ResponseAccumulator).
type responses struct{ openAI }

// apiResponse is a Responses API response object, with the fields the
// official SDKs read. Fields the fake has no use for keep the API's
// defaults.
type apiResponse struct {
	ID                 string          `json:"id"`
	Object             string          `json:"object"`
	CreatedAt          int64           `json:"created_at"`
	Status             string          `json:"status"`
	Background         bool            `json:"background"`
	Error              *struct{}       `json:"error"`
	IncompleteDetails  *struct{}       `json:"incomplete_details"`
	Instructions       *string         `json:"instructions"`
	MaxOutputTokens    *int            `json:"max_output_tokens"`
	Model              string          `json:"model"`
	Output             []outputMessage `json:"output"`
	ParallelToolCalls  bool            `json:"parallel_tool_calls"`
	PreviousResponseID *string         `json:"previous_response_id"`
	Reasoning          map[string]any  `json:"reasoning"`
	ServiceTier        string          `json:"service_tier"`
	Store              bool            `json:"store"`
	Temperature        float64         `json:"temperature"`
	Text               map[string]any  `json:"text"`
	ToolChoice         string          `json:"tool_choice"`
	Tools              []any           `json:"tools"`
	TopP               float64         `json:"top_p"`
	Truncation         string          `json:"truncation"`
	Usage              *responseUsage  `json:"usage"`
	User               *string         `json:"user"`
	Metadata           map[string]any  `json:"metadata"`
}

// outputMessage is an output item of type "message".
type outputMessage struct {
	ID      string       `json:"id"`
	Type    string       `json:"type"`
	Status  string       `json:"status"`
	Role    string       `json:"role"`
	Content []outputText `json:"content"`
}

// outputText is a content part of type "output_text".
type outputText struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations"`
	Logprobs    []any  `json:"logprobs"`
}

type responseUsage struct {
	InputTokens         int            `json:"input_tokens"`
	InputTokensDetails  map[string]int `json:"input_tokens_details"`
	OutputTokens        int            `json:"output_tokens"`
	OutputTokensDetails map[string]int `json:"output_tokens_details"`
	TotalTokens         int            `json:"total_tokens"`
}

// response returns the response object with the given status: while in
// progress, without output or usage; completed, with the whole message and
// usage.
func (responses) response(r reply, status string) apiResponse {
	resp := apiResponse{
		ID: "resp_" + r.id, Object: "response", CreatedAt: r.created, Status: status,
		Model: r.model, Output: []outputMessage{}, ParallelToolCalls: true,
		Reasoning: map[string]any{"effort": nil, "summary": nil}, ServiceTier: "default", Store: true,
		Temperature: 1, Text: map[string]any{"format": map[string]string{"type": "text"}},
		ToolChoice: "auto", Tools: []any{}, TopP: 1, Truncation: "disabled", Metadata: map[string]any{},
	}
	if status == "completed" {
		resp.Output = []outputMessage{message(r, "completed", textPart(r.text()))}
		n := len(r.chunks)
		resp.Usage = &responseUsage{
			InputTokens: r.prompt, InputTokensDetails: map[string]int{"cached_tokens": 0},
			OutputTokens: n, OutputTokensDetails: map[string]int{"reasoning_tokens": 0},
			TotalTokens: r.prompt + n,
		}
	}
	return resp
}

// message returns the answer's one output item.
func message(r reply, status string, content ...outputText) outputMessage {
	if content == nil {
		content = []outputText{}
	}
	return outputMessage{ID: "msg_" + r.id, Type: "message", Status: status, Role: "assistant", Content: content}
}

func textPart(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []any{}, Logprobs: []any{}}
}

func (d responses) answer(r reply) []byte { return marshal(d.response(r, "completed")) }

// events returns the stream the API sends for one message of text:
// response.created, response.in_progress, response.output_item.added,
// response.content_part.added, one response.output_text.delta per chunk,
// response.output_text.done, response.content_part.done,
// response.output_item.done and response.completed, numbered by
// sequence_number from 0.
func (d responses) events(r reply) []event {
	var evs []event
	add := func(typ string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = typ, len(evs)
		evs = append(evs, named(typ, fields))
	}
	// part returns the fields that place an event in the message's text.
	part := func(more map[string]any) map[string]any {
		more["item_id"], more["output_index"], more["content_index"] = "msg_"+r.id, 0, 0
		return more
	}
	add("response.created", map[string]any{"response": d.response(r, "in_progress")})
	add("response.in_progress", map[string]any{"response": d.response(r, "in_progress")})
	add("response.output_item.added", map[string]any{"output_index": 0, "item": message(r, "in_progress")})
	add("response.content_part.added", part(map[string]any{"part": textPart("")}))
	for _, c := range r.chunks {
		add("response.output_text.delta", part(map[string]any{"delta": c, "logprobs": []any{}}))
	}
	text := r.text()
	add("response.output_text.done", part(map[string]any{"text": text, "logprobs": []any{}}))
	add("response.content_part.done", part(map[string]any{"part": textPart(text)}))
	add("response.output_item.done", map[string]any{"output_index": 0, "item": message(r, "completed", textPart(text))})
	add("response.completed", map[string]any{"response": d.response(r, "completed")})
	return evs
}

func (responses) failEvent(_ reply, seq int) event {
	return named("error", map[string]any{
		"type": "error", "code": "server_error", "param": nil, "sequence_number": seq,
		"message": openAIErrors[529].Message,
	})
}
