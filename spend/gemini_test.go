package spend

import (
	"strconv"
	"strings"
	"testing"
)

const geminiAnswer = `{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"},"finishReason":"STOP","index":0}],
"usageMetadata":{"promptTokenCount":1000,"candidatesTokenCount":40,"thoughtsTokenCount":60,
"cachedContentTokenCount":800,"totalTokenCount":1100},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`

func TestGeminiUsageFromJSON(t *testing.T) {
	u, ok := UsageFromJSON([]byte(geminiAnswer))
	want := Usage{Input: 1000, Output: 100, CacheRead: 800, CacheReadInInput: true}
	if !ok || u != want {
		t.Fatalf("got %+v, %v; want %+v", u, ok, want)
	}
	// The cached tokens are priced once, at the cache price.
	p := Price{Input: 1, Output: 10, CacheRead: 0.25}
	if got, want := p.Cost(u), (200*1+100*10+800*0.25)/1e6; got != want {
		t.Errorf("cost %v, want %v", got, want)
	}
	if got := u.Tokens(); got != 1100 {
		t.Errorf("tokens %d, want 1100", got)
	}
	for _, body := range []string{
		`{"error":{"code":429,"message":"x","status":"RESOURCE_EXHAUSTED"}}`,
		`{"usageMetadata":null}`,
		`{"usageMetadata":{"promptTokenCount":`,
	} {
		if u, ok := UsageFromJSON([]byte(body)); ok {
			t.Errorf("UsageFromJSON(%s) = %+v, want none", body, u)
		}
	}
}

func TestGeminiUsageMeterLastChunkWins(t *testing.T) {
	chunk := func(text string, out int, finish string) string {
		f := ""
		if finish != "" {
			f = `,"finishReason":"` + finish + `"`
		}
		return `data: {"candidates":[{"content":{"parts":[{"text":"` + text + `"}],"role":"model"}` + f + `,"index":0}],` +
			`"usageMetadata":{"promptTokenCount":12,"candidatesTokenCount":` + strconv.Itoa(out) + `,"totalTokenCount":` + strconv.Itoa(12+out) + `}}` + "\r\n\r\n"
	}
	stream := chunk("This", 1, "") + chunk(" is", 2, "") + chunk(" it.", 3, "STOP")
	var m UsageMeter
	// Fed in small pieces, as a stream arrives.
	for s := stream; s != ""; {
		n := min(7, len(s))
		m.Write([]byte(s[:n]))
		s = s[n:]
	}
	u, ok := m.Usage()
	if want := (Usage{Input: 12, Output: 3, CacheReadInInput: true}); !ok || u != want {
		t.Fatalf("got %+v, %v; want %+v", u, ok, want)
	}
	if m.Events() != 3 {
		t.Errorf("events %d, want 3", m.Events())
	}
	// A stream cut after its second chunk keeps the second chunk's counts.
	var cut UsageMeter
	cut.Write([]byte(strings.Join([]string{chunk("a", 1, ""), chunk("b", 2, "")}, "")))
	if u, _ := cut.Usage(); u.Output != 2 {
		t.Errorf("cut stream output %d, want 2", u.Output)
	}
}
