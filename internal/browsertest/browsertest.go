// Package browsertest runs headless Chromium for tests that check a page
// as a browser renders it.
package browsertest

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// timeout bounds one run: seconds, usually; a busy machine takes longer.
const timeout = 3 * time.Minute

// Run runs headless Chromium on url (http:// or file://) with extra
// arguments (--dump-dom, --screenshot=…, --virtual-time-budget=…) and
// returns what it printed on stdout; a run that fails fails t. It skips t
// when Chromium is not installed (.ci/run installs it).
func Run(t *testing.T, url string, args ...string) []byte {
	t.Helper()
	browser := Need(t)
	dir := t.TempDir()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--no-proxy-server", "--user-data-dir=" + filepath.Join(dir, "profile")}, args...)
	cmd := exec.Command(browser, append(all, url)...)
	cmd.Env = append(os.Environ(), "HOME="+dir)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chromium: %v\n%s", err, errb.String())
		}
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("chromium did not finish within %v", timeout)
	}
	return out.Bytes()
}

// Need returns the path of Chromium, or skips t when it is not installed:
// a test calls it first to skip before any setup.
func Need(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("chromium not installed: apt-get install chromium")
	return ""
}
