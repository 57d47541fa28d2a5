// Command redisidle drives the Redis-keyspace drill (bench/redisidle.sh):
// gateways sharing one Redis whose database holds many keys that are not
// Sluice's (DEBUG POPULATE, as a day of kept answers would). It prints one
// line of JSON per phase:
//
//   - idle: after three calls per gateway (one failure, a breaker record),
//     nothing for -idle; what Redis ran (INFO commandstats, per second and
//     per gateway) and the CPU it used (INFO cpu, used_cpu_sys plus
//     used_cpu_user), as a share of one core.
//   - load: -clients clients calling the gateways in turn for -load; the
//     calls answered, their latency, and Redis CPU and commands per call.
//
// Each line carries the load average of the machine before and after.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// result is one phase's figures.
type result struct {
	Phase       string            `json:"phase"`
	Label       string            `json:"label"`
	Keys        int64             `json:"keys"`
	Gateways    int               `json:"gateways"`
	Seconds     float64           `json:"seconds"`
	CPUPct      float64           `json:"redis_cpu_pct_of_core"`
	CmdsPerSec  float64           `json:"redis_commands_per_sec"`
	PerGateway  float64           `json:"redis_commands_per_sec_per_gateway,omitempty"`
	ByCommand   map[string]int    `json:"redis_calls_by_command"`
	Clients     int               `json:"clients,omitempty"`
	Calls       int64             `json:"calls,omitempty"`
	Failed      int64             `json:"failed,omitempty"`
	CallsPerSec float64           `json:"calls_per_sec,omitempty"`
	CPUPerCall  float64           `json:"redis_cpu_us_per_call,omitempty"`
	CmdsPerCall float64           `json:"redis_commands_per_call,omitempty"`
	Latency     map[string]string `json:"latency,omitempty"`
	LoadBefore  string            `json:"loadavg_before"`
	LoadAfter   string            `json:"loadavg_after"`
}

var client = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 256}}

func main() {
	addr := flag.String("redis", "", "the Redis host:port")
	gws := flag.String("gateways", "", "the gateways' host:port, comma-separated")
	label := flag.String("label", "", "what is measured (before, after), for the output")
	idle := flag.Duration("idle", 10*time.Second, "how long the gateways stay idle")
	load := flag.Duration("load", 10*time.Second, "how long the clients call")
	clients := flag.Int("clients", 50, "the clients calling at once")
	flag.Parse()
	if *addr == "" || *gws == "" {
		fmt.Fprintln(os.Stderr, "redisidle: give -redis and -gateways")
		os.Exit(2)
	}
	rc := redis.NewClient(&redis.Options{Addr: *addr, ReadTimeout: time.Minute})
	defer rc.Close()
	addrs := strings.Split(*gws, ",")
	for _, g := range addrs { // a breaker record, closed, as a day's traffic leaves
		for _, s := range []string{"500", "200", "200"} {
			post(g, s)
		}
	}
	time.Sleep(2 * time.Second)
	for _, r := range []result{idlePhase(rc, len(addrs), *label, *idle), loadPhase(rc, addrs, *label, *load, *clients)} {
		b, _ := json.Marshal(r)
		fmt.Println(string(b))
	}
}

// post sends one chat call and returns its status.
func post(addr, script string) int {
	req, _ := http.NewRequest("POST", "http://"+addr+"/openai/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o-mini","max_tokens":5,"messages":[]}`))
	req.Header.Set("Sluice-Fake-Script", script)
	resp, err := client.Do(req)
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// sample is what Redis says of itself at one moment.
type sample struct {
	at  time.Time
	cpu float64        // seconds
	by  map[string]int // calls by command since CONFIG RESETSTAT
}

func measure(rc *redis.Client) sample {
	ctx := context.Background()
	s := sample{at: time.Now(), by: make(map[string]int)}
	info := rc.Info(ctx, "cpu", "commandstats").Val()
	for line := range strings.SplitSeq(info, "\r\n") {
		for _, k := range []string{"used_cpu_sys:", "used_cpu_user:"} {
			if v, ok := strings.CutPrefix(line, k); ok {
				f, _ := strconv.ParseFloat(v, 64)
				s.cpu += f
			}
		}
		if name, rest, ok := strings.Cut(strings.TrimPrefix(line, "cmdstat_"), ":calls="); ok && strings.HasPrefix(line, "cmdstat_") {
			n, _ := strconv.Atoi(rest[:strings.IndexByte(rest, ',')])
			s.by[name] = n
		}
	}
	return s
}

// between fills r with what Redis ran and used from a to b, less the
// drill's own INFO and CONFIG RESETSTAT.
func between(r *result, a, b sample) int {
	r.Seconds = b.at.Sub(a.at).Seconds()
	r.CPUPct = 100 * (b.cpu - a.cpu) / r.Seconds
	r.ByCommand = make(map[string]int)
	total := 0
	for k, n := range b.by {
		if k == "info" || k == "config|resetstat" {
			continue
		}
		if d := n - a.by[k]; d > 0 {
			r.ByCommand[k] = d
			total += d
		}
	}
	r.CmdsPerSec = float64(total) / r.Seconds
	return total
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func idlePhase(rc *redis.Client, gateways int, label string, d time.Duration) result {
	r := result{Phase: "idle", Label: label, Gateways: gateways, Keys: rc.DBSize(context.Background()).Val(), LoadBefore: loadavg()}
	rc.ConfigResetStat(context.Background())
	a := measure(rc)
	time.Sleep(d)
	b := measure(rc)
	between(&r, a, b)
	r.PerGateway = r.CmdsPerSec / float64(gateways)
	r.LoadAfter = loadavg()
	return r
}

func loadPhase(rc *redis.Client, addrs []string, label string, d time.Duration, clients int) result {
	r := result{Phase: "load", Label: label, Gateways: len(addrs), Clients: clients, Keys: rc.DBSize(context.Background()).Val(), LoadBefore: loadavg()}
	rc.ConfigResetStat(context.Background())
	var calls, failed atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	a := measure(rc)
	end := a.at.Add(d)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() {
			var mine []time.Duration
			for n := i; time.Now().Before(end); n++ {
				start := time.Now()
				if post(addrs[n%len(addrs)], "200") == 200 {
					calls.Add(1)
					mine = append(mine, time.Since(start))
				} else {
					failed.Add(1)
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	b := measure(rc)
	total := between(&r, a, b)
	r.Calls, r.Failed = calls.Load(), failed.Load()
	r.CallsPerSec = float64(r.Calls) / r.Seconds
	if r.Calls > 0 {
		r.CPUPerCall = 1e6 * (b.cpu - a.cpu) / float64(r.Calls)
		r.CmdsPerCall = float64(total) / float64(r.Calls)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		r.Latency = map[string]string{"p50": lat[len(lat)/2].String(), "p99": lat[len(lat)*99/100].String()}
	}
	r.LoadAfter = loadavg()
	return r
}
