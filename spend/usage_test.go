package spend

import (
	"fmt"
	"math"
	"testing"

	"github.com/sluice-llm/sluice/dialect"
)

func TestCost(t *testing.T) {
	sonnet := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	gpt41 := Price{Input: 2, Output: 8, CacheRead: 0.5}
	tests := []struct {
		name string
		p    Price
		u    Usage
		want float64
	}{
		{"nothing", sonnet, Usage{}, 0},
		{"a million each way", sonnet, Usage{Input: 1e6, Output: 1e6}, 18},
		{"anthropic with cache prices", sonnet, Usage{Input: 1000, Output: 500, CacheRead: 10000, CacheWrite: 2000}, 0.021},
		{"cache priced as input", Price{Input: 3, Output: 15}, Usage{Input: 1000, Output: 500, CacheRead: 10000, CacheWrite: 2000}, 0.0465},
		{"openai cached tokens priced once", gpt41, Usage{Input: 2006, Output: 300, CacheRead: 1920, CacheReadInInput: true}, 0.003532},
		{"openai cached tokens as input", Price{Input: 2, Output: 8}, Usage{Input: 2006, Output: 300, CacheRead: 1920, CacheReadInInput: true}, 0.006412},
		{"cache read above input", gpt41, Usage{Input: 10, CacheRead: 20, CacheReadInInput: true}, 0.00001},
		{"free model", Price{}, Usage{Input: 5, Output: 5, CacheRead: 5, CacheWrite: 5}, 0},
	}
	for _, tt := range tests {
		if got := tt.p.Cost(tt.u); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("%s: Cost = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// anthropicStream is an Anthropic stream: message_start's usage, then
// message_delta's output count.
const anthropicStream = "event: message_start\n" +
	`data: {"type":"message_start","message":{"usage":{"input_tokens":472,"cache_read_input_tokens":10240,"output_tokens":1}}}` + "\n\n" +
	"event: message_delta\n" +
	`data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":87}}` + "\n\n"

func TestUsageCostsTheSameEitherWay(t *testing.T) {
	// A whole answer and its stream counted the same way cost the same.
	p := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	whole, _ := dialect.Anthropic.Usage([]byte(`{"usage":{"input_tokens":472,"cache_read_input_tokens":10240,"output_tokens":87}}`))
	r := dialect.Anthropic.StreamUsage()
	r.Write([]byte(anthropicStream))
	streamed, _ := r.Usage()
	if a, b := p.Cost(whole), p.Cost(streamed); a != b || a == 0 {
		t.Errorf("whole answer costs %v, stream %v", a, b)
	}
}

func TestGeminiCost(t *testing.T) {
	u, ok := dialect.Gemini.Usage([]byte(`{"candidates":[],"usageMetadata":{"promptTokenCount":1000,` +
		`"candidatesTokenCount":40,"thoughtsTokenCount":60,"cachedContentTokenCount":800}}`))
	if !ok {
		t.Fatal("no usage read")
	}
	// The cached tokens are priced once, at the cache price.
	p := Price{Input: 1, Output: 10, CacheRead: 0.25}
	if got, want := p.Cost(u), (200*1+100*10+800*0.25)/1e6; got != want {
		t.Errorf("cost %v, want %v", got, want)
	}
}

func ExamplePrice_Cost() {
	r := dialect.Anthropic.StreamUsage()
	r.Write([]byte(anthropicStream[:100])) // chunks as they pass, cut anywhere
	r.Write([]byte(anthropicStream[100:]))
	u, ok := r.Usage()
	sonnet := Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}
	fmt.Println(u.Input, u.Output, u.CacheRead, ok)
	fmt.Printf("$%.6f\n", sonnet.Cost(u))
	// Output:
	// 472 87 10240 true
	// $0.005793
}

func TestPricesOf(t *testing.T) {
	ps := Prices{
		"gpt-4o":       {Input: 2.5, Output: 10},
		"gpt-4o*":      {Input: 1, Output: 1},
		"gpt-4o-mini*": {Input: 0.15, Output: 0.6},
		"*":            {Input: 9, Output: 9},
	}
	cases := []struct {
		model string
		want  Price
	}{
		{"gpt-4o", Price{Input: 2.5, Output: 10}},
		{"gpt-4o-2024-08-06", Price{Input: 1, Output: 1}},
		{"gpt-4o-mini-2024-07-18", Price{Input: 0.15, Output: 0.6}},
		{"claude", Price{Input: 9, Output: 9}},
	}
	for _, tc := range cases {
		if got, ok := ps.Of(tc.model); !ok || got != tc.want {
			t.Errorf("Of(%q) = %v, %v; want %v", tc.model, got, ok, tc.want)
		}
	}
	delete(ps, "*")
	if _, ok := ps.Of("claude"); ok {
		t.Error("Of(claude) found a price with no matching key")
	}
}
