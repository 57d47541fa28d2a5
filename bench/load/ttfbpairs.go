package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"time"
)

// ttfbResult is the time to first byte of streams opened one at a time,
// the targets interleaved stream by stream, so that a burst of other work
// on the machine lands on every target alike.
type ttfbResult struct {
	Mode    string                 `json:"mode"`
	Dialect string                 `json:"dialect"`
	Script  string                 `json:"script"`
	Rounds  int                    `json:"rounds"` // each opens one stream direct and one through each proxy
	Blocks  int                    `json:"blocks"` // rounds are cut into blocks; a block's median is one sample of the spread
	Targets map[string]*ttfbTarget `json:"targets"`
}

// ttfbTarget is one target's figures. Added is the stream's TTFB less the
// direct stream's of the same round; VsBase is it less the TTFB of the
// --base proxy in the same round.
type ttfbTarget struct {
	TTFB   dist   `json:"ttfb"`
	Added  spread `json:"added_ttfb_p50_us"`   // per block: the median over its rounds
	VsBase spread `json:"vs_base_ttfb_p50_us"` // per block: the median over its rounds
	Failed int    `json:"failed_streams"`
	ttfbs  []time.Duration
}

// runTTFB opens --rounds rounds of one stream per target, one after
// another on one client: direct first, then the proxies in an order
// rotated each round.
func runTTFB(args []string) (any, error) {
	fs := flag.NewFlagSet("ttfb", flag.ContinueOnError)
	direct := fs.String("direct", "http://127.0.0.1:9090", "the fake's base URL")
	var proxies namedList
	fs.Var(&proxies, "proxy", "name=base URL of a proxy route (repeat)")
	base := fs.String("base", "floor", "the proxy the others are compared with, stream by stream")
	dname := fs.String("dialect", "openai", "openai or anthropic")
	script := fs.String("script", "stream:events=5", "the fake's script for each stream")
	rounds := fs.Int("rounds", 2000, "rounds")
	blocks := fs.Int("blocks", 10, "blocks the rounds are cut into, for the spread")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	d, err := lookupDialect(*dname)
	if err != nil {
		return nil, err
	}
	if *rounds < *blocks || *blocks < 1 || len(proxies.names) == 0 {
		return nil, errors.New("need at least one --proxy, --blocks ≥ 1 and --rounds ≥ --blocks")
	}
	names := append([]string{"direct"}, proxies.names...)
	urls := append([]string{*direct}, proxies.values...)
	bi := slices.Index(names, *base)
	hc := &http.Client{Transport: newTransport(2), Timeout: 60 * time.Second}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	res := &ttfbResult{Mode: "ttfb", Dialect: *dname, Script: *script, Rounds: *rounds, Blocks: *blocks,
		Targets: map[string]*ttfbTarget{}}
	for i, n := range names { // warm-up
		res.Targets[n] = &ttfbTarget{}
		for range 20 {
			readStream(ctx, hc, call{url: urls[i] + d.path, body: d.streamBody, script: *script})
		}
	}
	per := *rounds / *blocks
	added := make([][]float64, len(names)) // this block's per-round figures
	vsBase := make([][]float64, len(names))
	got := make([]streamStat, len(names))
	for r := range per * *blocks {
		for k := range names {
			i := k
			if k > 0 {
				i = 1 + (k-1+r)%(len(names)-1)
			}
			got[i] = readStream(ctx, hc, call{url: urls[i] + d.path, body: d.streamBody, script: *script})
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		for i, n := range names {
			t := res.Targets[n]
			if got[i].failed || got[0].failed {
				t.Failed++
				continue
			}
			t.ttfbs = append(t.ttfbs, got[i].ttfb)
			added[i] = append(added[i], us(got[i].ttfb-got[0].ttfb))
			if bi >= 0 && !got[bi].failed {
				vsBase[i] = append(vsBase[i], us(got[i].ttfb-got[bi].ttfb))
			}
		}
		if (r+1)%per == 0 {
			for i, n := range names {
				t := res.Targets[n]
				t.Added.Rounds = append(t.Added.Rounds, median(added[i]))
				t.VsBase.Rounds = append(t.VsBase.Rounds, median(vsBase[i]))
				added[i], vsBase[i] = added[i][:0], vsBase[i][:0]
			}
		}
	}
	for _, n := range names {
		t := res.Targets[n]
		t.TTFB = summarize(t.ttfbs)
		t.Added, t.VsBase = spreadOf(t.Added.Rounds), spreadOf(t.VsBase.Rounds)
		if n != "direct" {
			fmt.Fprintf(os.Stderr, "ttfb %s: added p50 %.1f µs [%.1f…%.1f], vs %s %+.1f µs [%+.1f…%+.1f]\n",
				n, t.Added.Median, t.Added.Min, t.Added.Max, *base, t.VsBase.Median, t.VsBase.Min, t.VsBase.Max)
		}
	}
	return res, nil
}

// median returns the middle of xs (the upper one of an even count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return round1(s[len(s)/2])
}
