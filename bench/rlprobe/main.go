// Command rlprobe asks limit.Limiter for slots from n goroutines at once,
// on a fresh bucket of 120 requests per minute in each Store (File and
// Redis), and counts what it got: how many calls were admitted in the
// probe's time against the bucket's ideal (one every 500 ms), how many
// Reserve and Cancel calls that took, and how far ahead the bucket's next
// free slot ended. A Store that hands out slots without waste admits
// min(n, d/500ms + 1) and ends with the bucket about n·500 ms ahead.
//
// Usage: rlprobe --redis 127.0.0.1:PORT [--n 1,5,20,50] [--d 3s]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/limit"
	"github.com/sluice-llm/sluice/limit/redislimit"
	"github.com/sluice-llm/sluice/state"
)

// counting is a Store that counts the Reserve and Cancel calls made of it,
// and how much later than asked each granted slot was.
type counting struct {
	limit.Store
	reserves, cancels atomic.Int64
	mu                sync.Mutex
	late              []time.Duration
}

func (c *counting) Reserve(key string, r limit.Rate, cost int64, notBefore time.Time, maxWait time.Duration) (time.Time, bool, error) {
	c.reserves.Add(1)
	at, ok, err := c.Store.Reserve(key, r, cost, notBefore, maxWait)
	if ok {
		c.mu.Lock()
		c.late = append(c.late, at.Sub(notBefore))
		c.mu.Unlock()
	}
	return at, ok, err
}

func (c *counting) Cancel(key string, r limit.Rate, at time.Time, cost int64) error {
	c.cancels.Add(1)
	return c.Store.Cancel(key, r, at, cost)
}

func main() {
	addr := flag.String("redis", "", "Redis host:port (required)")
	ns := flag.String("n", "1,5,20,50", "concurrent callers, a comma-separated list")
	d := flag.Duration("d", 3*time.Second, "how long the callers may wait for their slots")
	flag.Parse()
	if *addr == "" || *d <= 0 {
		fmt.Fprintln(os.Stderr, "rlprobe: give --redis host:port and --d > 0")
		os.Exit(2)
	}
	dir, err := os.MkdirTemp("", "rlprobe")
	if err != nil {
		fmt.Fprintln(os.Stderr, "rlprobe:", err)
		os.Exit(1)
	}
	defer os.RemoveAll(dir)
	rc := redis.NewClient(&redis.Options{Addr: *addr})
	defer rc.Close()
	for i, f := range strings.Split(*ns, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "rlprobe: --n: %q is not a positive count\n", f)
			os.Exit(2)
		}
		sf, err := state.OpenFile(fmt.Sprintf("%s/%d", dir, i), state.FileOptions{})
		if err != nil {
			fmt.Fprintln(os.Stderr, "rlprobe:", err)
			os.Exit(1)
		}
		fs, _ := limit.NewFile(sf)
		rs, err := redislimit.New(rc, redislimit.Options{Prefix: fmt.Sprintf("rlprobe:%d:%d:", os.Getpid(), i)})
		if err != nil {
			fmt.Fprintln(os.Stderr, "rlprobe:", err)
			os.Exit(1)
		}
		probe("file", fs, n, *d)
		probe("redis", rs, n, *d)
		sf.Close()
	}
}

// probe runs n concurrent Waits on st for at most d and prints one line.
func probe(name string, st limit.Store, n int, d time.Duration) {
	cs := &counting{Store: st}
	l := &limit.Limiter{Store: cs, Limits: []limit.Limit{{Name: "probe", Provider: "p",
		Requests: limit.Rate{Limit: 120, Per: time.Minute}}}}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			_, _, err := l.Wait(ctx, hook.Ask{Provider: "p", Model: "m", BodyBytes: 100, MaxTokens: 10, MaxWait: 55 * time.Second})
			switch {
			case err == nil:
				admitted.Add(1)
			case ctx.Err() == nil:
				refused.Add(1)
			}
		})
	}
	wg.Wait()
	ahead := 0.0
	if bs, err := l.Buckets(); err == nil {
		for _, b := range bs {
			if strings.HasSuffix(b.Key, ":requests") && !b.FreeAt.IsZero() {
				ahead = time.Until(b.FreeAt).Seconds()
			}
		}
	}
	slices.Sort(cs.late)
	var med time.Duration
	if len(cs.late) > 0 {
		med = cs.late[len(cs.late)/2]
	}
	ideal := min(n, int(d/(500*time.Millisecond))+1)
	fmt.Printf("%-5s n=%-3d admitted %3d in %v (ideal %3d), refused %3d; Reserve calls %4d, Cancel calls %4d, median slot later than asked %v; next free slot %.1f s ahead\n",
		name, n, admitted.Load(), d, ideal, refused.Load(), cs.reserves.Load(), cs.cancels.Load(), med.Round(time.Microsecond), ahead)
}
