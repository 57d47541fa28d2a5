package chat

import (
	"encoding/json"
	"strings"
)

// Collector folds a stream's events into the whole Answer they make, as
// a client's SDK does. Its zero value is ready. It is not safe for
// concurrent use.
type Collector struct {
	a      Answer
	blocks map[int]int // block index → its place in a.Content
	args   map[int]*strings.Builder
	err    *Error
	stop   bool
}

// Add folds ev in. An event that does not fit the events before it (a
// piece of a block never begun, a second start) is an error wrapping
// ErrMalformed.
func (c *Collector) Add(ev Event) error {
	if c.blocks == nil {
		c.blocks, c.args = make(map[int]int), make(map[int]*strings.Builder)
	}
	bad := func(what string) error { return malformedf("chat", "stream", "%s at %s", what, ev.Type) }
	switch ev.Type {
	case EventStart:
		c.a.ID, c.a.Model, c.a.Created = ev.ID, ev.Model, ev.Created
		if ev.Usage != nil {
			c.a.Usage = *ev.Usage
		}
	case EventText:
		k, ok := c.blocks[ev.Index]
		if !ok {
			k = len(c.a.Content)
			c.blocks[ev.Index] = k
			c.a.Content = append(c.a.Content, Text(""))
		}
		if c.a.Content[k].Type != PartText {
			return bad("text in a tool call's block")
		}
		c.a.Content[k].Text += ev.Text
	case EventToolStart:
		if _, ok := c.blocks[ev.Index]; ok {
			return bad("a block begun twice")
		}
		c.blocks[ev.Index] = len(c.a.Content)
		c.args[ev.Index] = &strings.Builder{}
		c.a.Content = append(c.a.Content, Part{Type: PartToolCall, ToolCall: &ToolCall{ID: ev.ID, Name: ev.Name}})
	case EventToolArgs:
		b, ok := c.args[ev.Index]
		if !ok {
			return bad("arguments of no tool call")
		}
		b.WriteString(ev.Args)
	case EventBlockStop:
	case EventDelta:
		c.a.Stop, c.a.StopSequence = ev.Stop, ev.StopSequence
		if ev.Usage != nil {
			c.a.Usage = *ev.Usage
		}
	case EventStop:
		c.stop = true
	case EventError:
		c.err = errOf(ev)
	default:
		return bad("an unknown event")
	}
	return nil
}

// Answer returns the answer folded so far, and the stream's error if it
// reported one (nil when not, which does not say that it ended: Done
// does).
func (c *Collector) Answer() (*Answer, *Error) {
	a := c.a
	a.Content = append([]Part(nil), c.a.Content...)
	for i, k := range c.blocks {
		if b, ok := c.args[i]; ok {
			call := *a.Content[k].ToolCall
			call.Args = json.RawMessage(b.String())
			a.Content[k].ToolCall = &call
		}
	}
	return &a, c.err
}

// Done reports whether the stream ended well: EventStop came.
func (c *Collector) Done() bool { return c.stop }
