// Command priostorm is the 429 storm with priorities: batch agents in
// closed loops flood two `sluice serve` gateways sharing one state (a
// state directory, or a redis-server it starts), in front of a fake
// OpenAI provider whose request limit is a token bucket refilling
// continuously (120 a minute unless --rpm), while interactive agents each
// make a call every --every. The batch agents send Sluice-Priority: batch
// (with --priorities; without it they send nothing and every call is
// interactive, first come first served: the baseline); the interactive
// agents send nothing (the policy's priority, interactive).
//
// It runs one leg and writes its figures as JSON (--out) and text
// (stdout): upstream 429s, each kind's calls and statuses, the
// interactive calls' latency at the client and wait in the gateways'
// attempt logs (queued_ms by priority), and the batch calls served
// against what the provider's limit left them: its bucket (--rpm) plus
// its refill over the run, less the interactive calls served.
//
// Usage:
//
//	priostorm --sluice PATH [--priorities] [--state file|redis] [--kind exact|quantized|none|overstate]
//	          [--batch 40] [--interactive 3] [--every 5s] [--d 60s] [--out FILE]
//
// The gateways' config has no limits: section: they pace calls by what
// they learn from the fake's answers. --kind is the fake's rate limit, as
// storm's: exact (a bucket of a minute's worth, exact headers), quantized
// (a burst of 10), none (no rate-limit headers, only Retry-After on the
// 429s) or overstate (the remaining- headers overstated).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/sluice-llm/sluice/bench/benchproc"
	"github.com/sluice-llm/sluice/fake"
)

// opts are a leg's settings.
type opts struct {
	bin, name, state, label string
	kind                    string
	priorities              bool
	rpm, batch, inter       int
	every, dur              time.Duration
}

func main() {
	var o opts
	flag.StringVar(&o.bin, "sluice", "", "the sluice binary the gateways run (required)")
	flag.StringVar(&o.name, "name", "priostorm", "the leg's name")
	flag.StringVar(&o.state, "state", "file", "the gateways' shared state: file (one directory) or redis (a redis-server started here)")
	flag.StringVar(&o.label, "label", "", "what the sluice binary was built from, for the figures (a commit)")
	flag.StringVar(&o.kind, "kind", "exact", "the fake's rate limit: exact, quantized, none or overstate")
	flag.BoolVar(&o.priorities, "priorities", false, "batch agents send Sluice-Priority: batch (else nothing: the baseline)")
	flag.IntVar(&o.rpm, "rpm", 120, "the fake's request bucket: requests per minute, refilled continuously")
	flag.IntVar(&o.batch, "batch", 40, "batch agents in closed loops, half on each gateway")
	flag.IntVar(&o.inter, "interactive", 3, "interactive agents, each calling every --every")
	flag.DurationVar(&o.every, "every", 5*time.Second, "how often each interactive agent calls")
	flag.DurationVar(&o.dur, "d", 60*time.Second, "how long the agents call")
	out := flag.String("out", "", "write the figures as JSON here too")
	flag.Parse()
	_, kindOK := benchproc.Kinds[o.kind]
	if !kindOK || o.bin == "" || o.batch < 0 || o.inter < 1 || o.dur <= 0 || o.every <= 0 || o.rpm < 1 || (o.state != "file" && o.state != "redis") {
		fmt.Fprintln(os.Stderr, "priostorm: give --sluice PATH, --batch ≥ 0, --interactive ≥ 1, --d and --every > 0, --rpm ≥ 1, --state file or redis, --kind exact|quantized|none|overstate")
		os.Exit(2)
	}
	res, err := run(o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "priostorm:", err)
		os.Exit(1)
	}
	if *out != "" {
		b, _ := json.MarshalIndent(res, "", "  ")
		if err := os.WriteFile(*out, append(b, '\n'), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "priostorm:", err)
			os.Exit(1)
		}
	}
	printResult(os.Stdout, res)
}

// tally is one kind of agent's calls.
type tally struct {
	Calls    int            `json:"calls"`
	Served   int            `json:"served"` // 200s
	Statuses map[string]int `json:"statuses"`
	Cut      int            `json:"cut_at_end"` // in flight when the run ended
	lat      []time.Duration
	Latency  ms `json:"latency_ms"` // of every call answered, at the client
}

func (t *tally) add(kind string, took time.Duration) {
	if kind == "cut" {
		t.Cut++
		return
	}
	t.Calls++
	t.lat = append(t.lat, took)
	if kind == "200" {
		t.Served++
		return
	}
	t.Statuses[kind]++
}

func run(o opts) (*result, error) {
	tmp, err := os.MkdirTemp("", "sluice-priostorm")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	res := &result{Name: o.name, Sluice: o.bin, Label: o.label, State: o.state, Priorities: o.priorities, ProviderRPM: o.rpm,
		BatchAgents: o.batch, InteractiveAgents: o.inter, EveryS: o.every.Seconds(), Started: time.Now().UTC().Format(time.RFC3339),
		Batch: tally{Statuses: map[string]int{}}, Interactive: tally{Statuses: map[string]int{}}}
	res.LoadAvg[0] = benchproc.LoadAvg()

	k := benchproc.Kinds[o.kind]
	res.Kind, res.Burst = o.kind, k.Burst
	p := &fake.Provider{RequestsPerMinute: o.rpm, TokenBucket: true, Burst: k.Burst, LimitHeaders: k.Headers, MaxRequests: 100}
	fl, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	fsrv := &http.Server{Handler: p}
	go fsrv.Serve(fl)
	defer func() { p.Close(); fsrv.Close() }()

	stateCfg, stopState, err := benchproc.State(tmp, o.state)
	if err != nil {
		return nil, err
	}
	defer stopState()
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
		if err := os.WriteFile(cfg, config(port, fl.Addr().String(), stateCfg, log), 0o644); err != nil {
			return nil, err
		}
		cmd := exec.Command(o.bin, "serve", "--config", cfg)
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
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.batch + o.inter, MaxConnsPerHost: 0}, Timeout: 90 * time.Second}
	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(o.dur))
	defer cancel()
	nslices := int((o.dur + sliceLen - 1) / sliceLen)
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
	served := func(k *int, kind string) { // the caller holds mu
		if kind == "200" {
			*k++
		}
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	batchHeader := ""
	if o.priorities {
		batchHeader = "batch"
	}
	for i := range o.batch {
		url := urls[i%len(urls)]
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				kind := call(ctx, hc, url, body, batchHeader)
				mu.Lock()
				res.Batch.add(kind, time.Since(t0))
				if i := int(time.Since(start) / sliceLen); i < nslices {
					served(&res.Timeline[i].Batch, kind)
				}
				mu.Unlock()
			}
		})
	}
	for i := range o.inter {
		url := urls[i%len(urls)]
		wg.Go(func() {
			next := start.Add(o.every * time.Duration(i) / time.Duration(o.inter)) // spread over the period
			for {
				if d := time.Until(next); d > 0 {
					select {
					case <-time.After(d):
					case <-ctx.Done():
						return
					}
				}
				if ctx.Err() != nil {
					return
				}
				t0 := time.Now()
				kind := call(ctx, hc, url, body, "")
				mu.Lock()
				res.Interactive.add(kind, time.Since(t0))
				if i := int(time.Since(start) / sliceLen); i < nslices {
					served(&res.Timeline[i].Interactive, kind)
				}
				mu.Unlock()
				next = next.Add(o.every)
			}
		})
	}
	wg.Wait()
	<-polled
	res.Seconds = time.Since(start).Round(100 * time.Millisecond).Seconds()
	res.Upstream429, res.UpstreamCalls = p.RateLimited(), p.Calls()
	res.Batch.Latency, res.Interactive.Latency = dist(res.Batch.lat), dist(res.Interactive.lat)
	for _, c := range gws {
		benchproc.Stop(c)
	}
	gws = nil
	if err := readLogs(res, logs); err != nil {
		return nil, err
	}
	res.finish(o.dur)
	res.LoadAvg[1] = benchproc.LoadAvg()
	return res, nil
}

// config is a gateway's config: the fake as an OpenAI provider, the
// agents' policy (60 s total, 55 s max_queue, interactive unless a call
// says batch), the shared state, no limits section: the gateways pace
// calls by the bucket they learn from the fake's answers.
func config(port int, fakeAddr, state, log string) []byte {
	return fmt.Appendf(nil, `listen: 127.0.0.1:%d
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
}

// call makes one call and names what came back: 200, gw429 (the
// gateway's rate_limited), up429 (relayed from upstream), error, cut (the
// run ended while it was in flight) or the status.
func call(ctx context.Context, hc *http.Client, url string, body []byte, prio string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "error"
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer sk-storm")
	if prio != "" {
		req.Header.Set("Sluice-Priority", prio)
	}
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
	case resp.StatusCode == http.StatusTooManyRequests && bytes.Contains(b, []byte(`"rate_limited"`)):
		return "gw429"
	case resp.StatusCode == http.StatusTooManyRequests:
		return "up429"
	}
	return fmt.Sprint(resp.StatusCode)
}
