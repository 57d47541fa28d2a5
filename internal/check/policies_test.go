package check

import (
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/internal/config"
)

func TestPolicyRowsBuiltIn(t *testing.T) {
	got := policyRows(config.Default())
	want := []policyRow{
		// 3·(5s+20s) + 2·max(backoff, 1.1·20s) = 119s, cut to total 30s.
		{Name: "interactive", Attempts: 3, PerAttempt: 25000, Total: 30000,
			WorstCase: 30000, Unbounded: 119000, CutByTotal: true, WithFallbacks: 30000,
			MaxQueue: 10000}, // total 30s − first_byte 20s
		// 5·(10s+120s) + 4·max(backoff, 1.1·120s) = 1178s, cut to total 600s.
		{Name: "nightly", Attempts: 5, PerAttempt: 130000, Total: 600000,
			WorstCase: 600000, Unbounded: 1178000, CutByTotal: true, WithFallbacks: 600000,
			MaxQueue: 480000}, // total 10m − first_byte 2m
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("policyRows(Default()):\n got %+v\nwant %+v", got, want)
	}
}

func loadConfig(t *testing.T, path string) *config.Config {
	t.Helper()
	c, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestWorstCaseWithFallbacks(t *testing.T) {
	c := loadConfig(t, "testdata/config/fallbacks.yaml")
	rows := policyRows(c)
	want := []policyRow{
		// 2·(5s+60s) + max(1s, 11s) = 141s, cut to 120s.
		{Name: "batch", Attempts: 2, PerAttempt: 65000, Total: 120000,
			WorstCase: 120000, Unbounded: 141000, CutByTotal: true, WithFallbacks: 120000,
			MaxQueue: 60000},
		// 2·(2s+10s) + max(500ms, 5.5s) = 29.5s, within total; with the
		// fallback, twice that: 59s.
		{Name: "chat", Attempts: 2, PerAttempt: 12000, Total: 60000,
			WorstCase: 29500, Unbounded: 29500, WithFallbacks: 59000, MaxQueue: 50000},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("policyRows:\n got %+v\nwant %+v", rows, want)
	}
	routes := routeRows(c)
	wantRoutes := []routeRow{
		{Prefix: "/chat", Provider: "openai", Policy: "chat",
			Fallbacks: []config.Target{{Provider: "groq", Model: "llama-3.3-70b-versatile"}},
			WorstCase: 59000, Unbounded: 59000},
		{Prefix: "/batch", Provider: "openai", Policy: "batch", Fallbacks: []config.Target{},
			WorstCase: 120000, Unbounded: 141000, CutByTotal: true},
	}
	if !reflect.DeepEqual(routes, wantRoutes) {
		t.Errorf("routeRows:\n got %+v\nwant %+v", routes, wantRoutes)
	}
}

func TestChooseTarget(t *testing.T) {
	builtin := config.Default()
	noInteractive := loadConfig(t, "testdata/config/fallbacks.yaml")
	tests := []struct {
		name    string
		c       *config.Config
		flag    string
		want    string
		wantErr string
	}{
		{"interactive by default", builtin, "", "interactive", ""},
		{"--policy", builtin, "nightly", "nightly", ""},
		{"the longest without interactive", noInteractive, "", "batch", ""},
		{"unknown --policy", builtin, "nighlty", "", "no such policy (it has interactive, nightly)"},
	}
	for _, tt := range tests {
		got, reason, err := chooseTarget(tt.c, tt.flag)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: error %v, want %q", tt.name, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want || reason == "" {
			t.Errorf("%s: chooseTarget = %q, %q, %v; want %q", tt.name, got, reason, err, tt.want)
		}
	}
}

// The rate limits table: each limit, and the spacing its requests per
// minute give; a policy's max_queue is cut to what total leaves.
func TestRateRowsAndMaxQueue(t *testing.T) {
	c, err := config.Parse([]byte(`limits:
  rates:
    - {name: openai, provider: openai, requests_per_minute: 120, tokens_per_minute: 30000}
    - {name: per-agent, scope: key, tokens_per_minute: 9000}
policies:
  interactive: {max_queue: 5s}
  nightly: {max_queue: 1h}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := []rateRow{
		{Name: "openai", Provider: "openai", Scope: "provider", RequestsPerMinute: 120, TokensPerMinute: 30000, SpacingMS: 500},
		{Name: "per-agent", Scope: "key", TokensPerMinute: 9000},
	}
	if got := rateRows(c); !reflect.DeepEqual(got, want) {
		t.Errorf("rateRows:\n got %+v\nwant %+v", got, want)
	}
	rows := policyRows(c)
	if rows[0].MaxQueue != 5000 || rows[1].MaxQueue != 480000 {
		t.Errorf("max queue %d and %d ms, want 5000 (as set) and 480000 (1h cut to total 10m − first_byte 2m)", rows[0].MaxQueue, rows[1].MaxQueue)
	}
}
