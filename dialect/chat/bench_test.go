package chat

import (
	"strconv"
	"testing"
)

// BenchmarkTranslateRequest: the multi-turn request with parallel tool
// calls and their results, read as OpenAI's and written as Anthropic's.
func BenchmarkTranslateRequest(b *testing.B) {
	body := []byte(requestCases[2].wire["openai"])
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := OpenAI.DecodeRequest(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := Anthropic.EncodeRequest(r); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslateAnswer: an answer of text and a tool call, read as
// Anthropic's and written as OpenAI's.
func BenchmarkTranslateAnswer(b *testing.B) {
	body := []byte(answerCases[1].wire["anthropic"])
	b.ReportAllocs()
	for b.Loop() {
		a, err := Anthropic.DecodeAnswer(body)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := OpenAI.EncodeAnswer(a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTranslateStreamEvent: Anthropic's stream of text and two tool
// calls written as OpenAI's, per upstream event.
func BenchmarkTranslateStreamEvent(b *testing.B) {
	frames := streamCases[1].wire["anthropic"]
	b.ReportAllocs()
	var evs []Event
	var out []Frame
	for b.Loop() {
		dec := Anthropic.NewStreamDecoder()
		enc := OpenAI.NewStreamEncoder(&Request{IncludeUsage: true})
		for _, f := range frames {
			evs, _ = dec.Decode(evs[:0], f)
			for _, ev := range evs {
				out, _ = enc.Encode(out[:0], ev)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(frames)), "ns/event")
}

// BenchmarkTranslateGatewayShape: the gateway benchmark's calls
// (internal/gateway BenchmarkTranslatedCall, json/openai-anthropic and
// json/anthropic-openai) without their sockets: a short request written
// in the other dialect, and an answer of 16 text blocks written back.
func BenchmarkTranslateGatewayShape(b *testing.B) {
	parts := make([]Part, 16)
	for i := range parts {
		parts[i] = Text("Block " + strconv.Itoa(i) + " of the answer, in three pieces. ")
	}
	answer := &Answer{ID: "msg_1", Model: "m", Content: parts, Stop: StopEndTurn, Usage: Usage{Input: 9, Output: 120}}
	for _, pair := range []struct {
		from, to Codec
		request  string
	}{
		{OpenAI, Anthropic, `{"model":"gpt-4o-mini","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]}`},
		{Anthropic, OpenAI, `{"model":"claude-haiku-4-5","max_tokens":1024,"system":"Be brief.","messages":[{"role":"user","content":"hi"}]}`},
	} {
		name := pair.from.Name() + "-" + pair.to.Name()
		wire, err := pair.to.EncodeAnswer(answer)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(name+"/request", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := pair.from.DecodeRequest([]byte(pair.request))
				if err != nil {
					b.Fatal(err)
				}
				r.Model, r.MaxTokens = "m", 4096 // as the engine sets them
				if _, err := pair.to.EncodeRequest(r); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/answer", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				a, err := pair.to.DecodeAnswer(wire)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := pair.from.EncodeAnswer(a); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
