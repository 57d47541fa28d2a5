package sse

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// rec is an Event with its data copied, for comparing.
type rec struct{ Type, Data, ID string }

// result is everything a parser tells about a stream.
type result struct {
	Events     []rec
	Count      int
	Bytes      int64
	Pending    bool
	Overflowed bool
}

// feed feeds chunks to a fresh parser and records what it reports.
func feed(max int, chunks ...[]byte) result {
	p := Parser{MaxEventSize: max}
	var r result
	for _, c := range chunks {
		p.Feed(c, func(e Event) bool {
			r.Events = append(r.Events, rec{e.Type, string(e.Data), e.ID})
			return true
		})
	}
	r.Count, r.Bytes, r.Pending, r.Overflowed = p.Events(), p.Bytes(), p.Pending(), p.Overflowed()
	return r
}

// splits returns in fed whole, split at every position, and in 1-byte chunks.
func splits(in []byte) [][][]byte {
	all := [][][]byte{{in}}
	for i := 0; i <= len(in); i++ {
		all = append(all, [][]byte{in[:i], in[i:]})
	}
	var bytewise [][]byte
	for i := range in {
		bytewise = append(bytewise, in[i:i+1])
	}
	return append(all, bytewise)
}

var parseTests = []struct {
	name string
	in   string
	want []rec
}{
	{"lf", "data: hello\n\n", []rec{{"", "hello", ""}}},
	{"crlf", "data: hello\r\n\r\n", []rec{{"", "hello", ""}}},
	{"cr", "data: hello\r\r", []rec{{"", "hello", ""}}},
	{"mixed line ends", "data: a\r\ndata: b\rdata: c\n\r\n", []rec{{"", "a\nb\nc", ""}}},
	{"cr cr is two line ends", "data: a\r\rdata: b\n\n", []rec{{"", "a", ""}, {"", "b", ""}}},
	{"lf cr is two line ends", "data: a\n\rdata: b\n\n", []rec{{"", "a", ""}, {"", "b", ""}}},
	{"data lines joined", "data: a\ndata: b\n\n", []rec{{"", "a\nb", ""}}},
	{"many events", "data: 1\n\ndata: 2\n\ndata: 3\n\n", []rec{{"", "1", ""}, {"", "2", ""}, {"", "3", ""}}},
	{"event type", "event: ping\ndata: x\n\n", []rec{{"ping", "x", ""}}},
	{"last event field wins", "event: a\nevent: b\ndata: x\n\n", []rec{{"b", "x", ""}}},
	{"type reset after dispatch", "event: a\ndata: 1\n\ndata: 2\n\n", []rec{{"a", "1", ""}, {"", "2", ""}}},
	{"id kept across events", "id: 7\ndata: a\n\ndata: b\n\n", []rec{{"", "a", "7"}, {"", "b", "7"}}},
	{"id without value clears", "id: 1\ndata: a\n\nid\ndata: b\n\n", []rec{{"", "a", "1"}, {"", "b", ""}}},
	{"id with NUL ignored", "id: 1\ndata: a\n\nid: x\x00y\ndata: b\n\n", []rec{{"", "a", "1"}, {"", "b", "1"}}},
	{"id of undispatched event kept", "id: 3\n\ndata: a\n\n", []rec{{"", "a", "3"}}},
	{"bom skipped", "\xEF\xBB\xBFdata: a\n\n", []rec{{"", "a", ""}}},
	{"second bom kept", "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n", []rec{{"", "b", ""}}},
	{"partial bom kept", "\xEF\xBBdata: a\n\ndata: b\n\n", []rec{{"", "b", ""}}},
	{"bom later kept", "data: a\n\n\xEF\xBB\xBFdata: b\n\n", []rec{{"", "a", ""}}},
	{"comment", ": hello\ndata: a\n: again\n\n", []rec{{"", "a", ""}}},
	{"comment alone", ":\n\n: keep-alive\n\n", nil},
	{"one space stripped", "data:  a\n\n", []rec{{"", " a", ""}}},
	{"no space", "data:a\n\n", []rec{{"", "a", ""}}},
	{"trailing space kept", "data: a \n\n", []rec{{"", "a ", ""}}},
	{"colon in value", "data: a: b\n\n", []rec{{"", "a: b", ""}}},
	{"field without colon", "data\n\n", []rec{{"", "", ""}}},
	{"two empty data lines", "data\ndata\n\n", []rec{{"", "\n", ""}}},
	{"empty data value", "data:\n\n", []rec{{"", "", ""}}},
	{"unknown field ignored", "foo: bar\ndata: a\nbaz\n\n", []rec{{"", "a", ""}}},
	{"field names case-sensitive", "Data: a\nEVENT: x\n\n", nil},
	{"space before colon", "data : a\n\n", nil},
	{"retry ignored", "retry: 1000\ndata: a\n\n", []rec{{"", "a", ""}}},
	{"no data not dispatched", "event: ping\n\ndata: a\n\n", []rec{{"", "a", ""}}},
	{"extra blank lines", "\n\n\ndata: 1\n\n\n\n", []rec{{"", "1", ""}}},
	{"unfinished event dropped", "data: a\n\ndata: b\n", []rec{{"", "a", ""}}},
	{"unfinished line dropped", "data: a\n\ndata: b", []rec{{"", "a", ""}}},
	{"empty stream", "", nil},
	{"openai", "data: {\"choices\":[]}\n\ndata: [DONE]\n\n", []rec{{"", `{"choices":[]}`, ""}, {"", "[DONE]", ""}}},
	{"anthropic error", "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}\n\n",
		[]rec{{"error", `{"type":"error","error":{"type":"overloaded_error"}}`, ""}}},
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			got := feed(0, []byte(tt.in))
			if !slices.Equal(got.Events, tt.want) {
				t.Errorf("events = %q, want %q", got.Events, tt.want)
			}
			if got.Count != len(tt.want) || got.Bytes != int64(len(tt.in)) {
				t.Errorf("Events() = %d, Bytes() = %d; want %d, %d", got.Count, got.Bytes, len(tt.want), len(tt.in))
			}
		})
	}
}

func TestSplitInvariant(t *testing.T) {
	for _, tt := range parseTests {
		in := []byte(tt.in)
		want := feed(0, in)
		for _, chunks := range splits(in) {
			if got := feed(0, chunks...); !equalResult(got, want) {
				t.Fatalf("%s: fed as %q: got %+v, want %+v", tt.name, chunks, got, want)
			}
		}
	}
}

func equalResult(a, b result) bool {
	return slices.Equal(a.Events, b.Events) && a.Count == b.Count && a.Bytes == b.Bytes &&
		a.Pending == b.Pending && a.Overflowed == b.Overflowed
}

func TestPending(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"", false},
		{"data: a\n\n", false},
		{"data: a\n", true},
		{"data: a", true},
		{"d", true},
		{"event: ping\n", true},
		{"id: 1\n", true},
		{": keep-alive\n", false},
		{": keep", true},
		{"event: ping\n\n", false},
		{"data: a\r", true},
		{"data: a\r\r", false},
		{"\xEF", true},
		{"\xEF\xBB\xBF", false},
	}
	for _, tt := range tests {
		for _, chunks := range splits([]byte(tt.in)) {
			if got := feed(0, chunks...).Pending; got != tt.want {
				t.Errorf("Pending() after %q = %v, want %v", chunks, got, tt.want)
			}
		}
	}
}

func TestOverflow(t *testing.T) {
	long := strings.Repeat("x", 40)
	tests := []struct {
		name     string
		in       string
		want     []rec
		overflow bool
		pending  bool
	}{
		{"fits", "data: 0123456789\n\n", []rec{{"", "0123456789", ""}}, false, false},
		{"one long line", "data: a\n\ndata: " + long + "\n\ndata: b\n\n", []rec{{"", "a", ""}, {"", "b", ""}}, true, false},
		{"many short lines", "data: 12345\ndata: 12345\ndata: 12345\ndata: 12345\n\ndata: b\n\n", []rec{{"", "b", ""}}, true, false},
		{"type counts", "event: " + long + "\ndata: a\n\ndata: b\n\n", []rec{{"", "b", ""}}, true, false},
		{"long comment", ":" + long + "\ndata: a\n\ndata: b\n\n", []rec{{"", "b", ""}}, true, false},
		{"short comments do not add up", strings.Repeat(": 123456789\n", 10) + "data: a\n\n", []rec{{"", "a", ""}}, false, false},
		{"cut while skipping", "data: " + long, nil, true, true},
		{"cut after long line", "data: " + long + "\n", nil, true, true},
	}
	for _, tt := range tests {
		in := []byte(tt.in)
		for _, chunks := range splits(in) {
			got := feed(32, chunks...)
			want := result{tt.want, len(tt.want), int64(len(in)), tt.pending, tt.overflow}
			if !equalResult(got, want) {
				t.Fatalf("%s: fed as %q: got %+v, want %+v", tt.name, chunks, got, want)
			}
		}
	}
}

func TestOverflowBoundsBuffer(t *testing.T) {
	p := Parser{MaxEventSize: 1024}
	chunk := bytes.Repeat([]byte("data: 0123456789\n"), 64)
	for range 1000 {
		p.Feed(chunk, func(Event) bool { t.Fatal("oversized event dispatched"); return false })
	}
	if !p.Overflowed() || cap(p.data) > 1024 || cap(p.line) > 1024 {
		t.Errorf("Overflowed() = %v, cap(data) = %d, cap(line) = %d; want true, <= 1024", p.Overflowed(), cap(p.data), cap(p.line))
	}
	p.Feed([]byte("\ndata: ok\n\n"), func(e Event) bool {
		if string(e.Data) != "ok" {
			t.Errorf("after overflow: data = %q, want %q", e.Data, "ok")
		}
		return true
	})
	if p.Events() != 1 {
		t.Errorf("Events() = %d, want 1", p.Events())
	}
}

func TestFeedStop(t *testing.T) {
	in := []byte("data: 1\n\ndata: 2\n\ndata: 3\n\n")
	for _, chunks := range splits(in) {
		var p Parser
		var got []string
		ok := true
		for _, c := range chunks {
			ok = p.Feed(c, func(e Event) bool {
				got = append(got, string(e.Data))
				return len(got) < 2
			})
		}
		if ok || !slices.Equal(got, []string{"1", "2"}) || p.Events() != 2 || p.Bytes() != int64(len(in)) {
			t.Fatalf("fed as %q: ok = %v, events = %q, Events() = %d, Bytes() = %d; want false, [1 2], 2, %d",
				chunks, ok, got, p.Events(), p.Bytes(), len(in))
		}
	}
}

func TestAppendEvent(t *testing.T) {
	tests := []struct {
		typ, data, want string
	}{
		{"", "hello", "data: hello\n\n"},
		{"ping", "{}", "event: ping\ndata: {}\n\n"},
		{"", "", "data: \n\n"},
		{"", "a\nb\r\nc\rd", "data: a\ndata: b\ndata: c\ndata: d\n\n"},
		{"", "a\n", "data: a\ndata: \n\n"},
		{"", "a\r\n\r\n", "data: a\ndata: \ndata: \n\n"},
		{"bad\r\ntype", "x", "event: badtype\ndata: x\n\n"},
	}
	for _, tt := range tests {
		if got := string(AppendEvent(nil, tt.typ, []byte(tt.data))); got != tt.want {
			t.Errorf("AppendEvent(%q, %q) = %q, want %q", tt.typ, tt.data, got, tt.want)
		}
	}
}

func TestAppendComment(t *testing.T) {
	tests := []struct{ text, want string }{
		{"", ": \n"},
		{"keep-alive", ": keep-alive\n"},
		{"a\nb\r\nc", ": a\n: b\n: c\n"},
	}
	for _, tt := range tests {
		if got := string(AppendComment(nil, tt.text)); got != tt.want {
			t.Errorf("AppendComment(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func TestRoundTrip(t *testing.T) {
	in := []rec{{"", "hello", ""}, {"message_start", `{"a":1}`, ""}, {"", "", ""}, {"x", "a\n\nb\n", ""}, {"", " lead", ""}}
	var wire []byte
	for _, e := range in {
		wire = AppendComment(wire, "keep-alive")
		wire = AppendEvent(wire, e.Type, []byte(e.Data))
	}
	if got := feed(0, wire); !slices.Equal(got.Events, in) || got.Pending {
		t.Errorf("round trip: got %q (pending %v), want %q", got.Events, got.Pending, in)
	}
}

func TestIsDone(t *testing.T) {
	tests := []struct {
		in   string
		want bool
	}{
		{"[DONE]", true},
		{" [DONE] \n", true},
		{"[done]", false},
		{"", false},
		{`{"done":true}`, false},
	}
	for _, tt := range tests {
		if got := IsDone([]byte(tt.in)); got != tt.want {
			t.Errorf("IsDone(%q) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func FuzzParser(f *testing.F) {
	for _, tt := range parseTests {
		f.Add([]byte(tt.in), uint16(len(tt.in)/2), uint8(0))
	}
	f.Add([]byte("data: 0123456789abcdef\n\ndata: a\n\n"), uint16(9), uint8(12))
	f.Fuzz(func(t *testing.T, in []byte, at uint16, max uint8) {
		whole := feed(int(max), in)
		if whole.Count != len(whole.Events) || whole.Bytes != int64(len(in)) {
			t.Fatalf("Events() = %d, Bytes() = %d; want %d, %d", whole.Count, whole.Bytes, len(whole.Events), len(in))
		}
		i := int(at) % (len(in) + 1)
		if got := feed(int(max), in[:i], in[i:]); !equalResult(got, whole) {
			t.Fatalf("split at %d: got %+v, want %+v", i, got, whole)
		}
		bytewise := splits(in)
		if got := feed(int(max), bytewise[len(bytewise)-1]...); !equalResult(got, whole) {
			t.Fatalf("1-byte chunks: got %+v, want %+v", got, whole)
		}
	})
}

func FuzzRoundTrip(f *testing.F) {
	f.Add("", []byte("hello"), "")
	f.Add("content_block_delta", []byte("a\r\nb\rc\n"), "keep\nalive")
	f.Add("\xEF\xBB\xBF", []byte(""), ":")
	f.Fuzz(func(t *testing.T, typ string, data []byte, comment string) {
		typ = strings.NewReplacer("\r", "", "\n", "").Replace(typ)
		wire := AppendComment(nil, comment)
		wire = AppendEvent(wire, typ, data)
		wantData := strings.NewReplacer("\r\n", "\n", "\r", "\n").Replace(string(data))
		want := []rec{{typ, wantData, ""}}
		if got := feed(0, wire); !slices.Equal(got.Events, want) || got.Pending || got.Overflowed {
			t.Fatalf("wire %q: got %+v, want %q", wire, got, want)
		}
	})
}

// chatStream returns an OpenAI chat completion stream of n content
// chunks, a usage chunk and the terminator, and the number of events.
func chatStream(n int) ([]byte, int) {
	var b []byte
	for i := range n {
		b = fmt.Appendf(b, `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_fc9f1d7035","choices":[{"index":0,"delta":{"content":" word%d"},"logprobs":null,"finish_reason":null}],"usage":null}`+"\n\n", i)
	}
	b = append(b, `data: {"id":"chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","choices":[],"usage":{"prompt_tokens":1117,"completion_tokens":46,"total_tokens":1163}}`+"\n\n"...)
	b = append(b, "data: [DONE]\n\n"...)
	return b, n + 2
}

// chunked cuts b into chunks of size bytes, as a network read might.
func chunked(b []byte, size int) [][]byte {
	var out [][]byte
	for len(b) > size {
		out, b = append(out, b[:size]), b[size:]
	}
	return append(out, b)
}

func TestFeedAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocations are not measured under the race detector")
	}
	stream, _ := chatStream(50)
	chunks := chunked(stream, 700)
	var p Parser
	run := func() {
		for _, c := range chunks {
			p.Feed(c, func(Event) bool { return true })
		}
	}
	run() // warm up the buffers
	if n := testing.AllocsPerRun(20, run); n != 0 {
		t.Errorf("allocations per stream = %v, want 0", n)
	}
}

func BenchmarkFeed(b *testing.B) {
	stream, events := chatStream(100)
	chunks := chunked(stream, 1000)
	var p Parser
	done := 0
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range chunks {
			p.Feed(c, func(e Event) bool {
				if IsDone(e.Data) {
					done++
				}
				return true
			})
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*events), "ns/event")
	if p.Events() != b.N*events || done != b.N {
		b.Fatalf("Events() = %d, done = %d; want %d, %d", p.Events(), done, b.N*events, b.N)
	}
}
