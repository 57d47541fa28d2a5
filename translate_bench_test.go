package sluice

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/dialect"
)

// benchEvents is how many text events a streamed answer of the
// translation benchmark carries.
const benchEvents = 50

// chatProvider answers in memory as OpenAI or Anthropic, by the path: a
// whole answer, or a stream of benchEvents text events.
type chatProvider struct{ openaiJSON, openaiSSE, anthropicJSON, anthropicSSE []byte }

func newChatProvider() *chatProvider {
	p := &chatProvider{
		openaiJSON:    []byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, how can I help?"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":7,"total_tokens":16}}`),
		anthropicJSON: []byte(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[{"type":"text","text":"Hello there, how can I help?"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":9,"output_tokens":7}}`),
	}
	var o, a bytes.Buffer
	o.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	a.WriteString("event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-haiku-4-5\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n")
	a.WriteString("event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
	for i := range benchEvents {
		fmt.Fprintf(&o, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{"content":"word%d "},"finish_reason":null}]}`+"\n\n", i)
		fmt.Fprintf(&a, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"word%d \"}}\n\n", i)
	}
	o.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n")
	o.WriteString(`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o-mini","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":50,"total_tokens":59}}` + "\n\ndata: [DONE]\n\n")
	a.WriteString("event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n")
	a.WriteString("event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":50}}\n\n")
	a.WriteString("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n")
	p.openaiSSE, p.anthropicSSE = o.Bytes(), a.Bytes()
	return p
}

func (p *chatProvider) RoundTrip(r *http.Request) (*http.Response, error) {
	body, _ := io.ReadAll(r.Body)
	r.Body.Close()
	stream := bytes.Contains(body, []byte(`"stream":true`))
	var answer []byte
	ct := "application/json"
	switch anthropic := strings.HasSuffix(r.URL.Path, "/messages"); {
	case anthropic && stream:
		answer, ct = p.anthropicSSE, "text/event-stream"
	case anthropic:
		answer = p.anthropicJSON
	case stream:
		answer, ct = p.openaiSSE, "text/event-stream"
	default:
		answer = p.openaiJSON
	}
	h := http.Header{"Content-Type": {ct}, "Date": {"Tue, 01 Dec 2026 05:00:00 GMT"}, "X-Request-Id": {"req_1"}}
	if !stream {
		h["Content-Length"] = []string{strconv.Itoa(len(answer))}
	}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(answer)),
		ContentLength: int64(len(answer)), Request: r}, nil
}

// BenchmarkTranslation is what translation costs: an OpenAI call whose
// primary's breaker is open answered by a fallback that speaks OpenAI
// (same) or Anthropic (translated), whole or streamed (benchEvents text
// events); and a same-dialect stream under Policy.Resume, which writes
// each event anew (resume).
func BenchmarkTranslation(b *testing.B) {
	const url = "http://provider.invalid/v1/chat/completions" // never dialled
	base := newChatProvider()
	transport := func(d dialect.Dialect, resume bool) *Transport {
		p := Interactive()
		p.Resume = resume
		tr := &Transport{Provider: "primary", Dialect: dialect.OpenAI, Policy: p, Log: NewAttemptLog(io.Discard), Base: base,
			Fallbacks: []Target{{Provider: "backup", Model: "claude-haiku-4-5", Dialect: d}}}
		permit, _ := tr.Breaker("primary").Allow()
		permit.Done(breaker.Failure, 0)
		for range 5 {
			permit, _ := tr.Breaker("primary").Allow()
			permit.Done(breaker.Failure, 0)
		}
		return tr
	}
	for _, stream := range []bool{false, true} {
		body := `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}`
		kind := "json"
		if stream {
			body = strings.Replace(body, "{", `{"stream":true,"stream_options":{"include_usage":true},`, 1)
			kind = "stream"
		}
		for _, tc := range []struct {
			name   string
			d      dialect.Dialect
			resume bool
		}{{"same", dialect.OpenAI, false}, {"translated", dialect.Anthropic, false}, {"resume", dialect.OpenAI, true}} {
			if tc.resume && !stream {
				continue
			}
			b.Run(kind+"/"+tc.name, func(b *testing.B) {
				tr := transport(tc.d, tc.resume)
				b.ReportAllocs()
				for b.Loop() {
					req, _ := http.NewRequest("POST", url, strings.NewReader(body))
					resp, err := tr.RoundTrip(req)
					if err != nil {
						b.Fatal(err)
					}
					if resp.StatusCode != 200 || resp.Header.Get("Sluice-Provider") != "backup" {
						b.Fatalf("answered %d by %q", resp.StatusCode, resp.Header.Get("Sluice-Provider"))
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
	}
}
