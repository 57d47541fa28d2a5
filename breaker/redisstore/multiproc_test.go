//go:build unix

package redisstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// The multi-process tests run this test binary again as child processes
// sharing one redis-server. A child reads one command a line on stdin and
// answers one line on stdout:
//
//	allow-at T     → "closed T" | "open T" | "probe T"   Allow at wall-clock time T
//	done OUTCOME   → "ok"             reports the last permit
//	fail N         → "ok ADMITTED"    N goroutines each Allow and report a failure
//	trip           → "ok T UNTIL"     opens the breaker (T: just before)
//	watch STATE    → "seen T"         once Load shows STATE (open | closed)
//	left           → "ok NS"          Until minus the child's own clock
//	acquire        → "probe" | "open" asks the store for the probe
//	record         → "STATE FAILURES"
//	stats          → "ok DEGRADED FALLBACKS"
func TestMain(m *testing.M) {
	redis.SetLogger(quietLogger{}) // dial failures are expected here: Redis is killed on purpose
	if os.Getenv("BREAKER_CHILD") == "redis" {
		os.Exit(runRedisChild())
	}
	os.Exit(m.Run())
}

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}

func runRedisChild() int {
	opts := Options{URL: os.Getenv("BREAKER_URL")}
	opts.Refresh, _ = time.ParseDuration(os.Getenv("BREAKER_REFRESH"))
	opts.Timeout, _ = time.ParseDuration(os.Getenv("BREAKER_TIMEOUT"))
	if skew, _ := time.ParseDuration(os.Getenv("BREAKER_SKEW")); skew != 0 {
		opts.now = func() time.Time { return time.Now().Add(skew) }
	}
	st, err := New(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	failures, _ := strconv.Atoi(os.Getenv("BREAKER_FAILURES"))
	cool, _ := time.ParseDuration(os.Getenv("BREAKER_COOL"))
	s := breaker.Settings{Failures: failures, Cool: cool, Lease: time.Minute}
	c := &redisChild{st: st, s: s, b: breaker.New("shared/p", s, st)}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		fmt.Println(c.do(strings.Fields(in.Text())))
	}
	return 0
}

type redisChild struct {
	st   *Store
	s    breaker.Settings
	b    *breaker.Breaker
	last breaker.Permit
}

func (c *redisChild) do(cmd []string) string {
	name := c.b.Name()
	switch cmd[0] {
	case "allow-at":
		at, _ := strconv.ParseInt(cmd[1], 10, 64)
		time.Sleep(time.Until(time.Unix(0, at)))
		p, err := c.b.Allow()
		t := time.Now().UnixNano()
		switch {
		case err != nil:
			return fmt.Sprintf("open %d", t)
		case p.State() == breaker.HalfOpen:
			c.last = p
			return fmt.Sprintf("probe %d", t)
		}
		c.last = p
		return fmt.Sprintf("closed %d", t)
	case "done":
		c.last.Done(map[string]breaker.Outcome{"success": breaker.Success, "failure": breaker.Failure}[cmd[1]], 0)
		return "ok"
	case "fail":
		n, _ := strconv.Atoi(cmd[1])
		return fmt.Sprintf("ok %d", c.fail(n))
	case "trip":
		t := time.Now().UnixNano()
		_, r, _ := c.st.Apply(name, c.s, breaker.Event{Kind: breaker.EventTrip})
		return fmt.Sprintf("ok %d %d", t, r.Until)
	case "reset":
		c.st.Apply(name, c.s, breaker.Event{Kind: breaker.EventReset})
		return "ok"
	case "watch":
		want := map[string]breaker.State{"open": breaker.Open, "closed": breaker.Closed}[cmd[1]]
		for {
			if r, _ := c.st.Load(name); r.State == want {
				return fmt.Sprintf("seen %d", time.Now().UnixNano())
			}
			runtime.Gosched()
		}
	case "left":
		r, _ := c.st.Load(name)
		return fmt.Sprintf("ok %d", r.Until-c.st.clock.now().UnixNano())
	case "acquire":
		if _, r, _ := c.st.Apply(name, c.s, breaker.Event{Kind: breaker.Acquire, Token: 11}); r.State == breaker.HalfOpen && r.Probe == 11 {
			return "probe"
		}
		return "open"
	case "record":
		r, _ := c.st.Load(name)
		return fmt.Sprintf("%v %d", r.State, r.Failures)
	case "stats":
		return fmt.Sprintf("ok %v %d", c.st.Degraded(), c.st.FallbacksTotal())
	}
	return "error unknown command " + cmd[0]
}

func (c *redisChild) fail(n int) int {
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	start := make(chan struct{})
	for range n {
		wg.Go(func() {
			<-start
			if p, err := c.b.Allow(); err == nil {
				p.Done(breaker.Failure, 0)
				mu.Lock()
				admitted++
				mu.Unlock()
			}
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

func startChild(t *testing.T, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "BREAKER_CHILD=redis"), env...)
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
	return c
}

// redisChildren starts n children on srv; env adds to or overrides the
// default settings (Refresh 20ms, Failures 3, Cool 30ms, Timeout
// testTimeout).
func redisChildren(t *testing.T, srv *redistest.Server, n int, env ...string) []*child {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	base := []string{"BREAKER_URL=" + srv.URL(), "BREAKER_REFRESH=20ms", "BREAKER_FAILURES=3", "BREAKER_COOL=30ms",
		"BREAKER_TIMEOUT=" + testTimeout.String()}
	kids := make([]*child, n)
	for i := range kids {
		kids[i] = startChild(t, append(base, env...)...)
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

func broadcast(kids []*child, format string, args ...any) [][]string {
	for _, c := range kids {
		c.send(format, args...)
	}
	out := make([][]string, len(kids))
	for i, c := range kids {
		out[i] = c.recv()
	}
	return out
}

func atoi64(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

func checkNoFallback(t *testing.T, kids []*child) {
	t.Helper()
	for i, got := range broadcast(kids, "stats") {
		if got[1] != "false" || got[2] != "0" {
			t.Errorf("child %d fell back to local breakers (degraded %s, fallbacks %s): the figures are not Redis's", i, got[1], got[2])
		}
	}
}

func TestMultiProcessRedisOneProbe(t *testing.T) {
	srv := redistest.Start(t)
	kids := redisChildren(t, srv, 4)
	const trials = 50
	violations := 0
	for trial := range trials {
		ok := kids[trial%len(kids)].ask("trip")
		broadcast(kids, "watch open")
		// A margin past the cool period: each process converts Redis's
		// time to its own clock from round trips, to within a few ms on a
		// loaded machine.
		at := max(atoi64(ok[2]), time.Now().UnixNano()) + int64(25*time.Millisecond)
		probes, holder := 0, -1
		for i, got := range broadcast(kids, "allow-at %d", at) {
			switch got[0] {
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
		} else {
			kids[0].ask("reset") // no probe to close it: start the next trial clean
		}
		broadcast(kids, "watch closed")
	}
	checkNoFallback(t, kids)
	t.Logf("%d trials × %d processes: %d violations of the single probe", trials, len(kids), violations)
}

func TestMultiProcessRedisNoLostUpdate(t *testing.T) {
	srv := redistest.Start(t)
	kids := redisChildren(t, srv, 8, "BREAKER_FAILURES=1000")
	for i, got := range broadcast(kids, "fail 50") {
		if got[1] != "50" {
			t.Fatalf("child %d admitted %s of 50", i, got[1])
		}
	}
	checkNoFallback(t, kids)
	got := srv.Client().HGet(context.Background(), "sluice:breaker:{shared/p}", "f").Val()
	if got != "400" {
		t.Fatalf("after 8 processes × 50 concurrent failures: %s failures in Redis, want exactly 400", got)
	}
}

func TestMultiProcessRedisVisibility(t *testing.T) {
	srv := redistest.Start(t)
	kids := redisChildren(t, srv, 2, "BREAKER_REFRESH=250ms", "BREAKER_COOL=1h")
	var delays []time.Duration
	for range 6 {
		// The watcher has the breaker in its cache; the trip comes at any
		// phase of its refresh.
		kids[1].ask("record")
		time.Sleep(rand.N(250 * time.Millisecond))
		kids[1].send("watch open")
		ok := kids[0].ask("trip")
		seen := kids[1].recv()
		delays = append(delays, time.Duration(atoi64(seen[1])-atoi64(ok[1])))
		srv.Client().Del(context.Background(), "sluice:breaker:{shared/p}")
		broadcast(kids, "watch closed")
	}
	sort.Slice(delays, func(i, j int) bool { return delays[i] < delays[j] })
	t.Logf("open in one process seen by another after: min %v, median %v, max %v (Refresh 250ms)",
		delays[0], delays[len(delays)/2], delays[len(delays)-1])
	// Refresh is 250ms; the bound leaves a busy machine room, and a
	// change never seen fails it.
	if max := delays[len(delays)-1]; max > 3*time.Second {
		t.Fatalf("a change took %v to be seen, want under 3s", max)
	}
}

func TestMultiProcessRedisClockSkew(t *testing.T) {
	srv := redistest.Start(t)
	const skew = 30 * time.Second
	a := redisChildren(t, srv, 1, "BREAKER_COOL=400ms")[0]
	b := redisChildren(t, srv, 1, "BREAKER_COOL=400ms", "BREAKER_SKEW="+skew.String())[0]
	b.ask("record")
	ok := a.ask("trip")
	until := atoi64(ok[2]) // on a's clock, which is the real one
	b.ask("watch open")
	leftA, leftB := a.ask("left"), b.ask("left")
	// The two answers come one after the other, so they differ by the
	// time between them; a skewed clock would make them differ by 30s.
	d := time.Duration(atoi64(leftA[1]) - atoi64(leftB[1]))
	t.Logf("time left before a probe: %v by a's clock, %v by b's (30s ahead)", time.Duration(atoi64(leftA[1])), time.Duration(atoi64(leftB[1])))
	if d < -time.Second || d > time.Second {
		t.Fatalf("the processes disagree on when the breaker may close by %v", d)
	}
	for {
		got := b.ask("acquire")
		now := time.Now().UnixNano()
		if got[0] == "probe" {
			if early := time.Duration(until - now); early > 5*time.Millisecond {
				t.Fatalf("b took the probe %v before the cool ended", early)
			}
			t.Logf("b took the probe %v after the cool ended", time.Duration(now-until))
			return
		}
		if now > until+int64(time.Second) {
			t.Fatal("b never took the probe")
		}
	}
}
