package check

import (
	"fmt"
	"strings"

	"github.com/sluice-llm/sluice/internal/config"
)

// warning is something in the config or its surroundings that is allowed
// but likely a mistake.
type warning struct {
	Kind    string `json:"kind"` // config, drain or state
	Message string `json:"message"`
}

// warnings returns what is worth a second look in c: the config's own
// warnings, a drain shorter than the longest stream a policy allows, and
// a file state directory on a filesystem where flock is unreliable.
// fsMagic tells the filesystem of a path.
func warnings(c *config.Config, fsMagic func(string) (uint32, error)) []warning {
	out := []warning{}
	for _, w := range c.Warnings() {
		out = append(out, warning{Kind: "config", Message: w})
	}
	if w := drainWarning(c); w != "" {
		out = append(out, warning{Kind: "drain", Message: w})
	}
	if c.State.Backend == config.BackendFile {
		dir, err := c.StateDir()
		if err != nil {
			out = append(out, warning{Kind: "state", Message: strings.TrimPrefix(err.Error(), "config: ")})
		} else if w := stateWarning(dir, fsMagic); w != "" {
			out = append(out, warning{Kind: "state", Message: w})
		}
	}
	return out
}

// drainWarning returns a warning when drain is shorter than the longest
// total among the policies: a stream may run up to its policy's total, and
// a client may choose any policy (Sluice-Policy), so a restart of the
// gateway cuts such a stream mid-answer.
func drainWarning(c *config.Config) string {
	longest, name := c.LongestTotal()
	if longest <= c.Drain {
		return ""
	}
	return fmt.Sprintf("drain: drain %s is shorter than the total %s of policy %s, the longest a stream under it may run: stopping the gateway cuts such a stream mid-answer — set drain: %s (or leave drain out: it defaults to the longest total), or lower that policy's total",
		fmtDur(c.Drain), fmtDur(longest), name, fmtDur(longest))
}
