package request

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestScan(t *testing.T) {
	tests := []struct {
		name, body string
		want       Fields
		modelErr   bool
	}{
		{"chat", `{"messages":[{"role":"user","content":"hi"}],"model":"gpt-4o-mini","max_tokens":64,"stream":true}`,
			Fields{Model: "gpt-4o-mini", Stream: true, MaxTokens: 64}, false},
		{"options", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`,
			Fields{Model: "m", Stream: true, StreamOptions: true}, false},
		{"options null", `{"stream":true,"stream_options":null}`, Fields{Stream: true, StreamOptions: true}, false},
		{"stream false", `{"stream":false}`, Fields{}, false},
		{"stream last wins", `{"stream":true,"stream":false}`, Fields{}, false},
		{"stream null keeps", `{"stream":true,"stream":null}`, Fields{Stream: true}, false},
		{"stream not a bool", `{"stream":1,"stream":true}`, Fields{}, false},
		{"stream folded", `{"STREAM":true,"Stream_Options":{}}`, Fields{Stream: true, StreamOptions: true}, false},
		{"stream escaped", `{"str\u0065am":true}`, Fields{Stream: true}, false},
		{"stream long s", `{"ſtream":true}`, Fields{Stream: true}, false},
		{"nested stream", `{"a":{"stream":true}}`, Fields{}, false},
		{"limit precedence", `{"max_output_tokens":3,"max_completion_tokens":2,"max_tokens":1}`, Fields{MaxTokens: 1}, false},
		{"limit zero skipped", `{"max_tokens":0,"max_completion_tokens":7}`, Fields{MaxTokens: 7}, false},
		{"limit first of a name", `{"max_tokens":5,"max_tokens":9}`, Fields{MaxTokens: 5}, false},
		{"limit string", `{"max_tokens":"5","max_output_tokens":4}`, Fields{MaxTokens: 4}, false},
		{"limit spaced", "{\"max_tokens\": \f12 }", Fields{MaxTokens: 12}, false},
		{"model not a string", `{"model":5,"stream":true}`, Fields{Stream: true}, true},
		{"model first of two", `{"model":"a","model":"b"}`, Fields{Model: "a"}, false},
		{"model invalid", `{"model":"a\u0001"}`, Fields{Model: "a\x01"}, true},
		{"not an object", `[{"model":"x","stream":true}]`, Fields{}, false},
		{"empty", ``, Fields{}, false},
	}
	for _, tt := range tests {
		got, err := Scan([]byte(tt.body))
		if got != tt.want || (err != nil) != tt.modelErr {
			t.Errorf("%s: Scan = %+v, %v; want %+v, error %v", tt.name, got, err, tt.want, tt.modelErr)
		}
		if err != nil && !errors.Is(err, ErrInvalidModel) {
			t.Errorf("%s: %v is not ErrInvalidModel", tt.name, err)
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

// FuzzScan checks Scan against what it replaces: BodyModel, Model, Int in
// the spend estimate's order, and encoding/json for the stream flags.
func FuzzScan(f *testing.F) {
	f.Add([]byte(chatBody))
	f.Add([]byte(`{"model":"m","stream":true,"stream_options":null,"max_tokens":-1,"max_output_tokens":9}`))
	f.Add([]byte(`{"Stream":true,"str\u0065am":null,"STREAM_OPTIONS":1}`))
	f.Add([]byte(`{"stream":1,"max_completion_tokens":+7}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"\u0053tream" : true , "stream_options":{} }`))
	f.Add([]byte(`{"a":[1,{"stream":true}],"ſtream":false,"max_tokens":" 5"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Scan(b)
		name, berr := BodyModel(b)
		if got.Model != name || (err == nil) != (berr == nil) || (err != nil && err.Error() != berr.Error()) {
			t.Fatalf("Scan model %q, %v; BodyModel %q, %v", got.Model, err, name, berr)
		}
		if berr == nil && got.Model != Model(b) {
			t.Fatalf("Scan model %q; Model %q", got.Model, Model(b))
		}
		var limit int64
		for _, k := range maxTokenKeys {
			if n, ok := Int(b, k); ok && n > 0 {
				limit = n
				break
			}
		}
		if got.MaxTokens != limit {
			t.Fatalf("Scan max tokens %d; Int in order gives %d", got.MaxTokens, limit)
		}
		if !json.Valid(b) {
			return
		}
		var req struct {
			Stream        bool            `json:"stream"`
			StreamOptions json.RawMessage `json:"stream_options"`
		}
		if json.Unmarshal(b, &req) != nil {
			if got.Stream {
				t.Fatalf("Scan says stream; encoding/json fails on %q", b)
			}
			return
		}
		if got.Stream != req.Stream || got.StreamOptions != (len(req.StreamOptions) > 0) {
			t.Fatalf("Scan stream %v, options %v; encoding/json %v, %q", got.Stream, got.StreamOptions, req.Stream, req.StreamOptions)
		}
	})
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

// FuzzScanString checks scanString against a byte-by-byte reading of a
// JSON string.
func FuzzScanString(f *testing.F) {
	f.Add([]byte(`"a\"b\\"c"`))
	f.Add([]byte(`"\\\\\"\\"`))
	f.Add([]byte(`"abc\`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			return
		}
		s, e, ok := scanString(b, 0)
		ws, we, wok := 0, 0, false
		for j := 1; j < len(b); j++ {
			if b[j] == '\\' {
				j++
			} else if b[j] == '"' {
				we, wok = j+1, true
				break
			}
		}
		if s != ws || e != we || ok != wok {
			t.Fatalf("scanString(%q) = %d, %d, %v; want %d, %d, %v", b, s, e, ok, ws, we, wok)
		}
	})
}
