package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/events"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// newSpend returns the Meter of a config over ledger: its spend caps, the
// pricing of every call (prices alone price: the log's cost_usd and the
// spend metric, with no cap and no ledger traffic), and the reading of
// every answer's usage, which a tokens-per-minute limit settles on; nil
// when there are neither budgets, nor prices, nor such limits.
func newSpend(cfg *config.Config, ledger spend.Ledger) *spend.Meter {
	if len(cfg.Budgets) == 0 && len(cfg.Prices) == 0 &&
		!slices.ContainsFunc(cfg.Limits.Rates, func(l limit.Limit) bool { return l.Tokens.Limit > 0 }) {
		return nil
	}
	return &spend.Meter{Budgets: slices.Clone(cfg.Budgets), Ledger: ledger, Prices: cfg.Prices.Of}
}

// scopedByKey reports whether a budget is scoped per client key, the only
// scope that needs the client named (a digest of its token, on every call).
func scopedByKey(budgets []spend.Budget) bool {
	return slices.ContainsFunc(budgets, func(b spend.Budget) bool { return b.Scope == "key" })
}

// clientID names a client for budgets and limits scoped per key, never
// by a credential itself. With auth.keys on, it is the entry its token
// matched (a digest of the token), which the client cannot vary. Else it
// is its caller, the digest of every credential it sent (callerNames),
// so that two different credentials are two clients; "anonymous" when it
// sent none.
func (g *Gateway) clientID(token, caller string) string {
	if len(g.authKeys) > 0 {
		d := sha256.Sum256([]byte(token))
		return hex.EncodeToString(d[:8])
	}
	digest, ok := strings.CutPrefix(caller, "sha256:")
	if !ok || len(digest) < 16 {
		return "anonymous"
	}
	return digest[:16]
}

// spendCollector reports, when scraped, what each unscoped budget of the
// current config has spent and has left in its current period.
type spendCollector struct {
	spend  func() *spend.Meter // nil when there are no budgets
	ledger spend.Ledger
	events *events.Log
}

var (
	budgetSpentDesc = prometheus.NewDesc("sluice_budget_spent_usd",
		"USD settled under a budget (scope all) in its current period.", []string{"budget"}, nil)
	budgetRemainingDesc = prometheus.NewDesc("sluice_budget_remaining_usd",
		"USD left under a budget (scope all) in its current period, holds of calls in flight deducted.", []string{"budget"}, nil)
)

func (c *spendCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- budgetSpentDesc
	ch <- budgetRemainingDesc
}

func (c *spendCollector) Collect(ch chan<- prometheus.Metric) {
	meter := c.spend()
	if meter == nil {
		return
	}
	now := time.Now()
	for i := range meter.Budgets {
		b := &meter.Budgets[i]
		if b.Scope != "" && b.Scope != "all" {
			continue
		}
		key, _ := b.Key(now, "", "", "")
		spent, held, err := c.ledger.Read(key)
		if err != nil {
			c.events.StoreError("ledger", "reading a budget for metrics failed", err, "budget", b.Name)
			continue
		}
		ch <- prometheus.MustNewConstMetric(budgetSpentDesc, prometheus.GaugeValue, spent, b.Name)
		ch <- prometheus.MustNewConstMetric(budgetRemainingDesc, prometheus.GaugeValue, b.LimitUSD-spent-held, b.Name)
	}
}
