package chat

import (
	"encoding/json"
	"slices"
	"strings"
)

// ConverseStream's events, each the JSON payload of an AWS event-stream
// frame named by its :event-type: messageStart; for each content block
// contentBlockStart (a tool call's id and name; a text block has none),
// contentBlockDelta (text, or a piece of toolUse.input) and
// contentBlockStop; messageStop (the stopReason); metadata (the usage),
// which ends the stream. An error is an exception frame
// (throttlingException, modelStreamErrorException, …) holding
// {"message": …}.

func (bedrockCodec) NewStreamDecoder() StreamDecoder { return &bedrockDecoder{} }

type bedrockDecoder struct {
	started bool
	open    []int
	stopped bool // messageStop came
	stop    StopReason
	done    bool
}

// bedrockEvent is a ConverseStream event's payload as the decoder reads
// it.
type bedrockEvent struct {
	ContentBlockIndex *int `json:"contentBlockIndex"`
	Start             *struct {
		ToolUse *struct {
			ToolUseID string `json:"toolUseId"`
			Name      string `json:"name"`
		} `json:"toolUse"`
	} `json:"start"`
	Delta      map[string]json.RawMessage `json:"delta"`
	StopReason string                     `json:"stopReason"`
	Usage      *bedrockUsage              `json:"usage"`
}

func (d *bedrockDecoder) Decode(dst []Event, f Frame) ([]Event, error) {
	if d.done {
		return dst, nil
	}
	if f.Exception {
		d.done = true
		e := Bedrock.DecodeError(0, f.Data)
		e.Type = f.Event
		e.Status = bedrockStatuses[strings.ToLower(f.Event)]
		if e.Status == 0 {
			e.Status = 500
		}
		return append(dst, Event{Type: EventError, Err: e}), nil
	}
	var ev bedrockEvent
	if err := json.Unmarshal(f.Data, &ev); err != nil {
		return dst, malformed(bedrockDisplay, "stream event", err)
	}
	if !d.started {
		if f.Event != "messageStart" {
			return dst, malformedf(bedrockDisplay, "stream event", "%s before messageStart", f.Event)
		}
		d.started = true
		return append(dst, Event{Type: EventStart}), nil
	}
	index := func() (int, error) {
		if ev.ContentBlockIndex == nil || *ev.ContentBlockIndex < 0 {
			return 0, malformedf(bedrockDisplay, "stream event", "%s without contentBlockIndex", f.Event)
		}
		return *ev.ContentBlockIndex, nil
	}
	switch f.Event {
	case "contentBlockStart":
		i, err := index()
		if err != nil {
			return dst, err
		}
		if ev.Start == nil || ev.Start.ToolUse == nil {
			return dst, notInModel(bedrockDisplay, "stream's contentBlockStart that is not a toolUse")
		}
		if slices.Contains(d.open, i) {
			return dst, malformedf(bedrockDisplay, "stream event", "block %d begun twice", i)
		}
		d.open = append(d.open, i)
		return append(dst, Event{Type: EventToolStart, Index: i, ID: ev.Start.ToolUse.ToolUseID, Name: ev.Start.ToolUse.Name}), nil
	case "contentBlockDelta":
		i, err := index()
		if err != nil {
			return dst, err
		}
		if len(ev.Delta) != 1 {
			return dst, malformedf(bedrockDisplay, "stream event", "a delta of %d members", len(ev.Delta))
		}
		for k, v := range ev.Delta {
			switch k {
			case "text":
				var s string
				if err := unmarshal(v, &s, "delta.text"); err != nil {
					return dst, malformed(bedrockDisplay, "stream event", err)
				}
				if !slices.Contains(d.open, i) {
					d.open = append(d.open, i)
				}
				if s != "" {
					dst = append(dst, Event{Type: EventText, Index: i, Text: s})
				}
			case "toolUse":
				var tu struct {
					Input string `json:"input"`
				}
				if err := unmarshal(v, &tu, "delta.toolUse"); err != nil {
					return dst, malformed(bedrockDisplay, "stream event", err)
				}
				if !slices.Contains(d.open, i) {
					return dst, malformedf(bedrockDisplay, "stream event", "toolUse input of block %d, which is not open", i)
				}
				if tu.Input != "" {
					dst = append(dst, Event{Type: EventToolArgs, Index: i, Args: tu.Input})
				}
			default:
				return dst, notInModel(bedrockDisplay, "stream's %s delta", k)
			}
		}
		return dst, nil
	case "contentBlockStop":
		i, err := index()
		if err != nil {
			return dst, err
		}
		k := slices.Index(d.open, i)
		if k < 0 {
			return dst, malformedf(bedrockDisplay, "stream event", "block %d stopped but not open", i)
		}
		d.open = slices.Delete(d.open, k, k+1)
		return append(dst, Event{Type: EventBlockStop, Index: i}), nil
	case "messageStop":
		stop, ok := bedrockStop(ev.StopReason)
		if !ok {
			return dst, notInModel(bedrockDisplay, "stopReason %q", ev.StopReason)
		}
		d.stop, d.stopped = stop, true
		for _, i := range d.open {
			dst = append(dst, Event{Type: EventBlockStop, Index: i})
		}
		d.open = nil
		return dst, nil
	case "metadata":
		if !d.stopped {
			return dst, malformedf(bedrockDisplay, "stream event", "metadata before messageStop")
		}
		d.done = true
		e := Event{Type: EventDelta, Stop: d.stop}
		if ev.Usage != nil {
			u := ev.Usage.usage()
			e.Usage = &u
		}
		return append(dst, e, Event{Type: EventStop}), nil
	}
	return dst, notInModel(bedrockDisplay, "stream event %q", f.Event)
}

func (d *bedrockDecoder) End(dst []Event) []Event {
	if d.done {
		return dst
	}
	d.done = true
	return append(dst, Event{Type: EventError, Err: cutError(bedrockName)})
}

// Encoding a stream.

func (bedrockCodec) NewStreamEncoder(*Request) StreamEncoder {
	return &bedrockEncoder{blocks: make(map[int]int)}
}

type bedrockEncoder struct {
	started bool
	done    bool
	next    int
	blocks  map[int]int // chat block → Bedrock block, the last begun for it
	open    []int       // the chat blocks whose Bedrock block is open
	tools   []int       // the chat blocks that are tool calls
}

func bedrockFrame(dst []Frame, name string, v any) ([]Frame, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return dst, err
	}
	return append(dst, Frame{Event: name, Data: b}), nil
}

// stopBlock stops the Bedrock block of chat block i.
func (e *bedrockEncoder) stopBlock(dst []Frame, i int) ([]Frame, error) {
	k := slices.Index(e.open, i)
	if k < 0 {
		return dst, nil
	}
	e.open = slices.Delete(e.open, k, k+1)
	return bedrockFrame(dst, "contentBlockStop", kv("contentBlockIndex", e.blocks[i]))
}

// begin numbers a new Bedrock block for chat block i.
func (e *bedrockEncoder) begin(i int) int {
	e.blocks[i] = e.next
	e.next++
	e.open = append(e.open, i)
	return e.blocks[i]
}

// exceptionName is the :exception-type of an error frame.
func exceptionName(status int) string {
	var name string
	switch kindOf(status) {
	case kindRateLimit:
		name = "throttlingException"
	case kindUnavailable, kindOverloaded:
		name = "serviceUnavailableException"
	case kindInvalid, kindAuth, kindPermission, kindNotFound, kindTooLarge:
		name = "validationException"
	case kindServer:
		if status == 500 {
			name = "internalServerException"
		} else {
			name = "modelStreamErrorException"
		}
	default:
		name = "modelStreamErrorException"
	}
	return name
}

func (e *bedrockEncoder) Encode(dst []Frame, ev Event) ([]Frame, error) {
	if e.done {
		return dst, nil
	}
	var err error
	if !e.started && ev.Type != EventError {
		e.started = true
		if dst, err = bedrockFrame(dst, "messageStart", kv("role", "assistant")); err != nil {
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
		if slices.Contains(e.tools, ev.Index) {
			return dst, cannot(bedrockDisplay, "text in block %d, a tool call", ev.Index)
		}
		if !slices.Contains(e.open, ev.Index) {
			e.begin(ev.Index)
		}
		return bedrockFrame(dst, "contentBlockDelta", kv("contentBlockIndex", e.blocks[ev.Index], "delta", kv("text", ev.Text)))
	case EventToolStart:
		if _, ok := e.blocks[ev.Index]; ok {
			return dst, cannot(bedrockDisplay, "block %d begun twice", ev.Index)
		}
		e.tools = append(e.tools, ev.Index)
		return bedrockFrame(dst, "contentBlockStart", kv("contentBlockIndex", e.begin(ev.Index),
			"start", kv("toolUse", kv("toolUseId", ev.ID, "name", ev.Name))))
	case EventToolArgs:
		if !slices.Contains(e.tools, ev.Index) || !slices.Contains(e.open, ev.Index) {
			return dst, cannot(bedrockDisplay, "arguments of block %d, which is no open tool call", ev.Index)
		}
		if ev.Args == "" {
			return dst, nil
		}
		return bedrockFrame(dst, "contentBlockDelta", kv("contentBlockIndex", e.blocks[ev.Index],
			"delta", kv("toolUse", kv("input", ev.Args))))
	case EventBlockStop:
		return e.stopBlock(dst, ev.Index)
	case EventDelta:
		for len(e.open) > 0 {
			if dst, err = e.stopBlock(dst, e.open[0]); err != nil {
				return dst, err
			}
		}
		stop, err := bedrockStopOut(ev.Stop)
		if err != nil {
			return dst, err
		}
		if dst, err = bedrockFrame(dst, "messageStop", kv("stopReason", stop)); err != nil {
			return dst, err
		}
		var u Usage
		if ev.Usage != nil {
			u = *ev.Usage
		}
		return bedrockFrame(dst, "metadata", kv("usage", bedrockUsageOut(u), "metrics", kv("latencyMs", 0)))
	case EventStop:
		e.done = true
		return dst, nil
	case EventError:
		e.done = true
		err := errOf(ev)
		return append(dst, Frame{Event: exceptionName(err.Status), Data: Bedrock.EncodeError(err), Exception: true}), nil
	}
	return dst, cannot(bedrockDisplay, "a stream event of type %s", ev.Type)
}
