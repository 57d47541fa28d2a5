package audit

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sluice-llm/sluice/internal/cmdline"
	"github.com/sluice-llm/sluice/internal/config"
)

// gatewayTotal returns the total timeout SDK clients are judged against
// and where it comes from, from the config at flagConfig (else
// $SLUICE_CONFIG) and the policy named (else interactive when the config
// has it, else its policy with the shortest total). With neither a config
// nor a policy it returns 0: DefaultTotal, the built-in interactive one.
func gatewayTotal(flagConfig, policy string) (time.Duration, string, error) {
	path := cmdline.LocateConfig(flagConfig).Path
	if path == "" && policy == "" {
		return 0, "", nil
	}
	c, err := config.Load(path)
	if err != nil {
		return 0, "", err
	}
	where := "of " + path
	if path == "" {
		where = "of the built-in defaults"
	}
	if policy != "" {
		p, ok := c.Policies[policy]
		if !ok {
			return 0, "", fmt.Errorf("--policy %s: the config has no such policy; it has %v", policy, slices.Sorted(maps.Keys(c.Policies)))
		}
		return p.WithDefaults().Timeout.Total, "policy " + policy + " " + where, nil
	}
	if p, ok := c.Policies["interactive"]; ok {
		return p.WithDefaults().Timeout.Total, "policy interactive " + where, nil
	}
	var best time.Duration
	name := ""
	for _, n := range slices.Sorted(maps.Keys(c.Policies)) {
		if t := c.Policies[n].WithDefaults().Timeout.Total; name == "" || t < best {
			best, name = t, n
		}
	}
	if name == "" {
		return 0, "", nil
	}
	return best, "policy " + name + ", the shortest total " + where, nil
}
