package spend

import (
	"strings"

	"github.com/sluice-llm/sluice/dialect"
)

// Usage is the token usage a provider reported for one answer, as the
// answer's dialect reads it (dialect.Dialect's Usage and StreamUsage).
// Its Tokens is what the answer counts against a tokens-per-minute limit.
type Usage = dialect.Usage

// Price is what a model costs, in USD per million tokens.
type Price struct {
	// Input and Output price prompt and completion tokens.
	Input, Output float64
	// CacheRead and CacheWrite price the tokens read from and written to
	// the provider's prompt cache. If zero, Input is used.
	CacheRead, CacheWrite float64
}

// Prices are the prices of models, by model: a key that '*' ends
// prices every model that starts with what comes before it.
type Prices map[string]Price

// Of returns the price of model: its own key's, else the longest
// wildcard key's ("gpt-4o*") that model starts with. Meter.Prices takes
// it.
func (ps Prices) Of(model string) (Price, bool) {
	if p, ok := ps[model]; ok {
		return p, true
	}
	var best Price
	longest := 0 // the length of the longest wildcard key that matches
	for k, p := range ps {
		if stem, wild := strings.CutSuffix(k, "*"); wild && strings.HasPrefix(model, stem) && len(k) > longest {
			best, longest = p, len(k)
		}
	}
	return best, longest > 0
}

// Cost returns the USD cost of u at the prices p. Cache reads and writes
// are priced as input unless their own prices are non-zero. When
// u.CacheReadInInput is set, the cached tokens are taken out of Input first,
// so that each token is priced once.
func (p Price) Cost(u Usage) float64 {
	read, write := p.CacheRead, p.CacheWrite
	if read == 0 {
		read = p.Input
	}
	if write == 0 {
		write = p.Input
	}
	in := u.Input
	if u.CacheReadInInput {
		in -= min(u.CacheRead, in)
	}
	return (float64(in)*p.Input + float64(u.Output)*p.Output +
		float64(u.CacheRead)*read + float64(u.CacheWrite)*write) / 1e6
}
