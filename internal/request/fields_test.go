package request

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	const none, badModel, ambiguous = 0, 1, 2
	tests := []struct {
		name, body string
		want       Fields
		err        int
	}{
		{"chat", `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-mini","max_tokens":64,"stream":true}`,
			Fields{Model: "gpt-4o-mini", Stream: true, MaxTokens: 64}, none},
		{"options", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`,
			Fields{Model: "m", Stream: true, StreamOptions: true}, none},
		{"options null", `{"stream":true,"stream_options":null}`, Fields{Stream: true, StreamOptions: true}, none},
		{"options folded", `{"Stream_Options":{}}`, Fields{StreamOptions: true}, none},
		{"stream false", `{"stream":false}`, Fields{}, none},
		{"stream null", `{"stream":null}`, Fields{}, none},
		{"stream not a bool", `{"stream":1}`, Fields{}, none},
		{"stream escaped", `{"str\u0065am":true}`, Fields{Stream: true}, none},
		{"nested stream", `{"a":{"stream":true}}`, Fields{}, none},
		{"limit precedence", `{"max_output_tokens":3,"max_completion_tokens":2,"max_tokens":1}`, Fields{MaxTokens: 1}, none},
		{"limit zero skipped", `{"max_tokens":0,"max_completion_tokens":7}`, Fields{MaxTokens: 7}, none},
		{"limit string", `{"max_tokens":"5","max_output_tokens":4}`, Fields{MaxTokens: 4}, none},
		{"limit spaced", "{\"max_tokens\": \n12 }", Fields{MaxTokens: 12}, none},

		{"model not a string", `{"model":5,"stream":true}`, Fields{Stream: true}, badModel},
		{"model invalid", `{"model":"a\u0001"}`, Fields{Model: "a\x01"}, badModel},
		{"model escaped", `{"mod\u0065l":"m"}`, Fields{Model: "m"}, none},
		{"not an object", `[{"model":"x","stream":true}]`, Fields{}, none},
		{"empty", ``, Fields{}, none},

		{"model twice", `{"model":"cheap","model":"expensive"}`, Fields{}, ambiguous},
		{"model twice, escaped", `{"model":"cheap","mod\u0065l":"expensive"}`, Fields{}, ambiguous},
		{"model in another case", `{"Model":"expensive"}`, Fields{}, ambiguous},
		{"model and its case", `{"model":"cheap","MODEL":"expensive"}`, Fields{}, ambiguous},
		{"model twice, not strings", `{"model":1,"model":2}`, Fields{}, ambiguous},
		{"stream twice", `{"stream":true,"stream":false}`, Fields{}, ambiguous},
		{"stream null twice", `{"stream":true,"stream":null}`, Fields{}, ambiguous},
		{"stream folded", `{"STREAM":true}`, Fields{}, ambiguous},
		{"stream long s", `{"ſtream":true}`, Fields{}, ambiguous},
		{"limit twice", `{"max_tokens":5,"max_tokens":9}`, Fields{}, ambiguous},
		{"limit folded", `{"max_tokens":5,"Max_Completion_Tokens":9}`, Fields{}, ambiguous},
		{"output limit twice", `{"max_output_tokens":5,"max_output_tokens":90000}`, Fields{}, ambiguous},
	}
	for _, tt := range tests {
		got, err := Scan([]byte(tt.body))
		kind := none
		switch {
		case errors.Is(err, ErrAmbiguous):
			kind = ambiguous
		case errors.Is(err, ErrInvalidModel):
			kind = badModel
		case err != nil:
			t.Errorf("%s: %v is neither ErrAmbiguous nor ErrInvalidModel", tt.name, err)
		}
		if got != tt.want || kind != tt.err {
			t.Errorf("%s: Scan = %+v, %v; want %+v, error kind %d", tt.name, got, err, tt.want, tt.err)
		}
	}
}

func TestAmbiguousMessage(t *testing.T) {
	_, err := Scan([]byte(`{"model":"a","model":"b"}`))
	if want := `sluice: the request body names "model" more than once; JSON parsers disagree on which copy counts, so send it once`; err == nil || err.Error() != want {
		t.Errorf("twice: %v\nwant %s", err, want)
	}
	_, err = Scan([]byte(`{"Model":"a"}`))
	if want := `sluice: the request body names "model" as "Model"; JSON parsers disagree on whether that is the same member, so write it "model"`; err == nil || err.Error() != want {
		t.Errorf("case: %v\nwant %s", err, want)
	}
}

func TestUnique(t *testing.T) {
	names := []string{"generationConfig", "generation_config"}
	tests := []struct {
		body string
		ok   bool
	}{
		{`{"generationConfig":{"maxOutputTokens":1},"contents":[]}`, true},
		{`{"generation_config":{}}`, true},
		{`{"contents":[{"generationConfig":1},{"generationConfig":2}]}`, true},
		{`{"generationConfig":{"maxOutputTokens":1},"generationConfig":{"maxOutputTokens":100000}}`, false},
		{`{"generationConfig":{},"generation_config":{}}`, false},
		{`{"GenerationConfig":{}}`, false},
	}
	for _, tt := range tests {
		err := Unique([]byte(tt.body), names...)
		if (err == nil) != tt.ok || (err != nil && !errors.Is(err, ErrAmbiguous)) {
			t.Errorf("Unique(%s) = %v, want ok %v", tt.body, err, tt.ok)
		}
	}
}

func TestParseInt(t *testing.T) {
	for _, s := range []string{"0", "1", "-1", "+5", "", "-", "+", "9223372036854775807", "9223372036854775808",
		"-9223372036854775808", "-9223372036854775809", "99999999999999999999", "1_000", "0x10", "1e3", "12 ", "007"} {
		checkParseInt(t, []byte(s))
	}
}

func checkParseInt(t *testing.T, s []byte) {
	t.Helper()
	want, err := strconv.ParseInt(string(s), 10, 64)
	got, ok := parseInt(s)
	if ok != (err == nil) || (ok && got != want) {
		t.Fatalf("parseInt(%q) = %d, %v; strconv.ParseInt gives %d, %v", s, got, ok, want, err)
	}
}

func TestScanAllocs(t *testing.T) {
	body := []byte(chatBody)
	if n := testing.AllocsPerRun(100, func() { Scan(body) }); n != 1 { // the model name
		t.Errorf("Scan allocates %v times, want 1", n)
	}
}

// FuzzScan checks Scan against the readers it must agree with: for a
// valid JSON body it accepts, encoding/json (last copy wins, case folded)
// and a reader that keeps the first copy of each exactly named member
// read the same model, stream flags and output limit; one that keeps the
// last copy reads the same too. A body on which they disagree must be
// refused (ErrAmbiguous).
func FuzzScan(f *testing.F) {
	f.Add([]byte(chatBody))
	f.Add([]byte(`{"model":"m","stream":true,"stream_options":null,"max_tokens":-1,"max_output_tokens":9}`))
	f.Add([]byte(`{"Stream":true,"str\u0065am":null,"STREAM_OPTIONS":1}`))
	f.Add([]byte(`{"stream":1,"max_completion_tokens":+7}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"\u0053tream" : true , "stream_options":{} }`))
	f.Add([]byte(`{"a":[1,{"stream":true}],"ſtream":false,"max_tokens":" 5"}`))
	f.Add([]byte(`{"model":"cheap","model":"expensive"}`))
	f.Add([]byte(`{"model":"cheap","Model":"expensive","max_tokens":1,"max_tokens":100000}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Scan(b)
		if errors.Is(err, ErrAmbiguous) {
			if got != (Fields{}) {
				t.Fatalf("Scan refused %q but read %+v", b, got)
			}
			return
		}
		if !json.Valid(b) {
			return
		}
		var req struct {
			Model         json.RawMessage `json:"model"`
			Stream        json.RawMessage `json:"stream"`
			StreamOptions json.RawMessage `json:"stream_options"`
			MaxTokens     json.RawMessage `json:"max_tokens"`
			MaxCompletion json.RawMessage `json:"max_completion_tokens"`
			MaxOutput     json.RawMessage `json:"max_output_tokens"`
		}
		if i := skipSpace(b, 0); i == len(b) || b[i] != '{' || json.Unmarshal(b, &req) != nil {
			return // not an object
		}
		folded := readings{model: req.Model, stream: req.Stream, limits: [3]json.RawMessage{req.MaxTokens, req.MaxCompletion, req.MaxOutput}}
		for _, r := range []readings{folded, exactReading(t, b, false), exactReading(t, b, true)} {
			if m := r.modelString(); err == nil && got.Model != m {
				t.Fatalf("Scan model %q; a parser reads %q in %q", got.Model, m, b)
			}
			if got.Stream != r.streamTrue() {
				t.Fatalf("Scan stream %v; a parser reads %s in %q", got.Stream, r.stream, b)
			}
			if n := r.limit(); got.MaxTokens != n {
				t.Fatalf("Scan max tokens %d; a parser reads %d in %q", got.MaxTokens, n, b)
			}
		}
		if got.StreamOptions != (len(req.StreamOptions) > 0) {
			t.Fatalf("Scan options %v; encoding/json %q", got.StreamOptions, req.StreamOptions)
		}
	})
}

// readings are the raw values of the members Scan reads, as one JSON
// parser reads them; nil for a member it does not find.
type readings struct {
	model, stream json.RawMessage
	limits        [3]json.RawMessage // maxTokenKeys, in order
}

// exactReading reads b's top level as a parser that matches names exactly
// (after decoding escapes) and keeps the first copy of a member, or the
// last when last is true.
func exactReading(t *testing.T, b []byte, last bool) readings {
	t.Helper()
	var top []struct {
		k string
		v json.RawMessage
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q: not an object", b)
	}
	for d.More() {
		tok, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		var v json.RawMessage
		if err := d.Decode(&v); err != nil {
			t.Fatal(err)
		}
		top = append(top, struct {
			k string
			v json.RawMessage
		}{tok.(string), v})
	}
	var r readings
	set := func(dst *json.RawMessage, v json.RawMessage) {
		if *dst == nil || last {
			*dst = v
		}
	}
	for _, m := range top {
		switch m.k {
		case "model":
			set(&r.model, m.v)
		case "stream":
			set(&r.stream, m.v)
		default:
			for i, name := range maxTokenKeys {
				if m.k == name {
					set(&r.limits[i], m.v)
				}
			}
		}
	}
	return r
}

// modelString returns the model when it is a JSON string, else "".
func (r readings) modelString() string {
	var s string
	if json.Unmarshal(r.model, &s) != nil {
		return ""
	}
	return s
}

func (r readings) streamTrue() bool { return string(r.stream) == "true" }

// limit returns the first output limit that is an integer above 0.
func (r readings) limit() int64 {
	for _, v := range r.limits {
		if n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64); err == nil && n > 0 {
			return n
		}
	}
	return 0
}

// FuzzParseInt checks parseInt against strconv.ParseInt.
func FuzzParseInt(f *testing.F) {
	f.Add([]byte("9223372036854775807"))
	f.Add([]byte("-9223372036854775808"))
	f.Fuzz(func(t *testing.T, s []byte) { checkParseInt(t, s) })
}

// chatBody is a chat request as the OpenAI SDK writes it: the messages
// first, then the model and the options.
var chatBody = `{"messages":[{"role":"system","content":"You are a careful assistant. Answer briefly."},` +
	strings.Repeat(`{"role":"user","content":"Summarise the following text in one line: \"Lorem ipsum dolor sit amet, consectetur adipiscing elit.\""},{"role":"assistant","content":"A placeholder text."},`, 12) +
	`{"role":"user","content":"And now?"}],"model":"gpt-4o-mini","max_tokens":256,"stream":true,"temperature":0.2}`

// FuzzJumpString checks jumpString against a byte-by-byte reading of a
// JSON string.
func FuzzJumpString(f *testing.F) {
	f.Add([]byte(`"a\"b\\"c"`))
	f.Add([]byte(`"\\\\\"\\"`))
	f.Add([]byte(`"abc\`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		want := -1
		for j := 1; j < len(b); j++ {
			if b[j] == '\\' {
				j++
			} else if b[j] == '"' {
				want = j + 1
				break
			}
		}
		if got := jumpString(b, 0); got != want {
			t.Fatalf("jumpString(%q) = %d, want %d", b, got, want)
		}
	})
}
