package chat

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// OpenAI's stream: chat.completion.chunk data events, the answer's
// finish_reason in the last chunk with choices, then (when the request
// set stream_options.include_usage) a chunk with no choices and the
// usage, then data: [DONE]. An error is a data event holding
// {"error": …}. Tool calls stream as tool_calls deltas, each naming its
// index among the answer's tool calls: its id and name in the first, its
// arguments in pieces.

func (openAICodec) NewStreamDecoder() StreamDecoder { return &openAIDecoder{text: -1} }

type openAIDecoder struct {
	started  bool
	next     int         // the next block's index
	text     int         // the open text block's index, -1 when none
	last     int         // the block last begun
	tools    map[int]int // tool_calls index → block index
	open     []int       // the blocks begun and not stopped, in order
	finished bool        // a finish_reason came
	stop     StopReason
	usage    *Usage
	delta    bool // EventDelta was sent
	done     bool // [DONE] or an error came

	chunk   openAIChunkIn // the chunk being read, reused
	scratch openAIScratch // what its fast read points into
}

// openAIChunkIn is a chunk as the decoder reads it.
type openAIChunkIn struct {
	ID      string           `json:"id"`
	Created int64            `json:"created"`
	Model   string           `json:"model"`
	Choices []openAIChoiceIn `json:"choices"`
	Usage   *openAIUsage     `json:"usage"`
	Error   json.RawMessage  `json:"error"`
}

// openAIChoiceIn is a chunk's choice as the decoder reads it.
type openAIChoiceIn struct {
	Index        int             `json:"index"`
	Delta        openAIDeltaIn   `json:"delta"`
	Logprobs     json.RawMessage `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
}

// openAIDeltaIn is a choice's delta as the decoder reads it.
type openAIDeltaIn struct {
	Content   *string          `json:"content"`
	Refusal   *string          `json:"refusal"`
	ToolCalls []openAIToolCall `json:"tool_calls"`
}

func (d *openAIDecoder) Decode(dst []Event, f Frame) ([]Event, error) {
	if d.done {
		return dst, nil
	}
	data := bytes.TrimSpace(f.Data)
	if string(data) == "[DONE]" {
		d.done = true
		if !d.finished {
			return append(dst, Event{Type: EventError, Err: cutError(openAIName)}), nil
		}
		return append(d.sendDelta(dst), Event{Type: EventStop}), nil
	}
	c := &d.chunk
	if !c.readFast(data, &d.scratch) {
		*c = openAIChunkIn{}
		if err := json.Unmarshal(data, c); err != nil {
			return dst, malformed(openAIDisplay, "stream event", err)
		}
	}
	if !isNull(c.Error) {
		d.done = true
		return append(dst, Event{Type: EventError, Err: OpenAI.DecodeError(0, data)}), nil
	}
	if !d.started {
		if len(c.Choices) == 0 && c.Usage == nil && c.ID == "" {
			return dst, nil // Azure's prompt_filter_results, before the answer's first chunk
		}
		d.started = true
		dst = append(dst, Event{Type: EventStart, ID: c.ID, Model: c.Model, Created: c.Created})
	}
	if len(c.Choices) > 1 {
		return dst, notInModel(openAIDisplay, "stream of %d choices", len(c.Choices))
	}
	for _, ch := range c.Choices {
		if ch.Index != 0 {
			return dst, notInModel(openAIDisplay, "stream of several choices")
		}
		if !isNull(ch.Logprobs) {
			return dst, notInModel(openAIDisplay, "stream's logprobs")
		}
		if d.finished {
			return dst, malformedf(openAIDisplay, "stream event", "a choice after finish_reason")
		}
		if s := ch.Delta.Content; s != nil && *s != "" {
			dst = d.textEvent(dst, *s)
		}
		if s := ch.Delta.Refusal; s != nil && *s != "" {
			dst = d.textEvent(dst, *s)
			d.stop = StopContentFilter
		}
		for i, tc := range ch.Delta.ToolCalls {
			var err error
			if dst, err = d.toolEvent(dst, i, tc); err != nil {
				return dst, err
			}
		}
		if ch.FinishReason != nil && *ch.FinishReason != "" {
			stop, ok := openAIFinish(*ch.FinishReason)
			if !ok {
				return dst, notInModel(openAIDisplay, "finish_reason %q", *ch.FinishReason)
			}
			if d.stop == "" {
				d.stop = stop
			}
			d.finished = true
			for _, i := range d.open {
				dst = append(dst, Event{Type: EventBlockStop, Index: i})
			}
			d.open = d.open[:0]
		}
	}
	if c.Usage != nil {
		u := c.Usage.usage()
		d.usage = &u
		if d.finished && len(c.Choices) == 0 {
			dst = d.sendDelta(dst)
		}
	}
	return dst, nil
}

// sendDelta appends EventDelta, once.
func (d *openAIDecoder) sendDelta(dst []Event) []Event {
	if d.delta {
		return dst
	}
	d.delta = true
	return append(dst, Event{Type: EventDelta, Stop: d.stop, Usage: d.usage})
}

// begin numbers a new block.
func (d *openAIDecoder) begin() int {
	i := d.next
	d.next++
	d.last = i
	d.open = append(d.open, i)
	return i
}

// textEvent appends a piece of text: to the open text block when it is
// the block last begun, else to a new one.
func (d *openAIDecoder) textEvent(dst []Event, s string) []Event {
	if d.text < 0 || d.text != d.last {
		d.text = d.begin()
	}
	return append(dst, Event{Type: EventText, Index: d.text, Text: s})
}

// toolEvent appends what a tool_calls delta says: a tool call begun (its
// id and name), and a piece of its arguments.
func (d *openAIDecoder) toolEvent(dst []Event, pos int, tc openAIToolCall) ([]Event, error) {
	k := pos
	if tc.Index != nil {
		k = *tc.Index
	}
	if d.tools == nil {
		d.tools = make(map[int]int)
	}
	i, ok := d.tools[k]
	if !ok {
		if tc.ID == "" || tc.Function.Name == "" {
			return dst, malformedf(openAIDisplay, "stream event", "tool call %d begins without an id and a name", k)
		}
		i = d.begin()
		d.tools[k] = i
		dst = append(dst, Event{Type: EventToolStart, Index: i, ID: tc.ID, Name: tc.Function.Name})
	} else if !slices.Contains(d.open, i) {
		return dst, malformedf(openAIDisplay, "stream event", "tool call %d goes on after its end", k)
	}
	if a := tc.Function.Arguments; a != nil && *a != "" {
		dst = append(dst, Event{Type: EventToolArgs, Index: i, Args: *a})
	}
	return dst, nil
}

func (d *openAIDecoder) End(dst []Event) []Event {
	if d.done {
		return dst
	}
	d.done = true
	return append(dst, Event{Type: EventError, Err: cutError(openAIName)})
}

// Encoding a stream.

func (openAICodec) NewStreamEncoder(r *Request) StreamEncoder {
	e := &openAIEncoder{tools: make(map[int]int)}
	if r != nil {
		e.usage = r.IncludeUsage
	}
	return e
}

type openAIEncoder struct {
	usage   bool // the client asked for the usage chunk
	started bool
	done    bool
	id      string
	model   string
	created int64
	tools   map[int]int // block index → tool_calls index
	prefix  []byte      // a chunk's beginning, up to its delta: head's, made at the first
}

// openAIChunkOut is a chunk as OpenAI writes it.
type openAIChunkOut struct {
	ID      string              `json:"id"`
	Object  string              `json:"object"`
	Created int64               `json:"created"`
	Model   string              `json:"model"`
	Choices []openAIChoiceDelta `json:"choices"`
	Usage   *openAIUsage        `json:"usage,omitempty"`
}

type openAIChoiceDelta struct {
	Index        int       `json:"index"`
	Delta        any       `json:"delta"`
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason *string   `json:"finish_reason"`
}

// chunk appends the chunk of one choice whose delta is delta, and
// finish_reason finish (null when nil).
func (e *openAIEncoder) chunk(dst []Frame, delta any, finish *string) ([]Frame, error) {
	b := e.head(64)
	b, ok := appendValue(b, delta)
	if !ok {
		return e.chunkSlow(dst, delta, finish)
	}
	return append(dst, Frame{Data: e.tail(b, finish)}), nil
}

// textChunk appends the chunk of a piece of text.
func (e *openAIEncoder) textChunk(dst []Frame, text string) []Frame {
	b := e.head(len(text) + 16)
	b = append(b, `{"content":`...)
	b = appendString(b, text)
	b = append(b, '}')
	return append(dst, Frame{Data: e.tail(b, nil)})
}

// argsChunk appends the chunk of a piece of the arguments of tool call k.
func (e *openAIEncoder) argsChunk(dst []Frame, k int, args string) []Frame {
	b := e.head(len(args) + 64)
	b = append(b, `{"tool_calls":[{"index":`...)
	b = strconv.AppendInt(b, int64(k), 10)
	b = append(b, `,"function":{"arguments":`...)
	b = appendString(b, args)
	b = append(b, "}}]}"...)
	return append(dst, Frame{Data: e.tail(b, nil)})
}

// head begins a chunk of one choice, up to its delta, in a buffer with
// room for n bytes more; tail ends it. The beginning is the same in every
// chunk (the id, model and created set at the start), so it is written
// once.
func (e *openAIEncoder) head(n int) []byte {
	if e.prefix == nil {
		b := make([]byte, 0, len(e.id)+len(e.model)+128)
		b = append(b, `{"id":`...)
		b = appendString(b, e.id)
		b = append(b, `,"object":"chat.completion.chunk","created":`...)
		b = strconv.AppendInt(b, e.created, 10)
		b = append(b, `,"model":`...)
		b = appendString(b, e.model)
		e.prefix = append(b, `,"choices":[{"index":0,"delta":`...)
	}
	return append(make([]byte, 0, len(e.prefix)+48+n), e.prefix...)
}

func (e *openAIEncoder) tail(b []byte, finish *string) []byte {
	b = append(b, `,"logprobs":null,"finish_reason":`...)
	if finish == nil {
		b = append(b, "null"...)
	} else {
		b = appendString(b, *finish)
	}
	return append(b, "}]}"...)
}

// chunkSlow is chunk by encoding/json: the reference chunk is held to,
// and the writer of a delta that does not marshal, which says why.
func (e *openAIEncoder) chunkSlow(dst []Frame, delta any, finish *string) ([]Frame, error) {
	c := openAIChunkOut{ID: e.id, Object: "chat.completion.chunk", Created: e.created, Model: e.model,
		Choices: []openAIChoiceDelta{{Delta: delta, FinishReason: finish}}}
	b, err := json.Marshal(c)
	if err != nil {
		return dst, err
	}
	return append(dst, Frame{Data: b}), nil
}

func (e *openAIEncoder) Encode(dst []Frame, ev Event) ([]Frame, error) {
	if e.done {
		return dst, nil
	}
	if !e.started && ev.Type != EventError {
		e.started = true
		if ev.Type == EventStart {
			e.id, e.model, e.created = ev.ID, ev.Model, ev.Created
		}
		var err error
		if dst, err = e.chunk(dst, kv("role", "assistant", "content", ""), nil); err != nil {
			return dst, err
		}
	}
	switch ev.Type {
	case EventStart, EventBlockStop:
		return dst, nil
	case EventText:
		if ev.Text == "" {
			return dst, nil
		}
		return e.textChunk(dst, ev.Text), nil
	case EventToolStart:
		k := len(e.tools)
		e.tools[ev.Index] = k
		call := kv("index", k, "id", ev.ID, "type", "function", "function", kv("name", ev.Name, "arguments", ""))
		return e.chunk(dst, kv("tool_calls", []any{call}), nil)
	case EventToolArgs:
		k, ok := e.tools[ev.Index]
		if !ok {
			return dst, cannot(openAIDisplay, "arguments of block %d, which is no tool call", ev.Index)
		}
		if ev.Args == "" {
			return dst, nil
		}
		return e.argsChunk(dst, k, ev.Args), nil
	case EventDelta:
		finish, err := openAIFinishOut(ev.Stop)
		if err != nil {
			return dst, err
		}
		if dst, err = e.chunk(dst, struct{}{}, &finish); err != nil {
			return dst, err
		}
		if e.usage && ev.Usage != nil {
			b, err := json.Marshal(openAIChunkOut{ID: e.id, Object: "chat.completion.chunk", Created: e.created,
				Model: e.model, Choices: []openAIChoiceDelta{}, Usage: openAIUsageOut(*ev.Usage)})
			if err != nil {
				return dst, err
			}
			dst = append(dst, Frame{Data: b})
		}
		return dst, nil
	case EventStop:
		e.done = true
		return append(dst, Frame{Data: []byte("[DONE]")}), nil
	case EventError:
		e.done = true
		return append(dst, Frame{Data: OpenAI.EncodeError(errOf(ev))}), nil
	}
	return dst, cannot(openAIDisplay, "a stream event of type %s", ev.Type)
}
