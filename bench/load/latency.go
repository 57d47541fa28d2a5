package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"time"
)

// latencyResult is the added latency of each proxy at one client.
type latencyResult struct {
	Mode    string                   `json:"mode"`
	Dialect string                   `json:"dialect"`
	Rounds  int                      `json:"rounds"`
	N       int                      `json:"n_per_leg"`
	Proxies map[string]*latencyProxy `json:"proxies"`
}

// latencyProxy holds one proxy's figures over the rounds, in µs.
type latencyProxy struct {
	AddedP50    spread `json:"added_p50_us"`
	AddedP99    spread `json:"added_p99_us"`
	DirectP50   spread `json:"direct_p50_us"`
	DirectP99   spread `json:"direct_p99_us"`
	ProxiedP50  spread `json:"proxied_p50_us"`
	ProxiedP99  spread `json:"proxied_p99_us"`
	addP50      []float64
	addP99      []float64
	dP50, dP99  []float64
	pP50, pP99  []float64
	proxiedBase string
}

func runLatency(args []string) (any, error) {
	fs := flag.NewFlagSet("latency", flag.ContinueOnError)
	direct := fs.String("direct", "http://127.0.0.1:9090", "the fake upstream's base URL")
	var proxies namedList
	fs.Var(&proxies, "proxy", "name=base URL of a proxy route, e.g. floor=http://127.0.0.1:9101/openai (repeat)")
	dname := fs.String("dialect", "openai", "openai or anthropic")
	rounds := fs.Int("rounds", 7, "interleaved rounds")
	n := fs.Int("n", 1000, "requests per leg")
	warmup := fs.Int("warmup", 300, "requests per target before the rounds")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	d, err := lookupDialect(*dname)
	if err != nil {
		return nil, err
	}
	if len(proxies.names) == 0 || *rounds < 1 || *n < 1 {
		return nil, errors.New("give at least one --proxy, --rounds ≥ 1 and --n ≥ 1")
	}
	hc := &http.Client{Transport: newTransport(8), Timeout: 10 * time.Second}
	res := &latencyResult{Mode: "latency", Dialect: *dname, Rounds: *rounds, N: *n, Proxies: map[string]*latencyProxy{}}
	directCall := call{url: *direct + d.path, body: d.body}
	for i, name := range proxies.names {
		p := &latencyProxy{proxiedBase: proxies.values[i]}
		res.Proxies[name] = p
		if _, err := leg(hc, call{url: p.proxiedBase + d.path, body: d.body}, *warmup); err != nil {
			return nil, fmt.Errorf("warming %s: %w", name, err)
		}
	}
	if _, err := leg(hc, directCall, *warmup); err != nil {
		return nil, fmt.Errorf("warming direct: %w", err)
	}
	for r := range *rounds {
		for j := range proxies.names {
			name := proxies.names[(j+r)%len(proxies.names)]
			if err := latencyRound(hc, res.Proxies[name], directCall, d, *n); err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", r+1, name, err)
			}
		}
		fmt.Fprintf(os.Stderr, "latency %s: round %d/%d done\n", *dname, r+1, *rounds)
	}
	for _, p := range res.Proxies {
		p.AddedP50, p.AddedP99 = spreadOf(p.addP50), spreadOf(p.addP99)
		p.DirectP50, p.DirectP99 = spreadOf(p.dP50), spreadOf(p.dP99)
		p.ProxiedP50, p.ProxiedP99 = spreadOf(p.pP50), spreadOf(p.pP99)
	}
	return res, nil
}

// latencyRound runs n direct calls, then n through the proxy, and records
// the difference.
func latencyRound(hc *http.Client, p *latencyProxy, direct call, d dialect, n int) error {
	dd, err := leg(hc, direct, n)
	if err != nil {
		return err
	}
	pd, err := leg(hc, call{url: p.proxiedBase + d.path, body: d.body}, n)
	if err != nil {
		return err
	}
	p.dP50, p.dP99 = append(p.dP50, dd.P50), append(p.dP99, dd.P99)
	p.pP50, p.pP99 = append(p.pP50, pd.P50), append(p.pP99, pd.P99)
	p.addP50 = append(p.addP50, round1(pd.P50-dd.P50))
	p.addP99 = append(p.addP99, round1(pd.P99-dd.P99))
	return nil
}

// leg makes n calls one after another and returns their latency; any
// call that is not a 200 is an error (this mode measures the happy path).
func leg(hc *http.Client, c call, n int) (dist, error) {
	ds := make([]time.Duration, 0, n)
	deadline := time.Now().Add(2 * time.Minute)
	for i := 0; i < n && time.Now().Before(deadline); i++ {
		d, status, err := c.do(context.Background(), hc)
		if err != nil {
			return dist{}, err
		}
		if status != http.StatusOK {
			return dist{}, fmt.Errorf("%s answered %d", c.url, status)
		}
		ds = append(ds, d)
	}
	return summarize(ds), nil
}
