package chat

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"testing"
)

// FuzzDecodeRequest: no body makes a decoder panic; a request a decoder
// reads and its own encoder writes reads back as the same request; every
// other encoder writes it or says why not, without panicking.
func FuzzDecodeRequest(f *testing.F) {
	for _, c := range requestCases {
		for i, name := range codecNames {
			if _, isErr := isErrWant(c.wire[name]); !isErr {
				f.Add(uint8(i), []byte(c.wire[name]))
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		name := codecNames[int(which)%len(codecNames)]
		r, err := codecs[name].DecodeRequest(body)
		if err != nil {
			return
		}
		for _, other := range codecNames {
			codecs[other].EncodeRequest(r)
		}
		again, err := codecs[name].EncodeRequest(r)
		if err != nil {
			return
		}
		r2, err := codecs[name].DecodeRequest(again)
		if err != nil {
			t.Fatalf("%s: what it wrote does not read back: %v\n%s", name, err, again)
		}
		sortExtras(r)
		sortExtras(r2)
		quoteArgs(r)
		quoteArgs(r2)
		for _, t := range [][]Tool{r.Tools, r2.Tools} { // no parameters: an empty object's
			for i := range t {
				if t[i].Parameters == nil {
					t[i].Parameters = json.RawMessage(`{"type":"object","properties":{}}`)
				}
			}
		}
		if name != "openai" { // an API of turns: messages of one role in a row are one
			r.Messages, r2.Messages = asTurns(r.Messages), asTurns(r2.Messages)
		}
		if a, b := modelJSON(t, r), modelJSON(t, r2); !jsonEqual(emptyAsNull(a), emptyAsNull(b)) {
			t.Fatalf("%s: read back differs:\n%s\n%s", name, a, b)
		}
	})
}

// FuzzDecodeAnswer: no body makes a decoder or an encoder panic.
func FuzzDecodeAnswer(f *testing.F) {
	for _, c := range answerCases {
		for i, name := range codecNames {
			if _, isErr := isErrWant(c.wire[name]); !isErr {
				f.Add(uint8(i), []byte(c.wire[name]))
			}
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		name := codecNames[int(which)%len(codecNames)]
		codecs[name].DecodeError(0, body)
		a, err := codecs[name].DecodeAnswer(body)
		if err != nil {
			return
		}
		for _, other := range codecNames {
			codecs[other].EncodeAnswer(a)
		}
	})
}

// FuzzDecodeStream: no sequence of frames makes a stream decoder, or the
// encoders fed what it read, panic; and what a decoder reads ends, with
// End, in a stop or an error, never in nothing.
func FuzzDecodeStream(f *testing.F) {
	for _, c := range streamCases {
		for i, name := range codecNames {
			var b bytes.Buffer
			for _, fr := range c.wire[name] {
				if fr.Exception {
					b.WriteByte('!')
				}
				b.WriteString(fr.Event)
				b.WriteByte(1)
				b.Write(fr.Data)
				b.WriteByte(0)
			}
			f.Add(uint8(i), b.Bytes())
		}
	}
	f.Fuzz(func(t *testing.T, which uint8, stream []byte) {
		name := codecNames[int(which)%len(codecNames)]
		dec := codecs[name].NewStreamDecoder()
		var evs []Event
		for _, raw := range bytes.Split(stream, []byte{0}) {
			event, data, _ := bytes.Cut(raw, []byte{1})
			exception := bytes.HasPrefix(event, []byte("!"))
			fr := Frame{Event: string(bytes.TrimPrefix(event, []byte("!"))), Data: data, Exception: exception}
			var err error
			if evs, err = dec.Decode(evs, fr); err != nil {
				return
			}
		}
		evs = dec.End(evs)
		if last := evs[len(evs)-1].Type; last != EventStop && last != EventError {
			t.Fatalf("%s: the events end in %s", name, last)
		}
		for _, other := range codecNames {
			enc := codecs[other].NewStreamEncoder(&Request{IncludeUsage: true})
			var out []Frame
			for _, ev := range evs {
				var err error
				if out, err = enc.Encode(out, ev); err != nil {
					break
				}
			}
		}
		var c Collector
		for _, ev := range evs {
			if c.Add(ev) != nil {
				break
			}
		}
		c.Answer()
	})
}

// emptyAsNull returns the JSON b with every empty array and object made
// null: the model says "none" both ways.
func emptyAsNull(b []byte) []byte {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return b
	}
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case []any:
			if len(x) == 0 {
				return nil
			}
			for i := range x {
				x[i] = walk(x[i])
			}
		case map[string]any:
			if len(x) == 0 {
				return nil
			}
			for k := range x {
				x[k] = walk(x[k])
			}
		}
		return x
	}
	out, _ := json.Marshal(walk(v))
	return out
}

// sortExtras orders r's extras, whose order says nothing.
func sortExtras(r *Request) {
	slices.SortStableFunc(r.Extras, func(a, b Extra) int {
		return cmp.Or(cmp.Compare(a.In, b.In), cmp.Compare(a.Name, b.Name), cmp.Compare(a.Feature, b.Feature))
	})
}

// asTurns merges msgs of one role in a row, tool results first, as the
// APIs of turns read them.
func asTurns(msgs []Message) []Message {
	var out []Message
	for _, m := range msgs {
		if len(out) == 0 || out[len(out)-1].Role != m.Role {
			out = append(out, Message{Role: m.Role, Name: m.Name})
		}
		last := &out[len(out)-1]
		last.Parts = append(last.Parts, m.Parts...)
	}
	for i := range out {
		slices.SortStableFunc(out[i].Parts, func(a, b Part) int {
			return cmp.Compare(boolInt(a.Type != PartToolResult), boolInt(b.Type != PartToolResult))
		})
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// quoteArgs makes the tool arguments of r that are not JSON (OpenAI's
// string may hold anything) a JSON string, so that r marshals.
func quoteArgs(r *Request) {
	for _, m := range r.Messages {
		for i, p := range m.Parts {
			if p.Type == PartToolCall && !json.Valid(p.ToolCall.Args) {
				c := *p.ToolCall
				c.Args = rawString(string(c.Args))
				m.Parts[i].ToolCall = &c
			}
		}
	}
}
