package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/redistest"
)

// stateConfig writes a config whose state is state (a YAML flow map) and
// returns its path.
func stateConfig(t *testing.T, state string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	if err := os.WriteFile(path, []byte("listen: 127.0.0.1:0\nlog: {attempts: \"-\"}\nstate: "+state+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkJSON runs sluice check --json (and --strict when strict) on cfg and
// returns its exit code, the messages of its warnings of kind state, and
// what it wrote to stderr.
func checkJSON(t *testing.T, cfg string, strict bool) (code int, state []string, stderr string) {
	t.Helper()
	args := []string{"check", "--json", "--config", cfg}
	if strict {
		args = append(args, "--strict")
	}
	var out, errw strings.Builder
	code = run(args, strings.NewReader(""), &out, &errw)
	var r struct {
		Warnings []struct{ Kind, Message string }
	}
	if code != exitUsage {
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
			t.Fatalf("sluice check --json: %v\n%s", err, out.String())
		}
	}
	for _, w := range r.Warnings {
		if w.Kind == "state" {
			state = append(state, w.Message)
		}
	}
	return code, state, errw.String()
}

// refusedInOneLine runs `sluice args…` as its own process and returns its
// exit code and all it wrote; a process still running after 10 s (a
// gateway that started) is killed, exit -1.
func refusedInOneLine(t *testing.T, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, os.Args[0], args...)
	c.Env = append(os.Environ(), "SLUICE_TEST_MAIN=1")
	c.WaitDelay = time.Second
	out, _ := c.CombinedOutput()
	return c.ProcessState.ExitCode(), strings.TrimSpace(string(out))
}

// A Sentinel deployment, seen from sluice check, serve and breakers: a
// state.url that names a sentinel is refused by all three in one line that
// says what to write instead; the store is named by its master and
// sentinels on serve's start line and in breakers' reading line; a
// sentinel that does not answer, then the master, are warnings naming
// them (exit 1 under --strict), and serve says them at start.
func TestSentinelStoreSeenAndNamed(t *testing.T) {
	h := redistest.StartSentinel(t, time.Minute) // no failover while the test runs
	sentinels := strings.Join(h.Addrs(), ",")
	good := stateConfig(t, fmt.Sprintf(`{backend: redis, redis: {mode: sentinel, addrs: [%s], master: %s}}`, strings.Join(h.Addrs(), ", "), redistest.MasterName))

	t.Run("url at a sentinel", func(t *testing.T) {
		url := "redis://" + h.Addrs()[0] + "/0"
		cfg := stateConfig(t, `{backend: redis, url: "`+url+`"}`)
		want := []string{"state.url: redis at state.url (" + h.Addrs()[0] + ") is a sentinel", "mode: sentinel", "master: " + redistest.MasterName}
		for _, args := range [][]string{{"check", "--config", cfg}, {"serve", "--config", cfg}, {"breakers", "--state", url}} {
			code, out := refusedInOneLine(t, args...)
			for _, w := range want {
				if code != exitUsage || !strings.Contains(out, w) || strings.Contains(out, "\n") {
					t.Errorf("sluice %s: exit %d, %q; want exit 2 and one line with %q", strings.Join(args, " "), code, out, w)
					break
				}
			}
		}
	})

	t.Run("named", func(t *testing.T) {
		p := startSluice(t, nil, "serve", "--config", good)
		if want := `state="redis-sentinel master=` + redistest.MasterName + ` sentinels=` + sentinels + `"`; !strings.Contains(p.stderr.String(), want) {
			t.Errorf("start line lacks %s:\n%s", want, p.stderr.String())
		}
		var out, errw strings.Builder
		if code := run([]string{"breakers", "--config", good}, strings.NewReader(""), &out, &errw); code != exitOK ||
			!strings.Contains(errw.String(), "reading state redis-sentinel master="+redistest.MasterName+" sentinels="+sentinels+" (") {
			t.Errorf("sluice breakers: exit %d, stderr %q; want the store named by its master and sentinels", code, errw.String())
		}
		if code, state, _ := checkJSON(t, good, true); code != exitOK || len(state) != 0 {
			t.Errorf("sluice check --strict, every sentinel and the master up: exit %d, state warnings %q; want clean", code, state)
		}
	})

	t.Run("a sentinel down", func(t *testing.T) {
		down := h.Sentinels[2]
		down.Kill()
		code, state, _ := checkJSON(t, good, false)
		if code != exitOK || len(state) != 1 || !strings.Contains(state[0], "sentinel "+down.Addr()+" does not answer") ||
			!strings.Contains(state[0], "2 of the 3 sentinels") {
			t.Errorf("sluice check, sentinel %s down: exit %d, state warnings %q; want exit 0 and one warning naming it", down.Addr(), code, state)
		}
		if code, _, _ := checkJSON(t, good, true); code != exitFindings {
			t.Errorf("sluice check --strict, a sentinel down: exit %d, want 1", code)
		}
		p := startSluice(t, nil, "serve", "--config", good)
		if !strings.Contains(p.stderr.String(), "level=WARN msg=\"state.redis: sentinel "+down.Addr()+" does not answer") {
			t.Errorf("serve, a sentinel down, says nothing of it at start:\n%s", p.stderr.String())
		}
	})

	t.Run("master down", func(t *testing.T) {
		master := h.Master.Addr()
		h.Master.Kill()
		code, state, _ := checkJSON(t, good, false)
		found := false
		for _, w := range state {
			found = found || strings.Contains(w, fmt.Sprintf("master %q at %s, where the sentinels say it is, does not answer", redistest.MasterName, master))
		}
		if code != exitOK || !found {
			t.Errorf("sluice check, master %s down: exit %d, state warnings %q; want exit 0 and a warning naming the master", master, code, state)
		}
		if code, _, _ := checkJSON(t, good, true); code != exitFindings {
			t.Errorf("sluice check --strict, the master down: exit %d, want 1", code)
		}
	})
}

// scrape returns the unlabelled samples of p's /metrics, by name.
func scrape(t *testing.T, p *proc) map[string]string {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if f := strings.Fields(line); len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			out[f[0]] = f[1]
		}
	}
	return out
}

// The two gauges of the state store agree in every scrape: up 1 and
// degraded 0 while Redis serves; degraded 1 and up 0 once it is killed;
// back to up 1, degraded 0 when it is started again. status.json and
// /sluice/breakers name the store and say whether it has gone local, and
// why.
func TestStateStoreGaugesAgree(t *testing.T) {
	r := redistest.Start(t)
	p := startSluice(t, nil, "serve", "--config", stateConfig(t, `{backend: redis, url: "`+r.URL()+`"}`))
	wait := func(degraded string) map[string]string {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); ; {
			m := scrape(t, p)
			up, deg := m["sluice_state_store_up"], m["sluice_state_store_degraded"]
			if up == "1" && deg == "1" {
				t.Fatalf("sluice_state_store_up 1 and sluice_state_store_degraded 1 in one scrape")
			}
			if deg == degraded {
				return m
			}
			if time.Now().After(end) {
				t.Fatalf("sluice_state_store_degraded did not become %s within 10 s (up %q, degraded %q)", degraded, up, deg)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	if m := wait("0"); m["sluice_state_store_up"] != "1" {
		t.Errorf("Redis serving: sluice_state_store_up %q, want 1", m["sluice_state_store_up"])
	}
	for _, path := range []string{"/sluice/status.json", "/sluice/breakers"} {
		if st := storeState(t, p, path); st.Store != r.URL() || st.Degraded || st.Error != "" {
			t.Errorf("Redis serving: %s state %+v, want the store %s, shared", path, st, r.URL())
		}
	}
	r.Kill()
	if m := wait("1"); m["sluice_state_store_up"] != "0" {
		t.Errorf("Redis killed: sluice_state_store_up %q, want 0", m["sluice_state_store_up"])
	}
	for _, path := range []string{"/sluice/status.json", "/sluice/breakers"} {
		if st := storeState(t, p, path); st.Store != r.URL() || !st.Degraded || !strings.Contains(st.Error, "connection refused") {
			t.Errorf("Redis killed: %s state %+v, want the store %s degraded, with why", path, st, r.URL())
		}
	}
	r.Start()
	if m := wait("0"); m["sluice_state_store_up"] != "1" {
		t.Errorf("Redis back: sluice_state_store_up %q, want 1", m["sluice_state_store_up"])
	}
}

// storeState reads the state store's part of p's admin answer at path.
func storeState(t *testing.T, p *proc, path string) (st struct {
	Store, Error string
	Degraded     bool
}) {
	t.Helper()
	resp, err := http.Get("http://" + p.addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct{ State json.RawMessage }
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &v); err != nil || resp.StatusCode != 200 || json.Unmarshal(v.State, &st) != nil {
		t.Fatalf("GET %s: %d %s", path, resp.StatusCode, b)
	}
	return st
}

// A Redis that answers but refuses the store's calls (an ACL without
// TIME) puts the store on local breakers, and sluice breakers says Redis's
// own words, not "<nil>".
func TestBreakersSaysWhyTheStoreFailed(t *testing.T) {
	r := redistest.StartWith(t, "--user", "default", "on", "nopass", "~*", "&*", "+@all", "-time")
	var out strings.Builder
	code := run([]string{"breakers", "--state", r.URL()}, strings.NewReader(""), &out, &out)
	if code != 1 || !strings.Contains(out.String(), "the state's Redis, "+r.URL()+", failed (NOPERM") || strings.Contains(out.String(), "<nil>") {
		t.Errorf("sluice breakers on a Redis refusing TIME: exit %d,\n%s\nwant exit 1 and Redis's NOPERM", code, out.String())
	}
}
