//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package filestore

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

// The multi-process tests run this test binary again as child processes
// that share one state directory. A child reads one command a line on
// stdin and answers one line on stdout:
//
//	allow             → "closed T" | "open T" | "probe T UNTIL"   (T: when Allow returned)
//	allow-at T        → the same, Allow called at wall-clock time T
//	done OUTCOME      → "ok"          reports the last permit: success | failure | ignored
//	fail N            → "ok ADMITTED" N goroutines each Allow and report a failure
//	trip              → "ok T UNTIL"  opens the breaker (T: just before)
//	watch             → "watching", then "seen T" once the breaker is not closed
//	record            → "STATE FAILURES"
func TestMain(m *testing.M) {
	switch os.Getenv("BREAKER_CHILD") {
	case "file":
		os.Exit(runFileChild())
	case "full":
		os.Exit(runFullChild())
	}
	os.Exit(m.Run())
}

func runFileChild() int {
	f, err := Open(os.Getenv("BREAKER_DIR"), Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer f.Close()
	s := breaker.Settings{Failures: envInt("BREAKER_FAILURES"), Cool: envDuration("BREAKER_COOL"), Lease: envDuration("BREAKER_LEASE")}
	c := &childState{b: breaker.New("shared/p", s, f), store: f, s: s}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(c.do(strings.Fields(in.Text())))
	}
	return 0
}

func envInt(k string) int {
	n, _ := strconv.Atoi(os.Getenv(k))
	return n
}

func envDuration(k string) time.Duration {
	d, _ := time.ParseDuration(os.Getenv(k))
	return d
}

type childState struct {
	b     *breaker.Breaker
	store breaker.Store
	s     breaker.Settings
	last  breaker.Permit
}

func (c *childState) do(cmd []string) string {
	switch cmd[0] {
	case "allow-at":
		at, _ := strconv.ParseInt(cmd[1], 10, 64)
		time.Sleep(time.Until(time.Unix(0, at)))
		return c.allow()
	case "allow":
		return c.allow()
	case "done":
		c.last.Done(map[string]breaker.Outcome{"success": breaker.Success, "failure": breaker.Failure, "ignored": breaker.Ignored}[cmd[1]], 0)
		return "ok"
	case "fail":
		n, _ := strconv.Atoi(cmd[1])
		return fmt.Sprintf("ok %d", c.fail(n))
	case "trip":
		t := time.Now().UnixNano()
		_, r, err := c.store.Apply(c.b.Name(), c.s, breaker.Event{Kind: breaker.EventTrip})
		if err != nil {
			return "error " + err.Error()
		}
		return fmt.Sprintf("ok %d %d", t, r.Until)
	case "watch":
		fmt.Println("watching")
		for {
			if r, err := c.b.Record(); err == nil && r.State != breaker.Closed {
				return fmt.Sprintf("seen %d", time.Now().UnixNano())
			}
			runtime.Gosched()
		}
	case "record":
		r, err := c.b.Record()
		if err != nil {
			return "error " + err.Error()
		}
		return fmt.Sprintf("%v %d", r.State, r.Failures)
	}
	return "error unknown command " + cmd[0]
}

func (c *childState) allow() string {
	p, err := c.b.Allow()
	t := time.Now().UnixNano()
	if err != nil {
		return fmt.Sprintf("open %d", t)
	}
	c.last = p
	if p.State() == breaker.HalfOpen {
		r, _ := c.b.Record()
		return fmt.Sprintf("probe %d %d", t, r.Until)
	}
	return fmt.Sprintf("closed %d", t)
}

func (c *childState) fail(n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			p, err := c.b.Allow()
			if err != nil {
				return
			}
			p.Done(breaker.Failure, 0)
			mu.Lock()
			admitted++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	return admitted
}

// child is one child process as the parent drives it.
type child struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

// startChildren starts n children of role with env added to theirs.
func startChildren(t *testing.T, n int, role string, env ...string) []*child {
	t.Helper()
	kids := make([]*child, n)
	for i := range kids {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(append(os.Environ(), "BREAKER_CHILD="+role), env...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := &child{t: t, cmd: cmd, in: in, lines: make(chan string, 16)}
		go func() {
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				c.lines <- sc.Text()
			}
			close(c.lines)
		}()
		t.Cleanup(func() {
			in.Close()
			cmd.Process.Kill()
			cmd.Wait()
		})
		kids[i] = c
	}
	return kids
}

func (c *child) send(format string, args ...any) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.in, format+"\n", args...); err != nil {
		c.t.Fatalf("child %d: %v", c.cmd.Process.Pid, err)
	}
}

func (c *child) recv() []string {
	c.t.Helper()
	select {
	case line, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("child %d exited", c.cmd.Process.Pid)
		}
		if strings.HasPrefix(line, "error") {
			c.t.Fatalf("child %d: %s", c.cmd.Process.Pid, line)
		}
		return strings.Fields(line)
	case <-time.After(30 * time.Second):
		c.t.Fatalf("child %d: no answer in 30s", c.cmd.Process.Pid)
	}
	return nil
}

func (c *child) ask(format string, args ...any) []string {
	c.t.Helper()
	c.send(format, args...)
	return c.recv()
}

// kill ends the child with SIGKILL and waits for it to be gone.
func (c *child) kill() {
	c.cmd.Process.Kill()
	c.cmd.Wait()
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func fileChildren(t *testing.T, n int, failures int, cool, lease time.Duration) ([]*child, string) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	dir := t.TempDir()
	return startChildren(t, n, "file", "BREAKER_DIR="+dir, fmt.Sprintf("BREAKER_FAILURES=%d", failures),
		"BREAKER_COOL="+cool.String(), "BREAKER_LEASE="+lease.String()), dir
}

func TestMultiProcessFileOpenFailsFastEverywhere(t *testing.T) {
	kids, _ := fileChildren(t, 8, 3, time.Hour, time.Hour)
	for _, c := range kids {
		if got := c.ask("allow"); got[0] != "closed" {
			t.Fatalf("fresh breaker: %v, want closed", got)
		}
		c.ask("done success")
	}
	if got := kids[0].ask("fail 3"); got[1] != "3" {
		t.Fatalf("child 0 admitted %s of 3 failures", got[1])
	}
	for i, c := range kids {
		if got := c.ask("allow"); got[0] != "open" {
			t.Errorf("child %d after child 0 opened the breaker: %v, want open", i, got)
		}
	}
}

func TestMultiProcessFileOneProbe(t *testing.T) {
	kids, _ := fileChildren(t, 8, 3, 20*time.Millisecond, time.Minute)
	const trials = 60
	violations := 0
	for trial := range trials {
		ok := kids[trial%len(kids)].ask("trip")
		at := atoi64(ok[2]) + int64(2*time.Millisecond)
		for _, c := range kids {
			c.send("allow-at %d", at)
		}
		probes, holder := 0, -1
		for i, c := range kids {
			switch got := c.recv(); got[0] {
			case "probe":
				probes++
				holder = i
			case "closed":
				t.Errorf("trial %d: child %d admitted closed while the breaker was open", trial, i)
			}
		}
		if probes != 1 {
			violations++
			t.Errorf("trial %d: %d probes admitted across %d processes, want exactly 1", trial, probes, len(kids))
		}
		if holder >= 0 {
			kids[holder].ask("done success")
		}
	}
	t.Logf("%d trials × %d processes: %d violations of the single probe", trials, len(kids), violations)
}

func TestMultiProcessFileNoLostUpdate(t *testing.T) {
	kids, dir := fileChildren(t, 8, 1000, time.Hour, time.Hour)
	for _, c := range kids {
		c.send("fail 50")
	}
	for i, c := range kids {
		if got := c.recv(); got[1] != "50" {
			t.Fatalf("child %d admitted %s of 50", i, got[1])
		}
	}
	f, _ := openTestFile(t, dir)
	rec, err := f.Load("shared/p")
	if err != nil || rec.Failures != 400 {
		t.Fatalf("after 8 processes × 50 concurrent failures: %d failures (%v), want exactly 400", rec.Failures, err)
	}
	if got := kids[3].ask("record"); got[1] != "400" {
		t.Fatalf("a child sees %v, want 400 failures", got)
	}
}

func TestMultiProcessFileKilledProbeHolder(t *testing.T) {
	const lease = time.Second
	kids, _ := fileChildren(t, 8, 3, 20*time.Millisecond, lease)
	for trial := range 3 {
		ok := kids[0].ask("trip")
		at := atoi64(ok[2]) + int64(2*time.Millisecond)
		for _, c := range kids {
			c.send("allow-at %d", at)
		}
		holder, leaseEnd := -1, int64(0)
		for i, c := range kids {
			if got := c.recv(); got[0] == "probe" {
				holder, leaseEnd = i, atoi64(got[2])
			}
		}
		if holder < 0 {
			t.Fatalf("trial %d: no probe admitted", trial)
		}
		kids[holder].kill()
		kids = append(kids[:holder], kids[holder+1:]...)
		refusedDuringLease, winner := 0, -1
		for winner < 0 && time.Now().UnixNano() < leaseEnd+int64(5*time.Second) {
			for i, c := range kids {
				got := c.ask("allow")
				at := atoi64(got[1])
				switch {
				case got[0] == "probe" && at < leaseEnd:
					t.Fatalf("trial %d: a second probe %v before the dead holder's lease ended", trial, time.Duration(leaseEnd-at))
				case got[0] == "probe":
					winner = i
				case got[0] == "open" && at < leaseEnd:
					refusedDuringLease++
				}
				if winner >= 0 {
					break
				}
			}
		}
		if winner < 0 {
			t.Fatalf("trial %d: no new probe within 5s of the lease's end", trial)
		}
		if refusedDuringLease == 0 {
			t.Fatalf("trial %d: no call was made during the lease; the test proved nothing", trial)
		}
		kids[winner].ask("done success")
		t.Logf("trial %d: %d calls refused while the killed holder's lease ran; a new probe after it", trial, refusedDuringLease)
	}
}

func TestMultiProcessFileVisibility(t *testing.T) {
	kids, _ := fileChildren(t, 2, 3, 20*time.Millisecond, time.Hour)
	var delays []time.Duration
	for range 20 {
		kids[1].send("watch")
		if got := kids[1].recv(); got[0] != "watching" {
			t.Fatalf("watch: %v", got)
		}
		ok := kids[0].ask("trip")
		seen := kids[1].recv()
		delays = append(delays, time.Duration(atoi64(seen[1])-atoi64(ok[1])))
		// Once the trip has returned, the other process's very next Load
		// sees it: no refresh, no wait.
		if got := kids[1].ask("record"); got[0] != "open" {
			t.Fatalf("the Load after the trip returned sees %v, want open", got)
		}
		kids[0].ask("allow-at %d", atoi64(ok[2])+1) // let the probe through and close
		kids[0].ask("done success")
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	t.Logf("open in one process seen by another (a spinning reader; trip start to seen): min %v, median %v, max %v",
		delays[0], delays[len(delays)/2], delays[len(delays)-1])
}
