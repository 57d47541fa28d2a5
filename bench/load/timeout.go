package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"
)

// timeoutResult is when a configured timeout fired, against its setting.
type timeoutResult struct {
	Mode        string         `json:"mode"`
	Name        string         `json:"name"`
	Kind        string         `json:"kind"` // status: send to answer; idle: last event to the error event
	WantMS      float64        `json:"want_ms"`
	Calls       int            `json:"calls"`
	Statuses    map[string]int `json:"statuses"`
	Fired       dist           `json:"fired"`
	EarlyMS     float64        `json:"earliest_minus_want_ms"`
	LateMS      float64        `json:"latest_minus_want_ms"`
	WithinTol   int            `json:"within_tolerance"`
	ToleranceMS float64        `json:"tolerance_ms"`
}

func runTimeout(args []string) (any, error) {
	fs := flag.NewFlagSet("timeout", flag.ContinueOnError)
	url := fs.String("url", "", "base URL of a proxy route whose policy sets the timeout")
	name := fs.String("name", "", "name of the check in the result")
	dname := fs.String("dialect", "openai", "openai or anthropic")
	kind := fs.String("kind", "status", "status (time to the answer) or idle (gap before the error event)")
	script := fs.String("script", "", "Sluice-Fake-Script header to send, if any")
	want := fs.Duration("want", time.Second, "the configured timeout")
	expect := fs.Int("expect", 504, "the status expected (kind status)")
	c := fs.Int("c", 50, "concurrent calls")
	n := fs.Int("n", 2, "calls per client, one after another")
	tol := fs.Duration("tolerance", 50*time.Millisecond, "allowed distance from --want")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	d, err := lookupDialect(*dname)
	if err != nil {
		return nil, err
	}
	if *url == "" || (*kind != "status" && *kind != "idle") || *c < 1 || *n < 1 {
		return nil, errors.New("give --url, --kind status|idle, --c ≥ 1 and --n ≥ 1")
	}
	body := d.body
	if *kind == "idle" {
		body = d.streamBody
	}
	cl := call{url: *url + d.path, body: body, script: *script}
	hc := &http.Client{Transport: newTransport(*c * 2), Timeout: *want*3 + 10*time.Second}
	res := &timeoutResult{Mode: "timeout", Name: *name, Kind: *kind, WantMS: float64(*want) / 1e6,
		Statuses: map[string]int{}, ToleranceMS: float64(*tol) / 1e6}
	var mu sync.Mutex
	var fired []time.Duration
	var wg sync.WaitGroup
	for range *c {
		wg.Go(func() {
			for range *n {
				f, st := timeCall(hc, cl, *kind)
				mu.Lock()
				res.Calls++
				res.Statuses[st]++
				if f > 0 && (*kind == "idle" || st == strconv.Itoa(*expect)) {
					fired = append(fired, f)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for _, f := range fired {
		if math.Abs(float64(f-*want)) <= float64(*tol) {
			res.WithinTol++
		}
	}
	res.Fired = summarize(fired)
	if len(fired) > 0 {
		res.EarlyMS = round1((res.Fired.Min - float64(want.Microseconds())) / 1e3)
		res.LateMS = round1((res.Fired.Max - float64(want.Microseconds())) / 1e3)
	}
	fmt.Fprintf(os.Stderr, "timeout %s (%s, want %v): fired p50 %.1f ms, range %+.1f…%+.1f ms from the setting, %d/%d within ±%v, statuses %v\n",
		*name, *kind, *want, res.Fired.P50/1e3, res.EarlyMS, res.LateMS, res.WithinTol, res.Calls, *tol, res.Statuses)
	return res, nil
}

// timeCall makes one call and returns when the timeout showed: for kind
// status, the time to the answer's headers; for idle, the gap between the
// last data event and the error event (0 when there was none).
func timeCall(hc *http.Client, c call, kind string) (time.Duration, string) {
	req, err := c.newRequest(context.Background())
	if err != nil {
		return 0, "error"
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "error"
	}
	defer resp.Body.Close()
	at := time.Since(start)
	st := strconv.Itoa(resp.StatusCode)
	if kind == "status" {
		io.Copy(io.Discard, resp.Body)
		return at, st
	}
	return idleGap(resp.Body), st
}

// idleGap reads a stream and returns the time between its last normal
// data event and its first error event.
func idleGap(body io.Reader) time.Duration {
	br := bufio.NewReader(body)
	var last time.Time
	for {
		line, err := br.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("data:")) {
			if bytes.Contains(line, []byte(`"error"`)) {
				if last.IsZero() {
					return 0
				}
				return time.Since(last)
			}
			last = time.Now()
		}
		if err != nil {
			return 0
		}
	}
}
