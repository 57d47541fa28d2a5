package check

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check prints the idempotency settings, and warns about an agent that
// systemd restarts later than its kept answer lives: the restarted call
// would be billed again.
func TestIdempotencySettingsAndRestartDelay(t *testing.T) {
	dir := t.TempDir()
	unit := func(name, restart string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte("[Service]\nExecStart=/usr/local/bin/agent\nRestart=on-failure\n"+restart+"\nTimeoutStopSec=5min\n"), 0o600)
		return p
	}
	late := unit("late-agent.service", "RestartSec=2d")
	soon := unit("soon-agent.service", "RestartSec=30s")
	code, out, _ := runCheck(t, "--strict", late, soon)
	if !strings.Contains(out, "answers kept 24h (at most 8MiB each, 512MiB in all") {
		t.Errorf("the idempotency settings are not printed:\n%s", out)
	}
	want := "late-agent.service:4: warning: RestartSec=2d restarts the agent 48h after it dies"
	if !strings.Contains(out, want) || !strings.Contains(out, "idempotency.ttl") || code != 1 {
		t.Errorf("exit %d, want 1 and a warning like %q:\n%s", code, want, out)
	}
	if strings.Contains(out, "soon-agent.service:4") {
		t.Errorf("a restart within the ttl is flagged:\n%s", out)
	}
}
