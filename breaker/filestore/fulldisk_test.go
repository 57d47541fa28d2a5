//go:build linux

package filestore

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

// runFullChild is a child process whose files may not grow (RLIMIT_FSIZE
// 0, as on a full disk): a breaker's file cannot be made, so its record is
// kept in the process. It prints what it sees, a line each, then lifts
// the limit and makes one more change, which carries the record into the
// file.
func runFullChild() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("getrlimit:", err)
		return 2
	}
	full := lim
	full.Cur = 0
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &full); err != nil {
		fmt.Println("setrlimit:", err)
		return 2
	}
	f, err := Open(os.Getenv("BREAKER_DIR"), Options{Logger: slog.New(slog.NewTextHandler(os.Stderr, nil))})
	if err != nil {
		fmt.Println("open:", err)
		return 2
	}
	defer f.Close()
	s := breaker.Settings{Failures: 3, Cool: time.Hour}
	b := breaker.New("p", s, f)
	for range 3 {
		p, err := b.Allow()
		if err != nil {
			fmt.Println("allow:", err)
			return 2
		}
		p.Done(breaker.Failure, time.Millisecond)
	}
	_, err = b.Allow()
	var open *breaker.OpenError
	fmt.Println("refused", errors.As(err, &open))
	list, _ := f.List()
	fmt.Println("listed", list["p"].State)
	fmt.Println("degraded", f.Degraded(), f.FallbacksTotal())
	f.Apply("q", s, breaker.Event{Kind: breaker.EventTrip})
	_, _, err = f.Apply("q", s, breaker.Event{Kind: breaker.EventReset}) // closed after two transitions: a record to write
	fmt.Println("reset error", err != nil)
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		fmt.Println("setrlimit:", err)
		return 2
	}
	f.Apply("p", s, breaker.Event{Kind: breaker.EventIgnored})
	fmt.Println("degraded", f.Degraded(), f.FallbacksTotal())
	return 0
}

// On a full disk a breaker still opens: each process counts in its own
// memory (a warning says so once, and Degraded reports it) instead of
// counting nothing, a reset there says it was not shared, and once the
// files can be written again the next change carries every record the
// process kept into the state directory, for every process.
func TestFullDiskBreakerCountsLocally(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir, Options{}) // the directory exists, its own files made
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "BREAKER_CHILD=full", "BREAKER_DIR="+dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr // pipes: the child's limit does not cut them
	if err := cmd.Run(); err != nil {
		t.Fatalf("child: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	want := "refused true\nlisted open\ndegraded true 1\nreset error true\ndegraded false 1\n"
	if got := stdout.String(); got != want {
		t.Errorf("child saw:\n%s\nwant:\n%s", got, want)
	}
	if n := strings.Count(stderr.String(), "cannot write the state directory"); n != 1 {
		t.Errorf("the warning was logged %d times, want once:\n%s", n, stderr.String())
	}
	f, err = Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if rec, err := f.Load("p"); err != nil || rec.State != breaker.Open || rec.Transitions != 1 {
		t.Errorf("the state directory holds p %+v, %v after the disk freed; want it open, as the child counted it", rec, err)
	}
	// q, which the child's last change did not touch, was carried along.
	if rec, err := f.Load("q"); err != nil || rec.State != breaker.Closed || rec.Transitions != 2 {
		t.Errorf("the state directory holds q %+v, %v after the disk freed; want it closed after 2 transitions", rec, err)
	}
}
