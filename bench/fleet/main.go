// Command fleet drives the fleet drill (bench/fleet.sh): a fleet of
// `sluice serve` gateways, each with its own state directory, sharing only
// Redis, in front of one `sluice fake`. It runs three phases and prints
// one line of JSON per phase and a text summary:
//
//   - probe: the breaker of provider openai is opened through one gateway
//     (two 500s); after its cool period, 10 calls per gateway at once,
//     each answered slowly: exactly one probe should reach the provider.
//   - spend: 64 calls of $0.10 at once over the fleet under a $1.00 cap:
//     exactly 10 should reach the provider.
//   - rate: 20 calls per gateway at once through provider limited, whose
//     limit is 30 requests a minute (one every 2 s) fleet-wide, with a
//     100ms queue: fewer should pass than one per gateway, which a limit
//     kept per gateway would let through.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// result is one phase's figures.
type result struct {
	Phase    string         `json:"phase"`
	Mode     string         `json:"mode"`
	Calls    int            `json:"calls"`
	Statuses map[int]int    `json:"statuses"`
	Upstream int            `json:"upstream"`
	Want     string         `json:"want"`
	OK       bool           `json:"ok"`
	Slowest  string         `json:"slowest"`
	PerGW    map[string]int `json:"passed_per_gateway"`
}

var client = &http.Client{Timeout: 10 * time.Second}

func main() {
	gws := flag.String("gateways", "", "the gateways' host:port, comma-separated")
	fake := flag.String("fake", "", "the fake provider's base URL")
	mode := flag.String("mode", "", "the Redis mode, for the output")
	phases := flag.String("phases", "probe,spend,rate", "the phases to run, in order")
	flag.Parse()
	addrs := strings.Split(*gws, ",")
	if *gws == "" || *fake == "" {
		fmt.Fprintln(os.Stderr, "fleet: give -gateways and -fake")
		os.Exit(2)
	}
	ok := true
	run := map[string]func([]string, string, string) result{"probe": probe, "spend": spendCap, "rate": rate}
	for _, ph := range strings.Split(*phases, ",") {
		f := run[ph]
		if f == nil {
			fmt.Fprintf(os.Stderr, "fleet: unknown phase %q: use probe, spend, rate\n", ph)
			os.Exit(2)
		}
		r := f(addrs, *fake, *mode)
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
		ok = ok && r.OK
	}
	if !ok {
		os.Exit(1)
	}
}

// post sends one chat call and returns its status and duration.
func post(addr, prefix, model, script string) (int, time.Duration) {
	start := time.Now()
	req, _ := http.NewRequest("POST", "http://"+addr+prefix+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","max_tokens":5,"messages":[]}`))
	req.Header.Set("Sluice-Fake-Script", script)
	resp, err := client.Do(req)
	if err != nil {
		return 0, time.Since(start)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// calls returns the fake's call count.
func calls(fake string) int {
	resp, err := client.Get(fake + "/fake/calls")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	var v struct{ Calls int }
	json.NewDecoder(resp.Body).Decode(&v)
	return v.Calls
}

// burst sends per calls through each gateway at once.
func burst(r *result, addrs []string, per int, prefix, model, script string) {
	var mu sync.Mutex
	var slowest atomic.Int64
	var wg sync.WaitGroup
	r.Statuses, r.PerGW = map[int]int{}, map[string]int{}
	for _, a := range addrs {
		for range per {
			wg.Go(func() {
				code, took := post(a, prefix, model, script)
				if int64(took) > slowest.Load() {
					slowest.Store(int64(took))
				}
				mu.Lock()
				r.Statuses[code]++
				if code == 200 {
					r.PerGW[a]++
				}
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	r.Calls = len(addrs) * per
	r.Slowest = time.Duration(slowest.Load()).Round(time.Millisecond).String()
}

func probe(addrs []string, fake, mode string) result {
	r := result{Phase: "probe", Mode: mode, Want: "one probe fleet-wide: upstream 1, one 200, the rest 503"}
	post(addrs[0], "/openai", "free", "500")
	post(addrs[0], "/openai", "free", "500")
	time.Sleep(1500 * time.Millisecond) // cool is 1s; the caches refresh every 250ms
	before := calls(fake)
	burst(&r, addrs, 10, "/openai", "free", "slow:500ms")
	r.Upstream = calls(fake) - before
	r.OK = r.Upstream == 1 && r.Statuses[200] == 1 && r.Statuses[503] == r.Calls-1
	return r
}

func spendCap(addrs []string, fake, mode string) result {
	r := result{Phase: "spend", Mode: mode, Want: "64 calls of $0.10 under $1.00: exactly 10 upstream"}
	time.Sleep(time.Second) // every gateway's cache has seen the probe close the breaker
	before := calls(fake)
	per := 64 / len(addrs)
	extra := 64 - per*len(addrs)
	burst(&r, addrs, per, "/openai", "gpt-4o-mini", "200")
	if extra > 0 {
		var x result
		burst(&x, addrs[:extra], 1, "/openai", "gpt-4o-mini", "200")
		for k, v := range x.Statuses {
			r.Statuses[k] += v
		}
		for k, v := range x.PerGW {
			r.PerGW[k] += v
		}
		r.Calls += x.Calls
	}
	r.Upstream = calls(fake) - before
	r.OK = r.Upstream == 10 && r.Statuses[200] == 10
	return r
}

func rate(addrs []string, fake, mode string) result {
	r := result{Phase: "rate", Mode: mode, Want: "30 a minute (one every 2 s) fleet-wide: of 120 calls at once, fewer pass than the 6 a per-gateway limit would let through, the rest 429"}
	before := calls(fake)
	burst(&r, addrs, 20, "/limited", "free", "200")
	r.Upstream = calls(fake) - before
	r.OK = r.Statuses[200] >= 1 && r.Statuses[200] < len(addrs) && r.Upstream == r.Statuses[200] && r.Statuses[429] == r.Calls-r.Statuses[200]
	return r
}
