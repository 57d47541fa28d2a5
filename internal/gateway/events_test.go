package gateway

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/internal/events"
	"github.com/sluice-llm/sluice/internal/keypool"
)

// opLines returns the operator event lines a JSON logger wrote to buf,
// those of kind only when kind is not "".
func opLines(t *testing.T, buf *syncBuffer, kind string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(buf.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("bad log line %q: %v", sc.Text(), err)
		}
		if ev, _ := m["event"].(string); ev != "" && (kind == "" || ev == kind) {
			out = append(out, m)
		}
	}
	return out
}

// transitions returns the from→to of the breaker lines of name.
func transitions(t *testing.T, buf *syncBuffer, name string) []string {
	var out []string
	for _, l := range opLines(t, buf, events.KindBreaker) {
		if l["breaker"] == name {
			out = append(out, l["from"].(string)+"→"+l["to"].(string))
		}
	}
	return out
}

// withBreaker sets the interactive policy's breaker: open after failures,
// cool for cool; three attempts a call.
func withBreaker(failures int, cool time.Duration) func(*config.Config) {
	return func(c *config.Config) {
		p := c.Policies["interactive"]
		p.Breaker.Failures, p.Breaker.Cool = failures, cool
		p.Retry.MaxAttempts = 3
		c.Policies["interactive"] = p
	}
}

// An outage is told on the gateway's logger: the provider answers 503
// until its breaker opens (closed→open, with the reason), the next call
// is refused (one refused line, naming the breaker and the request id),
// and after the cool period the probe succeeds (open→half_open, then
// half_open→closed). Each is one structured line with event=<kind>.
func TestOperatorEventsOutage(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnvWith(t, "200", withBreaker(3, time.Second), // a cool period the refused call cannot outlast
		Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	resp := e.do("POST", "/openai/v1/chat/completions", chatBody, fake.ScriptHeader, "503")
	if body(t, resp); resp.StatusCode != 503 || e.up.Calls() != 3 {
		t.Fatalf("the failing call: %d after %d calls, want 503 after 3", resp.StatusCode, e.up.Calls())
	}
	if got := transitions(t, logs, "openai"); len(got) != 1 || got[0] != "closed→open" {
		t.Fatalf("breaker lines %q, want closed→open; log:\n%s", got, logs)
	}
	open := opLines(t, logs, events.KindBreaker)[0]
	if open["level"] != "WARN" || open["reason"] != "failures" || open["until"] == nil {
		t.Errorf("the open line %v, want a warning with its reason and until", open)
	}
	resp = e.do("POST", "/openai/v1/chat/completions", chatBody, "X-Request-Id", "refused-call-1")
	if body(t, resp); resp.StatusCode != 503 || e.up.Calls() != 3 {
		t.Fatalf("the refused call: %d, %d upstream calls; want 503, 3", resp.StatusCode, e.up.Calls())
	}
	ref := opLines(t, logs, events.KindRefused)
	if len(ref) != 1 || ref[0]["breaker"] != "openai" || ref[0]["request_id"] != "refused-call-1" {
		t.Errorf("refused lines %v, want one naming breaker openai and the call's id", ref)
	}
	waitFor(t, "the probe to close the breaker", func() bool {
		resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
		body(t, resp)
		return resp.StatusCode == 200
	})
	want := []string{"closed→open", "open→half_open", "half_open→closed"}
	if got := transitions(t, logs, "openai"); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("breaker lines %q, want %q; log:\n%s", got, want, logs)
	}
}

// unthrottled lets every operator line of gw through: a test that makes a
// breaker open twice sees both lines.
func unthrottled(gw *Gateway) {
	gw.events.SetEvery(0)
}

// Every transition this process makes is logged by the breakers' hook, at
// once, with no refresh to read the store after the first: an outage and
// its recovery, then an operator's reset through the admin endpoint.
func TestOperatorEventsFromTheHook(t *testing.T) {
	defer func(d time.Duration) { breakerPollEvery = d }(breakerPollEvery)
	breakerPollEvery = time.Hour
	logs := &syncBuffer{}
	e := newEnvWith(t, "200", withBreaker(3, 300*time.Millisecond),
		Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	unthrottled(e.gw)
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, fake.ScriptHeader, "503"))
	if got := transitions(t, logs, "openai"); strings.Join(got, " ") != "closed→open" {
		t.Fatalf("after the outage: breaker lines %q, want closed→open", got)
	}
	waitFor(t, "the probe to close the breaker", func() bool {
		resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
		body(t, resp)
		return resp.StatusCode == 200
	})
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, fake.ScriptHeader, "503"))
	if resp := e.do("POST", "/sluice/breakers/openai/reset", ""); resp.StatusCode != 200 {
		t.Fatalf("reset: %d", resp.StatusCode)
	} else {
		body(t, resp)
	}
	want := "closed→open open→half_open half_open→closed closed→open open→closed"
	if got := transitions(t, logs, "openai"); strings.Join(got, " ") != want {
		t.Errorf("breaker lines %q, want %q; log:\n%s", got, want, logs)
	}
	for _, l := range opLines(t, logs, events.KindBreaker) {
		if l["transitions"] != 1.0 {
			t.Errorf("line %v counts %v transitions, want 1", l, l["transitions"])
		}
	}
}

// The hook and a refresh that reads the store every millisecond see the
// same transitions: each is logged once, whichever saw it first.
func TestOperatorEventsOncePerTransition(t *testing.T) {
	defer func(d time.Duration) { breakerPollEvery = d }(breakerPollEvery)
	breakerPollEvery = time.Millisecond
	logs := &syncBuffer{}
	e := newEnvWith(t, "200", withBreaker(3, 200*time.Millisecond),
		Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	unthrottled(e.gw)
	for range 3 {
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() { body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, fake.ScriptHeader, "503")) })
		}
		wg.Wait()
		waitFor(t, "the probe to close the breaker", func() bool {
			resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
			body(t, resp)
			return resp.StatusCode == 200
		})
	}
	one := "closed→open open→half_open half_open→closed"
	if got, want := strings.Join(transitions(t, logs, "openai"), " "), one+" "+one+" "+one; got != want {
		t.Errorf("breaker lines %q, want %q", got, want)
	}
}

// A storm of 1,000 refusals writes a bounded number of lines: the first,
// then at most one per events.Every, the later ones counting those held
// back (suppressed).
func TestOperatorEventsStormBounded(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnvWith(t, "200", withBreaker(1, time.Hour),
		Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, fake.ScriptHeader, "503"))
	start := time.Now()
	var wg sync.WaitGroup
	var mu sync.Mutex
	refused := 0
	for range 10 {
		wg.Go(func() {
			for range 100 {
				resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
				body(t, resp)
				if resp.StatusCode == 503 {
					mu.Lock()
					refused++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if refused != 1000 || e.up.Calls() != 1 {
		t.Fatalf("%d refused, %d upstream calls; want 1000, 1", refused, e.up.Calls())
	}
	lines := opLines(t, logs, "")
	bound := 2 + int(elapsed/events.Every) // the open line, and the refused lines
	if len(lines) < 2 || len(lines) > bound {
		t.Errorf("%d operator lines for 1,000 refusals in %v, want 2 to %d:\n%s", len(lines), elapsed, bound, logs)
	}
	suppressed := 0
	for _, l := range opLines(t, logs, events.KindRefused) {
		if n, ok := l["suppressed"].(float64); ok {
			suppressed += int(n)
		}
	}
	if suppressed > 999 {
		t.Errorf("lines count %d refusals held back, more than there were", suppressed)
	}
}

// A transition another process sharing the state makes is told too: a
// second gateway on the same breaker store, which makes no call, logs the
// breaker opening and closing again, from the records it polls.
func TestOperatorEventsFromAnotherProcess(t *testing.T) {
	defer func(d time.Duration) { breakerPollEvery = d }(breakerPollEvery)
	breakerPollEvery = 10 * time.Millisecond
	store := breaker.NewMemory()
	logs := &syncBuffer{}
	other := newEnvWith(t, "200", withBreaker(3, 300*time.Millisecond),
		Options{Store: store, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	e := newEnvWith(t, "200", withBreaker(3, 300*time.Millisecond), Options{Store: store})
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, fake.ScriptHeader, "503"))
	waitFor(t, "the other gateway to log the breaker open", func() bool {
		return strings.Join(transitions(t, logs, "openai"), " ") == "closed→open"
	})
	waitFor(t, "the probe to close the breaker", func() bool {
		resp := e.do("POST", "/openai/v1/chat/completions", chatBody)
		body(t, resp)
		return resp.StatusCode == 200
	})
	waitFor(t, "the other gateway to log the breaker closed", func() bool {
		got := transitions(t, logs, "openai")
		return len(got) >= 2 && strings.HasSuffix(got[len(got)-1], "→closed")
	})
	if other.up.Calls() != 0 {
		t.Errorf("the other gateway made %d calls", other.up.Calls())
	}
}

// A pool key paused by a 429 and a budget exhausted are operator events:
// one line each, however many calls the budget then refuses.
func TestOperatorEventsBudgetAndKeys(t *testing.T) {
	logs := &syncBuffer{}
	e := newEnvWith(t, "200", func(c *config.Config) {
		withPool(c)
		tenCentCalls(0.25, "all")(c)
	}, Options{Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	e.up.Provider.KeyScripts = map[string]string{poolKeyA: "429:retry-after=30"}
	statuses := []int{}
	for range 8 {
		resp := e.do("POST", "/openai/v1/chat/completions", cappedBody)
		body(t, resp)
		statuses = append(statuses, resp.StatusCode)
	}
	if statuses[0] != 200 || statuses[1] != 200 || statuses[7] != 429 {
		t.Fatalf("statuses %v, want two answers, then refusals", statuses)
	}
	keys := opLines(t, logs, events.KindKeyPaused)
	if len(keys) != 1 || keys[0]["key"] != keypool.Hash(poolKeyA) || keys[0]["reason"] != "rate_limit" || keys[0]["provider"] != "openai" {
		t.Errorf("key lines %v, want one for key %s (rate_limit)", keys, keypool.Hash(poolKeyA))
	}
	budget := opLines(t, logs, events.KindBudget)
	if len(budget) != 1 || budget[0]["budget"] != "daily" || budget[0]["level"] != "WARN" {
		t.Errorf("budget lines %v, want one warning for budget daily", budget)
	}
	if strings.Contains(logs.String(), poolKeyA) || strings.Contains(logs.String(), clientKey) {
		t.Error("a key reached the log")
	}
}

// A breaker store that has fallen back to local breakers is an operator
// event: an error line for the breakers' store, from the gateway's
// refresh.
func TestOperatorEventsStoreDegraded(t *testing.T) {
	defer func(d time.Duration) { breakerPollEvery = d }(breakerPollEvery)
	breakerPollEvery = 2 * time.Millisecond
	logs := &syncBuffer{}
	newEnvWith(t, "200", nil, Options{Store: degradedStore{breaker.NewMemory()},
		Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	waitFor(t, "the degraded line", func() bool { return len(opLines(t, logs, events.KindStore)) == 1 })
	if l := opLines(t, logs, events.KindStore)[0]; l["level"] != "ERROR" || l["store"] != "breakers" {
		t.Errorf("store line %v, want an error for the breakers' store", l)
	}
}
