package gateway

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/limitstats"
)

// A call with Sluice-Priority: interactive (or none: the interactive
// policy's) is admitted before the batch calls that were waiting when it
// came. At 120 a minute, six batch calls flood the limit; an interactive
// call 200 ms later takes the next slot (at 500 ms), while four batch
// calls still wait. Each line says its priority, the metrics count each
// priority's waits, and /sluice/limits shows them.
func TestPriorityHeader(t *testing.T) {
	e := newEnv(t, "200", func(c *config.Config) {
		withRate("rpm", "openai", 120)(c)
		p := c.Policies["interactive"]
		p.Timeout.Total = 10 * time.Second // the last batch call waits 3 s
		c.Policies["interactive"] = p
	})
	var batchDone atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() {
			resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Sluice-Priority", "batch")
			body(t, resp)
			if resp.StatusCode != 200 {
				t.Errorf("batch call: status %d", resp.StatusCode)
			}
			batchDone.Add(1)
		})
	}
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
	body(t, resp)
	took, done := time.Since(start), batchDone.Load()
	if resp.StatusCode != 200 || took > 1200*time.Millisecond || done > 2 {
		t.Errorf("the interactive call: status %d after %v with %d batch calls done; want 200 within 1.2 s, before the 4 batch calls still waiting", resp.StatusCode, took, done)
	}
	wg.Wait()
	count := map[string]int{}
	for _, l := range e.logLines() {
		p, _ := l["priority"].(string)
		count[p]++
	}
	if count["batch"] != 6 || count["interactive"] != 1 || len(count) != 2 {
		t.Errorf("log lines by priority %v, want 6 batch and 1 interactive", count)
	}
	m := body(t, e.do("GET", "/metrics", ""))
	for _, want := range []string{`sluice_ratelimit_priority_wait_seconds_count{priority="batch"} 6`, `sluice_ratelimit_priority_wait_seconds_count{priority="interactive"} 1`,
		`sluice_ratelimit_priority_queued{priority="batch"} 0`} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	var v limitstats.View
	if err := json.Unmarshal([]byte(body(t, e.do("GET", "/sluice/limits", ""))), &v); err != nil {
		t.Fatal(err)
	}
	if b, i := v.Priorities["batch"], v.Priorities["interactive"]; b.Admitted != 6 || i.Admitted != 1 || b.WaitedMS < 1500 || i.WaitedMS > 1000 {
		t.Errorf("/sluice/limits priorities %+v, want 6 batch admitted having waited ≥ 1.5 s in all, 1 interactive under 1 s", v.Priorities)
	}
}

// A Sluice-Priority that is not interactive or batch is refused with 400
// invalid_request naming the fix; nothing goes upstream.
func TestPriorityHeaderRefused(t *testing.T) {
	e := newEnv(t, "200", nil)
	for _, v := range []string{"urgent", "Batch", ""} {
		resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Sluice-Priority", v)
		b := body(t, resp)
		if resp.StatusCode != 400 || !strings.Contains(b, "invalid_request") || !strings.Contains(b, "send interactive or batch") {
			t.Errorf("Sluice-Priority %q: %d %s; want 400 invalid_request naming interactive or batch", v, resp.StatusCode, b)
		}
	}
	if n := e.up.Calls(); n != 0 {
		t.Errorf("%d calls went upstream", n)
	}
}
