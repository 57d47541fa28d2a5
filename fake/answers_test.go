package fake

import (
	"strings"
	"testing"
)

func TestOpenAIAnswer(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	resp := post(t, s, chatPath, "", chatBody)
	body := readAll(t, resp)
	var got struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		Model   string `json:"model"`
		Choices []struct {
			Index   int `json:"index"`
			Message struct {
				Role    string  `json:"role"`
				Content string  `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
			TotalTokens      int `json:"total_tokens"`
		} `json:"usage"`
	}
	decode(t, body, &got)
	prompt := len(chatBody) / 4
	if resp.StatusCode != 200 || !strings.HasPrefix(got.ID, "chatcmpl-") || got.Object != "chat.completion" ||
		got.Created == 0 || got.Model != "gpt-test" || len(got.Choices) != 1 {
		t.Fatalf("answer %s", body)
	}
	c := got.Choices[0]
	if c.Message.Role != "assistant" || c.Message.Content != "This is a fake answer." || c.Message.Refusal != nil ||
		c.FinishReason != "stop" || !strings.Contains(string(body), `"logprobs":null`) {
		t.Errorf("choice %+v in %s", c, body)
	}
	if u := got.Usage; u.PromptTokens != prompt || u.CompletionTokens != 5 || u.TotalTokens != prompt+5 {
		t.Errorf("usage %+v, want prompt %d, completion 5", u, prompt)
	}

	resp = post(t, s, "/chat/completions", "", `{}`)
	decode(t, readAll(t, resp), &got)
	if got.Model != "gpt-4o-mini" {
		t.Errorf("default model %q, want gpt-4o-mini", got.Model)
	}
}

type chatChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Model   string `json:"model"`
	Choices []struct {
		Delta struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
}

func TestOpenAIStream(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	for _, withUsage := range []bool{false, true} {
		body := `{"model":"gpt-test","stream":true,"messages":[]}`
		if withUsage {
			body = `{"model":"gpt-test","stream":true,"stream_options":{"include_usage":true},"messages":[]}`
		}
		evs := streamOf(t, post(t, s, chatPath, "", body))
		if last := evs[len(evs)-1]; last.data != "[DONE]" {
			t.Fatalf("last event %+v, want [DONE]", last)
		}
		var text strings.Builder
		var chunks []chatChunk
		for _, ev := range evs[:len(evs)-1] {
			var c chatChunk
			decode(t, []byte(ev.data), &c)
			if c.Object != "chat.completion.chunk" || c.Model != "gpt-test" || !strings.HasPrefix(c.ID, "chatcmpl-") ||
				len(chunks) > 0 && c.ID != chunks[0].ID {
				t.Fatalf("chunk %s", ev.data)
			}
			chunks = append(chunks, c)
			for _, ch := range c.Choices {
				text.WriteString(ch.Delta.Content)
			}
		}
		if chunks[0].Choices[0].Delta.Role != "assistant" || text.String() != "This is a fake answer." {
			t.Errorf("role %q, text %q", chunks[0].Choices[0].Delta.Role, text.String())
		}
		n := len(chunks)
		if withUsage {
			u := chunks[n-1]
			n--
			prompt := len(body) / 4
			if len(u.Choices) != 0 || u.Usage == nil || u.Usage.PromptTokens != prompt ||
				u.Usage.CompletionTokens != 5 || u.Usage.TotalTokens != prompt+5 {
				t.Errorf("usage chunk %+v", u)
			}
		}
		if fin := chunks[n-1].Choices[0].FinishReason; fin == nil || *fin != "stop" {
			t.Errorf("finish chunk %+v", chunks[n-1])
		}
		if n != 7 { // role, 5 texts, finish
			t.Errorf("withUsage=%v: %d chunks before usage and [DONE], want 7", withUsage, n)
		}
		for _, c := range chunks[:n] {
			if c.Usage != nil {
				t.Errorf("withUsage=%v: chunk with usage %+v", withUsage, c)
			}
		}
	}
}

func TestAnthropicAnswer(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	resp := post(t, s, messagesPath, "", messagesBody)
	body := readAll(t, resp)
	var got struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Role    string `json:"role"`
		Model   string `json:"model"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
		Usage        struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	decode(t, body, &got)
	if !strings.HasPrefix(got.ID, "msg_") || got.Type != "message" || got.Role != "assistant" ||
		got.Model != "claude-test" || got.StopReason != "end_turn" || got.StopSequence != nil ||
		len(got.Content) != 1 || got.Content[0].Type != "text" || got.Content[0].Text != "This is a fake answer." {
		t.Errorf("answer %s", body)
	}
	if got.Usage.InputTokens != len(messagesBody)/4 || got.Usage.OutputTokens != 5 {
		t.Errorf("usage %+v", got.Usage)
	}
	if resp.Header.Get("request-id") == "" || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("headers %v", resp.Header)
	}
}

func TestAnthropicStream(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	s.Events = 3
	body := `{"model":"claude-test","stream":true,"max_tokens":64,"messages":[]}`
	evs := streamOf(t, post(t, s, "/x/v1/messages", "", body))
	var names []string
	var text strings.Builder
	for _, ev := range evs {
		names = append(names, ev.name)
		var e struct {
			Type    string `json:"type"`
			Message struct {
				ID    string         `json:"id"`
				Model string         `json:"model"`
				Usage map[string]int `json:"usage"`
			} `json:"message"`
			Delta struct {
				Type       string `json:"type"`
				Text       string `json:"text"`
				StopReason string `json:"stop_reason"`
			} `json:"delta"`
			Usage map[string]int `json:"usage"`
		}
		decode(t, []byte(ev.data), &e)
		if e.Type != ev.name {
			t.Errorf("event %s has type %s", ev.name, e.Type)
		}
		switch ev.name {
		case "message_start":
			if !strings.HasPrefix(e.Message.ID, "msg_") || e.Message.Model != "claude-test" ||
				e.Message.Usage["input_tokens"] != len(body)/4 {
				t.Errorf("message_start %s", ev.data)
			}
		case "content_block_delta":
			if e.Delta.Type != "text_delta" {
				t.Errorf("delta %s", ev.data)
			}
			text.WriteString(e.Delta.Text)
		case "message_delta":
			if e.Delta.StopReason != "end_turn" || e.Usage["output_tokens"] != 3 {
				t.Errorf("message_delta %s", ev.data)
			}
		}
	}
	want := "message_start content_block_start content_block_delta content_block_delta content_block_delta " +
		"content_block_stop message_delta message_stop"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events %s, want %s", got, want)
	}
	if text.String() != "This is a" {
		t.Errorf("text %q", text.String())
	}
}

func TestResponsesAnswer(t *testing.T) {
	s := NewServer("")
	defer s.Close()
	var got struct {
		Object string `json:"object"`
		Status string `json:"status"`
		Output []struct {
			Content []struct {
				Type string `json:"type"`
				Text string `json:"text"`
			} `json:"content"`
		} `json:"output"`
		Usage struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}
	decode(t, readAll(t, post(t, s, respPath, "", `{"model":"gpt-test","input":"hi"}`)), &got)
	if got.Object != "response" || got.Status != "completed" || len(got.Output) != 1 ||
		got.Output[0].Content[0].Text != "This is a fake answer." || got.Usage.OutputTokens != 5 {
		t.Errorf("answer %+v", got)
	}

	evs := streamOf(t, post(t, s, respPath, "", `{"model":"gpt-test","input":"hi","stream":true}`))
	var names []string
	for i, ev := range evs {
		names = append(names, ev.name)
		var e struct {
			Type string `json:"type"`
			Seq  int    `json:"sequence_number"`
		}
		decode(t, []byte(ev.data), &e)
		if e.Type != ev.name || e.Seq != i {
			t.Errorf("event %d: type %q, sequence_number %d; want %q, %d", i, e.Type, e.Seq, ev.name, i)
		}
	}
	want := "response.created response.in_progress response.output_item.added response.content_part.added " +
		strings.Repeat("response.output_text.delta ", 5) +
		"response.output_text.done response.content_part.done response.output_item.done response.completed"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("events\n got %s\nwant %s", got, want)
	}
}
