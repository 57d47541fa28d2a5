package sluice

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/internal/leaktest"
)

// stubKeys is a pool of two keys, "a" then "b": Take gives the first not
// paused, Learn pauses a key on any 429 and reports whether the other is
// free.
type stubKeys struct {
	mu      sync.Mutex
	paused  map[string]bool
	learned []string // "id status"
	models  []string // "provider model" of each take and each answer learned
	sent    []time.Time
	refuse  error
}

func (k *stubKeys) Take(ctx context.Context, ask hook.Ask) (string, func(http.Header), error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.models = append(k.models, ask.Provider+" "+ask.Model)
	if k.refuse != nil {
		return "", nil, k.refuse
	}
	for _, id := range []string{"a", "b"} {
		if !k.paused[id] {
			return id, func(h http.Header) { h.Set("Authorization", "Bearer sk-"+id) }, nil
		}
	}
	return "", nil, rateLimited{}
}

func (k *stubKeys) Learn(ans hook.Answer) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	id := ans.Key
	k.learned = append(k.learned, id+" "+http.StatusText(ans.Status))
	k.models, k.sent = append(k.models, ans.Provider+" "+ans.Model), append(k.sent, ans.Sent)
	if ans.Status != 429 {
		return false
	}
	if k.paused == nil {
		k.paused = map[string]bool{}
	}
	k.paused[id] = true
	return len(k.paused) < 2
}

// A 429 on the first key, rate limit or quota, moves the call at once to
// the second: one answer, two upstream calls, each with its own key, no
// backoff and no Retry-After wait (base 5 s, Retry-After 30 s), no retry
// budget token, the breaker untold; the Limiter is not told the key's
// pause; each line names its key.
func TestKeysMoveOnAfter429(t *testing.T) {
	for _, first := range []string{"429:retry-after=30", "429:insufficient_quota"} {
		t.Run(first, func(t *testing.T) {
			p := fastPolicy()
			p.Retry.Base, p.Retry.Cap = 5*time.Second, 5*time.Second
			p.Breaker.Failures = 1
			r := newRig(t, "200", p)
			r.srv.Provider.KeyScripts = map[string]string{"sk-a": first}
			keys := &stubKeys{}
			lim := &stubLimiter{}
			r.tr.Keys, r.tr.Limiter = keys, lim
			full := &RetryBudget{} // three retries outstanding already: a fourth is refused
			full.retries.Add(3)
			r.tr.RetryBudget = full
			start := time.Now()
			resp, err := r.chat(false)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if resp.StatusCode != 200 || r.srv.Calls() != 2 {
				t.Fatalf("status %d after %d upstream calls, want 200 after 2", resp.StatusCode, r.srv.Calls())
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v: the move to another key waited", d)
			}
			reqs := r.srv.Requests()
			if a, b := reqs[0].Header.Get("Authorization"), reqs[1].Header.Get("Authorization"); a != "Bearer sk-a" || b != "Bearer sk-b" {
				t.Errorf("keys sent %q then %q, want sk-a then sk-b", a, b)
			}
			lines := r.lines()
			if len(lines) != 2 || lines[0]["key"] != "a" || lines[1]["key"] != "b" || lines[0]["outcome"] != "retry" {
				t.Errorf("lines %v, want key a (retry) then key b", lines)
			}
			if len(lim.learned) != 0 {
				t.Errorf("the Limiter learned %+v; a pool's answers are the key's", lim.learned)
			}
			// Take and Learn are told the call's model (a key's limits are
			// per model), and Learn when each attempt was sent.
			if want := slices.Repeat([]string{"openai gpt-4o-mini"}, 4); !slices.Equal(keys.models, want) {
				t.Errorf("keys told %q, want %q", keys.models, want)
			}
			if len(keys.sent) != 2 || keys.sent[0].Before(start) || !keys.sent[1].After(keys.sent[0]) || time.Since(keys.sent[1]) > time.Second {
				t.Errorf("keys told the attempts were sent at %v (call started %v), want each attempt's own start", keys.sent, start)
			}
			if calls, retrying := full.InFlight(); calls != 0 || retrying != 3 {
				t.Errorf("retry budget holds %d attempts, %d retries after the call, want 0 and 3 as before", calls, retrying)
			}
			if rec, _ := r.tr.Breaker(r.tr.BreakerName("openai", "gpt-4o-mini")).Record(); rec.State != breaker.Closed || rec.Failures != 0 {
				t.Errorf("breaker %+v, want closed with no failure", rec)
			}
		})
	}
}

// With every key paused, a 429 is retried as any 429 is (its Retry-After
// heeded), and Take's refusal of the retry ends the call with the 429.
func TestKeysAllPausedEndsWithThe429(t *testing.T) {
	r := newRig(t, "429", fastPolicy())
	keys := &stubKeys{paused: map[string]bool{"b": true}}
	r.tr.Keys = keys
	resp, err := r.chat(false)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if resp.StatusCode != 429 || r.srv.Calls() != 1 {
		t.Errorf("status %d after %d calls, want the provider's 429 after 1", resp.StatusCode, r.srv.Calls())
	}
}

// A refused first Take ends the call with its error and one line of
// outcome rate_limited, no upstream call.
func TestKeysRefusedFirst(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	r.tr.Keys = &stubKeys{refuse: rateLimited{}}
	_, err := r.chat(false)
	if _, ok := err.(rateLimited); !ok {
		t.Fatalf("err %v, want the pool's refusal", err)
	}
	r.tr.Log.Flush()
	lines := r.lines()
	if r.srv.Calls() != 0 || len(lines) != 1 || lines[0]["outcome"] != "rate_limited" {
		t.Errorf("%d upstream calls, lines %v", r.srv.Calls(), lines)
	}
}

// A rate limit or a quota sent as a stream's first event, in a 200, is
// learnt as the 429 it stands for: the key is paused or taken out, and
// the call moves at once to the other key, whose stream the caller gets
// whole. Nothing of the first stream reached the caller.
func TestKeysMoveOnAfterErrorEvent(t *testing.T) {
	for _, tt := range []struct{ name, event string }{
		{"rate_limit", `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`},
		{"quota", `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`},
	} {
		event := tt.event
		t.Run(tt.name, func(t *testing.T) {
			leaktest.Check(t)
			var mu sync.Mutex
			var keysSent []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				io.Copy(io.Discard, r.Body)
				mu.Lock()
				keysSent = append(keysSent, r.Header.Get("Authorization"))
				mu.Unlock()
				w.Header().Set("Content-Type", "text/event-stream")
				if r.Header.Get("Authorization") == "Bearer sk-a" {
					io.WriteString(w, "data: "+event+"\n\n")
					return
				}
				io.WriteString(w, openaiChunks+openaiDone)
			}))
			t.Cleanup(srv.Close)
			p := fastPolicy()
			p.Retry.Base, p.Retry.Cap = 5*time.Second, 5*time.Second
			logs := &lockedBuffer{}
			keys := &stubKeys{}
			tr := &Transport{Policy: p, Provider: "openai", Log: NewAttemptLog(logs), Keys: keys}
			t.Cleanup(tr.CloseIdleConnections)
			r := &rig{t: t, tr: tr, logs: logs}
			start := time.Now()
			resp, err := r.post(srv.URL + "/v1/chat/completions")
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, resp); got != openaiChunks+openaiDone {
				t.Errorf("body %q, want key b's stream whole", got)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v: the move to another key waited", d)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(keysSent) != 2 || keysSent[0] != "Bearer sk-a" || keysSent[1] != "Bearer sk-b" {
				t.Errorf("keys sent %q, want sk-a then sk-b", keysSent)
			}
			if want := []string{"a OK", "a Too Many Requests", "b OK"}; !slices.Equal(keys.learned, want) { // the 200's headers, then its event
				t.Errorf("the Keys learned %q, want %q", keys.learned, want)
			}
			if lines := r.lines(); len(lines) != 2 || lines[0]["key"] != "a" || lines[0]["outcome"] != "retry" || lines[1]["outcome"] != "ok" {
				t.Errorf("lines %v, want key a (retry) then key b (ok)", lines)
			}
		})
	}
}
