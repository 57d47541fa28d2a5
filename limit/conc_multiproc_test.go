//go:build linux

package limit

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/state"
)

// The concurrency children share a state directory and a limit of 3 calls
// in flight. In mode "load" a child waits for a line on stdin, then runs
// 4 goroutines of 15 calls each holding its slot 3 ms, counting the calls
// in flight on the whole host in a counter of the directory (".probe"
// record "total"), and prints "max <most seen> served <calls>". In mode
// "hold" it takes 2 slots, prints "held" and holds them until it is
// killed.
const (
	concChildGoroutines = 4
	concChildCalls      = 15
)

func runConcChild(dir, mode string) int {
	st, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	f, _ := NewFile(st)
	defer f.Close()
	l := &Limiter{Store: f, Limits: concLimit(3)}
	in := bufio.NewReader(os.Stdin)
	if mode == "hold" {
		for range 2 {
			if _, _, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m"}); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
		}
		fmt.Println("held")
		in.ReadString('\n') // until killed
		return 0
	}
	probe := st.Counters(".probe")
	fmt.Println("ready")
	in.ReadString('\n')
	var most, served atomic.Int64
	var wg sync.WaitGroup
	for range concChildGoroutines {
		wg.Go(func() {
			for range concChildCalls {
				_, done, err := l.Wait(context.Background(), hook.Ask{Provider: "openai", Model: "m", MaxWait: time.Minute})
				if err != nil {
					fmt.Fprintln(os.Stderr, err)
					return
				}
				n, _ := probe.Add("total", 0, 1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(3 * time.Millisecond)
				probe.Add("total", 0, -1)
				served.Add(1)
				done(0)
			}
		})
	}
	wg.Wait()
	fmt.Printf("max %d served %d\n", most.Load(), served.Load())
	return 0
}

// startConcChild starts a concurrency child in mode on dir and returns its
// command, its stdin and its stdout's lines.
func startConcChild(t *testing.T, dir, mode string) (*exec.Cmd, io.Writer, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LIMIT_CONC_CHILD_DIR="+dir, "LIMIT_CONC_MODE="+mode)
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
	lines := make(chan string, 4)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	t.Cleanup(func() {
		in.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, in, lines
}

// line returns the next line of a child, failing the test after 30 s.
func line(t *testing.T, lines <-chan string) string {
	t.Helper()
	select {
	case l := <-lines:
		return l
	case <-time.After(30 * time.Second):
		t.Fatal("a child said nothing in 30s")
		return ""
	}
}

// TestMultiProcessConcurrent: 3 processes × 4 goroutines × 15 calls of
// 3 ms under 3 calls in flight on one state directory: every call is
// served, the calls in flight on the host, counted in a shared counter,
// are never more than 3, and every slot is given back at the end. How
// many were in flight at most is logged, not asserted to reach 3: that is
// the scheduler's on a busy box.
func TestMultiProcessConcurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	dir := t.TempDir()
	const procs = 3
	var ins []io.Writer
	var outs []<-chan string
	for range procs {
		_, in, lines := startConcChild(t, dir, "load")
		if l := line(t, lines); l != "ready" {
			t.Fatalf("child said %q, want ready", l)
		}
		ins, outs = append(ins, in), append(outs, lines)
	}
	start := time.Now()
	for _, in := range ins {
		fmt.Fprintln(in)
	}
	var most int64
	for i, lines := range outs {
		var m, served int64
		if _, err := fmt.Sscanf(line(t, lines), "max %d served %d", &m, &served); err != nil || served != concChildGoroutines*concChildCalls {
			t.Fatalf("child %d: %v, served %d calls, want %d", i, err, served, concChildGoroutines*concChildCalls)
		}
		most = max(most, m)
	}
	if most > 3 || most < 1 {
		t.Fatalf("at most %d calls in flight on the host, want 1 to 3 (never more than the limit)", most)
	}
	probe, _ := openState(t, dir).Counters(".probe").Load("total", 0)
	f, _ := NewFile(openState(t, dir))
	if n, _ := f.InFlight(concKey); n != 0 || probe != 0 {
		t.Fatalf("%d slots taken, %d calls counted in flight after the end; want 0 and 0", n, probe)
	}
	t.Logf("%d processes × %d goroutines × %d calls of 3 ms under 3 in flight: all served in %v, at most %d in flight on the host",
		procs, concChildGoroutines, concChildCalls, time.Since(start).Round(time.Millisecond), most)
}

// TestMultiProcessCrashGivesBack: a process killed (SIGKILL) while it
// holds 2 of 3 slots: before, another process gets 1 slot and not 2;
// after, it gets all 3 at its first call that finds the key full, without
// waiting once the killed process is reaped, and within 5 s (in practice a
// millisecond) while it is a zombie.
func TestMultiProcessCrashGivesBack(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	for _, reap := range []bool{false, true} {
		t.Run(fmt.Sprintf("reaped=%v", reap), func(t *testing.T) {
			dir := t.TempDir()
			cmd, _, lines := startConcChild(t, dir, "hold")
			if l := line(t, lines); l != "held" {
				t.Fatalf("child said %q, want held", l)
			}
			f, err := NewFile(openState(t, dir))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			l := &Limiter{Store: f, Limits: concLimit(3)}
			ctx := context.Background()
			_, done, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"})
			if err != nil {
				t.Fatalf("the 3rd slot: %v", err)
			}
			if _, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m"}); !errors.Is(err, ErrLimited) {
				t.Fatalf("a 4th slot while the child holds 2: %v, want refused", err)
			}
			done(0)
			cmd.Process.Kill()
			if reap {
				cmd.Wait()
			}
			// Reaped, the child's slots come back at the first call that
			// finds the key full: no call waits. A zombie is dead to the
			// limiter once /proc says so, a moment after the kill.
			maxWait := 5 * time.Second
			if reap {
				maxWait = 0
			}
			start := time.Now()
			for i := range 3 {
				if _, _, err := l.Wait(ctx, hook.Ask{Provider: "openai", Model: "m", MaxWait: maxWait}); err != nil {
					t.Fatalf("slot %d after the kill: %v", i, err)
				}
			}
			took := time.Since(start)
			if n, _ := f.InFlight(concKey); n != 3 || took > 5*time.Second {
				t.Fatalf("%d slots taken in %v after the kill, want all 3 of this process's", n, took)
			}
			t.Logf("the killed process's 2 slots came back in %v", took)
		})
	}
}
