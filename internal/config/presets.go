package config

import (
	"cmp"
	"reflect"
	"strings"
	"time"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/dialect/awssign"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/spend"
)

// The presets of the entries of lists and of mappings of names, and what
// Parse completes in an entry once the file has filled it in.

// defaultProviders are the built-in providers.
func defaultProviders() map[string]Provider {
	return map[string]Provider{
		"openai":    {Kind: dialect.OpenAI.Kind(), BaseURL: "https://api.openai.com", MaxConcurrent: DefaultMaxConcurrent},
		"anthropic": {Kind: dialect.Anthropic.Kind(), BaseURL: "https://api.anthropic.com", MaxConcurrent: DefaultMaxConcurrent},
	}
}

// fresh returns what an entry of a list or of a mapping of names (name) is
// before the file fills it in: the preset an entry's missing keys keep.
func fresh(t reflect.Type, name string) reflect.Value {
	v := reflect.New(t).Elem()
	switch p := v.Addr().Interface().(type) {
	case *Provider: // a built-in provider's preset, or gemini's (not built in: it needs a route), by name
		presets := defaultProviders()
		presets["gemini"] = Provider{Kind: dialect.Gemini.Kind(), BaseURL: "https://generativelanguage.googleapis.com", MaxConcurrent: DefaultMaxConcurrent}
		if *p = presets[name]; p.Kind == "" {
			*p = Provider{MaxConcurrent: DefaultMaxConcurrent}
		}
	case *PoolKey:
		p.Weight = 1
	case *ModelLimits:
		*p = ModelLimits{Tools: true, Images: true, JSONSchema: true}
	case *Route:
		*p = Route{Policy: "interactive", RetrySafe: true}
	case *sluice.Policy: // nightly for nightly, interactive for any other name
		if *p = sluice.Interactive(); name == "nightly" {
			*p = sluice.Nightly()
		}
	case *spend.Budget:
		p.Scope = "all"
	case *limit.Limit:
		*p = limit.Limit{Scope: "provider", Requests: limit.Rate{Per: time.Minute}, Tokens: limit.Rate{Per: time.Minute}}
	}
	return v
}

// finish completes the entry v named name at path once the file has
// filled it in.
func (d *decoder) finish(v reflect.Value, name, path string) error {
	switch p := v.Addr().Interface().(type) {
	case *Provider:
		return finishProvider(p, path)
	case *Route:
		if p.Prefix != "" {
			p.Prefix = cmp.Or(strings.TrimRight(p.Prefix, "/"), "/")
		}
	case *sluice.Policy:
		p.Name = name
		p.Breaker.Lease = p.Timeout.Total
	case *spend.Price:
		for _, k := range []string{"input", "output"} {
			if !d.given[key(path, k)] {
				return errAt(d.lines[path], key(path, k), "missing; give the USD price per million %s tokens (0 if free)", k)
			}
		}
	}
	return nil
}

// finishProvider drops a trailing slash of the base_url and fills in a
// missing region of kind bedrock from the standard AWS chain and a missing
// base_url from the region.
func finishProvider(pr *Provider, path string) (err error) {
	if t := strings.TrimRight(pr.BaseURL, "/"); !strings.HasSuffix(t, ":") {
		pr.BaseURL = t
	}
	if pr.Region == "" && pr.Kind == dialect.Bedrock.Kind() {
		switch pr.Region, err = awssign.Region(); {
		case err != nil:
			return errf(key(path, "region"), "missing, and the standard chain's cannot be read: %v; write e.g. region: us-east-1", err)
		case pr.Region != "" && !dialect.IsRegion(pr.Region):
			return errf(key(path, "region"), "missing, and the standard chain's, %s, is not a region: write e.g. region: us-east-1, or fix AWS_REGION or the profile", quote(pr.Region))
		}
	}
	if pr.BaseURL == "" {
		pr.BaseURL, _ = dialect.RegionalBaseURL(pr.Kind, pr.Region)
	}
	return nil
}
