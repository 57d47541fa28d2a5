package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-llm/sluice/bench/benchproc"
)

// gateway is a running `sluice serve` process.
type gateway struct {
	cmd    *exec.Cmd
	base   string // http://127.0.0.1:PORT
	port   int    // the gateway's listen port
	fake   int    // the fake's port
	log    string // the attempt log's path
	stderr string // the process's stderr, a file
	exited chan struct{}
}

// buildSluice builds ./cmd/sluice of this module into dir.
func buildSluice(ctx context.Context, dir string) (string, error) {
	bin := filepath.Join(dir, "sluice")
	cmd := exec.CommandContext(ctx, "go", "build", "-o", bin, "github.com/sluice-llm/sluice/cmd/sluice")
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building sluice: %v\n%s", err, out)
	}
	return bin, nil
}

// gatewayConfig is the config of the gateway under soak: both dialects
// routed to the fake, one policy with the flags' timeouts and the
// built-in retries, and by default a breaker kept out of the way (1,000
// failures in a row, -breaker-failures) so that the figures speak of
// retries and streams.
func gatewayConfig(c config, listen, fakeAddr, dir string) string {
	return fmt.Sprintf(`listen: %s
drain: 2s
state: {backend: file, dir: %s}
log: {attempts: %s}
providers:
  openai:    {kind: openai,    base_url: http://%s, max_concurrent: 4096}
  anthropic: {kind: anthropic, base_url: http://%s, max_concurrent: 4096}
routes:
  - {prefix: /openai,    provider: openai,    policy: soak}
  - {prefix: /anthropic, provider: anthropic, policy: soak}
policies:
  soak:
    timeout: {connect: %s, first_byte: %s, idle: %s, total: %s}
    breaker: {failures: %d}
`, listen, filepath.Join(dir, "state"), filepath.Join(dir, "attempts.jsonl"), fakeAddr, fakeAddr,
		c.connect, c.firstByte, c.idle, c.total, c.breakerFailures)
}

// startGateway writes the config into dir and starts bin serve, pinned
// with taskset to cpus when both are there, and waits (at most 10 s) for
// its /healthz.
func startGateway(bin, cpus string, c config, fakeAddr, dir string) (*gateway, error) {
	port, err := benchproc.FreePort()
	if err != nil {
		return nil, err
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	conf := filepath.Join(dir, "sluice.yaml")
	if err := os.WriteFile(conf, []byte(gatewayConfig(c, listen, fakeAddr, dir)), 0o644); err != nil {
		return nil, err
	}
	args := []string{bin, "serve", "--config", conf}
	if ts, err := exec.LookPath("taskset"); err == nil && cpus != "" {
		args = append([]string{ts, "-c", cpus}, args...) // taskset execs sluice: same pid
	}
	_, fport, _ := net.SplitHostPort(fakeAddr)
	g := &gateway{base: "http://" + listen, port: port, log: filepath.Join(dir, "attempts.jsonl"),
		stderr: filepath.Join(dir, "gateway.stderr"), exited: make(chan struct{})}
	g.fake, _ = strconv.Atoi(fport)
	errf, err := os.Create(g.stderr)
	if err != nil {
		return nil, err
	}
	g.cmd = exec.Command(args[0], args[1:]...)
	g.cmd.Stdout, g.cmd.Stderr = io.Discard, errf
	if err := g.cmd.Start(); err != nil {
		errf.Close()
		return nil, err
	}
	go func() { g.cmd.Wait(); errf.Close(); close(g.exited) }()
	if err := g.awaitHealthy(10 * time.Second); err != nil {
		g.kill()
		b, _ := os.ReadFile(g.stderr)
		return nil, fmt.Errorf("%v; its stderr:\n%s", err, b)
	}
	return g, nil
}

func (g *gateway) awaitHealthy(limit time.Duration) error {
	hc := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		select {
		case <-g.exited:
			return errors.New("the gateway exited at start")
		default:
		}
		if resp, err := hc.Get(g.base + "/healthz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
	}
	return fmt.Errorf("the gateway did not answer /healthz within %v", limit)
}

// stop sends SIGTERM and waits (at most limit) for the exit, then kills;
// it returns how long the exit took and whether it was clean (exit 0
// before the limit).
func (g *gateway) stop(limit time.Duration) (time.Duration, bool) {
	start := time.Now()
	g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
		return time.Since(start), g.cmd.ProcessState.ExitCode() == 0
	case <-time.After(limit):
		g.kill()
		return time.Since(start), false
	}
}

func (g *gateway) kill() {
	g.cmd.Process.Kill()
	select {
	case <-g.exited:
	case <-time.After(5 * time.Second):
	}
}

// reading is the gateway process's size at one moment.
type reading struct {
	RSSKiB     int64   `json:"rss_kib"`
	FDs        int     `json:"open_fds"`
	Goroutines int     `json:"goroutines"`     // go_goroutines of /metrics; -1 when not exported
	Upstream   int     `json:"upstream_conns"` // ESTABLISHED connections to the fake, idle ones included
	Clients    int     `json:"client_conns"`   // ESTABLISHED connections from clients
	AtS        float64 `json:"at_s"`           // seconds since the load started
}

// read takes a reading of the gateway.
func (g *gateway) read(since time.Time) reading {
	pid := g.cmd.Process.Pid
	r := reading{RSSKiB: -1, FDs: -1, Goroutines: -1, Upstream: -1, Clients: -1, AtS: round(time.Since(since).Seconds(), 1)}
	if f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
				r.RSSKiB, _ = strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			}
		}
		f.Close()
	}
	if ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid)); err == nil {
		r.FDs = len(ents)
	}
	r.Upstream, r.Clients = sockets(pid, g.fake, g.port)
	r.Goroutines = g.goroutines()
	return r
}

// goroutines reads go_goroutines from the gateway's /metrics, -1 when it
// cannot.
func (g *gateway) goroutines() int {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := hc.Get(g.base + "/metrics") // no keep-alive: the reading must not count its own connection
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	return metricValue(resp.Body, "go_goroutines")
}

// metricValue returns the value of an unlabelled metric in Prometheus
// text, -1 when it is missing.
func metricValue(r io.Reader, name string) int {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		v, ok := strings.CutPrefix(sc.Text(), name+" ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return -1
		}
		return int(f)
	}
	return -1
}

// sockets counts the process's ESTABLISHED TCP connections to the fake
// (remote port upstream) and from clients (local port listen), from
// /proc/PID/fd and /proc/net/tcp{,6}; -1, -1 when it cannot.
func sockets(pid, upstream, listen int) (up, down int) {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return -1, -1
	}
	inodes := map[string]bool{}
	for _, e := range ents {
		l, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		if in, ok := strings.CutPrefix(l, "socket:["); err == nil && ok {
			inodes[strings.TrimSuffix(in, "]")] = true
		}
	}
	remote, local := fmt.Sprintf(":%04X", upstream), fmt.Sprintf(":%04X", listen)
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		b, err := os.ReadFile(table)
		if err != nil {
			continue
		}
		for line := range strings.SplitSeq(string(b), "\n") {
			f := strings.Fields(line)
			if len(f) < 10 || f[3] != "01" || !inodes[f[9]] { // 01: ESTABLISHED
				continue
			}
			if strings.HasSuffix(f[2], remote) {
				up++
			}
			if strings.HasSuffix(f[1], local) {
				down++
			}
		}
	}
	return up, down
}
