package sluice

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/idempotency"
)

// keyed returns a chat request of r carrying an Idempotency-Key.
func (r *rig) keyed(key, body string) *http.Request {
	req := r.request("/v1/chat/completions", body)
	req.Header.Set("Idempotency-Key", key)
	return req
}

// A Transport with Answers calls upstream once for a key: the duplicate
// gets the answer read the first time, byte for byte, JSON or stream.
func TestTransportReplaysKeptAnswer(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			r := newRig(t, "200", fastPolicy())
			r.tr.Answers = &idempotency.Memory{}
			body := `{"model":"gpt-4o-mini","stream":` + fmt.Sprint(stream) + `,"messages":[]}`
			first, err := r.tr.RoundTrip(r.keyed("job-1", body))
			if err != nil {
				t.Fatal(err)
			}
			got1 := readAll(t, first)
			again, err := r.tr.RoundTrip(r.keyed("job-1", body))
			if err != nil {
				t.Fatal(err)
			}
			got2 := readAll(t, again)
			if got1 != got2 || again.StatusCode != 200 || again.Header.Get("Idempotent-Replayed") != "true" ||
				again.Header.Get("Sluice-Replay-Of") != first.Header.Get("Sluice-Request-Id") {
				t.Fatalf("replay %d %v %q, want the first answer %q replayed", again.StatusCode, again.Header, got2, got1)
			}
			if r.srv.Calls() != 1 {
				t.Errorf("%d upstream calls, want 1", r.srv.Calls())
			}
			lines := r.lines()
			if last := lines[len(lines)-1]; last["outcome"] != "replayed" {
				t.Errorf("last line %v, want outcome replayed", last)
			}
		})
	}
}

// Only an answer read to its end is kept; a key sent with another body is
// refused; another caller's key is its own; a failure keeps nothing.
func TestTransportAnswerRules(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	r.tr.Answers = &idempotency.Memory{}
	body := `{"model":"gpt-4o-mini","messages":[]}`
	resp, err := r.tr.RoundTrip(r.keyed("k", body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close() // not read: nothing kept
	resp, err = r.tr.RoundTrip(r.keyed("k", body))
	if err != nil || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("after an unread answer: %v, replayed %q; want a call", err, resp.Header.Get("Idempotent-Replayed"))
	}
	readAll(t, resp)
	if _, err := r.tr.RoundTrip(r.keyed("k", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"x"}]}`)); !errors.Is(err, ErrIdempotencyKeyReused) {
		t.Errorf("key reused: %v, want ErrIdempotencyKeyReused", err)
	}
	other := r.keyed("k", body)
	other.Header.Set("Authorization", "Bearer sk-someone-else")
	resp, err = r.tr.RoundTrip(other)
	if err != nil || resp.Header.Get("Idempotent-Replayed") != "" {
		t.Errorf("another caller: %v, replayed %q; want its own call", err, resp.Header.Get("Idempotent-Replayed"))
	}
	readAll(t, resp)
	if r.srv.Calls() != 3 {
		t.Errorf("%d upstream calls, want 3", r.srv.Calls())
	}
	r.srv.Provider.Script = "400"
	for range 2 {
		if resp, err := r.tr.RoundTrip(r.keyed("k-fail", body)); err == nil {
			readAll(t, resp)
		}
	}
	if r.srv.Calls() != 5 {
		t.Errorf("%d upstream calls, want 5: a failure is not kept", r.srv.Calls())
	}
	if _, err := r.tr.RoundTrip(r.keyed(strings.Repeat("x", 300), body)); err == nil {
		t.Error("a 300-byte key was accepted")
	}
}

// Eight duplicates at once through one Transport make one upstream call.
func TestTransportConcurrentDuplicates(t *testing.T) {
	r := newRig(t, "slow:200ms", fastPolicy())
	r.tr.Answers = &idempotency.Memory{}
	var wg sync.WaitGroup
	bodies := make([]string, 8)
	for i := range 8 {
		wg.Go(func() {
			resp, err := r.tr.RoundTrip(r.keyed("dup", `{"model":"gpt-4o-mini","messages":[]}`))
			if err != nil {
				t.Error(err)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			bodies[i] = string(b)
		})
	}
	wg.Wait()
	if r.srv.Calls() != 1 {
		t.Errorf("%d upstream calls for 8 duplicates, want 1", r.srv.Calls())
	}
	for i := range bodies {
		if bodies[i] != bodies[0] || bodies[i] == "" {
			t.Errorf("duplicate %d got %q, want %q", i, bodies[i], bodies[0])
		}
	}
}

// A Go agent that keeps its answers in a state directory gets, after a
// restart, the answer its first run already paid for: the same
// Idempotency-Key (a job id, not a fresh random value) is replayed, with
// no second call to the provider.
func ExampleTransport_answers() {
	provider := fake.NewServer("200")
	defer provider.Close()
	dir, _ := os.MkdirTemp("", "sluice-answers")
	defer os.RemoveAll(dir)

	run := func() (replayed string) { // one run of the agent: a process of its own
		answers, err := idempotency.OpenFile(dir, idempotency.FileOptions{})
		if err != nil {
			panic(err)
		}
		defer answers.Close()
		client := &http.Client{Transport: &Transport{Policy: Interactive(), Answers: answers}}
		req, _ := http.NewRequest("POST", provider.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"nightly report"}]}`))
		req.Header.Set("Idempotency-Key", "nightly-report-2026-12-01")
		resp, err := client.Do(req)
		if err != nil {
			panic(err)
		}
		io.Copy(io.Discard, resp.Body) // read to its end: the answer is kept
		resp.Body.Close()
		return resp.Header.Get("Idempotent-Replayed")
	}
	fmt.Printf("first run: replayed %q\n", run())
	fmt.Printf("after a restart: replayed %q\n", run())
	fmt.Println("provider calls:", provider.Calls())
	// Output:
	// first run: replayed ""
	// after a restart: replayed "true"
	// provider calls: 1
}
