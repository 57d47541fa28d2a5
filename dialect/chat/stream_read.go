package chat

import (
	"bytes"
	"encoding/json"
)

// The fast read of the stream events that come by the dozen: OpenAI's
// chunks of one choice (text, a tool call's arguments) and Anthropic's
// events, read member by member (fields) into the structs encoding/json
// would fill, the same values in the same fields; an event of another
// shape — several choices, escapes in a key, a member twice, a value of
// an unexpected type — gives way to json.Unmarshal. Each decoder reuses
// one event and the scratch its pointers point into.

var (
	openAIChunkNames    = []string{"id", "created", "model", "choices", "usage", "error"}
	openAIChoiceNames   = []string{"index", "delta", "logprobs", "finish_reason"}
	openAIDeltaNames    = []string{"content", "refusal", "tool_calls"}
	openAIToolCallNames = []string{"index", "id", "type", "function"}
	openAIFuncNames     = []string{"name", "arguments"}
)

// openAIScratch is what a fast-read chunk's pointers point into.
type openAIScratch struct {
	choices                  [1]openAIChoiceIn
	calls                    [1]openAIToolCall
	content, refusal, finish string
	args                     string
	callIndex                int
}

// readFast reads the chunk data into c as json.Unmarshal would; false
// when data is not of the shapes it reads.
func (c *openAIChunkIn) readFast(data []byte, s *openAIScratch) bool {
	*c = openAIChunkIn{}
	return fields(data, openAIChunkNames, func(i int, v []byte) bool {
		switch i {
		case 0:
			return readString(v, &c.ID)
		case 1:
			if string(v) == "null" {
				return true
			}
			n, ok := plainInt(v, 64)
			c.Created = n
			return ok
		case 2:
			return readString(v, &c.Model)
		case 3:
			return c.readChoices(v, s)
		case 4:
			if string(v) == "null" {
				return true
			}
			c.Usage = new(openAIUsage)
			return c.Usage.readFast(v)
		default:
			c.Error = json.RawMessage(v)
			return true
		}
	})
}

// readChoices reads a chunk's choices: none, or one read here; several
// are read by encoding/json.
func (c *openAIChunkIn) readChoices(v []byte, s *openAIScratch) bool {
	if string(v) == "null" {
		return true
	}
	e, ok := only(v)
	if !ok {
		return false
	}
	if e == nil {
		c.Choices = s.choices[:0]
		return true
	}
	ch := &s.choices[0]
	*ch = openAIChoiceIn{}
	c.Choices = s.choices[:1]
	return fieldsIn(e, openAIChoiceNames, func(i int, v []byte) bool {
		switch i {
		case 0:
			return readInt(v, &ch.Index)
		case 1:
			return ch.Delta.readFast(v, s)
		case 2:
			ch.Logprobs = json.RawMessage(v)
			return true
		default:
			return readStringPtr(v, &ch.FinishReason, &s.finish)
		}
	})
}

// readFast reads a choice's delta.
func (d *openAIDeltaIn) readFast(v []byte, s *openAIScratch) bool {
	if string(v) == "null" {
		return true
	}
	return fieldsIn(v, openAIDeltaNames, func(i int, v []byte) bool {
		switch i {
		case 0:
			return readStringPtr(v, &d.Content, &s.content)
		case 1:
			return readStringPtr(v, &d.Refusal, &s.refusal)
		}
		if string(v) == "null" {
			d.ToolCalls = nil
			return true
		}
		e, ok := only(v)
		if !ok || e == nil {
			return false
		}
		tc := &s.calls[0]
		*tc = openAIToolCall{}
		d.ToolCalls = s.calls[:1]
		return readToolCall(e, tc, &s.callIndex, &s.args)
	})
}

// readToolCall reads the tool call v, a part of a text already checked,
// into tc, zero, as json.Unmarshal would, its index read into index and
// its arguments into args when they are not null.
func readToolCall(v []byte, tc *openAIToolCall, index *int, args *string) bool {
	return fieldsIn(v, openAIToolCallNames, func(i int, v []byte) bool {
		switch i {
		case 0:
			if string(v) == "null" {
				tc.Index = nil
				return true
			}
			tc.Index = index
			return readInt(v, tc.Index)
		case 1:
			return readString(v, &tc.ID)
		case 2:
			return readString(v, &tc.Type)
		}
		if string(v) == "null" {
			return true
		}
		return fieldsIn(v, openAIFuncNames, func(i int, v []byte) bool {
			if i == 0 {
				return readString(v, &tc.Function.Name)
			}
			return readStringPtr(v, &tc.Function.Arguments, args)
		})
	})
}

var (
	anthropicEventNames = []string{"type", "message", "index", "content_block", "delta", "usage"}
	anthropicDeltaNames = []string{"type", "text", "partial_json", "stop_reason", "stop_sequence"}
)

// anthropicScratch is what a fast-read event's pointers point into.
type anthropicScratch struct {
	index               int
	delta               anthropicDeltaIn
	stopReason, stopSeq string
}

// readFast reads the event data into ev as json.Unmarshal would; false
// when data is not of the shapes it reads.
func (ev *anthropicEvent) readFast(data []byte, s *anthropicScratch) bool {
	*ev = anthropicEvent{}
	return fields(data, anthropicEventNames, func(i int, v []byte) bool {
		null := string(v) == "null"
		switch i {
		case 0:
			return readString(v, &ev.Type)
		case 1:
			if null {
				return true
			}
			ev.Message = new(anthropicMessage)
			return ev.Message.readFast(v, false, false)
		case 2:
			if null {
				return true
			}
			ev.Index = &s.index
			return readInt(v, ev.Index)
		case 3:
			ev.ContentBlock = bytes.Clone(v)
			return true
		case 4:
			if null {
				return true
			}
			d := &s.delta
			*d = anthropicDeltaIn{}
			ev.Delta = d
			return fieldsIn(v, anthropicDeltaNames, func(i int, v []byte) bool {
				switch i {
				case 0:
					return readString(v, &d.Type)
				case 1:
					return readString(v, &d.Text)
				case 2:
					return readString(v, &d.PartialJSON)
				case 3:
					return readStringPtr(v, &d.StopReason, &s.stopReason)
				}
				return readStringPtr(v, &d.StopSequence, &s.stopSeq)
			})
		default:
			if null {
				return true
			}
			ev.Usage = new(anthropicUsage)
			return ev.Usage.readFast(v)
		}
	})
}

var anthropicMessageNames = []string{"id", "type", "model", "content", "stop_reason", "stop_sequence", "usage"}

// readFast reads the message data into w as json.Unmarshal would, its
// members walked by walk (fields, or fieldsIn for a part of a text
// checked); false when data is not of the shapes it reads. The content
// blocks are split as they are written, in a copy of their own; when
// borrow, they are left whole in blocks, a slice of data, for a caller
// that reads them and copies what it keeps of them (DecodeAnswer).
func (w *anthropicMessage) readFast(data []byte, strict, borrow bool) bool {
	*w = anthropicMessage{}
	return walkFields(data, anthropicMessageNames, strict, func(i int, v []byte) bool {
		null := string(v) == "null"
		switch i {
		case 0:
			return readString(v, &w.ID)
		case 1:
			return readString(v, &w.Type)
		case 2:
			return readString(v, &w.Model)
		case 3:
			if null {
				return true
			}
			if borrow {
				w.blocks = v // v is checked: fields' walk
				return v[0] == '['
			}
			raws, ok := elementsIn(v) // v is checked: fields' walk, or the event's
			w.Content = raws
			return ok
		case 4:
			return readStringPtr(v, &w.StopReason, new(string))
		case 5:
			return readStringPtr(v, &w.StopSequence, new(string))
		}
		if null {
			return true
		}
		w.Usage = new(anthropicUsage)
		return w.Usage.readFast(v)
	})
}

// anthropicUsageNames are anthropicUsage's members, in its fields' order.
var anthropicUsageNames = []string{"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens"}

// readFast reads the usage object v, a part of a text already checked,
// into u as json.Unmarshal would; false when v is not of the shapes it
// reads.
func (u *anthropicUsage) readFast(v []byte) bool {
	*u = anthropicUsage{}
	ps := [...]**int64{&u.InputTokens, &u.CacheCreationInputTokens, &u.CacheReadInputTokens, &u.OutputTokens}
	return fieldsIn(v, anthropicUsageNames, func(i int, v []byte) bool {
		if string(v) == "null" {
			*ps[i] = nil
			return true
		}
		n, ok := plainInt(v, 64)
		*ps[i] = &n
		return ok
	})
}

// readToolCalls reads the array of tool calls v, a part of a text already
// checked, into p as json.Unmarshal would; false when v is not of the
// shapes it reads.
func readToolCalls(v []byte, p *[]openAIToolCall) bool {
	if string(v) == "null" {
		*p = nil
		return true
	}
	raws, ok := elementsIn(v)
	if !ok {
		return false
	}
	calls := make([]openAIToolCall, len(raws))
	for i, raw := range raws {
		if !readToolCall(raw, &calls[i], new(int), new(string)) {
			return false
		}
	}
	*p = calls
	return true
}

var (
	openAIAnswerNames  = []string{"id", "created", "model", "choices", "usage"}
	openAIChoiceANames = []string{"message", "logprobs", "finish_reason"}
	openAIMessageNames = []string{"content", "refusal", "tool_calls", "annotations", "audio"}
	openAIUsageNames   = []string{"prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details"}
)

// readFast reads the answer data into w as json.Unmarshal would; false
// when data is not of the shapes it reads: one choice, or none, and no
// annotations.
func (w *openAIAnswerIn) readFast(data []byte) bool {
	*w = openAIAnswerIn{}
	return fields(data, openAIAnswerNames, func(i int, v []byte) bool {
		null := string(v) == "null"
		switch i {
		case 0:
			return readString(v, &w.ID)
		case 1:
			if null {
				return true
			}
			n, ok := plainInt(v, 64)
			w.Created = n
			return ok
		case 2:
			return readString(v, &w.Model)
		case 3:
			if null {
				w.Choices = nil
				return true
			}
			e, ok := only(v)
			if !ok {
				return false
			}
			if e == nil {
				w.Choices = []openAIChoiceAn{}
				return true
			}
			w.Choices = make([]openAIChoiceAn, 1)
			return w.Choices[0].readFast(e)
		}
		if null {
			w.Usage = nil
			return true
		}
		w.Usage = new(openAIUsage)
		return w.Usage.readFast(v)
	})
}

// readFast reads a choice of an answer, a part of a text already checked.
func (c *openAIChoiceAn) readFast(v []byte) bool {
	return fieldsIn(v, openAIChoiceANames, func(i int, v []byte) bool {
		switch i {
		case 1:
			c.Logprobs = json.RawMessage(v)
			return true
		case 2:
			return readString(v, &c.FinishReason)
		}
		if string(v) == "null" {
			return true
		}
		m := &c.Message
		return fieldsIn(v, openAIMessageNames, func(i int, v []byte) bool {
			switch i {
			case 0:
				return readStringPtr(v, &m.Content, new(string))
			case 1:
				return readStringPtr(v, &m.Refusal, new(string))
			case 2:
				return readToolCalls(v, &m.ToolCalls)
			case 3:
				switch e, ok := only(v); {
				case string(v) == "null":
					m.Annotations = nil
				case ok && e == nil:
					m.Annotations = []any{}
				default:
					return false
				}
				return true
			}
			m.Audio = json.RawMessage(v)
			return true
		})
	})
}

// readFast reads the usage object v, a part of a text already checked,
// into u as json.Unmarshal would.
func (u *openAIUsage) readFast(v []byte) bool {
	ps := [...]*int64{&u.PromptTokens, &u.CompletionTokens, &u.TotalTokens}
	return fieldsIn(v, openAIUsageNames, func(i int, v []byte) bool {
		if string(v) == "null" {
			if i == 3 {
				u.PromptDetails = nil
			}
			return true
		}
		if i < 3 {
			n, ok := plainInt(v, 64)
			*ps[i] = n
			return ok
		}
		d := &struct {
			CachedTokens int64 `json:"cached_tokens"`
		}{}
		u.PromptDetails = d
		return fieldsIn(v, []string{"cached_tokens"}, func(_ int, v []byte) bool {
			if string(v) == "null" {
				return true
			}
			n, ok := plainInt(v, 64)
			d.CachedTokens = n
			return ok
		})
	})
}
