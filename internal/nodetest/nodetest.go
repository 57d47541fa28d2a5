// Package nodetest runs, for tests, the Node.js scripts that drive the
// official SDKs (OpenAI's, Google's) against the fake provider or the
// gateway.
package nodetest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// timeout bounds one script's run.
const timeout = 60 * time.Second

// Run runs `node script` in dir, with env added to this process's
// environment, and returns what it printed; a script that fails fails t
// with its standard error. It skips t, naming what to install, when node
// is missing or when sdk (a package.json path below a node_modules,
// relative to the test's directory) is not installed: install is the
// command that installs it, as ./scripts/test does.
func Run(t *testing.T, dir, script, sdk, install string, env ...string) []byte {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node is not installed; install Node.js 20 or later to run this test")
	}
	if _, err := os.Stat(filepath.FromSlash(sdk)); err != nil {
		t.Skipf("the SDK %s is not installed; run: %s", sdk, install)
	}
	ctx, cancel := context.WithTimeout(t.Context(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script)
	cmd.Dir = filepath.FromSlash(dir)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s: %v\nstderr:\n%s", script, err, stderr.String())
	}
	return stdout.Bytes()
}
