package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// rlResult is one rate-limit run: clients in closed loops, spread evenly
// over one or more gateways, each calling as fast as its answers come
// back for a fixed time; what they got, and what the fake upstream saw,
// in buckets of time.
type rlResult struct {
	Mode           string     `json:"mode"`
	Name           string     `json:"name"`
	URLs           []string   `json:"urls"`
	Clients        int        `json:"clients"`
	Seconds        float64    `json:"seconds"`
	ClientTimeoutS float64    `json:"client_timeout_s"`
	BodyBytes      int        `json:"body_bytes"`
	MaxTokens      int        `json:"max_tokens"`
	Counts         rlCounts   `json:"counts"`
	OKPerMinute    float64    `json:"ok_per_minute"`
	CutAtEnd       int        `json:"cut_at_end"`       // in flight when the run ended, abandoned
	CutMaxAgeMS    float64    `json:"cut_max_age_ms"`   // the oldest of those
	LatencyOK      dist       `json:"latency_ok"`       // calls answered 200
	LatencyAll     dist       `json:"latency_answered"` // calls answered with any status
	Fake           rlFake     `json:"fake"`             // at the end of the run
	Buckets        []rlBucket `json:"buckets"`          // one per --bucket of the run
	BucketSeconds  float64    `json:"bucket_seconds"`   // the buckets' length
	ClientErrors   []string   `json:"client_errors"`    // the first few transport errors
}

// rlCounts are the answers the clients got, by kind.
type rlCounts struct {
	Calls              int            `json:"calls"` // answered or failed, not the cut ones
	OK                 int            `json:"ok"`
	GatewayRateLimited int            `json:"gateway_rate_limited"` // 429 with code rate_limited
	Upstream429        int            `json:"upstream_429"`         // 429 relayed from the provider
	ProviderDown       int            `json:"provider_down"`        // 503 provider_down
	Other503           int            `json:"other_503"`
	OtherStatus        map[string]int `json:"other_status"`
	Errors             int            `json:"errors"` // transport errors and client timeouts
}

// rlFake is what GET /fake/calls reported.
type rlFake struct {
	Calls       int `json:"calls"`        // every call that reached it
	RateLimited int `json:"rate_limited"` // answered 429 by its rate limits
	Admitted    int `json:"admitted"`     // calls − rate_limited
}

// rlBucket is one slice of the run: what the clients got back in it (by
// the time each call ended) and what the fake saw in it.
type rlBucket struct {
	EndS         float64 `json:"end_s"`
	OK           int     `json:"ok"`
	Gateway429   int     `json:"gateway_429"`
	Upstream429  int     `json:"upstream_429"`
	Status503    int     `json:"status_503"`
	Other        int     `json:"other"`
	FakeCalls    int     `json:"fake_calls"`
	FakeLimited  int     `json:"fake_rate_limited"`
	FakeAdmitted int     `json:"fake_admitted"`
}

// rlCall is one finished call.
type rlCall struct {
	end  time.Duration // since the run's start
	took time.Duration
	kind string // ok, gw429, up429, down503, other503, status:N, error
}

func runRatelimit(args []string) (any, error) {
	fs := flag.NewFlagSet("ratelimit", flag.ContinueOnError)
	var urls namedList
	fs.Var(&urls, "url", "a gateway route as name=URL, e.g. gw1=http://127.0.0.1:9191/openai; repeat for each gateway")
	name := fs.String("name", "", "name of the run in the result")
	fake := fs.String("fake", "", "the fake's base URL, read at every bucket's end (GET /fake/calls)")
	clients := fs.Int("c", 50, "concurrent clients, spread evenly over the gateways")
	dur := fs.Duration("d", 60*time.Second, "how long the clients call; calls still in flight then are abandoned and counted as cut")
	bucket := fs.Duration("bucket", 10*time.Second, "length of a bucket of the timeline")
	timeout := fs.Duration("timeout", 90*time.Second, "client timeout of one call")
	bodyBytes := fs.Int("body-bytes", 0, "pad the request body to exactly this many bytes (0: the small default body)")
	maxTokens := fs.Int("max-tokens", 32, "max_tokens of the request")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if len(urls.values) == 0 || *clients < 1 || *dur <= 0 || *bucket <= 0 || *fake == "" {
		return nil, errors.New("give --url name=URL (one or more), --fake, --c ≥ 1, --d > 0 and --bucket > 0")
	}
	body, err := rlBody(*bodyBytes, *maxTokens)
	if err != nil {
		return nil, err
	}
	res := &rlResult{Mode: "ratelimit", Name: *name, URLs: urls.values, Clients: *clients,
		ClientTimeoutS: timeout.Seconds(), BodyBytes: len(body), MaxTokens: *maxTokens,
		BucketSeconds: bucket.Seconds(), ClientErrors: []string{}}
	hc := &http.Client{Transport: newTransport(*clients * 2), Timeout: *timeout}

	start := time.Now()
	ctx, cancel := context.WithDeadline(context.Background(), start.Add(*dur))
	defer cancel()
	fakeSeen := make(chan []rlFake, 1)
	go func() { fakeSeen <- pollFake(*fake, start, *dur, *bucket) }()

	var mu sync.Mutex
	var calls []rlCall
	var cutAges []time.Duration
	var wg sync.WaitGroup
	for i := range *clients {
		c := call{url: urls.values[i%len(urls.values)] + "/v1/chat/completions", body: body}
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				kind, errText := rlDo(ctx, hc, c)
				took := time.Since(t0)
				mu.Lock()
				if kind == "cut" {
					cutAges = append(cutAges, took)
				} else {
					calls = append(calls, rlCall{end: time.Since(start), took: took, kind: kind})
					if errText != "" && len(res.ClientErrors) < 5 {
						res.ClientErrors = append(res.ClientErrors, errText)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	wall := time.Since(start)
	seen := <-fakeSeen
	rlTally(res, calls, cutAges, seen, *dur, *bucket)
	res.Seconds = round1(min(wall, *dur).Seconds())
	res.OKPerMinute = round1(float64(res.Counts.OK) * 60 / dur.Seconds())
	fmt.Fprintf(os.Stderr, "ratelimit %s: %d ok (%.1f/min), %d gateway 429, %d upstream 429 relayed, %d provider_down, fake: %d calls, %d rate limited\n",
		*name, res.Counts.OK, res.OKPerMinute, res.Counts.GatewayRateLimited, res.Counts.Upstream429,
		res.Counts.ProviderDown, res.Fake.Calls, res.Fake.RateLimited)
	return res, nil
}

// rlBody returns the chat request body: the small default one, or one
// padded to exactly size bytes, naming maxTokens.
func rlBody(size, maxTokens int) ([]byte, error) {
	head := `{"model":"gpt-4o-mini","max_tokens":` + strconv.Itoa(maxTokens) + `,"messages":[{"role":"user","content":"`
	tail := `"}]}`
	if size == 0 {
		return []byte(head + "Say hello in one short sentence." + tail), nil
	}
	pad := size - len(head) - len(tail)
	if pad < 1 {
		return nil, fmt.Errorf("--body-bytes %d: give at least %d", size, len(head)+len(tail)+1)
	}
	return []byte(head + strings.Repeat("a", pad) + tail), nil
}

// rlDo makes one call and names what came back; "cut" when the run ended
// while it was in flight.
func rlDo(ctx context.Context, hc *http.Client, c call) (kind, errText string) {
	req, err := c.newRequest(ctx)
	if err != nil {
		return "error", err.Error()
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "cut", ""
		}
		return "error", err.Error()
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		if ctx.Err() != nil {
			return "cut", ""
		}
		return "error", err.Error()
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return "ok", ""
	case http.StatusTooManyRequests:
		if bytes.Contains(b, []byte(`"rate_limited"`)) {
			return "gw429", ""
		}
		return "up429", ""
	case http.StatusServiceUnavailable:
		if bytes.Contains(b, []byte(`"provider_down"`)) {
			return "down503", ""
		}
		return "other503", ""
	}
	return "status:" + strconv.Itoa(resp.StatusCode), ""
}

// pollFake reads the fake's counts at the end of every bucket of the run,
// the last at its end; a failed read repeats the one before.
func pollFake(base string, start time.Time, dur, bucket time.Duration) []rlFake {
	var out []rlFake
	var last rlFake
	for at := bucket; ; at += bucket {
		at = min(at, dur)
		time.Sleep(time.Until(start.Add(at)))
		if f, err := fakeCounts(base); err == nil {
			last = f
		} else {
			fmt.Fprintf(os.Stderr, "ratelimit: reading the fake: %v\n", err)
		}
		out = append(out, last)
		if at == dur {
			return out
		}
	}
}

// rlTally fills res from the finished calls, the cut ones and the fake's
// counts at each bucket's end.
func rlTally(res *rlResult, calls []rlCall, cutAges []time.Duration, seen []rlFake, dur, bucket time.Duration) {
	n := len(seen)
	res.Buckets = make([]rlBucket, n)
	var prev rlFake
	for i, f := range seen {
		b := &res.Buckets[i]
		b.EndS = round1(min(time.Duration(i+1)*bucket, dur).Seconds())
		b.FakeCalls, b.FakeLimited = f.Calls-prev.Calls, f.RateLimited-prev.RateLimited
		b.FakeAdmitted = b.FakeCalls - b.FakeLimited
		prev = f
	}
	if n > 0 {
		res.Fake = seen[n-1]
	}
	c := &res.Counts
	c.OtherStatus = map[string]int{}
	var ok, answered []time.Duration
	for _, k := range calls {
		c.Calls++
		b := &res.Buckets[min(int(k.end/bucket), n-1)]
		if k.kind != "error" {
			answered = append(answered, k.took)
		}
		switch {
		case k.kind == "ok":
			c.OK++
			b.OK++
			ok = append(ok, k.took)
		case k.kind == "gw429":
			c.GatewayRateLimited++
			b.Gateway429++
		case k.kind == "up429":
			c.Upstream429++
			b.Upstream429++
		case k.kind == "down503":
			c.ProviderDown++
			b.Status503++
		case k.kind == "other503":
			c.Other503++
			b.Status503++
		case k.kind == "error":
			c.Errors++
			b.Other++
		default:
			c.OtherStatus[strings.TrimPrefix(k.kind, "status:")]++
			b.Other++
		}
	}
	res.LatencyOK, res.LatencyAll = summarize(ok), summarize(answered)
	res.CutAtEnd = len(cutAges)
	for _, a := range cutAges {
		res.CutMaxAgeMS = max(res.CutMaxAgeMS, round1(float64(a)/1e6))
	}
}
