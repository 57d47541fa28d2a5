package fake

import (
	"slices"
	"unicode/utf8"

	"github.com/sluice-llm/sluice/dialect/chat"
)

// This file holds the scripted chat answers (Provider.Chat): an answer in
// no API's shape, written by each chat endpoint with its API's codec
// (dialect/chat), whole or streamed.

// chatCodec returns the chat codec of a dialect whose answers the chat
// model writes, nil for the others (the Responses API, Bedrock's
// InvokeModel, Gemini's countTokens and embeddings).
func chatCodec(d dialect) chat.Codec {
	switch d := d.(type) {
	case openAI:
		return chat.OpenAI
	case azure:
		if _, ok := d.dialect.(openAI); ok {
			return chat.OpenAI
		}
	case anthropic, vertexAnthropic:
		return chat.Anthropic
	case gemini:
		if d.method == "generateContent" || d.method == "streamGenerateContent" {
			return chat.Gemini
		}
	case converse:
		return chat.Bedrock
	}
	return nil
}

// chatReply is a call's scripted chat answer and the codec that writes it.
type chatReply struct {
	codec      chat.Codec
	a          chat.Answer
	usage      bool // OpenAI: the request asked for the usage chunk
	interleave bool // Provider.InterleaveCalls
}

// newChatReply returns the call's chat answer: a copy of a, its id, model
// and creation time the call's own where a leaves them empty; nil when a
// is nil or the dialect has no chat codec.
func newChatReply(a *chat.Answer, d dialect, rep reply, interleave bool) *chatReply {
	codec := chatCodec(d)
	if a == nil || codec == nil {
		return nil
	}
	cp := *a
	cp.Content = append([]chat.Part(nil), a.Content...)
	if cp.ID == "" {
		switch codec {
		case chat.OpenAI:
			cp.ID = "chatcmpl-" + rep.id
		case chat.Anthropic:
			cp.ID = "msg_" + rep.id
		case chat.Gemini:
			cp.ID = rep.id
		}
	}
	if cp.Model == "" {
		cp.Model = rep.model
	}
	if cp.Created == 0 {
		cp.Created = rep.created
	}
	return &chatReply{codec: codec, a: cp, usage: rep.usage, interleave: interleave}
}

// body is the whole answer as the codec writes it.
func (c *chatReply) body() []byte {
	b, err := c.codec.EncodeAnswer(&c.a)
	if err != nil { // an answer the API cannot say: the provider fails
		return nil
	}
	return b
}

// events is the streamed answer as the codec writes it, one event per
// frame.
func (c *chatReply) events() []event {
	enc := c.codec.NewStreamEncoder(&chat.Request{Stream: true, IncludeUsage: c.usage})
	var out []event
	var frs []chat.Frame
	for _, ev := range chatEvents(&c.a, c.interleave) {
		var err error
		if frs, err = enc.Encode(frs[:0], ev); err != nil {
			return out
		}
		for _, f := range frs {
			out = append(out, event{name: f.Event, data: append([]byte(nil), f.Data...)})
		}
	}
	return out
}

// textPieces and argPieces are how many pieces a streamed answer cuts a
// text block and a tool call's arguments into.
const (
	textPieces = 3
	argPieces  = 3
)

// chatEvents is a's stream: its start, each block's pieces and its end
// (text in textPieces pieces, a tool call's arguments in argPieces), the
// stop reason with the usage, the end. With interleave, an answer of
// tool calls alone begins them all, then sends their arguments' pieces
// in turns, the last call's first, then ends them.
func chatEvents(a *chat.Answer, interleave bool) []chat.Event {
	start := a.Usage
	start.Output = 0
	evs := []chat.Event{{Type: chat.EventStart, ID: a.ID, Model: a.Model, Created: a.Created, Usage: &start}}
	if interleave && len(a.Content) > 1 && !slices.ContainsFunc(a.Content, func(p chat.Part) bool { return p.Type != chat.PartToolCall }) {
		for i, p := range a.Content {
			evs = append(evs, chat.Event{Type: chat.EventToolStart, Index: i, ID: p.ToolCall.ID, Name: p.ToolCall.Name})
		}
		for k := range argPieces {
			for i := len(a.Content) - 1; i >= 0; i-- {
				if ps := cut(string(a.Content[i].ToolCall.Args), argPieces); k < len(ps) {
					evs = append(evs, chat.Event{Type: chat.EventToolArgs, Index: i, Args: ps[k]})
				}
			}
		}
		for i := range a.Content {
			evs = append(evs, chat.Event{Type: chat.EventBlockStop, Index: i})
		}
		u := a.Usage
		return append(evs,
			chat.Event{Type: chat.EventDelta, Stop: a.Stop, StopSequence: a.StopSequence, Usage: &u},
			chat.Event{Type: chat.EventStop})
	}
	for i, p := range a.Content {
		switch p.Type {
		case chat.PartText:
			for _, s := range cut(p.Text, textPieces) {
				evs = append(evs, chat.Event{Type: chat.EventText, Index: i, Text: s})
			}
		case chat.PartToolCall:
			tc := p.ToolCall
			evs = append(evs, chat.Event{Type: chat.EventToolStart, Index: i, ID: tc.ID, Name: tc.Name})
			for _, s := range cut(string(tc.Args), argPieces) {
				evs = append(evs, chat.Event{Type: chat.EventToolArgs, Index: i, Args: s})
			}
		default:
			continue
		}
		evs = append(evs, chat.Event{Type: chat.EventBlockStop, Index: i})
	}
	u := a.Usage
	return append(evs,
		chat.Event{Type: chat.EventDelta, Stop: a.Stop, StopSequence: a.StopSequence, Usage: &u},
		chat.Event{Type: chat.EventStop})
}

// cut cuts s into at most n pieces of about one length, at rune
// boundaries; none when s is empty.
func cut(s string, n int) []string {
	var out []string
	size := max((len(s)+n-1)/n, 1)
	for len(s) > 0 {
		k := min(size, len(s))
		for k < len(s) && !utf8.RuneStart(s[k]) {
			k++
		}
		out = append(out, s[:k])
		s = s[k:]
	}
	return out
}
