package chat

import (
	"encoding/json"
	"strings"
)

// Gemini's stream (streamGenerateContent?alt=sse): data events, each a
// GenerateContentResponse holding the next parts, the usage so far, and
// in the last a finishReason. It has no terminal event: the chunk with a
// finishReason ends it, and a stream that ends without one was cut. A
// function call comes whole, in one part. An error is a data event
// holding {"error": {…}}.

func (geminiCodec) NewStreamDecoder() StreamDecoder { return &geminiDecoder{text: -1} }

type geminiDecoder struct {
	started bool
	calls   *geminiCalls
	next    int // the next block's index
	text    int // the open text block, -1 when none
	called  bool
	usage   *Usage
	done    bool
}

func (d *geminiDecoder) Decode(dst []Event, f Frame) ([]Event, error) {
	if d.done {
		return dst, nil
	}
	var c geminiResponse
	if err := json.Unmarshal(f.Data, &c); err != nil {
		return dst, malformed(geminiDisplay, "stream event", err)
	}
	if !isNull(c.Error) {
		d.done = true
		return append(dst, Event{Type: EventError, Err: Gemini.DecodeError(0, f.Data)}), nil
	}
	if !d.started {
		d.started = true
		d.calls = &geminiCalls{prefix: geminiIDPrefix(c.ResponseID)}
		dst = append(dst, Event{Type: EventStart, ID: c.ResponseID, Model: c.ModelVersion})
	}
	if c.UsageMetadata != nil {
		u := c.UsageMetadata.usage()
		d.usage = &u
	}
	if len(c.Candidates) > 1 {
		return dst, notInModel(geminiDisplay, "stream of %d candidates", len(c.Candidates))
	}
	if len(c.Candidates) == 0 {
		if c.PromptFeedback != nil && c.PromptFeedback.BlockReason != "" {
			return d.end(dst, StopContentFilter), nil
		}
		return dst, nil
	}
	cand := c.Candidates[0]
	parts, err := geminiAnswerParts(cand.Content, d.calls)
	if err != nil {
		return dst, err
	}
	for _, p := range parts {
		switch p.Type {
		case PartText:
			if p.Text == "" {
				continue
			}
			if d.text < 0 {
				d.text = d.next
				d.next++
			}
			dst = append(dst, Event{Type: EventText, Index: d.text, Text: p.Text})
		case PartToolCall:
			dst = d.closeText(dst)
			i := d.next
			d.next++
			d.called = true
			dst = append(dst, Event{Type: EventToolStart, Index: i, ID: p.ToolCall.ID, Name: p.ToolCall.Name},
				Event{Type: EventToolArgs, Index: i, Args: string(p.ToolCall.Args)},
				Event{Type: EventBlockStop, Index: i})
		}
	}
	if cand.FinishReason != "" {
		return d.end(dst, geminiFinish(cand.FinishReason, d.called)), nil
	}
	return dst, nil
}

// closeText stops the open text block.
func (d *geminiDecoder) closeText(dst []Event) []Event {
	if d.text < 0 {
		return dst
	}
	dst = append(dst, Event{Type: EventBlockStop, Index: d.text})
	d.text = -1
	return dst
}

// end ends the answer: the open block, the delta, the stop.
func (d *geminiDecoder) end(dst []Event, stop StopReason) []Event {
	d.done = true
	dst = d.closeText(dst)
	return append(dst, Event{Type: EventDelta, Stop: stop, Usage: d.usage}, Event{Type: EventStop})
}

func (d *geminiDecoder) End(dst []Event) []Event {
	if d.done {
		return dst
	}
	d.done = true
	return append(dst, Event{Type: EventError, Err: cutError(geminiName)})
}

// Encoding a stream.

func (geminiCodec) NewStreamEncoder(*Request) StreamEncoder {
	return &geminiEncoder{calls: make(map[int]*geminiPending)}
}

type geminiEncoder struct {
	done  bool
	id    string
	model string
	calls map[int]*geminiPending // tool calls begun, by block
	order []int                  // their blocks, in order
}

// geminiPending is a tool call whose arguments are still coming: Gemini
// sends a call whole.
type geminiPending struct {
	name string
	args strings.Builder
}

// chunk writes a GenerateContentResponse of parts; finish and usage when
// it ends the answer.
func (e *geminiEncoder) chunk(dst []Frame, parts []any, finish string, u *Usage) ([]Frame, error) {
	cand := &object{}
	cand.set("content", kv("parts", parts, "role", "model"))
	if finish != "" {
		cand.set("finishReason", finish)
	}
	cand.set("index", 0)
	o := &object{}
	o.set("candidates", []any{cand})
	if u != nil {
		o.set("usageMetadata", geminiUsageOut(*u))
	}
	o.set("modelVersion", e.model)
	o.set("responseId", e.id)
	b, err := o.bytes()
	if err != nil {
		return dst, err
	}
	return append(dst, Frame{Data: b}), nil
}

// flush writes the call of block i, whole.
func (e *geminiEncoder) flush(dst []Frame, i int) ([]Frame, error) {
	c := e.calls[i]
	delete(e.calls, i)
	for k, j := range e.order {
		if j == i {
			e.order = append(e.order[:k], e.order[k+1:]...)
			break
		}
	}
	args, err := argsObject(geminiName, &ToolCall{Name: c.name, Args: json.RawMessage(c.args.String())})
	if err != nil {
		return dst, err
	}
	return e.chunk(dst, []any{kv("functionCall", kv("name", c.name, "args", args))}, "", nil)
}

func (e *geminiEncoder) Encode(dst []Frame, ev Event) ([]Frame, error) {
	if e.done {
		return dst, nil
	}
	switch ev.Type {
	case EventStart:
		e.id, e.model = ev.ID, ev.Model
		return dst, nil
	case EventText:
		if ev.Text == "" {
			return dst, nil
		}
		return e.chunk(dst, []any{kv("text", ev.Text)}, "", nil)
	case EventToolStart:
		if _, ok := e.calls[ev.Index]; ok {
			return dst, cannot(geminiDisplay, "block %d begun twice", ev.Index)
		}
		e.calls[ev.Index] = &geminiPending{name: ev.Name}
		e.order = append(e.order, ev.Index)
		return dst, nil
	case EventToolArgs:
		c, ok := e.calls[ev.Index]
		if !ok {
			return dst, cannot(geminiDisplay, "arguments of block %d, which is no tool call", ev.Index)
		}
		c.args.WriteString(ev.Args)
		return dst, nil
	case EventBlockStop:
		if _, ok := e.calls[ev.Index]; ok {
			return e.flush(dst, ev.Index)
		}
		return dst, nil
	case EventDelta:
		var err error
		for len(e.order) > 0 {
			if dst, err = e.flush(dst, e.order[0]); err != nil {
				return dst, err
			}
		}
		return e.chunk(dst, []any{kv("text", "")}, geminiFinishOut(ev.Stop), ev.Usage)
	case EventStop:
		e.done = true
		return dst, nil
	case EventError:
		e.done = true
		return append(dst, Frame{Data: Gemini.EncodeError(errOf(ev))}), nil
	}
	return dst, cannot(geminiDisplay, "a stream event of type %s", ev.Type)
}
