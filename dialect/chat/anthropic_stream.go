package chat

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
)

// Anthropic's stream: named events, message_start (the message with
// its id, model and input usage), for each content block
// content_block_start, content_block_delta (text_delta,
// input_json_delta) and content_block_stop, one block at a time; then
// message_delta (stop_reason, the output usage, and the input usage
// again in newer answers), message_stop. ping events are nothing; an
// error is an "event: error" with {"type":"error","error":{…}}.

func (anthropicCodec) NewStreamDecoder() StreamDecoder { return &anthropicDecoder{} }

type anthropicDecoder struct {
	started bool
	usage   Usage
	open    []int // the blocks begun and not stopped
	delta   bool
	done    bool

	ev      anthropicEvent   // the event being read, reused
	scratch anthropicScratch // what its fast read points into
}

// anthropicEvent is a stream event as the decoder reads it.
type anthropicEvent struct {
	Type         string            `json:"type"`
	Message      *anthropicMessage `json:"message"`
	Index        *int              `json:"index"`
	ContentBlock json.RawMessage   `json:"content_block"`
	Delta        *anthropicDeltaIn `json:"delta"`
	Usage        *anthropicUsage   `json:"usage"`
}

// anthropicDeltaIn is an event's delta as the decoder reads it.
type anthropicDeltaIn struct {
	Type         string  `json:"type"`
	Text         string  `json:"text"`
	PartialJSON  string  `json:"partial_json"`
	StopReason   *string `json:"stop_reason"`
	StopSequence *string `json:"stop_sequence"`
}

func (d *anthropicDecoder) Decode(dst []Event, f Frame) ([]Event, error) {
	if d.done {
		return dst, nil
	}
	ev := &d.ev
	if !ev.readFast(f.Data, &d.scratch) {
		*ev = anthropicEvent{}
		if err := json.Unmarshal(f.Data, ev); err != nil {
			return dst, malformed(anthropicDisplay, "stream event", err)
		}
	}
	typ := ev.Type
	if typ == "" {
		typ = f.Event
	}
	if typ == "error" {
		d.done = true
		return append(dst, Event{Type: EventError, Err: Anthropic.DecodeError(0, f.Data)}), nil
	}
	if typ == "ping" {
		return dst, nil
	}
	if !d.started {
		if typ != "message_start" || ev.Message == nil {
			return dst, malformedf(anthropicDisplay, "stream event", "%s before message_start", typ)
		}
		d.started = true
		if ev.Message.Usage != nil {
			ev.Message.Usage.merge(&d.usage)
		}
		u := d.usage
		return append(dst, Event{Type: EventStart, ID: ev.Message.ID, Model: ev.Message.Model, Usage: &u}), nil
	}
	switch typ {
	case "content_block_start":
		i, err := anthropicIndex(ev.Index)
		if err != nil {
			return dst, err
		}
		if slices.Contains(d.open, i) {
			return dst, malformedf(anthropicDisplay, "stream event", "block %d begun twice", i)
		}
		p, err := anthropicBlock(ev.ContentBlock)
		if err != nil {
			return dst, err
		}
		d.open = append(d.open, i)
		switch p.Type {
		case PartText:
			if p.Text != "" {
				dst = append(dst, Event{Type: EventText, Index: i, Text: p.Text})
			}
		case PartToolCall:
			dst = append(dst, Event{Type: EventToolStart, Index: i, ID: p.ToolCall.ID, Name: p.ToolCall.Name})
			if a := string(p.ToolCall.Args); a != "{}" && a != "" {
				dst = append(dst, Event{Type: EventToolArgs, Index: i, Args: a})
			}
		default:
			return dst, notInModel(anthropicDisplay, "stream's %s block", anthropicBlockType(p))
		}
	case "content_block_delta":
		i, err := anthropicIndex(ev.Index)
		if err != nil {
			return dst, err
		}
		if !slices.Contains(d.open, i) || ev.Delta == nil {
			return dst, malformedf(anthropicDisplay, "stream event", "a delta of block %d, which is not open", i)
		}
		switch ev.Delta.Type {
		case "text_delta":
			if ev.Delta.Text != "" {
				dst = append(dst, Event{Type: EventText, Index: i, Text: ev.Delta.Text})
			}
		case "input_json_delta":
			if ev.Delta.PartialJSON != "" {
				dst = append(dst, Event{Type: EventToolArgs, Index: i, Args: ev.Delta.PartialJSON})
			}
		default:
			return dst, notInModel(anthropicDisplay, "stream's %s", ev.Delta.Type)
		}
	case "content_block_stop":
		i, err := anthropicIndex(ev.Index)
		if err != nil {
			return dst, err
		}
		k := slices.Index(d.open, i)
		if k < 0 {
			return dst, malformedf(anthropicDisplay, "stream event", "block %d stopped but not open", i)
		}
		d.open = slices.Delete(d.open, k, k+1)
		dst = append(dst, Event{Type: EventBlockStop, Index: i})
	case "message_delta":
		if d.delta || ev.Delta == nil {
			return dst, malformedf(anthropicDisplay, "stream event", "a second message_delta, or one without delta")
		}
		d.delta = true
		for _, i := range d.open {
			dst = append(dst, Event{Type: EventBlockStop, Index: i})
		}
		d.open = nil
		e := Event{Type: EventDelta}
		if s := ev.Delta.StopReason; s != nil {
			stop, ok := anthropicStop(*s)
			if !ok {
				return dst, notInModel(anthropicDisplay, "stop_reason %q", *s)
			}
			e.Stop = stop
		}
		if s := ev.Delta.StopSequence; s != nil {
			e.StopSequence = *s
		}
		if ev.Usage != nil {
			ev.Usage.merge(&d.usage)
		}
		u := d.usage
		e.Usage = &u
		dst = append(dst, e)
	case "message_stop":
		if !d.delta {
			return dst, malformedf(anthropicDisplay, "stream event", "message_stop before message_delta")
		}
		d.done = true
		dst = append(dst, Event{Type: EventStop})
	default:
		return dst, notInModel(anthropicDisplay, "stream event %q", typ)
	}
	return dst, nil
}

func (d *anthropicDecoder) End(dst []Event) []Event {
	if d.done {
		return dst
	}
	d.done = true
	return append(dst, Event{Type: EventError, Err: cutError(anthropicName)})
}

// Encoding a stream.

func (anthropicCodec) NewStreamEncoder(*Request) StreamEncoder {
	return &anthropicEncoder{blocks: make(map[int]int), cur: -1}
}

type anthropicEncoder struct {
	started bool
	done    bool
	next    int         // the next block's index
	blocks  map[int]int // chat block → Anthropic block, the last begun for it
	closed  []int       // the chat blocks whose Anthropic block was stopped
	cur     int         // the chat block whose Anthropic block is open, -1 when none
	tool    bool        // the open block is a tool call's
	// args are the open tool call's arguments so far.
	args bytes.Buffer
	// queued are the tool calls begun while another tool call's block was
	// open and its arguments not yet whole JSON, held back, their
	// arguments gathered, until that block ends or its arguments are
	// whole: Anthropic streams one block at a time, and an
	// OpenAI-compatible server may interleave parallel calls' arguments.
	queued []*queuedTool
}

// queuedTool is a tool call held back: its block, id and name, its
// arguments so far, and whether it has ended.
type queuedTool struct {
	index    int
	id, name string
	args     bytes.Buffer
	stopped  bool
}

// queuedFor returns the queued tool call of chat block i, or nil.
func (e *anthropicEncoder) queuedFor(i int) *queuedTool {
	for _, q := range e.queued {
		if q.index == i {
			return q
		}
	}
	return nil
}

// flush ends the open block and writes the queued tool calls in the
// order they began, each with its arguments so far: each one that has
// ended is stopped; the first that has not stays open, its further
// arguments streamed, and the ones after it stay queued.
func (e *anthropicEncoder) flush(dst []Frame) ([]Frame, error) {
	dst, err := e.closeBlock(dst)
	for err == nil && len(e.queued) > 0 {
		q := e.queued[0]
		e.queued = e.queued[1:]
		if dst, err = e.begin(dst, q.index, anthropicToolUse(q.id, q.name, json.RawMessage("{}")), true); err != nil {
			break
		}
		if q.args.Len() > 0 {
			if dst, err = anthropicFrame(dst, "content_block_delta", kv("type", "content_block_delta", "index", e.blocks[q.index],
				"delta", kv("type", "input_json_delta", "partial_json", q.args.String()))); err != nil {
				break
			}
		}
		e.args.Write(q.args.Bytes())
		if !q.stopped && !(len(e.queued) > 0 && json.Valid(q.args.Bytes())) {
			return dst, nil
		}
		dst, err = e.closeBlock(dst)
	}
	return dst, err
}

func anthropicFrame(dst []Frame, typ string, v any) ([]Frame, error) {
	if b, ok := appendValue(nil, v); ok {
		return append(dst, Frame{Event: typ, Data: b}), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, Frame{Event: typ, Data: b}), nil
}

// anthropicDelta appends the content_block_delta of block i of type typ
// whose piece, a member named by key, is s.
func anthropicDelta(dst []Frame, i int, key, typ, s string) []Frame {
	b := make([]byte, 0, len(s)+96)
	b = append(b, `{"type":"content_block_delta","index":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"delta":{"type":"`...)
	b = append(b, typ...)
	b = append(b, key...)
	b = appendString(b, s)
	b = append(b, "}}"...)
	return append(dst, Frame{Event: "content_block_delta", Data: b})
}

// closeBlock stops the open block.
func (e *anthropicEncoder) closeBlock(dst []Frame) ([]Frame, error) {
	if e.cur < 0 {
		return dst, nil
	}
	i := e.blocks[e.cur]
	e.closed = append(e.closed, e.cur)
	e.cur = -1
	return anthropicFrame(dst, "content_block_stop", kv("type", "content_block_stop", "index", i))
}

// begin stops the open block and begins one for chat block i.
func (e *anthropicEncoder) begin(dst []Frame, i int, block any, tool bool) ([]Frame, error) {
	dst, err := e.closeBlock(dst)
	if err != nil {
		return dst, err
	}
	e.blocks[i] = e.next
	e.cur, e.tool = i, tool
	e.args.Reset()
	if k := slices.Index(e.closed, i); k >= 0 {
		e.closed = slices.Delete(e.closed, k, k+1)
	}
	e.next++
	return anthropicFrame(dst, "content_block_start", kv("type", "content_block_start", "index", e.blocks[i], "content_block", block))
}

func (e *anthropicEncoder) start(dst []Frame, id, model string, u *Usage) ([]Frame, error) {
	e.started = true
	var usage Usage
	if u != nil {
		usage = *u
	}
	msg := &object{}
	msg.set("id", id)
	msg.set("type", "message")
	msg.set("role", "assistant")
	msg.set("model", model)
	msg.set("content", []any{})
	msg.set("stop_reason", nil)
	msg.set("stop_sequence", nil)
	msg.set("usage", anthropicUsageOut(usage))
	return anthropicFrame(dst, "message_start", kv("type", "message_start", "message", msg))
}

func (e *anthropicEncoder) Encode(dst []Frame, ev Event) ([]Frame, error) {
	if e.done {
		return dst, nil
	}
	var err error
	if !e.started && ev.Type != EventError {
		if ev.Type == EventStart {
			return e.start(dst, ev.ID, ev.Model, ev.Usage)
		}
		if dst, err = e.start(dst, "", "", nil); err != nil {
			return dst, err
		}
	}
	switch ev.Type {
	case EventStart:
		return dst, nil
	case EventText:
		if ev.Text == "" {
			return dst, nil
		}
		if e.cur != ev.Index || e.tool {
			if dst, err = e.flush(dst); err != nil {
				return dst, err
			}
			if dst, err = e.begin(dst, ev.Index, kv("type", "text", "text", ""), false); err != nil {
				return dst, err
			}
		}
		return anthropicDelta(dst, e.blocks[ev.Index], `","text":`, "text_delta", ev.Text), nil
	case EventToolStart:
		if _, ok := e.blocks[ev.Index]; ok || e.queuedFor(ev.Index) != nil {
			return dst, cannot(anthropicDisplay, "block %d begun twice", ev.Index)
		}
		if e.cur >= 0 && e.tool && !json.Valid(e.args.Bytes()) || len(e.queued) > 0 {
			e.queued = append(e.queued, &queuedTool{index: ev.Index, id: ev.ID, name: ev.Name})
			return dst, nil
		}
		return e.begin(dst, ev.Index, anthropicToolUse(ev.ID, ev.Name, json.RawMessage("{}")), true)
	case EventToolArgs:
		if q := e.queuedFor(ev.Index); q != nil {
			q.args.WriteString(ev.Args)
			return dst, nil
		}
		if e.cur != ev.Index || !e.tool {
			return dst, cannot(anthropicDisplay,
				"arguments of tool call %d while another block streams (it streams one block at a time)", ev.Index)
		}
		if ev.Args == "" {
			return dst, nil
		}
		e.args.WriteString(ev.Args)
		dst = anthropicDelta(dst, e.blocks[ev.Index], `","partial_json":`, "input_json_delta", ev.Args)
		if len(e.queued) > 0 && json.Valid(e.args.Bytes()) { // whole: the calls held back go on
			return e.flush(dst)
		}
		return dst, nil
	case EventBlockStop:
		if q := e.queuedFor(ev.Index); q != nil {
			q.stopped = true
			return dst, nil
		}
		if e.cur == ev.Index {
			return e.flush(dst)
		}
		return dst, nil
	case EventDelta:
		for _, q := range e.queued {
			q.stopped = true
		}
		if dst, err = e.flush(dst); err != nil {
			return dst, err
		}
		stop, err := anthropicStopOut(ev.Stop)
		if err != nil {
			return dst, err
		}
		delta := &object{}
		delta.set("stop_reason", stop)
		if ev.StopSequence != "" {
			delta.set("stop_sequence", ev.StopSequence)
		} else {
			delta.set("stop_sequence", nil)
		}
		var usage any = kv("output_tokens", 0)
		if ev.Usage != nil {
			usage = anthropicUsageOut(*ev.Usage)
		}
		return anthropicFrame(dst, "message_delta", kv("type", "message_delta", "delta", delta, "usage", usage))
	case EventStop:
		e.done = true
		return anthropicFrame(dst, "message_stop", kv("type", "message_stop"))
	case EventError:
		e.done = true
		return append(dst, Frame{Event: "error", Data: Anthropic.EncodeError(errOf(ev))}), nil
	}
	return dst, cannot(anthropicDisplay, "a stream event of type %s", ev.Type)
}
