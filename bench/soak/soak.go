package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/sluice-llm/sluice/fake"
)

// result is the raw result of one soak, written as JSON.
type result struct {
	Commit    string    `json:"commit"`
	Started   time.Time `json:"started"`
	LoadStart string    `json:"loadavg_start"`
	LoadEnd   string    `json:"loadavg_end"`
	Settings  settings  `json:"settings"`

	Calls   int `json:"calls"`
	Skipped int `json:"skipped_for_in_flight_bound"`
	// The figures that must be 0.
	Late      int `json:"late_calls"`                 // latency past total + 1 s
	Empty     int `json:"empty_replies"`              // no HTTP status at all
	Truncated int `json:"truncated_streams_no_error"` // 200 streams without their end or an error event

	Status       map[string]map[string]int `json:"status_mix"` // json / stream → status → calls
	Latency      map[string]dist           `json:"latency_ms"` // all / json / stream
	StreamsWhole int                       `json:"streams_whole"`
	StreamsError int                       `json:"streams_with_error_event"`
	JSONBodyCut  int                       `json:"json_200_body_errors"` // a 200 JSON answer whose body did not arrive whole

	Log     logCheck    `json:"attempt_log"`
	Gateway gatewayInfo `json:"gateway"`

	Failures []string `json:"failures"`
}

// settings are the flags that shaped the run.
type settings struct {
	Duration string  `json:"duration"`
	Rate     float64 `json:"rate"`
	Streams  float64 `json:"stream_share"`
	Mix      string  `json:"mix"`
	Seed     uint64  `json:"client_seed"`
	Timeouts string  `json:"policy_timeouts"`
	Events   int     `json:"stream_events"`
	Interval string  `json:"stream_interval"`
	Pinned   string  `json:"gateway_cpu"`
	Breaker  int     `json:"breaker_failures"`
}

// gatewayInfo is what the gateway process looked like.
type gatewayInfo struct {
	Start       reading   `json:"start"`
	End         reading   `json:"end"`
	Peak        reading   `json:"peak"` // the largest of each figure over the samples
	Samples     []reading `json:"samples"`
	StderrBytes int64     `json:"stderr_bytes"`
	StderrLines int       `json:"stderr_lines"`
	StderrHead  []string  `json:"stderr_head"` // its first lines
	StopS       float64   `json:"stop_s"`
	CleanExit   bool      `json:"clean_exit"`
}

// soak runs one soak as c says.
func soak(ctx context.Context, c config, progress io.Writer) (*result, error) {
	if _, err := fake.ParseScript(c.mix); err != nil {
		return nil, fmt.Errorf("-mix: %v", err)
	}
	dir, err := os.MkdirTemp("", "sluice-soak.")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	bin := c.sluice
	if bin == "" {
		fmt.Fprintln(progress, "soak: building sluice")
		if bin, err = buildSluice(ctx, dir); err != nil {
			return nil, err
		}
	}
	p := &fake.Provider{Script: c.mix, Events: c.events, Interval: c.interval}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	defer func() { p.Close(); srv.Close() }()

	g, err := startGateway(bin, c.gatewayCPU, c, ln.Addr().String(), dir)
	if err != nil {
		return nil, err
	}
	defer g.kill()
	res := &result{Commit: commit(), Started: time.Now().UTC().Truncate(time.Second), LoadStart: loadavg(),
		Settings: settings{Duration: c.duration.String(), Rate: c.rate, Streams: c.streams, Mix: c.mix, Seed: c.seed,
			Timeouts: fmt.Sprintf("connect %v, first_byte %v, idle %v, total %v", c.connect, c.firstByte, c.idle, c.total),
			Events:   c.events, Interval: c.interval.String(), Pinned: c.gatewayCPU, Breaker: c.breakerFailures}}
	start := time.Now()
	res.Gateway.Start = g.read(start)

	fmt.Fprintf(progress, "soak: %v at %g calls/s against %s, fake script %q\n", c.duration, c.rate, g.base, c.mix)
	samples := sample(ctx, g, start, 10*time.Second)
	cl := newClient(g.base, c.total+5*time.Second, c.streams)
	outs, skipped := cl.load(ctx, c.rate, c.duration, rand.New(rand.NewPCG(c.seed, 0)), c.maxInFlight)
	res.Gateway.Samples = samples()
	cl.hc.CloseIdleConnections()
	select {
	case <-ctx.Done():
	case <-time.After(c.settle):
	}
	res.Gateway.End = g.read(start)
	res.LoadEnd = loadavg()
	res.Gateway.Peak = peak(append(res.Gateway.Samples, res.Gateway.Start, res.Gateway.End))
	stopped, clean := g.stop(10 * time.Second)
	res.Gateway.StopS, res.Gateway.CleanExit = round(stopped.Seconds(), 2), clean

	res.Skipped = skipped
	tally(res, outs, c.total+time.Second)
	f, err := os.Open(g.log)
	if err != nil {
		return nil, fmt.Errorf("the attempt log: %w", err)
	}
	lines, unparsed, size, err := readLog(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("reading the attempt log: %w", err)
	}
	res.Log = checkLog(lines, p.Requests(), p.Played())
	res.Log.Unparsed, res.Log.Bytes = unparsed, size
	if b, err := os.ReadFile(g.stderr); err == nil {
		res.Gateway.StderrBytes, res.Gateway.StderrLines = int64(len(b)), bytes.Count(b, []byte("\n"))
		head := strings.SplitN(string(b), "\n", 6)
		res.Gateway.StderrHead = head[:min(len(head), 5)]
	}
	res.Failures = failures(res)
	if ctx.Err() != nil {
		return res, errors.New("interrupted")
	}
	return res, nil
}

// sample reads the gateway every period until the returned function is
// called; that function returns the readings.
func sample(ctx context.Context, g *gateway, start time.Time, period time.Duration) func() []reading {
	var (
		mu  sync.Mutex
		out []reading
	)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
				r := g.read(start)
				mu.Lock()
				out = append(out, r)
				mu.Unlock()
			}
		}
	}()
	return func() []reading {
		close(done)
		<-stopped
		mu.Lock()
		defer mu.Unlock()
		return out
	}
}

func peak(rs []reading) reading {
	p := reading{RSSKiB: -1, FDs: -1, Goroutines: -1, Upstream: -1, Clients: -1}
	for _, r := range rs {
		if r.RSSKiB > p.RSSKiB {
			p.RSSKiB, p.AtS = r.RSSKiB, r.AtS
		}
		p.FDs = max(p.FDs, r.FDs)
		p.Goroutines = max(p.Goroutines, r.Goroutines)
		p.Upstream, p.Clients = max(p.Upstream, r.Upstream), max(p.Clients, r.Clients)
	}
	return p
}

// tally counts what the clients saw; a call slower than late is late.
func tally(res *result, outs []outcome, late time.Duration) {
	res.Calls = len(outs)
	res.Status = map[string]map[string]int{"json": {}, "stream": {}}
	lat := map[string][]time.Duration{}
	for _, o := range outs {
		kind := "json"
		if o.stream {
			kind = "stream"
		}
		res.Status[kind][itoa(o.status)]++
		lat["all"] = append(lat["all"], o.latency)
		lat[kind] = append(lat[kind], o.latency)
		if o.latency > late {
			res.Late++
		}
		if o.status == 0 {
			res.Empty++
		}
		switch {
		case o.truncated():
			res.Truncated++
		case o.stream && o.status == http.StatusOK && o.errFrame:
			res.StreamsError++
		case o.stream && o.status == http.StatusOK:
			res.StreamsWhole++
		case !o.stream && o.status == http.StatusOK && o.bodyError:
			res.JSONBodyCut++
		}
	}
	res.Latency = map[string]dist{}
	for k, ds := range lat {
		res.Latency[k] = summarize(ds)
	}
}

// failures lists the figures that must be 0 and are not, and a log that
// does not match the upstream attempts.
func failures(res *result) []string {
	var out []string
	add := func(n int, what string) {
		if n != 0 {
			out = append(out, fmt.Sprintf("%d %s (must be 0)", n, what))
		}
	}
	add(res.Late, "calls past total + 1 s")
	add(res.Empty, "empty replies (no HTTP status)")
	add(res.Truncated, "streams cut without their end or an error event")
	if l := res.Log; l.SentLines != l.UpstreamCalls {
		out = append(out, fmt.Sprintf("%d attempt-log lines of sent attempts for %d upstream attempts (must be equal)",
			l.SentLines, l.UpstreamCalls))
	}
	add(res.Log.RetryNoNext, "retry lines not followed by another attempt")
	add(res.Log.Unparsed, "attempt-log lines that do not parse")
	return out
}

// commit is the work tree's commit, with "+dirty" when it has changes.
func commit() string {
	out, err := exec.Command("git", "describe", "--always", "--dirty=+dirty", "--abbrev=12").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	return strings.TrimSpace(string(b))
}
