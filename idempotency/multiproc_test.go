//go:build unix

package idempotency_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/idempotency/storetest"
)

// The multi-process tests run this test binary again as child processes
// sharing one answers directory. A child reads one command a line and
// answers one line:
//
//	begin VALUE BODY LEASE → "run UNTIL" | "replay BODY" | "in_flight UNTIL" | "conflict"
//	keep BODY              → "ok" | "error ..."   keeps BODY under the last mark taken
//	release                → "ok"
//
// UNTIL is a lease's end in Unix nanoseconds; a child's clock is the wall
// clock. A child started with IDEM_FSIZE may write no file past that many
// bytes (RLIMIT_FSIZE): a disk that is full for it.
func TestMain(m *testing.M) {
	if os.Getenv("IDEM_CHILD") == "file" {
		os.Exit(runChild())
	}
	os.Exit(m.Run())
}

func runChild() int {
	if n, err := strconv.ParseUint(os.Getenv("IDEM_FSIZE"), 10, 64); err == nil {
		if err := setFileSizeLimit(n); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	f, err := idempotency.OpenFile(os.Getenv("IDEM_DIR"), idempotency.FileOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer f.Close()
	var last idempotency.Mark
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd := strings.Fields(in.Text())
		switch cmd[0] {
		case "begin":
			lease, _ := time.ParseDuration(cmd[3])
			r, err := f.Begin(storetest.ID(cmd[1]), storetest.FP(cmd[2]), lease, time.Now())
			switch {
			case err != nil:
				fmt.Println("error", err)
			case r.Verdict == idempotency.Run:
				last = r.Mark
				fmt.Println("run", r.Mark.Until.UnixNano())
			case r.Verdict == idempotency.Replay:
				fmt.Println("replay", string(r.Answer.Body))
			case r.Verdict == idempotency.InFlight:
				fmt.Println("in_flight", r.Until.UnixNano())
			default:
				fmt.Println(r.Verdict)
			}
		case "keep":
			if err := f.Keep(last, storetest.SampleAnswer(cmd[1]), time.Hour, time.Now()); err != nil {
				fmt.Println("error", err)
			} else {
				fmt.Println("ok")
			}
		case "release":
			f.Release(last)
			fmt.Println("ok")
		}
	}
	return 0
}

// child is one child process as the parent drives it.
type child struct {
	t     *testing.T
	cmd   *exec.Cmd
	in    io.WriteCloser
	lines chan string
}

func startChild(t *testing.T, dir string, env ...string) *child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "IDEM_CHILD=file", "IDEM_DIR="+dir), env...)
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
	c := &child{t: t, cmd: cmd, in: in, lines: make(chan string, 4)}
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

func (c *child) send(format string, args ...any) {
	c.t.Helper()
	if _, err := fmt.Fprintf(c.in, format+"\n", args...); err != nil {
		c.t.Fatalf("child %d: %v", c.cmd.Process.Pid, err)
	}
}

func (c *child) read() string {
	c.t.Helper()
	select {
	case l, ok := <-c.lines:
		if !ok {
			c.t.Fatalf("child %d ended", c.cmd.Process.Pid)
		}
		return l
	case <-time.After(20 * time.Second):
		c.t.Fatalf("child %d: no answer within 20s", c.cmd.Process.Pid)
	}
	return ""
}

func (c *child) do(format string, args ...any) string {
	c.t.Helper()
	c.send(format, args...)
	return c.read()
}

// TestFileOneRunAcrossProcesses: four processes begin the same key at
// once: one runs, three see it in flight; once it keeps its answer every
// process replays it.
func TestFileOneRunAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	kids := make([]*child, 4)
	for i := range kids {
		kids[i] = startChild(t, dir)
	}
	for round := range 5 {
		value := fmt.Sprintf("job-%d", round)
		for _, k := range kids {
			k.send("begin %s body 1m", value)
		}
		var runner *child
		inFlight := 0
		for _, k := range kids {
			switch l := k.read(); {
			case strings.HasPrefix(l, "run "):
				if runner != nil {
					t.Fatalf("round %d: two processes run", round)
				}
				runner = k
			case strings.HasPrefix(l, "in_flight "):
				inFlight++
			default:
				t.Fatalf("round %d: %q", round, l)
			}
		}
		if runner == nil || inFlight != 3 {
			t.Fatalf("round %d: runner %v, %d in flight", round, runner != nil, inFlight)
		}
		if l := runner.do("keep answer-%d", round); l != "ok" {
			t.Fatal(l)
		}
		for _, k := range kids {
			if l := k.do("begin %s body 1m", value); l != fmt.Sprintf("replay answer-%d", round) {
				t.Fatalf("round %d: after the keep: %q", round, l)
			}
		}
	}
}

// TestFileKilledHolderIsNotWedged: a holder killed with SIGKILL leaves its
// mark, seen in flight by every other process until its lease ends; then
// the next Begin takes it, and that process's answer is kept.
func TestFileKilledHolderIsNotWedged(t *testing.T) {
	dir := t.TempDir()
	holder, other := startChild(t, dir), startChild(t, dir)
	l := holder.do("begin job body 1500ms")
	until, err := strconv.ParseInt(strings.TrimPrefix(l, "run "), 10, 64)
	if err != nil {
		t.Fatalf("holder: %q", l)
	}
	holder.cmd.Process.Kill()
	holder.cmd.Wait()
	if l := other.do("begin job body 1m"); l != fmt.Sprintf("in_flight %d", until) {
		t.Fatalf("another process, before the lease ends: %q, want in_flight %d", l, until)
	}
	f := openFile(t, dir, idempotency.FileOptions{})
	r, err := idempotency.Wait(context.Background(), f, storetest.ID("job"), storetest.FP("body"), time.Minute, 20*time.Second)
	now := time.Now()
	if err != nil || r.Verdict != idempotency.Run {
		t.Fatalf("Wait: %v %v, want run once the lease ended", r.Verdict, err)
	}
	if end := time.Unix(0, until); now.Before(end) || now.After(end.Add(5*time.Second)) {
		t.Errorf("the mark was taken at %v, want just after its lease ended at %v", now, end)
	}
	if err := f.Keep(r.Mark, storetest.SampleAnswer("mine"), time.Hour, time.Now()); err != nil {
		t.Fatal(err)
	}
	if l := other.do("begin job body 1m"); l != "replay mine" {
		t.Fatalf("another process after the keep: %q", l)
	}
}

// TestFileFullDiskKeepsWholeOrNothing: a process that cannot grow its
// answer log (a full disk) cannot extend it for a window to append
// through: an answer that still fits is written with a write call and
// kept; one that does not fit is not kept, nothing of it is ever read,
// and its mark stays until released. Every other process, and one opened
// after the first is killed, replays what was kept.
func TestFileFullDiskKeepsWholeOrNothing(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the full disk is a file size limit, set on Linux only")
	}
	dir := t.TempDir()
	full := startChild(t, dir, "IDEM_FSIZE=16384")
	if l := full.do("begin small body 1m"); !strings.HasPrefix(l, "run ") {
		t.Fatal(l)
	}
	if l := full.do("keep fits"); l != "ok" {
		t.Fatalf("an answer that fits the disk: %q, want ok", l)
	}
	big := strings.Repeat("x", 20000)
	if l := full.do("begin big body 1m"); !strings.HasPrefix(l, "run ") {
		t.Fatal(l)
	}
	if l := full.do("keep %s", big); !strings.HasPrefix(l, "error ") {
		t.Fatalf("an answer over the disk's room: %q, want an error", l)
	}
	other := openFile(t, dir, idempotency.FileOptions{})
	now := time.Now()
	if r, err := other.Begin(storetest.ID("small"), storetest.FP("body"), time.Minute, now); err != nil || r.Verdict != idempotency.Replay || string(r.Answer.Body) != "fits" {
		t.Fatalf("the answer kept on a full disk: %v %v, want it replayed", r.Verdict, err)
	}
	if r, err := other.Begin(storetest.ID("big"), storetest.FP("body"), time.Minute, now); err != nil || r.Verdict != idempotency.InFlight {
		t.Fatalf("the answer not kept: %v %v, want its mark in flight", r.Verdict, err)
	}
	if l := full.do("release"); l != "ok" {
		t.Fatal(l)
	}
	full.cmd.Process.Kill()
	full.cmd.Wait()
	fresh := openFile(t, dir, idempotency.FileOptions{})
	if r, err := fresh.Begin(storetest.ID("big"), storetest.FP("body"), time.Minute, now); err != nil || r.Verdict != idempotency.Run {
		t.Fatalf("the answer not kept, once released: %v %v, want run", r.Verdict, err)
	}
	if r, _ := fresh.Begin(storetest.ID("small"), storetest.FP("body"), time.Minute, now); r.Verdict != idempotency.Replay || string(r.Answer.Body) != "fits" {
		t.Fatalf("after the kill, in a new opener: %v, want the answer replayed", r.Verdict)
	}
}

// TestFileWindowOutlivesItsWriter: answers a process appended through its
// log's mapped window (the log runs in zeros to the window's end) are
// replayed by a process opened after it was killed with SIGKILL.
func TestFileWindowOutlivesItsWriter(t *testing.T) {
	if runtime.GOOS == "openbsd" {
		t.Skip("no window on OpenBSD: its logs are written with write calls")
	}
	dir := t.TempDir()
	writer := startChild(t, dir)
	for i := range 3 {
		if l := writer.do("begin w%d body 1m", i); !strings.HasPrefix(l, "run ") {
			t.Fatal(l)
		}
		if l := writer.do("keep answer-%d", i); l != "ok" {
			t.Fatal(l)
		}
	}
	writer.cmd.Process.Kill()
	writer.cmd.Wait()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	for _, name := range logs {
		if fi, err := os.Stat(name); err != nil || fi.Size() != 16<<10 {
			t.Errorf("%s: %v, want a log run in zeros to its first window's end, 16 KiB", filepath.Base(name), err)
		}
	}
	f := openFile(t, dir, idempotency.FileOptions{})
	for i := range 3 {
		r, err := f.Begin(storetest.ID(fmt.Sprintf("w%d", i)), storetest.FP("body"), time.Minute, time.Now())
		if err != nil || r.Verdict != idempotency.Replay || string(r.Answer.Body) != fmt.Sprintf("answer-%d", i) {
			t.Fatalf("answer %d after its writer was killed: %v %v", i, r.Verdict, err)
		}
	}
}
