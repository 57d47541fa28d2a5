package chat

import "testing"

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
