// Package redistest starts a private redis-server for a test, on a free
// loopback port, and can kill, freeze and restart it.
package redistest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Server is a redis-server started by a test on a free loopback port.
type Server struct {
	t     testing.TB
	path  string
	port  int
	dir   string // its working directory, where a replica keeps its copy
	cmd   *exec.Cmd
	c     *redis.Client
	args  []string // given after the port and the defaults
	ready string   // the log line that says it serves; if "", Ready to accept connections
	copts redis.Options
}

// Start starts a private redis-server, or skips the test when there
// is none installed.
func Start(t testing.TB) *Server {
	t.Helper()
	s := newServer(t, "")
	s.Start()
	return s
}

// newServer returns a server not started yet on a free port, with args,
// killed when the test ends; it skips the test when redis-server is not
// installed.
func newServer(t testing.TB, ready string, args ...string) *Server {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server not found: apt-get install -y redis-server")
	}
	// A directory of its own, made before the Kill below is registered so
	// that it is removed after the server is gone: redis-server reads a
	// dump.rdb in its directory at start, and a replica writes its copy of
	// the master there, so the test's working directory would share state
	// between tests and with whatever else starts a server there.
	dir := t.TempDir()
	s := &Server{t: t, path: path, port: FreePort(t), dir: dir, args: args, ready: ready}
	t.Cleanup(s.Kill)
	return s
}

// FreePort returns a loopback TCP port free when asked.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// Port is the server's port.
func (s *Server) Port() int { return s.port }

// Dir is the server's own directory (its --dir), kept across a Kill and
// Start.
func (s *Server) Dir() string { return s.dir }

// Addr is the server's host:port.
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// URL is the server's redis:// URL, database 0.
func (s *Server) URL() string { return fmt.Sprintf("redis://127.0.0.1:%d/0", s.port) }

// Start runs redis-server (again, after Kill) and waits until it says it accepts connections.
func (s *Server) Start() {
	s.t.Helper()
	args := []string{"--save", "", "--appendonly", "no", "--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1", "--loglevel", "notice", "--dir", s.dir}
	if len(s.args) > 0 && !strings.HasPrefix(s.args[0], "--") {
		args = append([]string{s.args[0]}, append(args, s.args[1:]...)...) // a config file comes first
	} else {
		args = append(args, s.args...)
	}
	cmd := exec.Command(s.path, args...)
	ready := s.ready
	if ready == "" {
		ready = "Ready to accept connections"
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		s.t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		s.t.Fatal(err)
	}
	readyc := make(chan string, 1)
	go func() {
		var seen bytes.Buffer
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if strings.Contains(sc.Text(), ready) {
				readyc <- ""
				for sc.Scan() {
				}
				return
			}
		}
		readyc <- seen.String()
	}()
	select {
	case log := <-readyc:
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

// Kill ends redis-server with SIGKILL.
func (s *Server) Kill() {
	if s.cmd == nil {
		return
	}
	s.Thaw() // a frozen process would not die
	s.cmd.Process.Kill()
	s.cmd.Wait()
	s.cmd = nil
}

// Client returns a plain go-redis client of the server, for checks.
func (s *Server) Client() *redis.Client {
	if s.c == nil {
		o := s.copts
		o.Addr = s.Addr()
		s.c = redis.NewClient(&o)
		s.t.Cleanup(func() { s.c.Close() })
	}
	return s.c
}

// CommandsProcessed returns the server's total_commands_processed.
func (s *Server) CommandsProcessed() int {
	s.t.Helper()
	info, err := s.Client().Info(context.Background(), "stats").Result()
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
