package config

import (
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
)

func TestPriorityParsed(t *testing.T) {
	c, err := Parse([]byte(`limits:
  promote_after: 45s
  rates:
    - {name: rpm, requests_per_minute: 120, reserve: 20%}
    - {name: conc, concurrent: 10, reserve: 0.25}
policies:
  interactive: {}
  nightly: {}
  webhook: {priority: interactive}
  cron: {priority: batch}
`))
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.PromoteAfter != 45*time.Second {
		t.Errorf("promote_after %v, want 45s", c.Limits.PromoteAfter)
	}
	if r := c.Limits.Rates; len(r) != 2 || r[0].Reserve != 0.2 || r[1].Reserve != 0.25 {
		t.Errorf("rates %+v, want reserves 0.2 and 0.25", r)
	}
	for name, want := range map[string]sluice.Priority{"webhook": sluice.PriorityInteractive, "cron": sluice.PriorityBatch, "nightly": sluice.PriorityBatch, "interactive": ""} {
		if got := c.Policies[name].Priority; got != want {
			t.Errorf("policy %s: priority %q, want %q", name, got, want)
		}
	}
	if d := Default(); d.Limits.PromoteAfter != 30*time.Second || d.Policies["nightly"].Priority != sluice.PriorityBatch ||
		d.Policies["interactive"].WithDefaults().Priority != sluice.PriorityInteractive {
		t.Errorf("defaults: promote_after %v, nightly %q, interactive %q", d.Limits.PromoteAfter, d.Policies["nightly"].Priority, d.Policies["interactive"].WithDefaults().Priority)
	}
}

func TestPriorityRefused(t *testing.T) {
	for _, tc := range []struct{ src, want string }{
		{"policies:\n  cron: {priority: low}\n", `policies.cron.priority: "low": use interactive or batch`},
		{"limits: {promote_after: 0s}\n", "limits.promote_after: must be more than 0; write e.g. 30s"},
		{"limits: {promote_after: -5s}\n", "limits.promote_after: -5s is negative"},
		{"limits: {rates: [{name: r, requests_per_minute: 60, reserve: 100%}]}\n", "limits.rates[0].reserve: 100%: give the share batch calls may never take, from 0% to below 100%"},
		{"limits: {rates: [{name: r, requests_per_minute: 60, reserve: -0.1}]}\n", "limits.rates[0].reserve: -10%:"},
		{"limits: {rates: [{name: r, requests_per_minute: 60, reserve: lots}]}\n", `limits.rates[0].reserve: "lots" is not a share (write e.g. 20% or 0.2)`},
		{"limits: {rates: [{name: r, requests_per_minute: 60, reserve: x%}]}\n", `is not a percentage`},
	} {
		_, err := Parse([]byte(tc.src))
		if err == nil || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%q: got %v, want one line with %q", tc.src, err, tc.want)
		}
	}
}
