// Package benchproc holds what the Go load harnesses under bench/ share
// to run the processes they measure: a free loopback port, a wait for a
// listener, a stop that reaps, and the host's load average.
package benchproc

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// FreePort returns a loopback TCP port that was free when asked.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// WaitPort waits until something listens on the loopback port, at most
// within.
func WaitPort(port int, within time.Duration) error {
	end := time.Now().Add(within)
	for time.Now().Before(end) {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return errors.New("nothing listens after " + within.String())
}

// Stop sends c's process SIGTERM, then SIGKILL after 5 s, and reaps it.
func Stop(c *exec.Cmd) {
	c.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { c.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		c.Process.Kill()
		<-done
	}
}

// LoadAvg is the host's load average over 1, 5 and 15 minutes, as
// /proc/loadavg gives them; "" where there is none.
func LoadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := bytes.Fields(b)
	if len(f) < 3 {
		return ""
	}
	return string(bytes.Join(f[:3], []byte(" ")))
}

// State returns the state: section of a gateway's config for state
// "file" (a directory under dir) or "redis" (a redis-server StartRedis
// starts in dir), and the function that stops what it started.
func State(dir, state string) (cfg string, stop func(), err error) {
	if state != "redis" {
		return fmt.Sprintf("{backend: file, dir: %s}", filepath.Join(dir, "state")), func() {}, nil
	}
	rs, port, err := StartRedis(dir)
	if err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("{backend: redis, url: redis://127.0.0.1:%d/0}", port), func() { Stop(rs) }, nil
}

// StartRedis starts a redis-server on a free loopback port, persisting
// nothing, with dir as its working directory (not the caller's, whose
// dump.rdb it would load), and waits until it listens. The caller stops it
// with Stop.
func StartRedis(dir string) (*exec.Cmd, int, error) {
	port, err := FreePort()
	if err != nil {
		return nil, 0, err
	}
	rs := exec.Command("redis-server", "--port", fmt.Sprint(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
	if err := rs.Start(); err != nil {
		return nil, 0, fmt.Errorf("redis-server: %v", err)
	}
	if err := WaitPort(port, 10*time.Second); err != nil {
		Stop(rs)
		return nil, 0, fmt.Errorf("redis-server: %v", err)
	}
	return rs, port, nil
}
