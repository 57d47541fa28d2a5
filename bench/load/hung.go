package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"
)

// hungResult is what a proxy holds for calls to an upstream that never
// answers, and what it lets go when their clients leave.
type hungResult struct {
	Mode           string  `json:"mode"`
	Name           string  `json:"name"`
	K              int     `json:"k"`
	Reached        int     `json:"reached_upstream"` // calls the fake received
	RSSBeforeKiB   int64   `json:"rss_before_kib"`
	RSSHeldKiB     int64   `json:"rss_held_kib"`
	KiBPerCall     float64 `json:"kib_per_held_call"`
	UpstreamHeld   int     `json:"upstream_conns_held"`
	UpstreamBefore int     `json:"upstream_conns_before"`
	UpstreamAfter1 int     `json:"upstream_conns_1s_after_clients_left"`
	UpstreamAfter3 int     `json:"upstream_conns_3s_after_clients_left"`
	FakeCallsAfter int     `json:"fake_calls_after"` // calls reached during the test
	ClientErrors   int     `json:"client_errors"`    // calls that ended before the clients left
}

func runHung(args []string) (any, error) {
	fs := flag.NewFlagSet("hung", flag.ContinueOnError)
	url := fs.String("url", "", "base URL of a proxy route to the hanging fake")
	name := fs.String("name", "", "name of the target in the result")
	dname := fs.String("dialect", "openai", "openai or anthropic")
	fake := fs.String("fake", "", "the hanging fake's base URL (for /fake/calls)")
	port := fs.Int("fake-port", 0, "the hanging fake's port, to count upstream connections")
	pidsFlag := fs.String("pids", "", "pids of the proxy")
	k := fs.Int("k", 1000, "calls to hold")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	d, err := lookupDialect(*dname)
	if err != nil {
		return nil, err
	}
	pids, err := parsePIDs(*pidsFlag)
	if err != nil || *url == "" || *fake == "" || *port == 0 || len(pids) == 0 || *k < 1 {
		return nil, errors.Join(errors.New("give --url, --fake, --fake-port, --pids and --k ≥ 1"), err)
	}
	if err := resetFake(*fake); err != nil {
		return nil, err
	}
	res := &hungResult{Mode: "hung", Name: *name, K: *k}
	if res.RSSBeforeKiB, err = rssKiB(pids); err != nil {
		return nil, err
	}
	if res.UpstreamBefore, err = establishedTo(pids, *port); err != nil {
		return nil, err
	}
	tr := newTransport(*k)
	hc := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	var wg sync.WaitGroup
	c := call{url: *url + d.path, body: d.body}
	for range *k {
		wg.Go(func() {
			c.do(ctx, hc)
			if ctx.Err() == nil { // ended before the clients left
				mu.Lock()
				res.ClientErrors++
				mu.Unlock()
			}
		})
	}
	if err := hold(res, *fake, *k, pids, *port); err != nil {
		return nil, err
	}
	cancel()
	tr.CloseIdleConnections()
	left := time.Now()
	wg.Wait()
	time.Sleep(time.Until(left.Add(time.Second)))
	if res.UpstreamAfter1, err = establishedTo(pids, *port); err != nil {
		return nil, err
	}
	time.Sleep(time.Until(left.Add(3 * time.Second)))
	if res.UpstreamAfter3, err = establishedTo(pids, *port); err != nil {
		return nil, err
	}
	res.FakeCallsAfter, _ = getCalls(*fake)
	fmt.Fprintf(os.Stderr, "hung %s: %d held, %.1f KiB per call, upstream conns held %d, 1 s after clients left %d, 3 s after %d\n",
		*name, res.Reached, res.KiBPerCall, res.UpstreamHeld, res.UpstreamAfter1, res.UpstreamAfter3)
	return res, nil
}

// hold waits until k calls reached the fake (at most 30 s), lets the proxy
// settle for a second and measures what it holds.
func hold(res *hungResult, fake string, k int, pids []int, port int) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		n, err := getCalls(fake)
		if err != nil {
			return err
		}
		res.Reached = n
		if n >= k {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(time.Second)
	var err error
	if res.RSSHeldKiB, err = rssKiB(pids); err != nil {
		return err
	}
	if res.UpstreamHeld, err = establishedTo(pids, port); err != nil {
		return err
	}
	if res.Reached > 0 {
		res.KiBPerCall = round1(float64(res.RSSHeldKiB-res.RSSBeforeKiB) / float64(res.Reached))
	}
	return nil
}
