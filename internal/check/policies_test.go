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
			WorstCase: 30000, Unbounded: 119000, CutByTotal: true, WithFallbacks: 30000},
		// 5·(10s+120s) + 4·max(backoff, 1.1·120s) = 1178s, cut to total 600s.
		{Name: "nightly", Attempts: 5, PerAttempt: 130000, Total: 600000,
			WorstCase: 600000, Unbounded: 1178000, CutByTotal: true, WithFallbacks: 600000},
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
			WorstCase: 120000, Unbounded: 141000, CutByTotal: true, WithFallbacks: 120000},
		// 2·(2s+10s) + max(500ms, 5.5s) = 29.5s, within total; with the
		// fallback, twice that: 59s.
		{Name: "chat", Attempts: 2, PerAttempt: 12000, Total: 60000,
			WorstCase: 29500, Unbounded: 29500, WithFallbacks: 59000},
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
