package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// openResult is a fixed-rate sweep against one target.
type openResult struct {
	Mode    string     `json:"mode"`
	Name    string     `json:"name"`
	Dialect string     `json:"dialect"`
	URL     string     `json:"url"`
	Rates   []openRate `json:"rates"`
}

// openRate is one rate of the sweep. Latency runs from the moment a call
// was due to be sent, so that a late send counts as waiting.
type openRate struct {
	Rate        int       `json:"rate"`
	Seconds     float64   `json:"seconds"`
	Sent        int       `json:"sent"`
	OK          int       `json:"ok"`
	Errors      int       `json:"errors"`  // transport errors and statuses other than --expect
	Dropped     int       `json:"dropped"` // not sent: too many in flight
	Achieved    float64   `json:"achieved_rps"`
	Latency     dist      `json:"latency"`   // from the due time: what a caller on schedule waits
	Service     dist      `json:"service"`   // from the actual send: the target's share
	Late        dist      `json:"send_late"` // how late the load client sent: its own delay
	Proxy       cpuUse    `json:"proxy_cpu"`
	CPUPerReqUS float64   `json:"cpu_per_req_us"`
	ClientSide  cpuUse    `json:"client_side_cpu"`
	Cores       []coreUse `json:"cores"`
	lat, late   []time.Duration
	status      []int // 0 not sent, -1 transport error
}

func runOpen(args []string) (any, error) {
	fs := flag.NewFlagSet("open", flag.ContinueOnError)
	url := fs.String("url", "", "base URL of the target route")
	name := fs.String("name", "", "name of the target in the result")
	dname := fs.String("dialect", "openai", "openai or anthropic")
	rates := fs.String("rates", "500,1000,2000,4000", "request rates to sweep, per second")
	dur := fs.Duration("d", 4*time.Second, "duration of each rate")
	fake := fs.String("fake", "", "the fake's base URL, to reset its records before each rate")
	pidsFlag := fs.String("pids", "", "pids of the proxy, for CPU per request")
	fakePIDsFlag := fs.String("fake-pids", "", "pids of the fake")
	maxInflight := fs.Int("max-inflight", 8000, "calls in flight beyond which a due call is dropped")
	expect := fs.Int("expect", 200, "the status every call should get")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	d, err := lookupDialect(*dname)
	if err != nil {
		return nil, err
	}
	rs, err := parseInts(*rates)
	if err != nil || *url == "" {
		return nil, errors.Join(errors.New("give --url and --rates like 500,1000"), err)
	}
	pids, err := parsePIDs(*pidsFlag)
	if err != nil {
		return nil, err
	}
	fakePIDs, err := parsePIDs(*fakePIDsFlag)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: newTransport(4096), Timeout: 5 * time.Second}
	c := call{url: *url + d.path, body: d.body}
	hammer(hc, c, 8, time.Second, *expect) // warm-up
	res := &openResult{Mode: "open", Name: *name, Dialect: *dname, URL: *url}
	for _, rate := range rs {
		if err := resetFake(*fake); err != nil {
			return nil, err
		}
		r, err := openAtRate(hc, c, rate, *dur, *maxInflight, pids, fakePIDs)
		if err != nil {
			return nil, err
		}
		r = openTally(r, *expect)
		fmt.Fprintf(os.Stderr, "open %s %d/s: achieved %.0f/s, p50 %.0f µs, p99 %.0f µs, errors %d, dropped %d\n",
			*name, rate, r.Achieved, r.Latency.P50, r.Latency.P99, r.Errors, r.Dropped)
		res.Rates = append(res.Rates, r)
		time.Sleep(500 * time.Millisecond)
	}
	return res, nil
}

// openAtRate sends calls on a fixed schedule for dur, never waiting for
// an answer before sending the next.
func openAtRate(hc *http.Client, c call, rate int, dur time.Duration, maxInflight int, pids, fakePIDs []int) (openRate, error) {
	n := int(float64(rate) * dur.Seconds())
	period := time.Second / time.Duration(rate)
	lat := make([]time.Duration, n)
	late := make([]time.Duration, n)
	status := make([]int, n) // 0 not sent, -1 error
	var inflight atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), dur+10*time.Second)
	defer cancel()
	m, err := startMeters(pids, fakePIDs)
	if err != nil {
		return openRate{}, err
	}
	start := time.Now().Add(5 * time.Millisecond)
	for i := range n {
		due := start.Add(time.Duration(i) * period)
		if w := time.Until(due); w > 0 {
			time.Sleep(w)
		}
		if inflight.Load() >= int64(maxInflight) {
			continue
		}
		inflight.Add(1)
		wg.Go(func() {
			defer inflight.Add(-1)
			late[i] = time.Since(due)
			req, err := c.newRequest(ctx)
			if err == nil {
				_, st, derr := doReq(hc, req)
				lat[i], status[i] = time.Since(due), st
				if derr != nil {
					status[i] = -1
				}
			}
		})
	}
	wg.Wait()
	r := openRate{Rate: rate, Seconds: round1(time.Since(start).Seconds()), lat: lat, late: late, status: status}
	if r.Proxy, err = m.proxy.stop(); err != nil {
		return r, err
	}
	r.ClientSide, err = m.client.stop()
	r.Cores = m.coresSince(r.Proxy, r.ClientSide)
	return r, err
}

// openTally counts one rate's calls: those that got expect, the others,
// and those never sent.
func openTally(r openRate, expect int) openRate {
	var ok, service, late []time.Duration
	for i, st := range r.status {
		switch {
		case st == 0:
			r.Dropped++
		case st == expect:
			r.Sent++
			r.OK++
			ok = append(ok, r.lat[i])
			service = append(service, r.lat[i]-r.late[i])
			late = append(late, r.late[i])
		default:
			r.Sent++
			r.Errors++
		}
	}
	r.Latency, r.Service, r.Late = summarize(ok), summarize(service), summarize(late)
	r.Achieved = round1(float64(r.OK) / r.Seconds)
	if r.Sent > 0 {
		r.CPUPerReqUS = round1(r.Proxy.Seconds * 1e6 / float64(r.Sent))
	}
	return r
}
