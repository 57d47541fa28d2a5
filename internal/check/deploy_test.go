package check

import (
	"strings"
	"testing"
)

// TestShippedUnitsPass: the units under deploy/systemd pass check with the
// built-in defaults, the gateway's and the example agent's (judged against
// the nightly policy it calls with).
func TestShippedUnitsPass(t *testing.T) {
	t.Setenv("SLUICE_CONFIG", "")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	for _, args := range [][]string{
		{"../../deploy/systemd/sluice.service"},
		{"--policy", "nightly", "../../deploy/systemd/examples/"},
	} {
		code, out, errOut := runCheck(t, args...)
		if code != exitClean || errOut != "" || !strings.Contains(out, "0 findings") && !strings.Contains(out, "clean") {
			t.Errorf("sluice check %q: exit %d, want 0\n%s%s", args, code, out, errOut)
		}
		if strings.Contains(out, "warning: ") {
			t.Errorf("sluice check %q: a unit warning:\n%s", args, out)
		}
	}
}
