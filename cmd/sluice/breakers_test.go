package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/breaker/filestore"
)

// openBreaker writes a config whose file store holds a breaker named name
// that is open, and returns the config's path and the store's directory.
func openBreaker(t *testing.T, name string) (cfg, dir string) {
	t.Helper()
	dir = t.TempDir()
	cfg = filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("state: {backend: file, dir: %s}\n", dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b := breaker.New(name, breaker.Settings{Failures: 1, Cool: time.Hour}, st)
	p, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	p.Done(breaker.Failure, time.Millisecond)
	if rec, err := b.Record(); err != nil || rec.State != breaker.Open {
		t.Fatalf("breaker %s: %+v, %v; want it open", name, rec, err)
	}
	return cfg, dir
}

// breakerState reads the state of the breaker name from the file store in dir.
func breakerState(t *testing.T, dir, name string) breaker.State {
	t.Helper()
	st, err := filestore.Open(dir, filestore.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec, err := st.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	return rec.State
}

// TestBreakersResetInAnyOrder is the incident fix: "breakers --config F
// reset NAME" used to print the list, exit 0 and leave the breaker open.
func TestBreakersResetInAnyOrder(t *testing.T) {
	for _, order := range [][]string{
		{"breakers", "--config", "CFG", "reset", "openai"},
		{"breakers", "reset", "openai", "--config", "CFG"},
		{"breakers", "reset", "--config=CFG", "openai"},
	} {
		cfg, dir := openBreaker(t, "openai")
		args := strings.Split(strings.ReplaceAll(strings.Join(order, "\x00"), "CFG", cfg), "\x00")
		var out strings.Builder
		code := run(args, strings.NewReader(""), &out, &out)
		if code != exitOK || !strings.Contains(out.String(), "openai: closed") {
			t.Errorf("sluice %q: exit %d, output %q; want exit 0 and \"openai: closed\"", order, code, out.String())
		}
		if got := breakerState(t, dir, "openai"); got != breaker.Closed {
			t.Errorf("sluice %q: breaker is %v afterwards, want closed", order, got)
		}
	}
}

// TestBreakersRefusesLeftovers: arguments the command does not use are an
// error, and nothing is reset.
func TestBreakersRefusesLeftovers(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"breakers", "--config", "CFG", "rest", "openai"}, `unexpected arguments ["rest" "openai"]`},
		{[]string{"breakers", "--config", "CFG", "openai"}, `unexpected argument "openai" (want no argument to list the breakers, or reset NAME)`},
		{[]string{"breakers", "reset", "openai", "extra", "--config", "CFG"}, `unexpected argument "extra"`},
		{[]string{"breakers", "reset", "--config", "CFG"}, "name the breaker to close"},
	} {
		cfg, dir := openBreaker(t, "openai")
		for i, a := range tt.args {
			if a == "CFG" {
				tt.args[i] = cfg
			}
		}
		var out strings.Builder
		code := run(tt.args, strings.NewReader(""), &out, &out)
		if code != exitUsage || !strings.Contains(out.String(), tt.want) {
			t.Errorf("sluice %q: exit %d, output %q; want exit 2 with %q", tt.args, code, out.String(), tt.want)
		}
		if got := breakerState(t, dir, "openai"); got != breaker.Open {
			t.Errorf("sluice %q: breaker is %v afterwards, want it still open", tt.args, got)
		}
	}
}

// The breakers the config's routes use are listed closed before any has a
// record, and one of them can be reset; a name no route uses cannot.
func TestBreakersListsIdleOnes(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "sluice.yaml")
	yaml := fmt.Sprintf("state: {backend: file, dir: %s}\nroutes:\n  - {prefix: /openai, provider: openai}\n  - {prefix: /anthropic, provider: anthropic}\n", dir)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	if code := run([]string{"breakers", "--config", cfg}, strings.NewReader(""), &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[1], "anthropic  closed") || !strings.HasPrefix(lines[2], "openai     closed") {
		t.Errorf("listing:\n%s\nwant a header, then anthropic and openai closed", out.String())
	}
	if want := "sluice breakers: reading state file:" + dir + " (config " + cfg + ")\n"; errb.String() != want {
		t.Errorf("stderr %q, want %q", errb.String(), want)
	}
	out.Reset()
	if code := run([]string{"breakers", "--config", cfg, "reset", "openai"}, strings.NewReader(""), &out, &out); code != exitOK || !strings.Contains(out.String(), "openai: closed") {
		t.Errorf("reset openai: exit %d, %q", code, out.String())
	}
	out.Reset()
	if code := run([]string{"breakers", "--config", cfg, "reset", "gemini"}, strings.NewReader(""), &out, &out); code != exitUsage {
		t.Errorf("reset gemini, which no route uses: exit %d, %q; want 2", code, out.String())
	}
}

// --state names the store to read instead of the config's: a directory,
// or a Redis URL; a Redis that does not answer is an error, not a list of
// local, empty breakers.
func TestBreakersStateFlag(t *testing.T) {
	_, dir := openBreaker(t, "openai")
	var out strings.Builder
	if code := run([]string{"breakers", "--state", dir}, strings.NewReader(""), &out, &out); code != exitOK || !strings.Contains(out.String(), "openai     open") {
		t.Errorf("breakers --state DIR: exit %d,\n%s\nwant openai open", code, out.String())
	}
	out.Reset()
	if code := run([]string{"breakers", "reset", "openai", "--state", dir}, strings.NewReader(""), &out, &out); code != exitOK {
		t.Errorf("reset --state DIR: exit %d, %q", code, out.String())
	}
	if got := breakerState(t, dir, "openai"); got != breaker.Closed {
		t.Errorf("after the reset the breaker is %v, want closed", got)
	}

	url := startRedis(t)
	out.Reset()
	if code := run([]string{"breakers", "--state", url}, strings.NewReader(""), &out, &out); code != exitOK || !strings.Contains(out.String(), "openai     closed") {
		t.Errorf("breakers --state %s: exit %d,\n%s\nwant openai closed", url, code, out.String())
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	down := "redis://" + l.Addr().String() + "/0"
	l.Close()
	out.Reset()
	if code := run([]string{"breakers", "--state", down}, strings.NewReader(""), &out, &out); code != 1 || !strings.Contains(out.String(), "the state's Redis, "+down+", failed (dial tcp") || strings.Contains(out.String(), "BREAKER") {
		t.Errorf("breakers --state %s (nothing listening): exit %d,\n%s\nwant exit 1, the store named, its error, no list", down, code, out.String())
	}
}
