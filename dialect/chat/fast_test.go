package chat

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"testing"
)

// The fast reads and writes (read.go, stream_read.go, append.go) are held
// to encoding/json, the old way, over every body and frame of the test
// corpora, inputs made to trip them, and what the fuzzer finds: a fast
// read either gives what encoding/json gives or gives way to it; a fast
// write gives json.Marshal's bytes.

// trickyObjects are bodies the fast reads must refuse or read as
// encoding/json does: keys folded or escaped, given twice, values of the
// wrong type, escapes and invalid UTF-8 in strings, white space, several
// choices or tool calls, nulls, numbers that are no int.
var trickyObjects = []string{
	`{"ID":"x","choices":[]}`,
	`{"id":"x","Id":"y"}`,
	`{"\u0069d":"x"}`,
	`{"id":"a","id":"b"}`,
	`{"id":"a\nb","model":"m\u00e9\"","created":1}`,
	"{\"id\":\"a\xffb\"}",
	"{\"id\xff\":1}",
	`{"id":1}`,
	`{"created":1.5}`,
	`{"created":1e3}`,
	`{"created":-0}`,
	`{"created":99999999999999999999}`,
	`{"created":"1"}`,
	` {"id":"x"} `,
	`{"id":"x"} {}`,
	`{"id":"x",}`,
	`null`,
	`[]`,
	`{}`,
	`{"choices":null,"usage":null,"error":null}`,
	`{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"a"}}, 1]}`,
	`{"choices":[null]}`,
	`{"choices":[1]}`,
	`{"choices":[{"index":"0"}]}`,
	`{"choices":[{"index":0,"delta":null,"logprobs":{"content":[]},"finish_reason":null}]}`,
	`{"choices":[{"index":0,"Delta":{"content":"a"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":null,"refusal":"no","tool_calls":null}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c","type":"function","function":{"name":"f","arguments":""}},{"index":1,"id":"d","type":"function","function":{"name":"g","arguments":""}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":null,"function":null}]}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}","Name":"f"}}]}}]}`,
	`{"choices":[{"index":0,"delta":{"tool_calls":[]}}]}`,
	`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3,"prompt_tokens_details":{"cached_tokens":1}}}`,
	`{"usage":{"prompt_tokens":"1"}}`,
	`{"error":{"message":"x"}}`,
	`[{"role":"user","content":null}]`,
	`[{"role":"user","Content":"x"},{"role":"assistant","content":"y","role":"user"}]`,
	`[null]`,
	`[{"role":"user","content":[{"type":"text","text":"a"}]},{"role":"assistant","content":"b","extra":1}]`,
	`{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}`,
	`{"type":"image_url","image_url":{"URL":"https://x/y.png","detail":null},"Text":"a"}`,
	`{"type":"image_url","image_url":"https://x/y.png"}`,
	`{"type":"text","text":"a","cache_control":{"type":"ephemeral"},"input":null}`,
	`{"type":"text","text":"a","id":"x","id":"y"}`,
	`{"type":"tool_use","id":"t","name":"f","input":{"a":[1,{"b":null}]},"cache_control":null}`,
	`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"a"}}`,
	`{"type":"content_block_delta","index":-1,"delta":{"type":"text_delta","text":"a"}}`,
	`{"type":"content_block_delta","index":null,"delta":null}`,
	`{"type":"content_block_delta","Index":0,"delta":{"type":"text_delta","TEXT":"a"}}`,
	`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}`,
	`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":3}}}`,
	`{"type":"message_start","message":5}`,
	`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}`,
	`{"type":"message_delta","delta":{"stop_reason":7}}`,
	"{\"type\":\"\u212a\"}",
	`{"type":"x","ſtop":1}`,
	`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":5,"temperature":0.5,"stream":true}`,
	`{"max_tokens":5.0,"stream":"true","model":null}`,
	`{"type":"text","text":"Hello \"there\"","cache_control":{"type":"ephemeral"}}`,
	`{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city": "Paris"}}`,
	`{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"18C"}],"is_error":true}`,
	`{"type":"tool_result","tool_use_id":"toolu_1","content":"18C","is_error":null,"source":null}`,
	`{"type":"text","text":5}`,
	`{"type":"text","Text":null,"text":"a"}`,
	`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBO"}}`,
	`{"id":"msg_1","type":"message","role":"assistant","model":"c","content":[{"type":"text","text":"a"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":1,"output_tokens":2}}`,
	`{"id":"msg_1","type":"message","content":null,"stop_reason":null,"usage":null,"Model":"x"}`,
	`{"id":"msg_1","type":"message","content":{},"stop_sequence":"END"}`,
	// Answers whose blocks a fast read gives up on, one after another and
	// between plain ones: an escape, a member given twice, a member of
	// no block, a block that is no object, a tool call's arguments.
	`{"id":"m","type":"message","content":[{"type":"text","text":"a\nb"},{"type":"text","text":"c"},{"type":"tool_use","id":"t1","name":"f","input":{"x":[1,{"y":2}]}}]}`,
	`{"id":"m","type":"message","content":[{"type":"text","text":"a","text":"b"},{"type":"text","text":"c"}]}`,
	`{"id":"m","type":"message","content":[{"type":"text","text":"a","citations":null},{"type":"text","text":"c","citations":[{"x":1}]},{"type":"text","text":"d"}]}`,
	`{"id":"m","type":"message","content":[{"type":"text","text":"a"},"b",{"type":"text","text":"c"}]}`,
	`{"id":"m","type":"message","content":[{"type":"tool_use","id":"t1","name":"f","input":null},{"type":"thinking","thinking":"x"}]}`,
	`{"role":"user","content":"hi","name":"ann"}`,
	`{"role":"assistant","content":null,"refusal":"no","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
	`{"role":"assistant","refusal":null,"tool_calls":null}`,
	`{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"18C"}]}`,
	`{"role":"assistant","tool_calls":[{"id":5}]}`,
	`{"role":"user","Role":null,"content":"x"}`,
	`{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"},"strict":true}}`,
	`{"type":"function","function":{"name":"f","strict":false,"parameters":null}}`,
	`{"type":"function","function":null}`, `{"type":"web_search","function":{"strict":1}}`,
}

// corpus returns every body and frame of the test corpora and the tricky
// objects.
func corpus() [][]byte {
	var out [][]byte
	for _, s := range trickyObjects {
		out = append(out, []byte(s))
	}
	for _, c := range streamCases {
		for _, frames := range c.wire {
			for _, f := range frames {
				out = append(out, f.Data)
			}
		}
	}
	for _, c := range requestCases {
		for _, w := range c.wire {
			out = append(out, []byte(w))
			out = append(out, nested([]byte(w))...)
		}
	}
	for _, c := range answerCases {
		for _, w := range c.wire {
			out = append(out, []byte(w))
			out = append(out, nested([]byte(w))...)
		}
	}
	return out
}

// nested returns a body's messages, content blocks and tools, as
// written.
func nested(body []byte) [][]byte {
	var r struct {
		Messages []json.RawMessage
		Content  json.RawMessage
		Tools    []json.RawMessage
	}
	json.Unmarshal(body, &r)
	var out [][]byte
	blocks := func(v json.RawMessage) {
		var bs []json.RawMessage
		json.Unmarshal(v, &bs)
		for _, b := range bs {
			out = append(out, b)
		}
	}
	for _, t := range r.Tools {
		out = append(out, t)
	}
	blocks(r.Content)
	for _, m := range r.Messages {
		out = append(out, m)
		var c struct{ Content json.RawMessage }
		json.Unmarshal(m, &c)
		blocks(c.Content)
	}
	return out
}

// checkFastRead fails t where a fast read of data differs from
// encoding/json's.
func checkFastRead(t *testing.T, data []byte) {
	t.Helper()
	var s openAIScratch
	var fast openAIChunkIn
	if fast.readFast(data, &s) {
		var slow openAIChunkIn
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("openai chunk read fast, refused by encoding/json (%v): %q", err, data)
		}
		if !reflect.DeepEqual(emptyChoices(fast), emptyChoices(slow)) {
			t.Fatalf("openai chunk %q:\nfast %+v\nslow %+v", data, fast, slow)
		}
	}
	var as anthropicScratch
	var fastA anthropicEvent
	if fastA.readFast(data, &as) {
		var slow anthropicEvent
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("anthropic event read fast, refused by encoding/json (%v): %q", err, data)
		}
		if !reflect.DeepEqual(fastA, slow) {
			t.Fatalf("anthropic event %q:\nfast %+v\nslow %+v", data, fastA, slow)
		}
	}
	if ms, ok := membersFast(data); ok {
		slow, err := membersSlow(data)
		if err != nil {
			t.Fatalf("members read fast, refused by encoding/json (%v): %q", err, data)
		}
		if len(ms) == 0 {
			ms = nil
		}
		if !reflect.DeepEqual(ms, slow) {
			t.Fatalf("members of %q:\nfast %q\nslow %q", data, ms, slow)
		}
	}
	if json.Valid(data) { // a part of a text already checked
		if ms, ok := walkMembers(bytes.Clone(data), false); ok {
			slow, err := membersSlow(data)
			if err != nil {
				t.Fatalf("members read fast, refused by encoding/json (%v): %q", err, data)
			}
			if len(ms) == 0 {
				ms = nil
			}
			if !reflect.DeepEqual(ms, slow) {
				t.Fatalf("members of %q:\nowned %q\nslow %q", data, ms, slow)
			}
		}
	}
	if json.Valid(data) {
		var fastB anthropicBlockIn
		if typ, given, ok := fastB.readFast(bytes.Clone(data)); ok {
			var slow anthropicBlockIn
			var kind struct{ Type string }
			if err := json.Unmarshal(data, &slow); err != nil || json.Unmarshal(data, &kind) != nil {
				t.Fatalf("content block read fast, refused by encoding/json (%v): %q", err, data)
			}
			ms, _ := membersSlow(data)
			var want uint16
			for _, m := range ms {
				if !isNull(m.Value) {
					want |= 1 << slices.Index(anthropicBlockFields, m.Key)
				}
			}
			if !reflect.DeepEqual(fastB, slow) || typ != kind.Type || given != want {
				t.Fatalf("content block %q:\nfast %q %b %+v\nslow %q %b %+v", data, typ, given, fastB, kind.Type, want, slow)
			}
		}
	}
	if json.Valid(data) {
		var fastP openAIPartIn
		if fastP.readFast(bytes.Clone(data)) {
			var slow openAIPartIn
			if err := json.Unmarshal(data, &slow); err != nil {
				t.Fatalf("content part read fast, refused by encoding/json (%v): %q", err, data)
			}
			if fastP != slow {
				t.Fatalf("content part %q:\nfast %+v\nslow %+v", data, fastP, slow)
			}
		}
	}
	if json.Valid(data) {
		var fastMs []anthropicMessageIn
		if readAnthropicMessages(bytes.Clone(data), &fastMs) {
			var slow []anthropicMessageIn
			if err := json.Unmarshal(data, &slow); err != nil {
				t.Fatalf("messages read fast, refused by encoding/json (%v): %q", err, data)
			}
			if !reflect.DeepEqual(fastMs, slow) {
				t.Fatalf("messages %q:\nfast %q\nslow %q", data, fastMs, slow)
			}
		}
	}
	var borrowed anthropicMessage
	if borrowed.readFast(data, true, true) { // an answer's blocks read in one pass, as DecodeAnswer reads them
		var slow anthropicMessage
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("anthropic answer read fast, refused by encoding/json (%v): %q", err, data)
		}
		fastA, fastErr := borrowed.answer()
		slowA, slowErr := slow.answer()
		if (fastErr == nil) != (slowErr == nil) || !reflect.DeepEqual(fastA, slowA) {
			t.Fatalf("anthropic answer %q:\nin one pass %+v, %v\nblock by block %+v, %v", data, fastA, fastErr, slowA, slowErr)
		}
	}
	var fastM anthropicMessage
	if fastM.readFast(data, true, false) {
		var slow anthropicMessage
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("anthropic message read fast, refused by encoding/json (%v): %q", err, data)
		}
		if !reflect.DeepEqual(fastM, slow) {
			t.Fatalf("anthropic message %q:\nfast %+v\nslow %+v", data, fastM, slow)
		}
	}
	var fastT openAIToolIn
	if json.Valid(data) && fastT.readFast(data) { // a part of a text already checked
		var slow openAIToolIn
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("openai tool read fast, refused by encoding/json (%v): %q", err, data)
		}
		if !reflect.DeepEqual(fastT, slow) {
			t.Fatalf("openai tool %q:\nfast %+v\nslow %+v", data, fastT, slow)
		}
	}
	var fastO openAIAnswerIn
	if fastO.readFast(data) {
		var slow openAIAnswerIn
		if err := json.Unmarshal(data, &slow); err != nil {
			t.Fatalf("openai answer read fast, refused by encoding/json (%v): %q", err, data)
		}
		if !reflect.DeepEqual(fastO, slow) {
			t.Fatalf("openai answer %q:\nfast %+v\nslow %+v", data, fastO, slow)
		}
	}
	if ms, ok := membersFast(data); ok {
		var fast openAIMessage
		if fast.fill(ms) {
			var slow openAIMessage
			if err := json.Unmarshal(data, &slow); err != nil {
				t.Fatalf("openai message read fast, refused by encoding/json (%v): %q", err, data)
			}
			if !reflect.DeepEqual(fast, slow) {
				t.Fatalf("openai message %q:\nfast %+v\nslow %+v", data, fast, slow)
			}
		}
	}
	// Each member's value, and data itself, into the plain types.
	values := [][]byte{data}
	if ms, err := membersSlow(data); err == nil {
		for _, m := range ms {
			values = append(values, m.Value)
		}
	}
	for _, v := range values {
		for _, p := range []func() any{
			func() any { return new(string) }, func() any { return new(bool) },
			func() any { return new(int) }, func() any { return new(int64) },
			func() any { return new([]json.RawMessage) },
		} {
			fast, slow := p(), p()
			if unmarshalFast(v, fast) {
				if err := json.Unmarshal(v, slow); err != nil {
					t.Fatalf("%q read fast into %T, refused by encoding/json: %v", v, fast, err)
				}
				if !reflect.DeepEqual(fast, slow) {
					t.Fatalf("%q into %T: fast %v, slow %v", v, fast, reflect.ValueOf(fast).Elem(), reflect.ValueOf(slow).Elem())
				}
			}
		}
	}
}

// emptyChoices makes an empty list of choices nil: the fast read's and
// encoding/json's differ only there, and the decoder reads only their
// number.
func emptyChoices(c openAIChunkIn) openAIChunkIn {
	if len(c.Choices) == 0 {
		c.Choices = nil
	}
	return c
}

// TestFastReadIsEncodingJSONs: over the corpora, every fast read gives
// what encoding/json gives; and the hot shapes are read fast, not handed
// over.
func TestFastReadIsEncodingJSONs(t *testing.T) {
	for _, data := range corpus() {
		checkFastRead(t, data)
	}
	var s openAIScratch
	var c openAIChunkIn
	for _, f := range []Frame{oaText("a\"b"), oaToolArgs(0, `{"a":`), oaRole, oaUsageChunk(oaUsage)} {
		if !c.readFast(f.Data, &s) {
			t.Errorf("openai chunk not read fast: %s", f.Data)
		}
	}
	var as anthropicScratch
	var ev anthropicEvent
	for _, f := range []Frame{anText(0, "a"), anArgs(1, `{"a":`), anStart(`{"input_tokens":3}`), anStop(0), anEnd} {
		if !ev.readFast(f.Data, &as) {
			t.Errorf("anthropic event not read fast: %s", f.Data)
		}
	}
	if _, ok := membersFast([]byte(requestCases[2].wire["openai"])); !ok {
		t.Errorf("a request's members not read fast")
	}
	for _, w := range []string{`{"type":"text","text":"hi"}`, `{"type":"image_url","image_url":{"url":"https://x/y.png","detail":"low"}}`} {
		var p openAIPartIn
		if !p.readFast([]byte(w)) {
			t.Errorf("openai content part not read fast: %s", w)
		}
	}
	var tool openAIToolIn
	if w := `{"type":"function","function":{"name":"f","parameters":{"type":"object"},"strict":true}}`; !tool.readFast([]byte(w)) {
		t.Errorf("openai tool not read fast: %s", w)
	}
	for _, c := range answerCases {
		var a openAIAnswerIn
		if w, ok := c.wire["openai"]; ok && json.Valid([]byte(w)) && !a.readFast([]byte(w)) {
			t.Errorf("openai answer not read fast: %s", w)
		}
		var m anthropicMessage
		if w, ok := c.wire["anthropic"]; ok && json.Valid([]byte(w)) && !m.readFast([]byte(w), true, true) {
			t.Errorf("anthropic answer not read fast: %s", w)
		}
	}
}

// FuzzFastRead: whatever the fuzzer makes, a fast read gives what
// encoding/json gives.
func FuzzFastRead(f *testing.F) {
	for _, data := range corpus() {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkFastRead(t, data) })
}

// trickyStrings are strings json.Marshal escapes.
var trickyStrings = []string{
	"", "plain", "a\"b\\c", "\b\f\n\r\t\x00\x1f\x7f", "<b>&amp;</b>", "\u2028\u2029", "é日本\U0001F600",
	"bad \xff\xfe utf-8", "\xe2\x80", "\xed\xa0\x80", "a/b",
}

// refJSON is v as the old writer wrote it, every value by json.Marshal,
// an object's members in order, without the fast writer.
func refJSON(v any) ([]byte, error) {
	switch v := v.(type) {
	case *object:
		if v.err != nil {
			return nil, v.err
		}
		b := []byte{'{'}
		for i, p := range v.members {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, rawString(p.key)...)
			b = append(b, ':')
			m, err := refJSON(p.val)
			if err != nil {
				return nil, err
			}
			b = append(b, m...)
		}
		return append(b, '}'), nil
	case []any:
		if v == nil {
			return []byte("null"), nil
		}
		b := []byte{'['}
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			m, err := refJSON(e)
			if err != nil {
				return nil, err
			}
			b = append(b, m...)
		}
		return append(b, ']'), nil
	}
	return json.Marshal(v)
}

// mustRef is refJSON of a value that marshals.
func mustRef(v any) json.RawMessage {
	b, err := refJSON(v)
	if err != nil {
		panic(err)
	}
	return b
}

// checkAppend fails t where a fast write of v differs from the old
// writer's.
func checkAppend(t *testing.T, v any) {
	t.Helper()
	want, err := refJSON(v)
	got, ok := appendValue([]byte("x"), v)
	if ok != (err == nil) {
		t.Fatalf("%#v: appended %v, json.Marshal's error %v", v, ok, err)
	}
	if ok && !bytes.Equal(got[1:], want) {
		t.Fatalf("%#v:\nfast %s\nslow %s", v, got[1:], want)
	}
}

// TestAppendIsMarshals: the values the converters write, and objects of
// them, are json.Marshal's bytes; an object that does not marshal says
// why as before.
func TestAppendIsMarshals(t *testing.T) {
	for _, s := range trickyStrings {
		checkAppend(t, s)
		checkAppend(t, kv("k"+s, s, "n", []any{s, 1, int64(-2), true, nil}, "s", []string{s}))
	}
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1.5, 0.1, 1e-6, 1e-7, 123456789, 1e20, 1e21, 1.5e-300, math.MaxFloat64,
		math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1)} {
		checkAppend(t, f)
	}
	for _, raw := range []string{`{"a":1}`, `{ "a": 1 }`, `{"a":"x y"}`, `"<"`, `{"a":"\u003c"}`, `[1, 2]`, "\"\u2028\"",
		`{"a":"\"}  "}`, `nope`, `{"a":1}}`, ``, `null`} {
		checkAppend(t, json.RawMessage(raw))
		checkAppend(t, kv("raw", json.RawMessage(raw)))
	}
	checkAppend(t, json.RawMessage(nil))
	checkAppend(t, []any(nil))
	checkAppend(t, []string(nil))
	checkAppend(t, struct{}{})
	checkAppend(t, StopEndTurn)
	for _, u := range []Usage{{}, {Input: 1, Output: 2}, {Input: -3, CacheRead: 1 << 40, CacheWrite: 7, Output: -1}} {
		checkAppend(t, anthropicUsageOut(u))
		checkAppend(t, kv("usage", anthropicUsageOut(u)))
		checkAppend(t, openAIUsageOut(u))
		checkAppend(t, kv("usage", openAIUsageOut(u)))
	}
	n := int64(5)
	checkAppend(t, &anthropicUsage{})
	checkAppend(t, &anthropicUsage{OutputTokens: &n})
	checkAppend(t, &anthropicUsage{CacheReadInputTokens: &n, OutputTokens: &n})
	checkAppend(t, (*anthropicUsage)(nil))
	checkAppend(t, &openAIUsage{PromptTokens: 1, TotalTokens: -1})
	checkAppend(t, (*openAIUsage)(nil))
	checkAppend(t, map[string]int{"b": 1, "a": 2})
	checkAppend(t, kv("a", kv("b", kv("c", []any{kv("d", 1.5)}))))

	bad := kv("a", 1, "b", math.Inf(1))
	_, err := bad.MarshalJSON()
	_, slowErr := bad.marshalSlow()
	if err == nil || err.Error() != slowErr.Error() {
		t.Errorf("an object that does not marshal: %v, want %v", err, slowErr)
	}
}

// FuzzAppend: a string, a raw value and a float are written as
// json.Marshal writes them; the stream frames written by hand are the
// frames encoding/json writes.
func FuzzAppend(f *testing.F) {
	for _, s := range trickyStrings {
		f.Add(s, []byte(`{"a": [1, "x y"]}`), 1.5)
	}
	f.Fuzz(func(t *testing.T, s string, raw []byte, x float64) {
		checkAppend(t, s)
		checkAppend(t, json.RawMessage(raw))
		checkAppend(t, x)
		checkHandWritten(t, s)
	})
}

// checkHandWritten fails t where a frame written by hand differs from
// the one encoding/json writes.
func checkHandWritten(t *testing.T, s string) {
	t.Helper()
	e := &openAIEncoder{id: "c<1>" + s, model: s, created: 7}
	for _, c := range []struct {
		got   []Frame
		delta any
	}{
		{e.textChunk(nil, s), kv("content", s)},
		{e.argsChunk(nil, 3, s), kv("tool_calls", []any{kv("index", 3, "function", kv("arguments", s))})},
	} {
		want, err := e.chunkSlow(nil, mustRef(c.delta), nil)
		if err != nil || !bytes.Equal(c.got[0].Data, want[0].Data) {
			t.Fatalf("openai chunk of %q:\nhand %s\njson %s", s, c.got[0].Data, want[0].Data)
		}
	}
	stop := "stop"
	got, _ := e.chunk(nil, struct{}{}, &stop)
	want, _ := e.chunkSlow(nil, struct{}{}, &stop)
	if !bytes.Equal(got[0].Data, want[0].Data) {
		t.Fatalf("openai finish chunk:\nhand %s\njson %s", got[0].Data, want[0].Data)
	}
	for _, c := range []struct{ key, typ string }{{`","text":`, "text_delta"}, {`","partial_json":`, "input_json_delta"}} {
		name := "text"
		if c.typ == "input_json_delta" {
			name = "partial_json"
		}
		got := anthropicDelta(nil, 2, c.key, c.typ, s)
		want := mustRef(kv("type", "content_block_delta", "index", 2, "delta", kv("type", c.typ, name, s)))
		if got[0].Event != "content_block_delta" || !bytes.Equal(got[0].Data, want) {
			t.Fatalf("anthropic %s of %q:\nhand %s\njson %s", c.typ, s, got[0].Data, want)
		}
	}
}

// TestHandWrittenFrames: the frames written by hand, over the tricky
// strings.
func TestHandWrittenFrames(t *testing.T) {
	for _, s := range trickyStrings {
		checkHandWritten(t, s)
	}
}

// TestElementsAreACopy: the elements split from an array are a copy, as
// encoding/json's are: writing over the array later leaves them as read.
func TestElementsAreACopy(t *testing.T) {
	v := []byte(`[{"a":1}, "x"]`)
	raws, ok := elements(v)
	if !ok || len(raws) != 2 {
		t.Fatalf("elements(%s) = %q, %v", v, raws, ok)
	}
	for i := range v {
		v[i] = ' '
	}
	if string(raws[0]) != `{"a":1}` || string(raws[1]) != `"x"` {
		t.Errorf("elements changed with the array: %q", raws)
	}
}

// TestDecodedRequestOwnsItsBytes: a request read from a body holds none of
// the body's bytes: overwriting the body after the read changes nothing
// the read gave, in every case and dialect (its parts, tool calls and
// arguments, schemas, what it keeps whole).
func TestDecodedRequestOwnsItsBytes(t *testing.T) {
	for _, c := range requestCases {
		for name, w := range c.wire {
			codec := codecs[name]
			want, err := codec.DecodeRequest([]byte(w))
			if err != nil {
				continue // a case a dialect refuses is refused elsewhere
			}
			body := []byte(w)
			got, err := codec.DecodeRequest(body)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, name, err)
			}
			for i := range body {
				body[i] = 'x'
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: the request changed with its body:\n%+v\nwant %+v", c.name, name, got, want)
			}
		}
	}
}

// TestDecodedAnswerOwnsItsBytes: the same for an answer.
func TestDecodedAnswerOwnsItsBytes(t *testing.T) {
	for _, c := range answerCases {
		for name, w := range c.wire {
			want, err := codecs[name].DecodeAnswer([]byte(w))
			if err != nil {
				continue
			}
			body := []byte(w)
			got, err := codecs[name].DecodeAnswer(body)
			if err != nil {
				t.Fatalf("%s %s: %v", c.name, name, err)
			}
			for i := range body {
				body[i] = 'x'
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s %s: the answer changed with its body:\n%+v\nwant %+v", c.name, name, got, want)
			}
		}
	}
}
