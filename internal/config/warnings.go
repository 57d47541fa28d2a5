package config

import (
	"fmt"
	"maps"
	"net"
	"net/url"
	"slices"

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
	}
	return out
}
