package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// sseResult compares streams direct and through proxies.
type sseResult struct {
	Mode     string                `json:"mode"`
	Dialect  string                `json:"dialect"`
	Script   string                `json:"script"`
	Streams  int                   `json:"concurrent_streams"`
	PerLeg   int                   `json:"streams_per_client_per_leg"`
	Waves    int                   `json:"waves"`
	Expected int                   `json:"expected_events"` // data events per stream, as the fake sends them direct
	Targets  map[string]*sseTarget `json:"targets"`
}

// sseTarget holds one target's figures; the added TTFB is against the
// direct leg of the same wave.
type sseTarget struct {
	TTFB         dist    `json:"ttfb"`
	AddedTTFBP50 spread  `json:"added_ttfb_p50_us"`
	Duration     dist    `json:"stream_duration"`
	Streams      int     `json:"streams"`
	Events       int64   `json:"events"`
	Lost         int64   `json:"lost_events"`
	Extra        int64   `json:"extra_events"`
	Merged       int64   `json:"merged_events"`
	ErrorEvents  int64   `json:"error_events"`
	Failed       int     `json:"failed_streams"` // transport error or status other than 200
	Proxy        cpuUse  `json:"proxy_cpu"`
	CPUPerEvent  float64 `json:"cpu_per_event_us"`
	CPUPerStream float64 `json:"cpu_per_stream_us"`
	ttfbs, durs  []time.Duration
	p50s         []float64
	cpu          float64
	wall         float64
}

// streamStat is what one stream delivered.
type streamStat struct {
	ttfb, dur             time.Duration
	events, merged, errEv int64
	failed                bool
}

func runSSE(args []string) (any, error) {
	fs := flag.NewFlagSet("sse", flag.ContinueOnError)
	direct := fs.String("direct", "http://127.0.0.1:9090", "the fake's base URL")
	var proxies, pids namedList
	fs.Var(&proxies, "proxy", "name=base URL of a proxy route (repeat)")
	fs.Var(&pids, "pids", "name=pid,pid of a proxy, for CPU per event (repeat)")
	dname := fs.String("dialect", "openai", "openai or anthropic")
	script := fs.String("script", "stream:events=64;interval=20ms", "the fake's script for each stream")
	streams := fs.Int("c", 100, "concurrent streams")
	perLeg := fs.Int("n", 1, "streams each client opens one after another, per leg")
	waves := fs.Int("waves", 3, "waves: each runs every target once, direct first")
	fake := fs.String("fake", "", "the fake's base URL, to reset its records before each wave")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	d, err := lookupDialect(*dname)
	if err != nil {
		return nil, err
	}
	if *streams < 1 || *perLeg < 1 || *waves < 1 {
		return nil, errors.New("--c, --n and --waves must be at least 1")
	}
	hc := &http.Client{Transport: newTransport(*streams * 2), Timeout: 60 * time.Second}
	res := &sseResult{Mode: "sse", Dialect: *dname, Script: *script, Streams: *streams, PerLeg: *perLeg, Waves: *waves,
		Targets: map[string]*sseTarget{"direct": {}}}
	names := append([]string{"direct"}, proxies.names...)
	bases := append([]string{*direct}, proxies.values...)
	for _, n := range proxies.names {
		res.Targets[n] = &sseTarget{}
	}
	for i, n := range names { // warm-up: as many connections as streams
		if _, err := sseLeg(hc, call{url: bases[i] + d.path, body: d.streamBody, script: "stream:events=3"}, *streams, 1); err != nil {
			return nil, fmt.Errorf("warming %s: %w", n, err)
		}
	}
	for w := range *waves {
		if err := resetFake(*fake); err != nil {
			return nil, err
		}
		if err := sseWave(hc, res, names, bases, &pids, call{body: d.streamBody, script: *script}, d, w); err != nil {
			return nil, err
		}
	}
	sseFinish(res)
	return res, nil
}

// sseWave runs each target once, direct first, then the proxies in an
// order rotated by the wave number.
func sseWave(hc *http.Client, res *sseResult, names, bases []string, pids *namedList, c call, d dialect, w int) error {
	var directP50 float64
	for k := range names {
		i := k
		if k > 0 {
			i = 1 + (k-1+w)%(len(names)-1)
		}
		t := res.Targets[names[i]]
		ps, err := parsePIDs(pids.get(names[i]))
		if err != nil {
			return err
		}
		m, err := startMeters(ps, nil)
		if err != nil {
			return err
		}
		c.url = bases[i] + d.path
		stats, err := sseLeg(hc, c, res.Streams, res.PerLeg)
		if err != nil {
			return fmt.Errorf("%s: %w", names[i], err)
		}
		use, err := m.proxy.stop()
		if err != nil {
			return err
		}
		t.cpu += use.Seconds
		p50 := t.add(stats)
		if i == 0 {
			directP50 = p50
			if res.Expected == 0 {
				res.Expected = int(modeEvents(stats))
			}
		} else {
			t.p50s = append(t.p50s, round1(p50-directP50))
		}
		fmt.Fprintf(os.Stderr, "sse %s wave %d %s: ttfb p50 %.0f µs, %d streams\n", res.Script, w+1, names[i], p50, len(stats))
	}
	return nil
}

// add records a leg's streams and returns their TTFB median in µs.
func (t *sseTarget) add(stats []streamStat) float64 {
	var ttfbs []time.Duration
	for _, s := range stats {
		t.Streams++
		if s.failed {
			t.Failed++
			continue
		}
		ttfbs = append(ttfbs, s.ttfb)
		t.ttfbs = append(t.ttfbs, s.ttfb)
		t.durs = append(t.durs, s.dur)
		t.Events += s.events
		t.Merged += s.merged
		t.ErrorEvents += s.errEv
	}
	return summarize(ttfbs).P50
}

// sseFinish fills in the summaries and checks every stream against the
// expected number of events.
func sseFinish(res *sseResult) {
	for _, t := range res.Targets {
		ok := int64(t.Streams - t.Failed)
		want := int64(res.Expected) * ok
		if t.Events < want {
			t.Lost = want - t.Events
		} else {
			t.Extra = t.Events - want
		}
		t.TTFB, t.Duration = summarize(t.ttfbs), summarize(t.durs)
		t.AddedTTFBP50 = spreadOf(t.p50s)
		t.Proxy = cpuUse{Seconds: t.cpu}
		if t.Events > 0 && t.cpu > 0 {
			t.CPUPerEvent = round1(t.cpu * 1e6 / float64(t.Events))
			t.CPUPerStream = round1(t.cpu * 1e6 / float64(t.Streams))
		}
	}
}

// modeEvents is the most common number of events per stream.
func modeEvents(stats []streamStat) int64 {
	count := map[int64]int{}
	var best int64
	for _, s := range stats {
		if s.failed {
			continue
		}
		count[s.events]++
		if count[s.events] > count[best] {
			best = s.events
		}
	}
	return best
}

// sseLeg runs c clients that each open n streams one after another.
func sseLeg(hc *http.Client, c call, clients, n int) ([]streamStat, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := make([]streamStat, clients*n)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			for j := range n {
				out[i*n+j] = readStream(ctx, hc, c)
			}
		})
	}
	wg.Wait()
	return out, ctx.Err()
}

// readStream opens one stream and counts its events: a data line is an
// event; an event block holding more than one data line is a merge.
func readStream(ctx context.Context, hc *http.Client, c call) streamStat {
	var s streamStat
	req, err := c.newRequest(ctx)
	if err != nil {
		return streamStat{failed: true}
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return streamStat{failed: true}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, resp.Body)
		return streamStat{failed: true}
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	inBlock := int64(0)
	for {
		line, err := br.ReadSlice('\n')
		if s.ttfb == 0 && len(line) > 0 {
			s.ttfb = time.Since(start)
		}
		switch {
		case bytes.HasPrefix(line, []byte("data:")):
			s.events++
			inBlock++
			if bytes.Contains(line, []byte(`"error"`)) {
				s.errEv++
			}
		case len(bytes.TrimSpace(line)) == 0 && inBlock > 0:
			s.merged += inBlock - 1
			inBlock = 0
		}
		if err != nil {
			s.failed = err != io.EOF
			break
		}
	}
	s.dur = time.Since(start)
	return s
}
