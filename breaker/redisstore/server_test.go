package redisstore

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// server is a redis-server started by a test on a free loopback port.
type server struct {
	t    testing.TB
	path string
	port int
	cmd  *exec.Cmd
	c    *redis.Client
}

// startRedis starts a private redis-server, or skips the test when there
// is none installed.
func startRedis(t testing.TB) *server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found: apt-get install -y redis-server")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	s := &server{t: t, path: path, port: port}
	s.start()
	t.Cleanup(s.kill)
	return s
}

func (s *server) url() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// start runs redis-server and waits until it says it accepts connections.
func (s *server) start() {
	s.t.Helper()
	cmd := exec.Command(s.path, "--save", "", "--appendonly", "no", "--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1", "--loglevel", "notice")
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		var seen bytes.Buffer
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), "Ready to accept connections") {
				ready <- ""
				for sc.Scan() {
				}
				return
			}
		}
		ready <- seen.String()
	}()
	select {
	case log := <-ready:
		if log != "" {
			cmd.Wait()
			s.t.Fatalf("redis-server did not start:\n%s", log)
		}
	case <-time.After(20 * time.Second):
		cmd.Process.Kill()
		s.t.Fatal("redis-server not ready within 20s")
	}
	s.cmd = cmd
}

// kill ends redis-server with SIGKILL.
func (s *server) kill() {
	if s.cmd == nil {
		return
	}
	s.thaw() // a frozen process would not die
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// client returns a plain go-redis client of the server, for checks.
func (s *server) client() *redis.Client {
	if s.c == nil {
		s.c = redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", s.port)})
		s.t.Cleanup(func() { s.c.Close() })
	}
	return s.c
}

// commandsProcessed returns the server's total_commands_processed.
func (s *server) commandsProcessed() int {
	s.t.Helper()
	info, err := s.client().Info(context.Background(), "stats").Result()
	if err != nil {
		s.t.Fatal(err)
	}
	for line := range strings.SplitSeq(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "total_commands_processed:"); ok {
			n, _ := strconv.Atoi(v)
			return n
		}
	}
	s.t.Fatal("no total_commands_processed in INFO")
	return 0
}

// logBuffer collects a store's log lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// testTimeout is the Redis timeout of the tests that are not about
// timeouts. Bursts of calls from race-instrumented processes on a small,
// busy machine can queue for the CPU longer than the 100ms default, and a
// fallback to local breakers would make figures meant to be Redis's
// local. The tests of the timeout itself set Timeout to 100ms.
const testTimeout = 5 * time.Second

// newStore returns a store of srv with opts' other fields, and its log.
// A zero opts.Timeout is testTimeout.
func newStore(t testing.TB, srv *server, opts Options) (*Store, *logBuffer) {
	t.Helper()
	var lb logBuffer
	opts.URL = srv.url()
	if opts.Timeout == 0 {
		opts.Timeout = testTimeout
	}
	opts.Logger = slog.New(slog.NewTextHandler(&lb, nil))
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &lb
}

// waitFor polls cond every millisecond until it holds or d has passed.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, d)
		}
		time.Sleep(time.Millisecond)
	}
}
