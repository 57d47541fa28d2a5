package check

import (
	"strings"
	"testing"
)

// TestShippedUnitsPass: `sluice check deploy/systemd` as shipped finds the
// gateway's unit and the example agent's service and timer below it (the
// examples/ directory included) and passes them with the built-in
// defaults, --strict too: the gateway's TimeoutStopSec covers the default
// drain (the longest total, nightly's 10m) plus the margin, and the agent
// passes against the nightly policy it calls with as well as the default
// one.
func TestShippedUnitsPass(t *testing.T) {
	for _, args := range [][]string{
		{"../../deploy/systemd"},
		{"--strict", "../../deploy/systemd/"},
		{"--strict", "--policy", "nightly", "../../deploy/systemd"},
		{"--strict", "--policy", "nightly", "../../deploy/systemd/sluice.service", "../../deploy/systemd/examples/"},
	} {
		code, out, errOut := runCheck(t, args...)
		if code != exitClean || errOut != "" || !strings.Contains(out, "sluice check: clean (3 units)") {
			t.Errorf("sluice check %q: exit %d, want 0 and clean for 3 units\n%s%s", args, code, out, errOut)
		}
		if strings.Contains(out, "warning: ") {
			t.Errorf("sluice check %q: a warning:\n%s", args, out)
		}
	}
}
