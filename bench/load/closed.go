package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// closedResult is one closed-loop run: fixed concurrency for a duration.
type closedResult struct {
	Mode        string         `json:"mode"`
	Name        string         `json:"name"`
	Dialect     string         `json:"dialect"`
	URL         string         `json:"url"`
	Clients     int            `json:"clients"`
	Seconds     float64        `json:"seconds"`
	Requests    int            `json:"requests"`
	Unexpected  int            `json:"unexpected"` // errors and statuses other than --expect
	Statuses    map[string]int `json:"statuses"`
	RPS         float64        `json:"rps"`
	Latency     dist           `json:"latency"`
	Proxy       cpuUse         `json:"proxy_cpu"`
	CPUPerReqUS float64        `json:"cpu_per_req_us"`
	ClientSide  cpuUse         `json:"client_side_cpu"` // the fake and the load client, on their core
	Cores       []coreUse      `json:"cores"`
}

// closedFlags are the flags closed-loop modes share.
type closedFlags struct {
	url, dialect, script, name, fake string
	pids, fakePIDs                   []int
	clients, expect                  int
	dur, warmup                      time.Duration
}

func (c *closedFlags) register(fs *flag.FlagSet) (pids, fakePIDs *string) {
	fs.StringVar(&c.url, "url", "", "base URL: the fake, or a proxy route such as http://127.0.0.1:9103/openai")
	fs.StringVar(&c.dialect, "dialect", "openai", "openai or anthropic")
	fs.StringVar(&c.script, "script", "", "Sluice-Fake-Script header to send, if any")
	fs.StringVar(&c.name, "name", "", "name of the target in the result")
	fs.StringVar(&c.fake, "fake", "", "the fake's base URL, to reset its records before the run")
	fs.IntVar(&c.clients, "c", 50, "concurrent clients")
	fs.IntVar(&c.expect, "expect", 200, "the status every call should get")
	fs.DurationVar(&c.dur, "d", 8*time.Second, "measured duration")
	fs.DurationVar(&c.warmup, "warmup", 2*time.Second, "unmeasured warm-up")
	return fs.String("pids", "", "comma-separated pids of the proxy, for CPU per request"),
		fs.String("fake-pids", "", "comma-separated pids of the fake, for the client side's CPU")
}

func (c *closedFlags) parse(fs *flag.FlagSet, args []string) error {
	pids, fakePIDs := c.register(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if c.url == "" || c.clients < 1 || c.dur <= 0 {
		return errors.New("give --url, --c ≥ 1 and --d > 0")
	}
	var err error
	if c.pids, err = parsePIDs(*pids); err != nil {
		return err
	}
	c.fakePIDs, err = parsePIDs(*fakePIDs)
	return err
}

func runClosed(args []string) (any, error) {
	var f closedFlags
	if err := f.parse(flag.NewFlagSet("closed", flag.ContinueOnError), args); err != nil {
		return nil, err
	}
	return closedLoop(f, "closed")
}

// closedLoop warms up, then runs f.clients loops for f.dur and measures.
func closedLoop(f closedFlags, mode string) (*closedResult, error) {
	d, err := lookupDialect(f.dialect)
	if err != nil {
		return nil, err
	}
	if err := resetFake(f.fake); err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: newTransport(f.clients * 2), Timeout: 10 * time.Second}
	c := call{url: f.url + d.path, body: d.body, script: f.script}
	if f.warmup > 0 {
		hammer(hc, c, f.clients, f.warmup, f.expect)
	}
	m, err := startMeters(f.pids, f.fakePIDs)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	lat, statuses, bad := hammer(hc, c, f.clients, f.dur, f.expect)
	wall := time.Since(start).Seconds()
	res := &closedResult{Mode: mode, Name: f.name, Dialect: f.dialect, URL: f.url, Clients: f.clients,
		Seconds: round1(wall), Requests: len(lat) + bad, Unexpected: bad, Statuses: statuses,
		Latency: summarize(lat)}
	res.RPS = round1(float64(res.Requests) / wall)
	if res.Proxy, err = m.proxy.stop(); err != nil {
		return nil, err
	}
	if res.ClientSide, err = m.client.stop(); err != nil {
		return nil, err
	}
	res.Cores = m.coresSince(res.Proxy, res.ClientSide)
	if res.Requests > 0 {
		res.CPUPerReqUS = round1(res.Proxy.Seconds * 1e6 / float64(res.Requests))
	}
	fmt.Fprintf(os.Stderr, "%s %s %s: %.0f req/s, p50 %.0f µs, p99 %.0f µs, CPU %.1f µs/req, unexpected %d\n",
		mode, f.name, f.dialect, res.RPS, res.Latency.P50, res.Latency.P99, res.CPUPerReqUS, bad)
	return res, nil
}

// hammer runs n loops of c for dur and returns the latencies of the calls
// that got the expected status, a count per status ("error" for transport
// errors), and the number of the others.
func hammer(hc *http.Client, c call, n int, dur time.Duration, expect int) ([]time.Duration, map[string]int, int) {
	ctx, cancel := context.WithTimeout(context.Background(), dur+15*time.Second)
	defer cancel()
	end := time.Now().Add(dur)
	var mu sync.Mutex
	var all []time.Duration
	statuses := map[string]int{}
	bad := 0
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			var mine []time.Duration
			st := map[string]int{}
			b := 0
			for time.Now().Before(end) && ctx.Err() == nil {
				d, status, err := c.do(ctx, hc)
				key := strconv.Itoa(status)
				if err != nil {
					key = "error"
				}
				st[key]++
				if err != nil || status != expect {
					b++
					continue
				}
				mine = append(mine, d)
			}
			mu.Lock()
			all = append(all, mine...)
			for k, v := range st {
				statuses[k] += v
			}
			bad += b
			mu.Unlock()
		})
	}
	wg.Wait()
	return all, statuses, bad
}
