package usagechunk

import "testing"

func TestHiderKeepsEverythingElse(t *testing.T) {
	stream := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" +
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1}}\n\n" + "data: [DONE]\n\n"
	want := "data: {\"choices\":[{\"delta\":{\"content\":\"hi\"}}]}\n\n" + "data: [DONE]\n\n"
	for size := 1; size <= len(stream); size++ {
		var f Hider
		var out []byte
		for i := 0; i < len(stream); i += size {
			out = append(out, f.Hide([]byte(stream[i:min(i+size, len(stream))]))...)
		}
		out = append(out, f.Rest()...)
		if string(out) != want {
			t.Fatalf("chunks of %d: %q, want %q", size, out, want)
		}
	}
}

func TestHiderInEveryFraming(t *testing.T) {
	for _, eol := range []string{"\n", "\r\n", "\r"} {
		ev := func(data string) string { return "data: " + data + eol + eol }
		stream := ev(`{"choices":[{"delta":{"content":"hi"}}]}`) + ": keep-alive" + eol +
			ev(`{"choices":[],"usage":{"prompt_tokens":1}}`) + ev("[DONE]")
		want := ev(`{"choices":[{"delta":{"content":"hi"}}]}`) + ": keep-alive" + eol + ev("[DONE]")
		for size := 1; size <= len(stream); size++ {
			var f Hider
			var out []byte
			for i := 0; i < len(stream); i += size {
				out = append(out, f.Hide([]byte(stream[i:min(i+size, len(stream))]))...)
			}
			out = append(out, f.Rest()...)
			if string(out) != want {
				t.Fatalf("%q framing, chunks of %d: %q, want %q", eol, size, out, want)
			}
		}
	}
}

func TestAsk(t *testing.T) {
	got := string(Ask([]byte(` {"model":"m","stream":true}`)))
	if want := ` {"stream_options":{"include_usage":true},"model":"m","stream":true}`; got != want {
		t.Errorf("Ask: %s, want %s", got, want)
	}
}
