package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"
)

// breakerResult is the fast-fail rate of an open breaker.
type breakerResult struct {
	closedResult
	OpenedBy      int  `json:"opening_call_status"`
	OpenAnswer    int  `json:"open_answer_status"`
	ProviderDown  bool `json:"open_answer_is_provider_down"`
	FakeCalls0    int  `json:"fake_calls_before"`
	FakeCalls1    int  `json:"fake_calls_after"`
	UpstreamMoved int  `json:"upstream_calls_during_run"`
}

func runBreaker(args []string) (any, error) {
	var f closedFlags
	fs := flag.NewFlagSet("breaker", flag.ContinueOnError)
	if err := f.parse(fs, args); err != nil {
		return nil, err
	}
	if f.fake == "" {
		return nil, fmt.Errorf("give --fake, the fake's base URL, to count upstream calls")
	}
	d, err := lookupDialect(f.dialect)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: newTransport(4), Timeout: 10 * time.Second}
	res := &breakerResult{}
	// One failing call opens a breaker configured with failures: 1.
	_, res.OpenedBy, err = call{url: f.url + d.path, body: d.body, script: "503"}.do(context.Background(), hc)
	if err != nil {
		return nil, err
	}
	if res.OpenAnswer, res.ProviderDown, err = probeOpen(hc, call{url: f.url + d.path, body: d.body}); err != nil {
		return nil, err
	}
	if res.FakeCalls0, err = getCalls(f.fake); err != nil {
		return nil, err
	}
	f.expect = http.StatusServiceUnavailable
	fake := f.fake
	f.fake = "" // do not reset: the count must not move
	run, err := closedLoop(f, "breaker")
	if err != nil {
		return nil, err
	}
	res.closedResult = *run
	if res.FakeCalls1, err = getCalls(fake); err != nil {
		return nil, err
	}
	res.UpstreamMoved = res.FakeCalls1 - res.FakeCalls0
	fmt.Fprintf(os.Stderr, "breaker %s: opened by a %d, then %d provider_down=%v; upstream calls during the run: %d\n",
		f.name, res.OpenedBy, res.OpenAnswer, res.ProviderDown, res.UpstreamMoved)
	return res, nil
}

// probeOpen makes one call and reports its status and whether the body
// names provider_down.
func probeOpen(hc *http.Client, c call) (int, bool, error) {
	req, err := c.newRequest(context.Background())
	if err != nil {
		return 0, false, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.Contains(string(b), "provider_down"), err
}
