package config

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-llm/sluice"
)

// DefaultPromoteAfter is the default limits.promote_after: how long a
// batch call waits for a rate-limit slot before it is admitted as an
// interactive one.
const DefaultPromoteAfter = 30 * time.Second

// priorityField decodes a policy's priority: interactive or batch.
func priorityField(dst *sluice.Priority) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		*dst = sluice.Priority(s)
		return err
	}
}

// share decodes a share of a limit: a percentage (20%) or a fraction
// (0.2).
func share(dst *float64) field {
	return func(n *yaml.Node, path string) error {
		s, err := scalar(n, path)
		if err != nil {
			return err
		}
		if pct, ok := strings.CutSuffix(strings.TrimSpace(s), "%"); ok {
			v, err := strconv.ParseFloat(strings.TrimSpace(pct), 64)
			if err != nil {
				return errAt(n.Line, path, "%s is not a percentage (write e.g. 20%% or 0.2)", quote(s))
			}
			*dst = v / 100
			return nil
		}
		if err := number(dst)(n, path); err != nil {
			return errAt(n.Line, path, "%s is not a share (write e.g. 20%% or 0.2)", quote(s))
		}
		return nil
	}
}

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
