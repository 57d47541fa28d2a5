package gateway

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/redistest"
	sluicereport "github.com/sluice-llm/sluice/internal/report"
	"github.com/sluice-llm/sluice/spend"
	"github.com/sluice-llm/sluice/spend/redisledger"
)

// Prices alone price: with prices and no budgets, every call is priced
// (the log's cost_usd, sluice_spend_usd_total, sluice report), a stream's
// too, and nothing is reserved, refused or sent to the ledger: its Redis
// processes no command while the calls run.
func TestPricesWithoutBudgetsPriceEveryCall(t *testing.T) {
	rs := redistest.Start(t)
	client := redis.NewClient(&redis.Options{Addr: rs.Addr()})
	t.Cleanup(func() { client.Close() })
	e := newEnvWith(t, "200", func(c *config.Config) {
		c.Prices = map[string]spend.Price{"gpt-4o-mini*": {Input: 0, Output: 20000}} // the fake's 5 tokens: $0.10
	}, Options{Ledger: redisledger.New(client, redisledger.Options{})})
	before := rs.CommandsProcessed()
	info := rs.CommandsProcessed() - before // what asking costs

	bodies := []string{cappedBody, `{"model":"gpt-4o-mini","stream":true,"max_tokens":5,"messages":[]}`}
	for _, b := range bodies {
		resp := e.do("POST", "/openai/v1/chat/completions", b)
		if got := body(t, resp); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, got)
		}
		if h := resp.Header.Get("Sluice-Budget-Remaining"); h != "" {
			t.Errorf("Sluice-Budget-Remaining %q with no budget", h)
		}
	}
	if n := rs.CommandsProcessed() - before - 2*info; n != 0 {
		t.Errorf("the ledger's Redis processed %d commands for calls under no budget, want 0", n)
	}

	lines := strings.Split(strings.TrimSpace(e.logs.String()), "\n")
	if len(lines) != len(bodies) {
		t.Fatalf("%d log lines, want %d:\n%s", len(lines), len(bodies), e.logs.String())
	}
	for _, l := range lines {
		var a struct {
			Outcome string  `json:"outcome"`
			Stream  bool    `json:"stream"`
			CostUSD float64 `json:"cost_usd"`
		}
		if err := json.Unmarshal([]byte(l), &a); err != nil || a.Outcome != "ok" || a.CostUSD != 0.10 {
			t.Errorf("line %s: cost_usd %v (%v), want an ok call priced at 0.1", l, a.CostUSD, err)
		}
	}

	m := body(t, e.do("GET", "/metrics", ""))
	if want := `sluice_spend_usd_total{model="gpt-4o-mini",provider="openai"} 0.2` + "\n"; !strings.Contains(m, want) {
		t.Errorf("metrics lack %s:\n%s", want, grepLines(m, "sluice_spend"))
	}

	path := filepath.Join(t.TempDir(), "attempts.jsonl")
	os.WriteFile(path, []byte(e.logs.String()), 0o600)
	var out, errOut bytes.Buffer
	if code := sluicereport.Run([]string{path}, nil, &out, &errOut); code != 0 || !strings.Contains(out.String(), "SPEND: 0.20 USD") ||
		!regexp.MustCompile(`openai\s+gpt-4o-mini\s+0\.20`).MatchString(out.String()) {
		t.Errorf("sluice report exit %d (%s), want the $0.20 spent on gpt-4o-mini:\n%s", code, errOut.String(), out.String())
	}
}
