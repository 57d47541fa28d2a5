// Command storm is the 429 storm: agents in closed
// loops over two `sluice serve` gateways sharing one state (a directory,
// or a redis-server it starts), in front of a fake OpenAI provider whose
// request limit is a token bucket refilling continuously
// (fake.Provider.TokenBucket: 120 a minute, one request every 500 ms), as
// OpenAI and Anthropic describe theirs. With --kind exact the fake sends
// x-ratelimit-limit-, -remaining- and -reset-requests on every answer, and
// Retry-After (whole seconds, at least 1: 1 here) on its 429s; the other
// kinds quantize the bucket or hide or misstate the headers.
//
// It runs one leg: the fake in this process, the two gateways (the binary
// given) as child processes, the clients for --d; then it stops the
// gateways, reads their attempt logs and writes the leg's figures as JSON
// (--out) and as text (stdout): upstream 429s (the fake's count), calls
// served (200s to the clients), the clients' 429s from the gateway
// (rate_limited: a slot beyond max_queue) and relayed from upstream, the
// latency of the 200s, and how long attempts waited in the gateways'
// queues (the attempt log's queued_ms), with a timeline.
//
// Usage:
//
//	storm --sluice PATH [--name NAME] [--kind exact|quantized|none|overstate] [--state file|redis]
//	      [--latency 300ms] [--limit N] [--rpm 120] [--c 50] [--d 60s] [--out FILE]
//
// --kind is the fake's rate limit: exact (a bucket of a minute's worth,
// exact headers), quantized (fake.Provider.Burst 10: the headers give
// the minute's limit and what is left of the burst), none (a minute's
// worth, no rate-limit headers, only Retry-After on the 429s) or
// overstate (a minute's worth, the remaining- headers overstated).
// --state is the gateways' shared state: file (one directory) or redis (a
// redis-server started here on a free loopback port). --latency is how
// long each admitted call's answer takes (a slow:D step); 429s answer at
// once.
//
// allowed is what a perfectly paced client could have had admitted over
// the run: the bucket's starting content (the burst, else a minute's
// worth) plus its refill, rpm × seconds / 60; served_of_allowed the calls
// the fake admitted over it, in percent.
//
// --limit N configures limits.rates {requests_per_minute: N} on the
// provider; 0 (the default) configures no limit: the gateways have only
// what they learn from the fake's answers.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/sluice-llm/sluice/bench/benchproc"
	"github.com/sluice-llm/sluice/fake"
)

// result is one leg's figures.
type result struct {
	Name        string  `json:"name"`
	Sluice      string  `json:"sluice"`
	Label       string  `json:"label"`                // what the binary was built from
	Limit       int     `json:"configured_limit_rpm"` // 0: none
	ProviderRPM int     `json:"provider_rpm"`
	Clients     int     `json:"clients"`
	Seconds     float64 `json:"seconds"`
	Kind        string  `json:"kind"`  // exact, quantized, none or overstate
	State       string  `json:"state"` // file or redis
	LatencyMS   float64 `json:"latency_ms"`
	Burst       int     `json:"provider_burst"` // 0: a minute's worth

	Upstream429   int `json:"upstream_429"`   // the fake's 429s
	UpstreamCalls int `json:"upstream_calls"` // every call that reached the fake
	UpstreamOK    int `json:"upstream_admitted"`

	Allowed         float64 `json:"allowed"`           // the bucket's starting content + rpm × seconds / 60
	ServedOfAllowed float64 `json:"served_of_allowed"` // upstream_admitted / allowed, in percent
	PastTotal1s     int     `json:"past_total_1s"`     // client calls that took longer than the policy's total + 1 s
	MaxClientMS     float64 `json:"max_client_ms"`     // the longest client call, whatever its answer

	Served        int            `json:"served"`         // 200s to the clients
	Gateway429    int            `json:"gateway_429"`    // 429 rate_limited from the gateways
	Relayed429    int            `json:"relayed_429"`    // 429s from upstream the gateways gave up on
	OtherStatuses map[string]int `json:"other_statuses"` // any other answer
	Errors        int            `json:"errors"`         // transport errors, client timeouts
	Cut           int            `json:"cut_at_end"`     // in flight when the run ended

	LatencyOKms ms  `json:"latency_ok_ms"` // of the 200s, at the clients
	WaitAllms   ms  `json:"wait_ms"`       // queued_ms of every attempt sent upstream
	Waited      int `json:"attempts_waited"`
	Attempts    int `json:"attempts"`
	LogRefused  int `json:"log_refused"` // calls the logs say were refused rate_limited

	Timeline []slice   `json:"timeline"` // per 5 s
	Started  string    `json:"started"`
	LoadAvg  [2]string `json:"loadavg_start_end"`
}

// ms is a distribution in milliseconds.
type ms struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// slice is one 5 s of the run.
type slice struct {
	EndS        int `json:"end_s"`
	Upstream    int `json:"upstream_calls"`
	Upstream429 int `json:"upstream_429"`
	Served      int `json:"served"`
}

const sliceLen = 5 * time.Second

func main() {
	bin := flag.String("sluice", "", "the sluice binary the gateways run (required)")
	name := flag.String("name", "storm", "the leg's name")
	limit := flag.Int("limit", 0, "limits.rates requests_per_minute on the provider (0: no limits section)")
	rpm := flag.Int("rpm", 120, "the fake's request bucket: requests per minute, refilled continuously")
	clients := flag.Int("c", 50, "agents in closed loops, half on each gateway")
	dur := flag.Duration("d", 60*time.Second, "how long the agents call")
	out := flag.String("out", "", "write the figures as JSON here too")
	label := flag.String("label", "", "what the sluice binary was built from, for the figures (a commit)")
	kind := flag.String("kind", "exact", "the fake's rate limit: exact, quantized, none or overstate")
	state := flag.String("state", "file", "the gateways' shared state: file (one directory) or redis (a redis-server started here)")
	latency := flag.Duration("latency", 300*time.Millisecond, "how long each admitted call's answer takes")
	flag.Parse()
	_, kindOK := benchproc.Kinds[*kind]
	if *bin == "" || *clients < 1 || *dur <= 0 || *rpm < 1 || *limit < 0 || !kindOK || *latency < 0 || (*state != "file" && *state != "redis") {
		fmt.Fprintln(os.Stderr, "storm: give --sluice PATH, --c ≥ 1, --d > 0, --rpm ≥ 1, --limit ≥ 0, --latency ≥ 0, --kind exact|quantized|none|overstate, --state file|redis")
		os.Exit(2)
	}
	res, err := run(leg{*bin, *name, *kind, *state, *limit, *rpm, *clients, *dur, *latency})
	if res != nil {
		res.Label = *label
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "storm:", err)
		os.Exit(1)
	}
	if *out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "storm:", err)
			os.Exit(1)
		}
	}
	printResult(os.Stdout, res)
}

// leg is one run's settings.
type leg struct {
	bin, name, kind, state string
	limit, rpm, clients    int
	dur, latency           time.Duration
}

// policyTotal is the agents' policy's total timeout (config).
const policyTotal = 60 * time.Second

func run(o leg) (*result, error) {
	bin, limit, rpm, clients, dur := o.bin, o.limit, o.rpm, o.clients, o.dur
	tmp, err := os.MkdirTemp("", "sluice-storm")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	k := benchproc.Kinds[o.kind]
	res := &result{Name: o.name, Sluice: bin, Limit: limit, ProviderRPM: rpm, Clients: clients, Kind: o.kind, State: o.state,
		LatencyMS: round1(o.latency), Burst: k.Burst, OtherStatuses: map[string]int{}, Started: time.Now().UTC().Format(time.RFC3339)}
	res.LoadAvg[0] = benchproc.LoadAvg()

	script := "200"
	if o.latency > 0 {
		script = "slow:" + o.latency.String()
	}
	p := &fake.Provider{Script: script, RequestsPerMinute: rpm, TokenBucket: true, Burst: k.Burst, LimitHeaders: k.Headers, MaxRequests: 100}
	stateCfg, stopState, err := benchproc.State(tmp, o.state)
	if err != nil {
		return nil, err
	}
	defer stopState()
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	fsrv := &http.Server{Handler: p}
	go fsrv.Serve(fl)
	defer func() { p.Close(); fsrv.Close() }()

	var gws []*exec.Cmd
	var urls, logs []string
	defer func() {
		for _, c := range gws {
			benchproc.Stop(c)
		}
	}()
	for i := range 2 {
		port, err := benchproc.FreePort()
		if err != nil {
			return nil, err
		}
		cfg := filepath.Join(tmp, fmt.Sprintf("gw%d.yaml", i+1))
		log := filepath.Join(tmp, fmt.Sprintf("gw%d.jsonl", i+1))
		if err := os.WriteFile(cfg, config(port, fl.Addr().String(), stateCfg, log, limit), 0o644); err != nil {
			return nil, err
		}
		cmd := exec.Command(bin, "serve", "--config", cfg)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			return nil, err
		}
		gws = append(gws, cmd)
		if err := benchproc.WaitPort(port, 10*time.Second); err != nil {
			return nil, fmt.Errorf("gateway %d: %v: %s", i+1, err, stderr.String())
		}
		urls = append(urls, fmt.Sprintf("http://127.0.0.1:%d/openai/v1/chat/completions", port))
		logs = append(logs, log)
	}

	body := []byte(`{"model":"gpt-4o-mini","max_tokens":32,"messages":[{"role":"user","content":"Say hello in one short sentence."}]}`)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, MaxConnsPerHost: 0}, Timeout: 90 * time.Second}
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(dur))
	defer cancel()
	nslices := int((dur + sliceLen - 1) / sliceLen)
	res.Timeline = make([]slice, nslices)
	polled := make(chan struct{})
	go func() { // the fake's counts at each slice's end
		defer close(polled)
		lastCalls, lastLimited := 0, 0
		for i := range nslices {
			time.Sleep(time.Until(start.Add(time.Duration(i+1) * sliceLen)))
			c, l := p.Calls(), p.RateLimited()
			res.Timeline[i].EndS = (i + 1) * int(sliceLen/time.Second)
			res.Timeline[i].Upstream, res.Timeline[i].Upstream429 = c-lastCalls, l-lastLimited
			lastCalls, lastLimited = c, l
		}
	}()
	var mu sync.Mutex
	var okLat, allLat []time.Duration
	var wg sync.WaitGroup
	for i := range clients {
		url := urls[i%len(urls)]
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				kind := call(ctx, hc, url, body)
				took := time.Since(t0)
				mu.Lock()
				if kind != "cut" {
					allLat = append(allLat, took)
					if took > policyTotal+time.Second {
						res.PastTotal1s++
					}
				}
				switch kind {
				case "ok":
					res.Served++
					okLat = append(okLat, took)
					if k := int(time.Since(start) / sliceLen); k < nslices {
						res.Timeline[k].Served++
					}
				case "gw429":
					res.Gateway429++
				case "up429":
					res.Relayed429++
				case "error":
					res.Errors++
				case "cut":
					res.Cut++
				default:
					res.OtherStatuses[kind]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	<-polled
	res.Seconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	res.Upstream429, res.UpstreamCalls = p.RateLimited(), p.Calls()
	res.UpstreamOK = res.UpstreamCalls - res.Upstream429
	res.LatencyOKms = dist(okLat)
	res.MaxClientMS = dist(allLat).Max
	start0 := float64(rpm)
	if k.Burst > 0 {
		start0 = float64(k.Burst)
	}
	res.Allowed = math.Round((start0+float64(rpm)*res.Seconds/60)*10) / 10
	res.ServedOfAllowed = math.Round(1000*float64(res.UpstreamOK)/res.Allowed) / 10
	for _, c := range gws {
		benchproc.Stop(c)
	}
	gws = nil
	if err := readLogs(res, logs); err != nil {
		return nil, err
	}
	res.LoadAvg[1] = benchproc.LoadAvg()
	return res, nil
}

// config is a gateway's config: the fake as an OpenAI provider, the
// agents' policy (60 s total, 55 s max_queue), the shared state (a YAML
// flow mapping) and, with limit > 0, a request limit on the provider.
func config(port int, fakeAddr, state, log string, limit int) []byte {
	s := fmt.Sprintf(`listen: 127.0.0.1:%d
drain: 1s
state: %s
log: {attempts: %s}
providers:
  fake: {kind: openai, base_url: http://%s, max_concurrent: 4096}
routes:
  - {prefix: /openai, provider: fake, policy: agents}
policies:
  agents:
    timeout: {first_byte: 5s, total: 60s}
    max_queue: 55s
`, port, state, log, fakeAddr)
	if limit > 0 {
		s += fmt.Sprintf("limits:\n  rates:\n    - {name: fake-rpm, provider: fake, requests_per_minute: %d}\n", limit)
	}
	return []byte(s)
}

// call makes one call and names what came back: ok, gw429 (the gateway's
// rate_limited), up429 (relayed from upstream), error, cut (the run
// ended while it was in flight) or status:N.
func call(ctx context.Context, hc *http.Client, url string, body []byte) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "error"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-storm")
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "cut"
		}
		return "error"
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		if ctx.Err() != nil {
			return "cut"
		}
		return "error"
	}
	switch {
	case resp.StatusCode == http.StatusOK:
		return "ok"
	case resp.StatusCode == http.StatusTooManyRequests && bytes.Contains(b, []byte(`"rate_limited"`)):
		return "gw429"
	case resp.StatusCode == http.StatusTooManyRequests:
		return "up429"
	}
	return fmt.Sprintf("status:%d", resp.StatusCode)
}

// readLogs reads the gateways' attempt logs: how long each attempt sent
// upstream waited for its slot, and the calls refused rate_limited.
func readLogs(res *result, paths []string) error {
	var waits []time.Duration
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<16), 1<<22)
		for sc.Scan() {
			var l struct {
				Outcome  string  `json:"outcome"`
				Status   int     `json:"status"`
				QueuedMS float64 `json:"queued_ms"`
				Refused  int     `json:"refused"`
			}
			if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
				continue // a line cut by the stop
			}
			if l.Outcome == "rate_limited" {
				res.LogRefused += max(l.Refused, 1)
				continue
			}
			if l.Refused > 0 || l.Status == 0 {
				continue // refusals of another kind, or an attempt that reached nothing
			}
			res.Attempts++
			q := time.Duration(l.QueuedMS * 1e6)
			waits = append(waits, q)
			if q >= time.Millisecond {
				res.Waited++
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return fmt.Errorf("%s: %v", path, err)
		}
	}
	res.WaitAllms = dist(waits)
	return nil
}

func dist(ds []time.Duration) ms {
	if len(ds) == 0 {
		return ms{}
	}
	slices.Sort(ds)
	q := func(p float64) float64 {
		i := min(len(ds)-1, int(p*float64(len(ds))))
		return round1(ds[i])
	}
	return ms{N: len(ds), P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: round1(ds[len(ds)-1])}
}

func round1(d time.Duration) float64 { return float64(d.Round(100*time.Microsecond)) / 1e6 }

func printResult(w io.Writer, r *result) {
	lim := "no limits: section"
	if r.Limit > 0 {
		lim = fmt.Sprintf("limits.rates %d/min", r.Limit)
	}
	fmt.Fprintf(w, "leg %s: %s (built from %s), %s, state %s; %d agents over 2 gateways for %.0f s; fake %s: bucket %d/min refilled continuously, burst %d (0: a minute's worth), answers in %.0f ms\n",
		r.Name, r.Sluice, r.Label, lim, r.State, r.Clients, r.Seconds, r.Kind, r.ProviderRPM, r.Burst, r.LatencyMS)
	fmt.Fprintf(w, "  upstream: %d calls, %d answered 429 by the fake's limit, %d admitted of %.1f allowed (%.1f%%)\n",
		r.UpstreamCalls, r.Upstream429, r.UpstreamOK, r.Allowed, r.ServedOfAllowed)
	fmt.Fprintf(w, "  client calls past the policy's total + 1 s: %d; longest client call %.1f ms\n", r.PastTotal1s, r.MaxClientMS)
	fmt.Fprintf(w, "  clients: %d served (200), %d gateway 429 rate_limited, %d upstream 429 relayed, %d errors, other %v, %d cut at the end\n",
		r.Served, r.Gateway429, r.Relayed429, r.Errors, r.OtherStatuses, r.Cut)
	fmt.Fprintf(w, "  latency of the 200s: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms\n",
		r.LatencyOKms.P50, r.LatencyOKms.P95, r.LatencyOKms.P99, r.LatencyOKms.Max)
	fmt.Fprintf(w, "  wait for a slot (queued_ms, %d attempts sent upstream, %d waited ≥ 1 ms): p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms; refused rate_limited in the logs: %d\n",
		r.Attempts, r.Waited, r.WaitAllms.P50, r.WaitAllms.P95, r.WaitAllms.P99, r.WaitAllms.Max, r.LogRefused)
	fmt.Fprintf(w, "  per 5 s    ")
	for _, s := range r.Timeline {
		fmt.Fprintf(w, " %5ds", s.EndS)
	}
	for _, row := range []struct {
		name string
		v    func(slice) int
	}{{"upstream  ", func(s slice) int { return s.Upstream }}, {"up 429    ", func(s slice) int { return s.Upstream429 }},
		{"served    ", func(s slice) int { return s.Served }}} {
		fmt.Fprintf(w, "\n  %s ", row.name)
		for _, s := range r.Timeline {
			fmt.Fprintf(w, " %6d", row.v(s))
		}
	}
	fmt.Fprintf(w, "\n  load average: %s at the start, %s at the end\n", r.LoadAvg[0], r.LoadAvg[1])
}
