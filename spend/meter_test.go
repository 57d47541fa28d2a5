package spend

import (
	"math"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/state"
)

// chatAnswer is a small chat completion, as the fake provider answers.
const chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1764547200,"model":"gpt-4o-mini",` +
	`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, friend."},"finish_reason":"stop"}],` +
	`"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`

// BenchmarkMeterCall is what a Meter adds to one call under one daily
// budget: reserve, price the answer, settle, on the file ledger.
func BenchmarkMeterCall(b *testing.B) {
	st, err := state.OpenFile(b.TempDir(), state.FileOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	l, err := NewFileLedger(st)
	if err != nil {
		b.Fatal(err)
	}
	m := &Meter{Budgets: []Budget{{Name: "daily", LimitUSD: 1e9}}, Ledger: l,
		Prices: func(string) (Price, bool) { return Price{Input: 0.15, Output: 0.6}, true }}
	answer := []byte(chatAnswer)
	models := []string{"gpt-4o-mini"}
	b.ReportAllocs()
	for b.Loop() {
		_, settle, err := m.Reserve(hook.Ask{Provider: "openai", Models: models, BodyBytes: 120, Total: 30 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		count, end := m.Count(dialect.OpenAI, "gpt-4o-mini", false, 120)
		count(answer)
		cost, _ := end()
		settle(cost)
	}
}

// TestWindowCacheRollsOver: a Meter works a budget's period out once, and
// again when the period is over (or the clock went back before it).
func TestWindowCacheRollsOver(t *testing.T) {
	b := Budget{Name: "daily", Scope: "all"}
	var cache atomic.Pointer[window]
	at := time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)
	w1 := b.windowAt(&cache, at)
	if w1.allKey != "budget:daily:all:2026-11-30" || !w1.resets.Equal(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("window %+v", w1)
	}
	if w := b.windowAt(&cache, at.Add(999*time.Millisecond)); w != w1 {
		t.Error("the period was worked out again within it")
	}
	if w := b.windowAt(&cache, at.Add(time.Second)); w.allKey != "budget:daily:all:2026-12-01" {
		t.Errorf("at midnight the key is %s, want the new day's", w.allKey)
	}
	if w := b.windowAt(&cache, at.Add(-24*time.Hour)); w.allKey != "budget:daily:all:2026-11-29" {
		t.Errorf("a clock gone back gives %s, want the day before's", w.allKey)
	}
	if k, _ := b.Key(at, "", "", ""); k != w1.allKey {
		t.Errorf("Key gives %s, the cache %s: one format", k, w1.allKey)
	}
}

// TestMeterCallAllocations: a call under one budget on the file ledger,
// priced from a JSON answer, allocates what it holds and no more: the
// reservation and its settle, the tap with its two funcs and the answer's
// bytes. Reading the usage allocates nothing.
func TestMeterCallAllocations(t *testing.T) {
	st, err := state.OpenFile(t.TempDir(), state.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	l, err := NewFileLedger(st)
	if err != nil {
		t.Fatal(err)
	}
	m := &Meter{Budgets: []Budget{{Name: "daily", LimitUSD: 1e9}}, Ledger: l,
		Prices: func(string) (Price, bool) { return Price{Input: 0.15, Output: 0.6}, true }}
	answer := []byte(chatAnswer)
	models := []string{"gpt-4o-mini"}
	var total float64
	n := testing.AllocsPerRun(200, func() {
		_, settle, err := m.Reserve(hook.Ask{Provider: "openai", Models: models, BodyBytes: 120, Total: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		count, end := m.Count(dialect.OpenAI, "gpt-4o-mini", false, 120)
		count(answer)
		c, _ := end()
		total += c
		settle(c)
	})
	if n > 6 {
		t.Errorf("%v allocations a call, want at most 6", n)
	}
	want := (Price{Input: 0.15, Output: 0.6}).Cost(Usage{Input: 12, Output: 5})
	if math.Abs(total-201*want) > 1e-12 { // AllocsPerRun calls once more to warm up
		t.Errorf("the calls cost $%v in all, want $%v: the usage was not read", total, 201*want)
	}
	if u := testing.AllocsPerRun(100, func() { dialect.OpenAI.Usage(answer) }); u != 0 {
		t.Errorf("reading the usage allocates %v times", u)
	}
}

// TestMeterCountReadsTheDialect: an attempt's usage is read as its
// dialect writes it, whole or streamed; an answer whose usage its dialect
// does not read is priced from the estimate (the request's bytes / 4 in,
// the answer's bytes / 4 or its events out).
func TestMeterCountReadsTheDialect(t *testing.T) {
	p := Price{Input: 1, Output: 10, CacheRead: 0.5, CacheWrite: 2}
	m := &Meter{Prices: func(string) (Price, bool) { return p, true }}
	gemini := `{"candidates":[],"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":30,"cachedContentTokenCount":40}}`
	anthropic := "event: message_start\n" +
		`data: {"type":"message_start","message":{"usage":{"input_tokens":20,"cache_creation_input_tokens":8,"output_tokens":1}}}` + "\n\n" +
		"event: message_delta\n" + `data: {"type":"message_delta","usage":{"output_tokens":50}}` + "\n\n"
	geminiStream := "data: " + gemini + "\n\n"
	tests := []struct {
		name   string
		d      dialect.Dialect
		stream bool
		answer string
		want   Usage
	}{
		{"gemini answer", dialect.Gemini, false, gemini, Usage{Input: 100, Output: 30, CacheRead: 40, CacheReadInInput: true}},
		{"gemini answer read as openai", dialect.OpenAI, false, gemini, Usage{Input: 100, Output: int64(len(gemini)+3) / 4}},
		{"openai answer", dialect.OpenAI, false, chatAnswer, Usage{Input: 12, Output: 5}},
		{"openai answer, no dialect", nil, false, chatAnswer, Usage{Input: 12, Output: 5}},
		{"azure answer", dialect.Azure, false, chatAnswer, Usage{Input: 12, Output: 5}},
		{"openai answer read as gemini", dialect.Gemini, false, chatAnswer, Usage{Input: 100, Output: int64(len(chatAnswer)+3) / 4}},
		{"anthropic stream", dialect.Anthropic, true, anthropic, Usage{Input: 20, Output: 50, CacheWrite: 8}},
		{"anthropic stream, no dialect", nil, true, anthropic, Usage{Input: 20, Output: 50, CacheWrite: 8}},
		{"anthropic stream read as gemini", dialect.Gemini, true, anthropic, Usage{Input: 100, Output: 2}},
		{"gemini stream", dialect.Gemini, true, geminiStream, Usage{Input: 100, Output: 30, CacheRead: 40, CacheReadInInput: true}},
		{"gemini stream read as openai", dialect.OpenAI, true, geminiStream, Usage{Input: 100, Output: 1}},
	}
	for _, tt := range tests {
		count, end := m.Count(tt.d, "m", tt.stream, 400)
		for i := 0; i < len(tt.answer); i += 9 { // in pieces, as they pass
			count([]byte(tt.answer[i:min(i+9, len(tt.answer))]))
		}
		cost, tokens := end()
		if want := p.Cost(tt.want); math.Abs(cost-want) > 1e-12 || tokens != tt.want.Tokens() {
			t.Errorf("%s: cost $%v, %d tokens; want $%v, %d tokens", tt.name, cost, tokens, want, tt.want.Tokens())
		}
	}
}

// TestMeterCountAllocations: metering a streamed attempt allocates its
// usage reader, the two funcs and the reader's buffer for an event, and
// nothing more.
func TestMeterCountAllocations(t *testing.T) {
	m := &Meter{Prices: func(string) (Price, bool) { return Price{Input: 1, Output: 1}, true }}
	chunk := []byte("data: {\"choices\":[{\"delta\":{\"content\":\"x\"}}],\"usage\":null}\n\n")
	n := testing.AllocsPerRun(100, func() {
		count, end := m.Count(dialect.OpenAI, "m", true, 100)
		count(chunk)
		end()
	})
	if n > 4 {
		t.Errorf("%v allocations a streamed attempt, want at most 4", n)
	}
}
