package dialect

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// usageChatAnswer is a small chat completion, as the fake provider
// answers.
const usageChatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1764547200,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, friend."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`

// usageGeminiAnswer is a whole Gemini answer.
const usageGeminiAnswer = `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],
"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":40,"thoughtsTokenCount":60,
"cachedContentTokenCount":800,"totalTokenCount":1100},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`

// usageObjectDialects are the dialects that read the "usage" object of
// OpenAI and Anthropic, alike: the servers that speak OpenAI's API relay
// both's answers.
var usageObjectDialects = []Dialect{OpenAI, Azure, Anthropic}

// usageFixture reads a file of testdata/usage.
func usageFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "usage", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestUsage(t *testing.T) {
	tests := []struct {
		file string
		want Usage
		ok   bool
	}{
		{"openai_chat.json", Usage{Input: 2006, Output: 300, CacheRead: 1920, CacheReadInInput: true}, true},
		{"openai_chat_plain.json", Usage{Input: 13, Output: 7}, true},
		{"openai_responses.json", Usage{Input: 5210, Output: 412, CacheRead: 4864, CacheReadInInput: true}, true},
		{"anthropic_message.json", Usage{Input: 12, Output: 503, CacheRead: 2048, CacheWrite: 1500}, true},
		{"openai_error.json", Usage{}, false},
		{"anthropic_error.json", Usage{}, false},
	}
	for _, tt := range tests {
		body := usageFixture(t, tt.file)
		for _, d := range usageObjectDialects {
			got, ok := d.Usage(body)
			if got != tt.want || ok != tt.ok {
				t.Errorf("%s %s: got %+v, %v; want %+v, %v", d.Kind(), tt.file, got, ok, tt.want, tt.ok)
			}
		}
		// Gemini reads its usageMetadata only.
		if got, ok := Gemini.Usage(body); ok {
			t.Errorf("gemini %s: got %+v, want none", tt.file, got)
		}
	}
}

func TestUsageEdges(t *testing.T) {
	tests := []struct {
		body string
		want Usage
		ok   bool
	}{
		{``, Usage{}, false},
		{`not json "usage":{`, Usage{}, false},
		{`{"usage":null}`, Usage{}, false},
		{`{"usage":{}}`, Usage{}, true},
		{`{"usage" : {"prompt_tokens" : 3 , "completion_tokens":4}}`, Usage{Input: 3, Output: 4}, true},
		{`{"usage":{"prompt_tokens":5,"completion_tokens":2}} trailing`, Usage{}, false},
		{`{"usage":{"prompt_tokens":5,"completion_tokens":2`, Usage{}, false},
		{`{"usage":{"prompt_tokens":-5,"completion_tokens":2.9,"cache_read_input_tokens":1e3}}`, Usage{Output: 2, CacheRead: 1000}, true},
		{`{"usage":{"input_tokens":1e300}}`, Usage{Input: math.MaxInt64}, true},
		{`{"usage":{"input_tokens":"12","output_tokens":4}}`, Usage{Output: 4}, true},
		{`{"usage":5}`, Usage{}, false},
		{`{"choices":[{"message":{"content":"{\"usage\":{\"prompt_tokens\":1}}"}}]}`, Usage{}, false},
		{`{"choices":[{"usage":{"prompt_tokens":1}}]}`, Usage{}, false},
		{`{"usage":{"prompt_tokens":9,"prompt_tokens_details":null}}`, Usage{Input: 9}, true},
		{usageGeminiAnswer, Usage{}, false}, // Gemini's usageMetadata is not theirs
	}
	for _, tt := range tests {
		for _, d := range usageObjectDialects {
			got, ok := d.Usage([]byte(tt.body))
			if got != tt.want || ok != tt.ok {
				t.Errorf("%s Usage(%s) = %+v, %v; want %+v, %v", d.Kind(), tt.body, got, ok, tt.want, tt.ok)
			}
		}
	}
}

func TestGeminiUsage(t *testing.T) {
	u, ok := Gemini.Usage([]byte(usageGeminiAnswer))
	want := Usage{Input: 1000, Output: 100, CacheRead: 800, CacheReadInInput: true}
	if !ok || u != want {
		t.Fatalf("got %+v, %v; want %+v", u, ok, want)
	}
	if got := u.Tokens(); got != 1100 {
		t.Errorf("tokens %d, want 1100", got)
	}
	// An answer whose function call's arguments hold a "usage" object
	// still has its usageMetadata read.
	call := `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"report","args":{"usage":{"prompt_tokens":1}}}}]}}],` +
		`"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3,"toolUsePromptTokenCount":2}}`
	if u, ok := Gemini.Usage([]byte(call)); !ok || u != (Usage{Input: 9, Output: 3, CacheReadInInput: true}) {
		t.Errorf("an answer whose function call names a usage object: got %+v, %v", u, ok)
	}
	for _, body := range []string{
		`{"error":{"code":429,"message":"x","status":"RESOURCE_EXHAUSTED"}}`,
		`{"usageMetadata":null}`,
		`{"usageMetadata":{"promptTokenCount":`,
		`{"usage":{"prompt_tokens":5,"completion_tokens":2}}`,
	} {
		if u, ok := Gemini.Usage([]byte(body)); ok {
			t.Errorf("Usage(%s) = %+v, want none", body, u)
		}
	}
}

// usageStreams are the stream fixtures and what the readers of
// usageObjectDialects read from them.
var usageStreams = []struct {
	file string
	want Usage
	ok   bool
}{
	{"openai_chat_stream.sse", Usage{Input: 14, Output: 9, CacheReadInInput: true}, true},
	{"openai_chat_stream_nousage.sse", Usage{}, false},
	{"openai_responses_stream.sse", Usage{Input: 37, Output: 11, CacheReadInInput: true}, true},
	{"anthropic_stream.sse", Usage{Input: 472, Output: 87, CacheRead: 10240}, true},
	{"anthropic_stream_delta_counts.sse", Usage{Input: 2679, Output: 510, CacheRead: 10240}, true},
	{"anthropic_stream_cut.sse", Usage{Input: 472, Output: 1, CacheRead: 10240}, true},
	{"anthropic_stream_error.sse", Usage{Input: 472, Output: 1, CacheRead: 10240}, true},
}

// streamUsage feeds chunks to a fresh reader of d's and returns what it
// read.
func streamUsage(d Dialect, chunks ...[]byte) (Usage, bool) {
	r := d.StreamUsage()
	for _, c := range chunks {
		if n, err := r.Write(c); n != len(c) || err != nil {
			panic(fmt.Sprintf("Write = %d, %v; want %d, nil", n, err, len(c)))
		}
	}
	return r.Usage()
}

func TestStreamUsage(t *testing.T) {
	for _, tt := range usageStreams {
		stream := usageFixture(t, tt.file)
		for _, d := range usageObjectDialects {
			got, ok := streamUsage(d, stream)
			if got != tt.want || ok != tt.ok {
				t.Errorf("%s %s: got %+v, %v; want %+v, %v", d.Kind(), tt.file, got, ok, tt.want, tt.ok)
			}
		}
		if got, ok := streamUsage(Gemini, stream); ok {
			t.Errorf("gemini %s: got %+v, want none", tt.file, got)
		}
	}
}

func TestStreamUsageEdges(t *testing.T) {
	const (
		start = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":10,\"cache_creation_input_tokens\":20,\"cache_read_input_tokens\":30,\"output_tokens\":1}}}\n\n"
		chunk = "data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":null}\n\n"
	)
	tests := []struct {
		name, stream string
		want         Usage
		ok           bool
	}{
		{"empty", "", Usage{}, false},
		{"done only", "data: [DONE]\n\n", Usage{}, false},
		{"comments and pings", ": keep-alive\n\nevent: ping\ndata: {\"type\": \"ping\"}\n\n", Usage{}, false},
		{"usage in a comment", ": {\"usage\":{\"prompt_tokens\":5}}\n\n", Usage{}, false},
		{"usage not JSON", "data: \"usage\":{ nope\n\n", Usage{}, false},
		{"usage truncated", "data: {\"usage\":{\"prompt_tokens\":5\n\n", Usage{}, false},
		{"usage without blank line", "data: {\"usage\":{\"prompt_tokens\":5}}\n", Usage{}, false},
		{"last usage wins",
			chunk + "data: {\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":1}}\n\n" + chunk +
				"data: {\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":7}}\n\n" + chunk + "data: [DONE]\n\n",
			Usage{Input: 5, Output: 7}, true},
		{"CRLF lines", "data: {\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":3}}\r\n\r\n", Usage{Input: 2, Output: 3}, true},
		{"data split over lines", "data: {\"usage\":\ndata: {\"prompt_tokens\":2}}\n\n", Usage{Input: 2}, true},
		{"message_delta output only", start + "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":40}}\n\n",
			Usage{Input: 10, Output: 40, CacheRead: 30, CacheWrite: 20}, true},
		{"message_delta zero counts kept", start + "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":0,\"cache_read_input_tokens\":0,\"output_tokens\":40}}\n\n",
			Usage{Input: 10, Output: 40, CacheRead: 30, CacheWrite: 20}, true},
		{"message_delta without output_tokens", start + "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"input_tokens\":11}}\n\n",
			Usage{Input: 11, Output: 1, CacheRead: 30, CacheWrite: 20}, true},
		{"message_delta typed by the event line", start + "event: message_delta\ndata: {\"usage\":{\"output_tokens\":40}}\n\n",
			Usage{Input: 10, Output: 40, CacheRead: 30, CacheWrite: 20}, true},
		{"message_delta alone", "event: message_delta\ndata: {\"type\":\"message_delta\",\"usage\":{\"output_tokens\":40}}\n\n",
			Usage{Output: 40}, true},
		{"response.created has null usage", "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n", Usage{}, false},
		{"response.incomplete", "event: response.incomplete\ndata: {\"type\":\"response.incomplete\",\"response\":{\"status\":\"incomplete\",\"usage\":{\"input_tokens\":8,\"input_tokens_details\":{\"cached_tokens\":4},\"output_tokens\":100}}}\n\n",
			Usage{Input: 8, Output: 100, CacheRead: 4, CacheReadInInput: true}, true},
		{"negative counts", "data: {\"usage\":{\"prompt_tokens\":-1,\"completion_tokens\":-2}}\n\n", Usage{}, true},
		{"BOM", "\xEF\xBB\xBFdata: {\"usage\":{\"input_tokens\":1,\"output_tokens\":2}}\n\n", Usage{Input: 1, Output: 2}, true},
		{"gemini chunk", "data: " + strings.ReplaceAll(usageGeminiAnswer, "\n", "") + "\n\n", Usage{}, false},
	}
	for _, tt := range tests {
		for _, d := range usageObjectDialects {
			got, ok := streamUsage(d, []byte(tt.stream))
			if got != tt.want || ok != tt.ok {
				t.Errorf("%s %s: got %+v, %v; want %+v, %v", d.Kind(), tt.name, got, ok, tt.want, tt.ok)
			}
		}
	}
}

// geminiChunk is one event of a Gemini stream: text, its cumulative
// output count, and a finishReason when finish is not "".
func geminiChunk(text string, out int, finish string) string {
	f := ""
	if finish != "" {
		f = `,"finishReason":"` + finish + `"`
	}
	return `data: {"candidates":[{"content":{"parts":[{"text":"` + text + `"}],"role":"model"}` + f + `,"index":0}],` +
		`"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":` + strconv.Itoa(out) + `,"totalTokenCount":` + strconv.Itoa(12+out) + `}}` + "\r\n\r\n"
}

func TestGeminiStreamUsageLastChunkWins(t *testing.T) {
	stream := geminiChunk("This", 1, "") + geminiChunk(" is", 2, "") + geminiChunk(" it.", 3, "STOP")
	r := Gemini.StreamUsage()
	// Fed in small pieces, as a stream arrives.
	for s := stream; s != ""; {
		n := min(7, len(s))
		r.Write([]byte(s[:n]))
		s = s[n:]
	}
	u, ok := r.Usage()
	if want := (Usage{Input: 12, Output: 3, CacheReadInInput: true}); !ok || u != want {
		t.Fatalf("got %+v, %v; want %+v", u, ok, want)
	}
	if r.Events() != 3 {
		t.Errorf("events %d, want 3", r.Events())
	}
	// A stream cut after its second chunk keeps the second chunk's counts.
	if u, _ := streamUsage(Gemini, []byte(geminiChunk("a", 1, "")+geminiChunk("b", 2, ""))); u.Output != 2 {
		t.Errorf("cut stream output %d, want 2", u.Output)
	}
	// A chunk whose function call's arguments hold a "usage" object still
	// has its usageMetadata read; the other dialects read none of Gemini's.
	call := `data: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"report","args":{"usage":{"prompt_tokens":1}}}}]},` +
		`"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":4}}` + "\n\n"
	if u, ok := streamUsage(Gemini, []byte(call)); !ok || u.Output != 4 {
		t.Errorf("a chunk whose function call names a usage object: got %+v, %v", u, ok)
	}
	for _, d := range usageObjectDialects {
		if u, ok := streamUsage(d, []byte(stream)); ok {
			t.Errorf("%s read %+v from a Gemini stream, want none", d.Kind(), u)
		}
	}
}

// usageSplitAt cuts b into chunks whose lengths are taken from cuts in turn
// (a length of 0 gives an empty chunk); the rest of b is the last chunk.
func usageSplitAt(b, cuts []byte) [][]byte {
	var out [][]byte
	for _, c := range cuts {
		n := min(int(c), len(b))
		out, b = append(out, b[:n]), b[n:]
	}
	return append(out, b)
}

// usageRandomCuts returns chunk lengths that cover n bytes, between 0 and
// 63.
func usageRandomCuts(r *rand.Rand, n int) []byte {
	var cuts []byte
	for n > 0 {
		c := byte(r.IntN(64))
		cuts, n = append(cuts, c), n-int(c)
	}
	return cuts
}

func TestStreamUsageSplits(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	streams := [][]byte{[]byte(geminiChunk("a", 1, "") + geminiChunk("b", 2, "STOP"))}
	for _, tt := range usageStreams {
		streams = append(streams, usageFixture(t, tt.file))
	}
	for _, stream := range streams {
		ones := make([]byte, len(stream))
		for i := range ones {
			ones[i] = 1
		}
		splits := [][]byte{ones}
		for range 50 {
			splits = append(splits, usageRandomCuts(r, len(stream)))
		}
		for _, d := range all {
			want, wantOK := streamUsage(d, stream)
			for _, cuts := range splits {
				got, ok := streamUsage(d, usageSplitAt(stream, cuts)...)
				if got != want || ok != wantOK {
					t.Fatalf("%s %.40q split by %v: got %+v, %v; want %+v, %v", d.Kind(), stream, cuts, got, ok, want, wantOK)
				}
			}
		}
	}
}

func TestUsageIsZero(t *testing.T) {
	tests := []struct {
		u    Usage
		want bool
	}{
		{Usage{}, true},
		{Usage{CacheReadInInput: true}, true},
		{Usage{Input: 1}, false},
		{Usage{Output: 1}, false},
		{Usage{CacheRead: 1}, false},
		{Usage{CacheWrite: 1}, false},
	}
	for _, tt := range tests {
		if got := tt.u.IsZero(); got != tt.want {
			t.Errorf("%+v.IsZero() = %v, want %v", tt.u, got, tt.want)
		}
	}
}

func TestUsageTokens(t *testing.T) {
	tests := []struct {
		u    Usage
		want int64
	}{
		{Usage{}, 0},
		{Usage{Input: 2006, Output: 300, CacheRead: 1920, CacheReadInInput: true}, 2306},    // OpenAI: the cached tokens are in Input
		{Usage{Input: 12, Output: 503, CacheRead: 2048, CacheWrite: 1500}, 12 + 503 + 1500}, // Anthropic: reads left out
	}
	for _, tt := range tests {
		if got := tt.u.Tokens(); got != tt.want {
			t.Errorf("%+v.Tokens() = %d, want %d", tt.u, got, tt.want)
		}
	}
}

// TestUsageAllocatesNothing: a whole answer's usage is read without
// allocating.
func TestUsageAllocatesNothing(t *testing.T) {
	answer := []byte(usageChatAnswer)
	for _, d := range usageObjectDialects {
		if u, ok := d.Usage(answer); !ok || u != (Usage{Input: 12, Output: 5}) {
			t.Fatalf("%s: got %+v, %v", d.Kind(), u, ok)
		}
		if n := testing.AllocsPerRun(100, func() { d.Usage(answer) }); n != 0 {
			t.Errorf("%s: Usage allocates %v times", d.Kind(), n)
		}
	}
}

func TestStreamUsageAllocs(t *testing.T) {
	r := OpenAI.StreamUsage()
	r.Write(usageChatStream(20)) // warm up the parser's buffers
	content := []byte(strings.Repeat(usageChatChunk(" word", true), 10))
	if n := testing.AllocsPerRun(50, func() { r.Write(content) }); n != 0 {
		t.Errorf("allocations per 10 content events = %v, want 0", n)
	}
}

// usageChatChunk is one OpenAI chat completion chunk carrying text, with
// "usage":null when nullUsage (include_usage was asked for).
func usageChatChunk(text string, nullUsage bool) string {
	usage := ""
	if nullUsage {
		usage = `,"usage":null`
	}
	return `data: {"id":"chatcmpl-BpKA1c9VfZyM3q0kR7tLx2Nw5sHdE","object":"chat.completion.chunk","created":1751806601,` +
		`"model":"gpt-4o-mini-2024-07-18","service_tier":"default","system_fingerprint":"fp_34a54ae93c",` +
		`"choices":[{"index":0,"delta":{"content":"` + text + `"},"logprobs":null,"finish_reason":null}]` + usage + "}\n\n"
}

// usageChatStream returns an OpenAI chat stream of n events: n-2 content
// chunks, the usage chunk and [DONE].
func usageChatStream(n int) []byte {
	var b strings.Builder
	for i := range n - 2 {
		b.WriteString(usageChatChunk(fmt.Sprintf(" w%d", i), true))
	}
	b.WriteString(`data: {"id":"chatcmpl-BpKA1c9VfZyM3q0kR7tLx2Nw5sHdE","object":"chat.completion.chunk","created":1751806601,` +
		`"model":"gpt-4o-mini-2024-07-18","choices":[],"usage":{"prompt_tokens":1200,"completion_tokens":198,"total_tokens":1398,` +
		`"prompt_tokens_details":{"cached_tokens":1024,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}` + "\n\n")
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

func TestUsageChatStream(t *testing.T) {
	got, ok := streamUsage(OpenAI, usageChatStream(200))
	want := Usage{Input: 1200, Output: 198, CacheRead: 1024, CacheReadInInput: true}
	if got != want || !ok {
		t.Errorf("got %+v, %v; want %+v, true", got, ok, want)
	}
}

func FuzzUsage(f *testing.F) {
	for _, name := range []string{
		"openai_chat.json", "openai_chat_plain.json", "openai_responses.json", "anthropic_message.json",
		"openai_error.json", "openai_chat_stream.sse", "openai_responses_stream.sse",
		"anthropic_stream.sse", "anthropic_stream_delta_counts.sse", "anthropic_stream_cut.sse",
	} {
		f.Add(usageFixture(f, name), []byte{1, 7, 0, 200, 13})
	}
	f.Add([]byte("data: {\"usage\":{\"prompt_tokens\":-3,\"completion_tokens\":1e99}}\r\n\r\n"), []byte{3})
	f.Add([]byte("event: message_delta\ndata: {\"usage\" :{\"output_tokens\":null}}\n\n"), []byte{})
	f.Add([]byte(geminiChunk("a", 1, "")+geminiChunk("b", 2, "STOP")), []byte{9, 40})
	f.Add([]byte(usageGeminiAnswer), []byte{})
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		for _, d := range all {
			if u, ok := d.Usage(data); u.Input < 0 || u.Output < 0 || u.CacheRead < 0 || u.CacheWrite < 0 || (!ok && u != Usage{}) {
				t.Fatalf("%s: Usage = %+v, %v", d.Kind(), u, ok)
			}
			want, wantOK := streamUsage(d, data)
			if want.Input < 0 || want.Output < 0 || want.CacheRead < 0 || want.CacheWrite < 0 || (!wantOK && want != Usage{}) {
				t.Fatalf("%s: the stream's reader read %+v, %v", d.Kind(), want, wantOK)
			}
			if got, ok := streamUsage(d, usageSplitAt(data, cuts)...); got != want || ok != wantOK {
				t.Fatalf("%s split by %v: got %+v, %v; whole: %+v, %v", d.Kind(), cuts, got, ok, want, wantOK)
			}
		}
	})
}

// BenchmarkStreamUsage reads the usage of an OpenAI chat stream of 200
// events.
func BenchmarkStreamUsage(b *testing.B) {
	const events = 200
	stream := usageChatStream(events)
	var chunks [][]byte // one event per chunk, as the network mostly delivers them
	for c := range strings.SplitAfterSeq(string(stream), "\n\n") {
		if c != "" {
			chunks = append(chunks, []byte(c))
		}
	}
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		r := OpenAI.StreamUsage()
		for _, c := range chunks {
			r.Write(c)
		}
		if _, ok := r.Usage(); !ok {
			b.Fatal("no usage read")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
}

// usageByDecoding is objectUsage as a whole-body decode: the reference
// that objectUsage, which decodes only the usage member, must agree with.
func usageByDecoding(body []byte) (Usage, bool) {
	if !hasUsageObject(body) {
		return Usage{}, false
	}
	var b usageHolder
	if err := json.Unmarshal(body, &b); isSyntaxError(err) || b.Usage == nil {
		return Usage{}, false
	}
	return b.Usage.usage(), true
}

func FuzzObjectUsageAgreesWithDecoding(f *testing.F) {
	for _, name := range []string{"openai_chat.json", "openai_chat_plain.json", "openai_responses.json", "anthropic_message.json", "openai_error.json"} {
		f.Add(usageFixture(f, name))
	}
	f.Add([]byte(`{"usage":{"prompt_tokens":1},"USAGE":null}`))
	f.Add([]byte(`{"Usage":{"prompt_tokens":1},"usage":{"prompt_tokens":2}}`))
	f.Add([]byte(`{"u\u0073age":{"prompt_tokens":3}} `))
	f.Add([]byte(`{"usage":{"prompt_tokens":"1"},"x":[1,{"usage":{}}]}`))
	f.Add([]byte(`{"x":{"usage":{}},"usage":5}`))
	f.Add([]byte(`{"usage":{"output_tokens":"7","input_tokens_details":0}}`))
	f.Add([]byte(`{"usage":{"prompt_tokens_details":[1],"output_tokens":true}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		want, wantOK := usageByDecoding(body)
		for _, d := range usageObjectDialects {
			if got, ok := d.Usage(body); got != want || ok != wantOK {
				t.Fatalf("%s: Usage(%q) = %+v, %v; decoding the whole body gives %+v, %v", d.Kind(), body, got, ok, want, wantOK)
			}
		}
	})
}
