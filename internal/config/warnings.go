package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/sluice-llm/sluice"
)

// Warnings returns what is allowed but likely a mistake, one line each, in
// a stable order: a fallback that shares the breaker of the route's own
// provider (it would be blocked exactly when it is needed), and a provider
// reached over plain http on another machine. `sluice check` prints them.
func (c *Config) Warnings() []string {
	var out []string
	for i, r := range c.Routes {
		scope := c.Policies[r.Policy].BreakerScope
		for j, t := range r.Fallbacks {
			if t.Provider == r.Provider && scope != sluice.ScopeModel {
				out = append(out, fmt.Sprintf(
					"config: %s: shares the breaker of provider %q with the route itself; set breaker.scope: model in policy %q so that it is not blocked when the primary's breaker opens",
					index(key(index("routes", i), "fallbacks"), j), t.Provider, r.Policy))
			}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(c.Providers)) {
		u, err := url.Parse(c.Providers[name].BaseURL)
		if err == nil && u.Scheme == "http" && !loopback(net.JoinHostPort(u.Hostname(), "0")) {
			out = append(out, fmt.Sprintf(
				"config: %s: plain http to another machine sends prompts unencrypted; use https",
				key(key("providers", name), "base_url")))
		}
		if w := azureHostWarning(name, c.Providers[name]); w != "" {
			out = append(out, w)
		}
	}
	return out
}

// azureHostWarning warns of a kind azure provider whose address is not an
// Azure OpenAI resource's (https://{resource}.openai.azure.com, or the
// cognitiveservices.azure.com and services.ai.azure.com forms) nor on
// loopback, where a test double would be.
func azureHostWarning(name string, p Provider) string {
	u, err := url.Parse(p.BaseURL)
	if p.Kind != KindAzure || err != nil || loopback(net.JoinHostPort(u.Hostname(), "0")) {
		return ""
	}
	h := strings.ToLower(u.Hostname())
	for _, s := range []string{".openai.azure.com", ".cognitiveservices.azure.com", ".services.ai.azure.com"} {
		if strings.HasSuffix(h, s) {
			return ""
		}
	}
	return fmt.Sprintf("config: %s: %s is not an Azure OpenAI resource's address; kind azure expects https://{resource}.openai.azure.com",
		key(key("providers", name), "base_url"), quote(u.Redacted()))
}
