package chat

import (
	"testing"
)

// Streams whose shape the field's gateways are known to mistranslate,
// read by their own API's decoder, written by every other API's encoder,
// read back by that API's decoder, and folded as a client would.
func TestStreamsKnownToBreak(t *testing.T) {
	chunk := func(delta, finish string) Frame {
		return Frame{Data: []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}]}`)}
	}
	for _, tt := range []struct {
		name   string
		from   string
		frames []Frame
		want   func(t *testing.T, a *Answer)
	}{
		{"openai: text and a tool call in one delta", "openai", []Frame{
			chunk(`{"role":"assistant","content":"Let me check.","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"ci"}}]}`, "null"),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"ty\":\"Paris\"}"}}]}`, "null"),
			chunk(`{}`, `"tool_calls"`),
			{Data: []byte(`{"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":4,"total_tokens":13}}`)},
			{Data: []byte(`[DONE]`)},
		}, func(t *testing.T, a *Answer) {
			if len(a.Content) != 2 || a.Content[0].Text != "Let me check." || a.Content[1].ToolCall == nil ||
				a.Content[1].ToolCall.Name != "get_weather" || !jsonEqual(a.Content[1].ToolCall.Args, []byte(`{"city":"Paris"}`)) {
				t.Errorf("content %s", modelJSON(t, a.Content))
			}
		}},
		{"openai: two tool calls interleaved", "openai", []Frame{
			chunk(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"a","arguments":""}},{"index":1,"id":"call_2","type":"function","function":{"name":"b","arguments":""}}]}`, "null"),
			chunk(`{"tool_calls":[{"index":1,"function":{"arguments":"{\"y\":"}},{"index":0,"function":{"arguments":"{\"x\":"}}]}`, "null"),
			chunk(`{"tool_calls":[{"index":0,"function":{"arguments":"1}"}},{"index":1,"function":{"arguments":"2}"}}]}`, "null"),
			chunk(`{}`, `"tool_calls"`),
			{Data: []byte(`[DONE]`)},
		}, func(t *testing.T, a *Answer) {
			if len(a.Content) != 2 || a.Content[0].ToolCall.Name != "a" || string(a.Content[0].ToolCall.Args) != `{"x":1}` ||
				a.Content[1].ToolCall.Name != "b" || string(a.Content[1].ToolCall.Args) != `{"y":2}` {
				t.Errorf("content %s", modelJSON(t, a.Content))
			}
		}},
		{"anthropic: error after message_start", "anthropic", []Frame{
			{Event: "message_start", Data: []byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"usage":{"input_tokens":9,"output_tokens":1}}}`)},
			{Event: "error", Data: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
		}, nil},
	} {
		for _, to := range codecNames {
			t.Run(tt.name+"/"+to, func(t *testing.T) {
				dec := codecs[tt.from].NewStreamDecoder()
				enc := codecs[to].NewStreamEncoder(&Request{IncludeUsage: true})
				back := codecs[to].NewStreamDecoder()
				var col Collector
				for _, f := range tt.frames {
					evs, err := dec.Decode(nil, f)
					if err != nil {
						t.Fatal(err)
					}
					for _, ev := range evs {
						frs, err := enc.Encode(nil, ev)
						if err != nil {
							t.Fatal(err)
						}
						for _, fr := range frs {
							evs2, err := back.Decode(nil, fr)
							if err != nil {
								t.Fatalf("%v: %s", err, fr.Data)
							}
							for _, e := range evs2 {
								if err := col.Add(e); err != nil {
									t.Fatal(err)
								}
							}
						}
					}
				}
				for _, e := range back.End(nil) {
					col.Add(e)
				}
				a, e := col.Answer()
				if tt.want == nil {
					if e == nil || col.Done() {
						t.Errorf("the error became %+v, done %v; want the error", a, col.Done())
					}
					return
				}
				if e != nil || !col.Done() {
					t.Fatalf("error %v, done %v", e, col.Done())
				}
				tt.want(t, a)
			})
		}
	}
}
