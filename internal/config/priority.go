package config

import (
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-llm/sluice"
)

// DefaultPromoteAfter is the default limits.promote_after: how long a
// batch call waits for a rate-limit slot before it is admitted as an
// interactive one.
const DefaultPromoteAfter = 30 * time.Second

// checkPriorities checks each policy's priority, limits.promote_after and
// each limit's reserve.
func (c *Config) checkPriorities() error {
	for _, name := range slices.Sorted(maps.Keys(c.Policies)) {
		switch p := c.Policies[name].Priority; p {
		case "", sluice.PriorityInteractive, sluice.PriorityBatch:
		default:
			return errf(key(key("policies", name), "priority"), "%s: use interactive or batch", quote(string(p)))
		}
	}
	if err := positive("limits.promote_after", c.Limits.PromoteAfter, "30s"); err != nil {
		return err
	}
	for i, l := range c.Rates {
		if r := l.Reserve; !(r >= 0 && r < 1) {
			return errf(key(index("limits.rates", i), "reserve"), "%s%%: give the share batch calls may never take, from 0%% to below 100%% (write e.g. 20%%)",
				strconv.FormatFloat(r*100, 'f', -1, 64))
		}
	}
	return nil
}
