//go:build linux

package limit

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/state"
)

// The multi-process test runs this test binary again as child processes
// sharing one state directory. A child waits for a line on stdin, then
// makes LIMIT_RESERVATIONS reservations from each of LIMIT_GOROUTINES
// goroutines at once, from the instant (Unix ns) the line gives, prints each slot (Unix ns) on a line and "end".
func TestMain(m *testing.M) {
	if dir := os.Getenv("LIMIT_CHILD_DIR"); dir != "" {
		os.Exit(runChild(dir))
	}
	if dir := os.Getenv("LIMIT_CONC_CHILD_DIR"); dir != "" {
		os.Exit(runConcChild(dir, os.Getenv("LIMIT_CONC_MODE")))
	}
	os.Exit(m.Run())
}

func runChild(dir string) int {
	st, err := state.OpenFile(dir, state.FileOptions{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer st.Close()
	f, _ := NewFile(st)
	defer f.Close()
	goroutines, _ := strconv.Atoi(os.Getenv("LIMIT_GOROUTINES"))
	n, _ := strconv.Atoi(os.Getenv("LIMIT_RESERVATIONS"))
	f.FreeAt("limit:rpm:openai:requests") // mapped before the start
	fmt.Println("ready")
	line, _ := bufio.NewReader(os.Stdin).ReadString('\n')
	start, _ := strconv.ParseInt(strings.TrimSpace(line), 10, 64)
	time.Sleep(time.Until(time.Unix(0, start)))
	var mu sync.Mutex
	var ats []int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for range n {
				at, ok, err := f.Reserve("limit:rpm:openai:requests", Rate{Limit: 1, Per: time.Second}, 1, time.Time{}, 24*time.Hour)
				if !ok || err != nil {
					fmt.Fprintln(os.Stderr, "refused", err)
					return
				}
				mu.Lock()
				ats = append(ats, at.UnixNano())
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	w := bufio.NewWriter(os.Stdout)
	for _, at := range ats {
		fmt.Fprintln(w, at)
	}
	fmt.Fprintln(w, "end")
	w.Flush()
	return 0
}

// TestMultiProcessFileExact: 4 processes × 4 goroutines × 250 reservations
// at once on one bucket of a state directory, with no lock taken to
// reserve. It asserts the invariant, whatever the scheduler does with the
// processes (a busy box may run them one after another): every
// reservation got a slot; the 4,000 slots are distinct and exactly one
// interval apart (never two in one interval: never over the limit; and no
// gap: no slot lost); and the bucket's TAT is one interval after the last
// slot (every reservation is in it, none counted twice). How often the
// slots' process changes is logged, not asserted: it is the scheduler's.
func TestMultiProcessFileExact(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-process test skipped in -short mode")
	}
	dir := t.TempDir()
	const procs = 4
	var ins []io.Writer
	var outs []chan []int64
	ready := make(chan bool, procs)
	for range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), "LIMIT_CHILD_DIR="+dir, "LIMIT_GOROUTINES=4", "LIMIT_RESERVATIONS=250")
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
		t.Cleanup(func() {
			in.Close()
			cmd.Process.Kill()
			cmd.Wait()
		})
		ats := make(chan []int64, 1)
		go func() {
			var got []int64
			sc := bufio.NewScanner(out)
			sc.Scan() // ready
			ready <- true
			for sc.Scan() && sc.Text() != "end" {
				if n, err := strconv.ParseInt(strings.TrimSpace(sc.Text()), 10, 64); err == nil {
					got = append(got, n)
				}
			}
			ats <- got
		}()
		ins, outs = append(ins, in), append(outs, ats)
	}
	for range procs {
		select {
		case <-ready:
		case <-time.After(30 * time.Second):
			t.Fatal("a child did not start in 30s")
		}
	}
	start := time.Now().Add(100 * time.Millisecond)
	for _, in := range ins {
		fmt.Fprintln(in, start.UnixNano())
	}
	var all []int64
	owner := map[int64]int{}
	for i, ats := range outs {
		select {
		case got := <-ats:
			if len(got) != 1000 {
				t.Fatalf("child %d handed out %d slots, want 1000", i, len(got))
			}
			all = append(all, got...)
			for _, at := range got {
				owner[at] = i
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("child %d: no answer in 60s", i)
		}
	}
	checkSpaced(t, all, procs*1000, int64(time.Second))
	sorted := slices.Sorted(maps.Keys(owner))
	f, err := NewFile(openState(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	last := time.Unix(0, sorted[len(sorted)-1])
	if tat, err := f.FreeAt("limit:rpm:openai:requests"); err != nil || !tat.Equal(last.Add(time.Second)) {
		t.Fatalf("the bucket's TAT is %v after the last slot (%v), want exactly 1s", tat.Sub(last), err)
	}
	switches := 0
	for i := 1; i < len(sorted); i++ {
		if owner[sorted[i]] != owner[sorted[i-1]] {
			switches++
		}
	}
	t.Logf("%d processes × 4 goroutines × 250 reservations: %d slots, each exactly 1s after the one before; the slot's process changed %d times", procs, len(all), switches)
}
