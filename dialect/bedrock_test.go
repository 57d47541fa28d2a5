package dialect

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/smithy-go/encoding/httpbinding"

	"github.com/sluice-llm/sluice/internal/awsevent"
	"github.com/sluice-llm/sluice/internal/request"
)

const (
	claude   = "anthropic.claude-3-5-sonnet-20240620-v1:0"
	claudeEs = "anthropic.claude-3-5-sonnet-20240620-v1%3A0"
	arn      = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.claude-3-5-sonnet-20240620-v1:0"
	converse = `{"messages":[{"role":"user","content":[{"text":"hi"}]}],"inferenceConfig":{"maxTokens":300}}`
	invoke   = `{"anthropic_version":"bedrock-2023-05-31","max_tokens":64,"messages":[{"role":"user","content":"hi"}]}`
)

func TestBedrockRequest(t *testing.T) {
	for _, tt := range []struct {
		path, body string
		want       Request
	}{
		{"/model/" + claude + "/converse", converse, Request{Model: claude, MaxTokens: 300, ModelCall: true}},
		{"/model/" + claudeEs + "/converse-stream", converse, Request{Model: claude, MaxTokens: 300, Stream: true, ModelCall: true}},
		{"/model/" + claude + "/invoke", invoke, Request{Model: claude, MaxTokens: 64, ModelCall: true}},
		{"/model/" + claude + "/invoke-with-response-stream", invoke, Request{Model: claude, MaxTokens: 64, Stream: true, ModelCall: true}},
		{"/model/" + arn + "/converse", "", Request{Model: arn, ModelCall: true}},
		{"/model/" + url.PathEscape(arn) + "/converse", "", Request{Model: arn, ModelCall: true}},
		{"/bedrock/model/m/converse", `{"inferenceConfig":{"temperature":0.5}}`, Request{Model: "m", ModelCall: true}},
		{"/model/m/converse", `{"inferenceConfig":{"maxTokens":0},"max_tokens":9}`, Request{Model: "m", MaxTokens: 9, ModelCall: true}},
		// Not a model path: read as a body naming its model.
		{"/model/m/count-tokens", `{"model":"x"}`, Request{Model: "x"}},
		{"/model//converse", "", Request{}},
		{"/openai/v1/chat/completions", `{"model":"openai.gpt-oss-20b-1:0","stream":true}`,
			Request{Model: "openai.gpt-oss-20b-1:0", Stream: true, ModelCall: true}},
	} {
		got := Bedrock.Request(tt.path, []byte(tt.body))
		got.Operation = "" // TestOperation's
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Request(%s, %s) = %+v; want %+v", tt.path, tt.body, got, tt.want)
		}
	}
	for _, p := range []string{"/model/bad%ZZ/converse", "/model/a\x01b/converse"} {
		if r := Bedrock.Request(p, nil); r.Model != "" || !errors.Is(r.BadModel, request.ErrInvalidModel) || !r.ModelCall {
			t.Errorf("Request(%q) = %+v; want a bad model", p, r)
		}
	}
}

func TestBedrockRetarget(t *testing.T) {
	for _, tt := range []struct{ path, model, want string }{
		{"/model/" + claude + "/converse", "amazon.nova-pro-v1:0", "/model/amazon.nova-pro-v1:0/converse"},
		{"/model/" + claudeEs + "/invoke", "amazon.nova-pro-v1:0", "/model/amazon.nova-pro-v1%3A0/invoke"},
		{"/p/model/" + arn + "/converse-stream", claude, "/p/model/" + claude + "/converse-stream"},
		{"/model/m/invoke-with-response-stream", arn, "/model/" + arn + "/invoke-with-response-stream"},
		{"/model/m%2Ex/invoke", arn, "/model/" + httpbinding.EscapePath(arn, true) + "/invoke"},
	} {
		body := []byte(converse)
		p, b, ok := Bedrock.Retarget(tt.path, body, tt.model)
		if !ok || p != tt.want || !bytes.Equal(b, body) {
			t.Errorf("Retarget(%s, %s) = %s, %s, %v; want %s, the body as it was", tt.path, tt.model, p, b, ok, tt.want)
		}
		if m := Bedrock.Request(p, nil).Model; m != tt.model {
			t.Errorf("the retargeted path %s names %q; want %q", p, m, tt.model)
		}
	}
	if _, _, ok := Bedrock.Retarget("/guardrail/g/version/1/apply", []byte(`{}`), "m"); ok {
		t.Error("a path without a model was retargeted")
	}
}

func TestBedrockRegistered(t *testing.T) {
	if d, ok := Lookup("bedrock"); !ok || d != Bedrock {
		t.Errorf("Lookup(bedrock) = %v, %v", d, ok)
	}
	for p, want := range map[string]Dialect{
		"/model/" + claudeEs + "/converse":                Bedrock,
		"/model/" + arn + "/invoke":                       Bedrock,
		"/v1/chat/completions":                            OpenAI,
		"/v1beta/models/gemini-2.0-flash:generateContent": Gemini,
		"/model/m/other":                                  OpenAI,
	} {
		if got := ForPath(p); got != want {
			t.Errorf("ForPath(%s) = %s; want %s", p, got.Kind(), want.Kind())
		}
	}
	if tr := Bedrock.Traits(); tr != (Traits{System: "aws.bedrock", StrictEnd: true, Signs: true}) {
		t.Errorf("Traits = %+v", tr)
	}
	called := false
	Bedrock.Windows(http.Header{"Retry-After": {"3"}}, time.Now(), func(Window) { called = true })
	if called {
		t.Error("Windows reported a window; Bedrock sends none")
	}
}

func TestBedrockJudge(t *testing.T) {
	msg := []byte(`{"message":"Your request exceeds the service quota for your account."}`)
	for _, tt := range []struct {
		status int
		h      http.Header
		body   []byte
		quota  bool
	}{
		{429, http.Header{"X-Amzn-Errortype": {"ServiceQuotaExceededException:http://internal.amazon.com/coral/com.amazon.bedrock/"}}, msg, true},
		{400, http.Header{"X-Amzn-Errortype": {"ServiceQuotaExceededException"}}, msg, true},
		{429, http.Header{}, []byte(`{"__type":"com.amazon.bedrock#ServiceQuotaExceededException","message":"x"}`), true},
		{429, nil, []byte(`{"code":"ServiceQuotaExceededException"}`), true},
		{429, http.Header{"X-Amzn-Errortype": {"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/"}}, msg, false},
		{429, http.Header{"X-Amzn-Errortype": {"ModelNotReadyException"}}, msg, false},
		{429, nil, []byte(`{"message":"Too many tokens, please wait before trying again."}`), false},
		{503, http.Header{"X-Amzn-Errortype": {"ServiceUnavailableException"}}, []byte(`not json`), false},
	} {
		if got := Bedrock.Judge(tt.status, tt.h, tt.body); got.Quota != tt.quota || got.HasWait {
			t.Errorf("Judge(%d, %v, %s) = %+v; want quota %v", tt.status, tt.h, tt.body, got, tt.quota)
		}
	}
}

// frame encodes one event-stream frame.
func frame(typ, name string, payload any) []byte {
	b, _ := json.Marshal(payload)
	return awsevent.Frame{Type: typ, Name: name, Payload: b}.Encode()
}

// chunk encodes an invoke stream's chunk holding a model event.
func chunk(ev string) []byte {
	return frame(awsevent.Event, "chunk", map[string]string{"bytes": base64.StdEncoding.EncodeToString([]byte(ev))})
}

var (
	converseStream = bytes.Join([][]byte{
		frame(awsevent.Event, "messageStart", map[string]string{"role": "assistant"}),
		frame(awsevent.Event, "contentBlockDelta", map[string]any{"contentBlockIndex": 0, "delta": map[string]string{"text": "Hi"}}),
		frame(awsevent.Event, "contentBlockStop", map[string]int{"contentBlockIndex": 0}),
		frame(awsevent.Event, "messageStop", map[string]string{"stopReason": "end_turn"}),
		frame(awsevent.Event, "metadata", map[string]any{"usage": map[string]int{
			"inputTokens": 12, "outputTokens": 3, "totalTokens": 25, "cacheReadInputTokens": 10}}),
	}, nil)
	invokeStream = bytes.Join([][]byte{
		chunk(`{"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}`),
		chunk(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`),
		chunk(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":3}}`),
		chunk(`{"type":"message_stop","amazon-bedrock-invocationMetrics":{"inputTokenCount":12,"outputTokenCount":3,"cacheWriteInputTokenCount":7}}`),
	}, nil)
)

// seen is an event as a test compares it.
type seen struct {
	Type   string
	End    bool
	Status int
	Data   string
}

// feed feeds b to a fresh Bedrock stream in the chunks cuts makes, and
// returns its events and whether it was inside an event after each chunk.
func feed(t *testing.T, b []byte, cuts ...int) (evs []seen, inEvent []bool) {
	t.Helper()
	s := Bedrock.Stream(http.Header{"Content-Type": {"application/vnd.amazon.eventstream"}})
	if s == nil {
		t.Fatal("no Stream for an event stream")
	}
	last := 0
	for _, c := range append(cuts, len(b)) {
		s.Feed(b[last:c], func(ev Event) bool {
			evs = append(evs, seen{ev.Type, ev.End, ev.Status, string(ev.Data)})
			return true
		})
		inEvent = append(inEvent, s.InEvent())
		last = c
	}
	if s.Events() != len(evs) {
		t.Errorf("Events() = %d after %d events", s.Events(), len(evs))
	}
	return evs, inEvent
}

// TestBedrockStreamSplitAnywhere: the events of a stream are the same
// whether its bytes come whole, in two chunks split at any byte, or a
// byte at a time; the end is the terminal event only; InEvent is true
// exactly when a split falls inside a frame.
func TestBedrockStreamSplitAnywhere(t *testing.T) {
	for name, tc := range map[string]struct {
		b    []byte
		want []string
	}{
		"converse": {converseStream, []string{"messageStart", "contentBlockDelta", "contentBlockStop", "messageStop", "metadata*"}},
		"invoke":   {invokeStream, []string{"chunk", "chunk", "chunk", "chunk*"}},
	} {
		whole, _ := feed(t, tc.b)
		var names []string
		for _, ev := range whole {
			n := ev.Type
			if ev.End {
				n += "*"
			}
			names = append(names, n)
		}
		if !reflect.DeepEqual(names, tc.want) {
			t.Errorf("%s: events %v; want %v (* ends)", name, names, tc.want)
		}
		bounds := map[int]bool{0: true}
		for i, n := 0, 0; i < len(tc.b); i += n {
			n, _ = awsevent.Length(tc.b[i:])
			bounds[i+n] = true
		}
		for k := 0; k <= len(tc.b); k++ {
			got, in := feed(t, tc.b, k)
			if !reflect.DeepEqual(got, whole) {
				t.Fatalf("%s split at %d: %v; want %v", name, k, got, whole)
			}
			if in[0] == bounds[k] || in[1] {
				t.Fatalf("%s split at %d: InEvent %v; want %v, then false", name, k, in, !bounds[k])
			}
		}
		cuts := make([]int, len(tc.b)-1)
		for i := range cuts {
			cuts[i] = i + 1
		}
		if got, _ := feed(t, tc.b, cuts...); !reflect.DeepEqual(got, whole) {
			t.Errorf("%s byte by byte: %v; want %v", name, got, whole)
		}
	}
}

// TestBedrockStreamNoEnd: a chunk of another event, or the messageStop
// before the metadata, does not end the stream; Bedrock's invocation
// metrics end any model's.
func TestBedrockStreamNoEnd(t *testing.T) {
	for b, end := range map[string]bool{
		string(chunk(`{"type":"message_delta","usage":{"output_tokens":3}}`)):                         false,
		string(frame(awsevent.Event, "messageStop", map[string]string{"stopReason": "end_turn"})):     false,
		string(frame(awsevent.Event, "chunk", map[string]string{"bytes": "not base64"})):              false,
		string(chunk(`{"generation":"","stop_reason":"stop","amazon-bedrock-invocationMetrics":{}}`)): true,
		string(chunk(`{"type":"message_stop"}`)):                                                      true,
	} {
		evs, _ := feed(t, []byte(b))
		if len(evs) != 1 || evs[0].End != end {
			t.Errorf("%v; want one event, end %v", evs, end)
		}
	}
}

// TestBedrockExceptionFrames: an exception frame stands for the status
// Bedrock gives its type; an error frame for a server error.
func TestBedrockExceptionFrames(t *testing.T) {
	for name, want := range map[string]int{
		"throttlingException": 429, "serviceUnavailableException": 503, "modelStreamErrorException": 500,
		"validationException": 400, "internalServerException": 500, "modelTimeoutException": 408,
		"modelNotReadyException": 429, "someNewException": 500,
	} {
		evs, _ := feed(t, frame(awsevent.Exception, name, map[string]string{"message": "m"}))
		if len(evs) != 1 || evs[0].Status != want || evs[0].Type != name || evs[0].Data != `{"message":"m"}` || evs[0].End {
			t.Errorf("%s: %+v; want status %d", name, evs, want)
		}
	}
	evs, _ := feed(t, awsevent.Frame{Type: awsevent.Error, Name: "InternalFailure", Payload: []byte("boom")}.Encode())
	if len(evs) != 1 || evs[0].Status != 500 || evs[0].Type != "InternalFailure" || evs[0].Data != "boom" {
		t.Errorf("error frame: %+v", evs)
	}
	if Bedrock.Stream(http.Header{"Content-Type": {"application/json"}}) != nil {
		t.Error("a Stream for a JSON answer")
	}
}

// TestBedrockMalformed: a frame whose prelude or checksum is wrong breaks
// the stream: the frames before it are read, none after, and it stays
// inside an event, as a cut does.
func TestBedrockMalformed(t *testing.T) {
	first := len(frame(awsevent.Event, "messageStart", map[string]string{"role": "assistant"}))
	for _, at := range []int{first + 1, first + 9, first + 20} { // the length, the prelude's checksum, a header
		b := bytes.Clone(converseStream)
		b[at] ^= 0xff
		for _, split := range []int{at - 3, at + 1, len(b) - 1} {
			evs, in := feed(t, b, split)
			if len(evs) != 1 || evs[0].Type != "messageStart" || !in[1] {
				t.Errorf("byte %d changed, split at %d: %v, in an event %v; want messageStart alone, then a cut", at, split, evs, in)
			}
		}
	}
}

// FuzzBedrockStream: any bytes, split anywhere, give the same events as
// whole, and never a panic.
func FuzzBedrockStream(f *testing.F) {
	f.Add(converseStream, 7)
	f.Add(invokeStream, 100)
	f.Add([]byte{0, 0, 0, 16, 0, 0, 0, 0, 1, 2, 3, 4}, 3)
	f.Fuzz(func(t *testing.T, b []byte, k int) {
		if k < 0 || k > len(b) {
			k = len(b) / 2
		}
		whole, _ := feed(t, b)
		split, _ := feed(t, b, k)
		if !reflect.DeepEqual(whole, split) {
			t.Errorf("split at %d: %v; whole: %v", k, split, whole)
		}
		u := Bedrock.StreamUsage()
		u.Write(b[:k])
		u.Write(b[k:])
		u.Usage()
	})
}

func TestBedrockUsage(t *testing.T) {
	body := []byte(`{"output":{"message":{"role":"assistant","content":[{"text":"Hi"}]}},"stopReason":"end_turn",` +
		`"usage":{"inputTokens":12,"outputTokens":3,"totalTokens":30,"cacheReadInputTokens":10,"cacheWriteInputTokens":5}}`)
	if u, ok := Bedrock.Usage(body); !ok || u != (Usage{Input: 12, Output: 3, CacheRead: 10, CacheWrite: 5}) {
		t.Errorf("Converse: %+v, %v", u, ok)
	}
	for _, b := range []string{`{"message":"Too many requests"}`, `not json`} {
		if u, ok := Bedrock.Usage([]byte(b)); ok {
			t.Errorf("Usage(%s) = %+v; want none", b, u)
		}
	}
	for name, tc := range map[string]struct {
		b    []byte
		want Usage
	}{
		"converse": {converseStream, Usage{Input: 12, Output: 3, CacheRead: 10}},
		"invoke":   {invokeStream, Usage{Input: 12, Output: 3, CacheWrite: 7}},
	} {
		r := Bedrock.StreamUsage()
		for i := 0; i < len(tc.b); i += 5 {
			r.Write(tc.b[i:min(i+5, len(tc.b))])
		}
		if u, ok := r.Usage(); !ok || u != tc.want || r.Events() < 4 {
			t.Errorf("%s stream: %+v, %v, %d events; want %+v", name, u, ok, r.Events(), tc.want)
		}
	}
	// A stream cut before its usage has none of its own.
	r := Bedrock.StreamUsage()
	r.Write(converseStream[:len(converseStream)-10])
	if u, ok := r.Usage(); ok {
		t.Errorf("a cut ConverseStream: %+v", u)
	}
}

// TestBedrockInvokeUsage: InvokeModel's answer is Anthropic's, its usage
// read as Anthropic's is.
func TestBedrockInvokeUsage(t *testing.T) {
	body := []byte(`{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"}],` +
		`"usage":{"input_tokens":12,"output_tokens":3,"cache_read_input_tokens":10}}`)
	want := Usage{Input: 12, Output: 3, CacheRead: 10}
	if u, ok := Bedrock.Usage(body); !ok || u != want {
		t.Errorf("InvokeModel: %+v, %v; want %+v", u, ok, want)
	}
}

// sigV4 returns an Authorization header aws-sdk-go-v2's signer makes for
// the access key id akid.
func sigV4(t *testing.T, akid string) string {
	t.Helper()
	r, _ := http.NewRequest("POST", "http://127.0.0.1/model/m/converse", nil)
	err := v4.NewSigner().SignHTTP(context.Background(), aws.Credentials{AccessKeyID: akid, SecretAccessKey: "s"},
		r, strings.Repeat("0", 64), "bedrock", "us-east-1", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Get("Authorization")
}

func TestBedrockClientKey(t *testing.T) {
	c := Bedrock.Client()
	for auth, want := range map[string]string{
		sigV4(t, "sk-sluice-client-1"):                                           "sk-sluice-client-1",
		"AWS4-HMAC-SHA256 Credential=AKIDONLY, SignedHeaders=host, Signature=00": "AKIDONLY",
		"Bearer bedrock-api-key-1":                                               "bedrock-api-key-1",
		"AWS4-HMAC-SHA256 SignedHeaders=host":                                    "",
		"Basic dXNlcjpwYXNz":                                                     "",
		"":                                                                       "",
	} {
		r, _ := http.NewRequest("POST", "http://gw/model/m/converse", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		if got := c.Key(r); got != want {
			t.Errorf("Key(%q) = %q; want %q", auth, got, want)
		}
	}
}

func TestBedrockClientSetKey(t *testing.T) {
	c := Bedrock.Client()
	r, _ := http.NewRequest("POST", "http://gw/model/m/converse?X-Amz-Credential=a&X-Amz-Signature=b&key=c&keep=1", nil)
	orig := r.URL
	r.Header.Set("Authorization", sigV4(t, "AKIDCLIENT"))
	for _, h := range append(KeyHeaders(), "X-Amz-Security-Token", "X-Amz-Date", "X-Amz-Content-Sha256") {
		if h != "Authorization" {
			r.Header.Set(h, "secret")
		}
	}
	r.Header.Set("X-Amzn-Bedrock-Trace", "ENABLED")
	c.SetKey(r, "")
	for k := range r.Header {
		if k != "X-Amzn-Bedrock-Trace" {
			t.Errorf("SetKey left %s", k)
		}
	}
	if r.URL.RawQuery != "keep=1" || orig.RawQuery == "keep=1" {
		t.Errorf("query %q (the caller's URL: %q); want keep=1 alone, in a copy", r.URL.RawQuery, orig.RawQuery)
	}
	c.SetKey(r, "bedrock-api-key-1")
	if r.Header.Get("Authorization") != "Bearer bedrock-api-key-1" {
		t.Errorf("with a key: %v", r.Header)
	}
}

func TestBedrockClientErrors(t *testing.T) {
	c := Bedrock.Client()
	for status, want := range map[int]string{
		429: "ThrottlingException", 503: "ServiceUnavailableException", 400: "ValidationException",
		401: "AccessDeniedException", 403: "AccessDeniedException", 404: "ResourceNotFoundException",
		504: "ModelTimeoutException", 502: "InternalServerException", 500: "InternalServerException",
		413: "ValidationException",
	} {
		h := http.Header{}
		b := c.Error(h, status, "provider_down", `the "provider" is down`)
		var m map[string]string
		if err := json.Unmarshal(b, &m); err != nil || m["message"] != `the "provider" is down` || m["reason"] != "provider_down" || len(m) != 2 {
			t.Errorf("%d: body %s", status, b)
		}
		if h.Get("x-amzn-ErrorType") != want || h.Get("Content-Type") != "application/json" {
			t.Errorf("%d: header %v; want %s", status, h, want)
		}
		if got := exceptionStatus(want); status < 500 && status != 401 && status != 413 && got != status && want != "ModelTimeoutException" {
			t.Errorf("%s stands for %d; Error gives it with %d", want, got, status)
		}
	}
	if c.AsksUsage(&http.Request{}) {
		t.Error("AsksUsage")
	}
	for code, want := range map[string]string{"stream_cut": "serviceUnavailableException",
		"shutting_down": "serviceUnavailableException", "stream_stalled": "modelTimeoutException", "timeout": "modelTimeoutException"} {
		f, err := awsevent.NewReader(bytes.NewReader(c.ErrorEvent(code, "cut"))).Next()
		if err != nil || f.Type != awsevent.Exception || f.Name != want || string(f.Payload) != `{"message":"cut","reason":"`+code+`"}` {
			t.Errorf("ErrorEvent(%s) = %+v, %v; want a %s frame", code, f, err, want)
		}
	}
}

// escapeSegment escapes every byte as the AWS SDKs escape a path label.
func TestEscapeSegment(t *testing.T) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	for _, s := range []string{string(all), claude, arn, "", "a/b c%d"} {
		if got, want := escapeSegment(s), httpbinding.EscapePath(s, true); got != want {
			t.Errorf("escapeSegment(%q) = %q, want %q", s, got, want)
		}
	}
}

// BedrockEscapedPath escapes a model path's model as one segment, the rest
// as a URL path; other paths are not its.
func TestBedrockEscapedPath(t *testing.T) {
	for p, want := range map[string]string{
		"/model/" + claude + "/converse":          "/model/" + claudeEs + "/converse",
		"/p q/model/" + arn + "/invoke":           "/p%20q/model/" + httpbinding.EscapePath(arn, true) + "/invoke",
		"/model/m/converse-stream":                "/model/m/converse-stream",
		"/v1/chat/completions":                    "",
		"/model/" + claude + "/converse/../other": "",
	} {
		if got := BedrockEscapedPath(p); got != want {
			t.Errorf("BedrockEscapedPath(%q) = %q, want %q", p, got, want)
		}
	}
}

// The model segment of an escaped Bedrock Runtime path is where an
// escaped "/" (a model ARN's) may lie; no other path has one, in Bedrock
// or in any other dialect.
func TestEscapedModel(t *testing.T) {
	const arn = "arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Aimported-model%2Fk2m4"
	for _, tc := range []struct {
		d    Dialect
		p    string
		want string // the segment; "" for none
	}{
		{Bedrock, "/model/" + arn + "/converse", arn},
		{Bedrock, "/model/" + arn + "/converse-stream", arn},
		{Bedrock, "/model/" + arn + "/invoke-with-response-stream", arn},
		{Bedrock, "/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke", "anthropic.claude-3-haiku-20240307-v1%3A0"},
		{Bedrock, "/model/" + arn + "/converse%2F..", ""},
		{Bedrock, "/model/" + arn, ""},
		{Bedrock, "/v1/chat/completions", ""},
		{OpenAI, "/model/" + arn + "/converse", ""},
		{Anthropic, "/model/" + arn + "/converse", ""},
		{Gemini, "/model/" + arn + "/converse", ""},
		{Vertex, "/model/" + arn + "/converse", ""},
		{Azure, "/model/" + arn + "/converse", ""},
	} {
		start, end := tc.d.Client().EscapedModel(tc.p)
		got := ""
		if start >= 0 {
			got = tc.p[start:end]
		}
		if got != tc.want {
			t.Errorf("%s EscapedModel(%q) = %q, want %q", tc.d.Kind(), tc.p, got, tc.want)
		}
	}
}
