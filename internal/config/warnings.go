package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"
	"strings"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/dialect"
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
		// A provider on loopback is a test double: it earns no warning.
		pr, path := c.Providers[name], key(key("providers", name), "base_url")
		u, err := url.Parse(pr.BaseURL)
		if err != nil || loopback(net.JoinHostPort(u.Hostname(), "0")) {
			continue
		}
		if u.Scheme == "http" {
			out = append(out, "config: "+path+": plain http to another machine sends prompts unencrypted; use https")
		}
		if pr.Kind == dialect.Azure.Kind() && !azureHost(u.Hostname()) {
			out = append(out, fmt.Sprintf("config: %s: %s is not an Azure OpenAI resource's address; kind azure expects https://{resource}.openai.azure.com",
				path, quote(u.Redacted())))
		}
	}
	return out
}

// azureHost reports whether host is an Azure OpenAI resource's:
// {resource}.openai.azure.com, or the cognitiveservices.azure.com and
// services.ai.azure.com forms.
func azureHost(host string) bool {
	h := strings.ToLower(host)
	return strings.HasSuffix(h, ".openai.azure.com") || strings.HasSuffix(h, ".cognitiveservices.azure.com") ||
		strings.HasSuffix(h, ".services.ai.azure.com")
}
