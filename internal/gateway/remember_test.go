package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/idempotency"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
)

// A call with an Idempotency-Key is answered once upstream; the same
// request again gets the kept answer byte for byte, marked replayed and
// naming the first call, with a fresh request id, for JSON and streams.
func TestReplaySequential(t *testing.T) {
	for _, tc := range []struct{ name, path, body string }{
		{"json", "/openai/v1/chat/completions", chatBody},
		{"openai stream", "/openai/v1/chat/completions", chatStream},
		{"anthropic stream", "/anthropic/v1/messages", msgStream},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, "200", func(c *config.Config) { // priced, so the replay saves what the first call cost
				c.Prices = map[string]spend.Price{"*": {Input: 1000, Output: 2000}}
				c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 1e9, Period: "day", Scope: "all"}}
			})
			first := e.do("POST", tc.path, tc.body, "Idempotency-Key", "job-42")
			got1 := body(t, first)
			second := e.do("POST", tc.path, tc.body, "Idempotency-Key", "job-42")
			got2 := body(t, second)
			if first.StatusCode != 200 || second.StatusCode != 200 || got1 != got2 || got1 == "" {
				t.Fatalf("first %d %q\nreplay %d %q; want the same 200 answer", first.StatusCode, got1, second.StatusCode, got2)
			}
			if e.up.Calls() != 1 {
				t.Errorf("%d upstream calls, want 1", e.up.Calls())
			}
			id1, id2 := first.Header.Get("Sluice-Request-Id"), second.Header.Get("Sluice-Request-Id")
			if second.Header.Get("Idempotent-Replayed") != "true" || second.Header.Get("Sluice-Replay-Of") != id1 || id2 == "" || id2 == id1 {
				t.Errorf("replay headers: Idempotent-Replayed %q, Sluice-Replay-Of %q (first %q), Sluice-Request-Id %q",
					second.Header.Get("Idempotent-Replayed"), second.Header.Get("Sluice-Replay-Of"), id1, id2)
			}
			if first.Header.Get("Idempotent-Replayed") != "" {
				t.Error("the first answer says it is a replay")
			}
			if ct := second.Header.Get("Content-Type"); ct != first.Header.Get("Content-Type") {
				t.Errorf("replay Content-Type %q, first %q", ct, first.Header.Get("Content-Type"))
			}
			lines := e.logLines()
			last := lines[len(lines)-1]
			if last["outcome"] != "replayed" || last["replay_of"] != id1 || last["request_id"] != id2 || last["cost_usd"] != nil ||
				last["model"] == "" || last["model"] != lines[len(lines)-2]["model"] {
				t.Errorf("the replay's log line %v, want outcome replayed, replay_of %s, no cost, the first call's model", last, id1)
			}
			if first := lines[len(lines)-2]; first["idempotency"] != "kept" || last["saved_usd"] != first["cost_usd"] || first["cost_usd"] == nil {
				t.Errorf("the first call's line says %v of its answer at %v, the replay's saved %v; want kept, and the replay's saved_usd its cost",
					first["idempotency"], first["cost_usd"], last["saved_usd"])
			}
			if m := body(t, e.do("GET", "/metrics", "")); !strings.Contains(m, `sluice_idempotent_replays_total{route="`) {
				t.Error("/metrics does not count the replay")
			}
			var st struct {
				Replays struct {
					Calls    int     `json:"calls"`
					SavedUSD float64 `json:"saved_usd"`
				} `json:"replays"`
			}
			raw := body(t, e.do("GET", "/sluice/status.json", ""))
			json.Unmarshal([]byte(raw), &st)
			cost, _ := lines[len(lines)-2]["cost_usd"].(float64)
			if !strings.Contains(raw, `"replayed":1`) || st.Replays.Calls != 1 || cost <= 0 || st.Replays.SavedUSD != cost {
				t.Errorf("status.json shows replays %+v, want 1 call saving the first call's $%v: %s", st.Replays, cost, raw)
			}
		})
	}
}

// Eight duplicates at once make one upstream call: one runs it, the
// others wait for it and replay its answer.
func TestConcurrentDuplicatesOneUpstreamCall(t *testing.T) {
	e := newEnv(t, "slow:300ms", nil)
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	statuses := make([]int, 8)
	for i := range 8 {
		wg.Go(func() {
			resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Idempotency-Key", "delivery-7")
			bodies[i], statuses[i] = body(t, resp), resp.StatusCode
		})
	}
	wg.Wait()
	if e.up.Calls() != 1 {
		t.Errorf("%d upstream calls for 8 duplicates, want 1", e.up.Calls())
	}
	for i := range 8 {
		if statuses[i] != 200 || bodies[i] != bodies[0] {
			t.Errorf("duplicate %d: %d %q, want the one answer %q", i, statuses[i], bodies[i], bodies[0])
		}
	}
}

// Bad keys are refused before any call, a key reused with another body is
// refused 422, another caller with the same key is another identity, and
// a call that failed keeps nothing: its duplicate runs again.
func TestIdempotencyKeyRules(t *testing.T) {
	e := newEnv(t, "200", nil)
	for _, key := range []string{"", strings.Repeat("k", 256), "caf\u00e9", "a\tb"} {
		resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Idempotency-Key", key)
		if got := body(t, resp); resp.StatusCode != 400 || !strings.Contains(got, "invalid_request") {
			t.Errorf("key %q: %d %s, want 400 invalid_request", key, resp.StatusCode, got)
		}
	}
	if e.up.Calls() != 0 {
		t.Fatalf("%d upstream calls for refused keys", e.up.Calls())
	}
	body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, "Idempotency-Key", "k1"))
	other := strings.Replace(chatBody, "hi", "bye", 1)
	resp := e.do("POST", "/openai/v1/chat/completions", other, "Idempotency-Key", "k1")
	if got := body(t, resp); resp.StatusCode != 422 || !strings.Contains(got, "idempotency_key_reused") {
		t.Errorf("key reused with another body: %d %s, want 422 idempotency_key_reused", resp.StatusCode, got)
	}
	resp = e.do("POST", "/openai/v1/chat/completions", chatBody, "Idempotency-Key", "k1", "Authorization", "Bearer sk-another-caller")
	if body(t, resp); resp.StatusCode != 200 || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("another caller with the same key got %d, replayed %q; want its own call", resp.StatusCode, resp.Header.Get("Idempotent-Replayed"))
	}
	if e.up.Calls() != 2 {
		t.Errorf("%d upstream calls, want 2 (one per caller)", e.up.Calls())
	}
	// A failure is not kept.
	e.up.Provider.Script = "400"
	for range 2 {
		body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, "Idempotency-Key", "k-fail"))
	}
	if e.up.Calls() != 4 {
		t.Errorf("%d upstream calls, want 4: a failed call's duplicate runs again", e.up.Calls())
	}
}

// A client that leaves mid-stream does not cancel a call with a key: the
// gateway reads the stream to its end and keeps it, and the client's retry
// gets the whole answer with no second upstream call.
func TestClientGoneCallFinishedAndKept(t *testing.T) {
	e := newEnv(t, "stream:events=20;interval=20ms", longTotal)
	leaveStream(t, e, "cron-run-1")
	// The retry waits for the finishing call and replays it whole.
	again := e.do("POST", "/openai/v1/chat/completions", chatStream, "Idempotency-Key", "cron-run-1")
	got := body(t, again)
	if again.StatusCode != 200 || again.Header.Get("Idempotent-Replayed") != "true" || !strings.Contains(got, "[DONE]") {
		t.Fatalf("retry: %d replayed %q: %q; want the whole stream replayed", again.StatusCode, again.Header.Get("Idempotent-Replayed"), got)
	}
	if e.up.Calls() != 1 {
		t.Errorf("%d upstream calls, want 1", e.up.Calls())
	}
	if n := strings.Count(got, "data: "); n < 20 {
		t.Errorf("replay has %d events, want the stream's all", n)
	}
}

// longTotal gives the interactive policy a total of 10 s, longer than the
// streams a client leaves.
func longTotal(c *config.Config) {
	pol := c.Policies["interactive"]
	pol.Timeout.Total = 10 * time.Second
	c.Policies["interactive"] = pol
}

// leaveStream starts a chat stream through e, with Idempotency-Key key
// unless "", reads its first bytes and leaves, as a killed client does.
func leaveStream(t *testing.T, e *env, key string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", e.srv.URL+"/openai/v1/chat/completions", strings.NewReader(chatStream))
	req.Header.Set("Authorization", "Bearer "+clientKey)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadFull(resp.Body, make([]byte, 64))
	cancel()
	resp.Body.Close()
}

// Without a key, a client that leaves still cancels its call at once.
func TestClientGoneWithoutKeyCancels(t *testing.T) {
	e := newEnv(t, "stream:events=50;interval=20ms", longTotal)
	leaveStream(t, e, "")
	waitFor(t, "the call to end", func() bool { return e.gw.InFlight() == 0 })
	lines := e.logLines()
	if len(lines) != 1 || lines[0]["outcome"] != "client_cancel" {
		t.Errorf("lines %v, want the one attempt cancelled with its client", lines)
	}
}

// Kept answers on file state hold no credential: neither the client's key
// nor the injected one reaches the answers' directory.
func TestKeptAnswersHoldNoSecret(t *testing.T) {
	dir := t.TempDir()
	store, err := idempotency.OpenFile(filepath.Join(dir, "answers"), idempotency.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := newEnvWith(t, "200", func(c *config.Config) {
		p := c.Providers["openai"]
		p.APIKeyEnv = "UPSTREAM_KEY"
		c.Providers["openai"] = p
	}, Options{Answers: store})
	for range 2 {
		body(t, e.do("POST", "/openai/v1/chat/completions", chatBody, "Idempotency-Key", "secret-check", "Cookie", "session=sk-cookie-123"))
	}
	if e.up.Calls() != 1 {
		t.Fatalf("%d upstream calls, want 1", e.up.Calls())
	}
	var files int
	filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		files++
		raw, _ := os.ReadFile(path)
		for _, secret := range []string{clientKey, "sk-injected-1234", "sk-cookie-123", "secret-check"} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("%s holds %q", path, secret)
			}
		}
		if info.Mode().IsRegular() && info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", path, info.Mode().Perm())
		}
		return nil
	})
	if files == 0 {
		t.Fatal("no file in the answers' directory")
	}
	fi, _ := os.Stat(filepath.Join(dir, "answers"))
	if fi.Mode().Perm() != 0o700 {
		t.Errorf("answers directory mode %v, want 0700", fi.Mode().Perm())
	}
}

// A stream cut mid-way, or an answer over max_answer, is relayed but not
// kept: the duplicate calls upstream again.
func TestNotKept(t *testing.T) {
	for _, tc := range []struct {
		name, script, body string
		edit               func(*config.Config)
	}{
		{"cut stream", "stream:cut-after=3", chatStream, nil},
		// Whole on the wire, but it ended on the provider's error event:
		// the engine judges it failed, so it is not kept.
		{"stream ended on an error event", "stream:error-after=3", chatStream, nil},
		{"over max_answer", "200", chatBody, func(c *config.Config) { c.Idempotency.MaxAnswer = 64 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.script, tc.edit)
			for range 2 {
				resp := e.do("POST", "/openai/v1/chat/completions", tc.body, "Idempotency-Key", "k")
				body(t, resp)
				if resp.Header.Get("Idempotent-Replayed") != "" {
					t.Fatal("replayed an answer that must not be kept")
				}
			}
			if e.up.Calls() != 2 {
				t.Errorf("%d upstream calls, want 2", e.up.Calls())
			}
		})
	}
}

// failingAnswers is an answer store whose Begin or Keep fails.
type failingAnswers struct {
	idempotency.Memory
	begin, keep bool
}

var errStoreDown = errors.New("answer store down")

func (f *failingAnswers) Begin(id string, fp [32]byte, lease time.Duration, now time.Time) (idempotency.Result, error) {
	if f.begin {
		return idempotency.Result{}, errStoreDown
	}
	return f.Memory.Begin(id, fp, lease, now)
}

func (f *failingAnswers) Keep(m idempotency.Mark, a *idempotency.Answer, ttl time.Duration, now time.Time) error {
	if f.keep {
		return errStoreDown
	}
	return f.Memory.Keep(m, a, ttl, now)
}

// An answer store that fails lets the call run as if it had no key: each
// duplicate goes upstream, the failure is counted once per call, and the
// line says so — on the call's first line when the mark could not be
// taken, on its last when the answer could not be kept.
func TestAnswerStoreFails(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store *failingAnswers
	}{
		{"begin", &failingAnswers{begin: true}},
		{"keep", &failingAnswers{keep: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, "200", nil, Options{Answers: tc.store})
			for range 2 {
				if resp := e.do("POST", "/openai/v1/chat/completions", chatBody, "Idempotency-Key", "k-1"); resp.StatusCode != 200 || body(t, resp) == "" {
					t.Fatalf("status %d, want the upstream's 200", resp.StatusCode)
				}
			}
			if e.up.Calls() != 2 {
				t.Errorf("%d upstream calls, want 2: nothing could be kept", e.up.Calls())
			}
			if m := body(t, e.do("GET", "/metrics", "")); !strings.Contains(m, "sluice_idempotency_store_errors_total 2") {
				t.Errorf("store errors not counted once per call:\n%s", grepLines(m, "idempotency"))
			}
			for _, l := range e.logLines() {
				if l["idempotency"] != "store_error" {
					t.Errorf("line %v, want idempotency store_error", l)
				}
			}
		})
	}
}
