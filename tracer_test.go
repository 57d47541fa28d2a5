package sluice

import (
	"context"
	"net/http"
	"sync"
	"testing"
)

type traceKey struct{}

// recTracer records the attempts it is told of, and puts a header of its
// own on each attempt's request.
type recTracer struct {
	mu     sync.Mutex
	starts []Attempt
	ends   []Attempt
	ctxOK  []bool // the attempt's request carried the context StartAttempt returned
}

func (r *recTracer) StartAttempt(ctx context.Context, h http.Header, a *Attempt) (context.Context, func(*Attempt)) {
	r.mu.Lock()
	r.starts = append(r.starts, *a)
	r.mu.Unlock()
	h.Set("Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	return context.WithValue(ctx, traceKey{}, a.Attempt), func(a *Attempt) {
		r.mu.Lock()
		r.ends = append(r.ends, *a)
		r.mu.Unlock()
	}
}

// ctxBase records whether each attempt's request carries the tracer's
// context, then sends it on.
type ctxBase struct {
	rt http.RoundTripper
	tr *recTracer
}

func (b ctxBase) RoundTrip(req *http.Request) (*http.Response, error) {
	n, _ := req.Context().Value(traceKey{}).(int)
	b.tr.mu.Lock()
	b.tr.ctxOK = append(b.tr.ctxOK, n == len(b.tr.starts))
	b.tr.mu.Unlock()
	return b.rt.RoundTrip(req)
}

// The Tracer sees every attempt start and end once, with its line; each
// attempt's request carries its context and the header it set, and the
// caller's request is left as it came.
func TestTracerSeesEachAttempt(t *testing.T) {
	r := newRig(t, "503,503,200", fastPolicy())
	tr := &recTracer{}
	r.tr.Tracer = tr
	r.tr.Base = ctxBase{rt: newBase(fastPolicy().Timeout.Connect), tr: tr}
	req := r.request("/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`)
	resp, err := r.tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	if req.Header.Get("Traceparent") != "" {
		t.Error("the caller's request got the attempt's traceparent")
	}
	if len(tr.starts) != 3 || len(tr.ends) != 3 {
		t.Fatalf("starts %d, ends %d; want 3 each", len(tr.starts), len(tr.ends))
	}
	want := []Outcome{OutcomeRetry, OutcomeRetry, OutcomeOK}
	for i, e := range tr.ends {
		s := tr.starts[i]
		if s.Attempt != i+1 || e.Attempt != i+1 || s.Model != "gpt-4o-mini" || s.RequestID == "" || s.Outcome != "" {
			t.Errorf("attempt %d: start %+v", i+1, s)
		}
		if e.Outcome != want[i] || (i < 2 && (e.Status != 503 || e.RetryInMS <= 0)) || (i == 2 && e.Status != 200) {
			t.Errorf("attempt %d ended %s status %d retry_in %v; want %s", i+1, e.Outcome, e.Status, e.RetryInMS, want[i])
		}
		if !tr.ctxOK[i] {
			t.Errorf("attempt %d: the request did not carry the tracer's context", i+1)
		}
	}
	reqs := r.srv.Requests()
	if len(reqs) != 3 {
		t.Fatalf("upstream got %d requests, want 3", len(reqs))
	}
	for i, q := range reqs {
		if q.Header.Get("Traceparent") == "" || q.Header.Get("Authorization") == "" {
			t.Errorf("upstream request %d: traceparent %q, authorization kept %v", i+1, q.Header.Get("Traceparent"), q.Header.Get("Authorization") != "")
		}
	}
}
