package sluice

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/hook"
)

// prioLimiter records the caller each Wait is asked for.
type prioLimiter struct{ seen []hook.Caller }

func (l *prioLimiter) Wait(_ context.Context, ask hook.Ask) (time.Duration, func(int64), error) {
	l.seen = append(l.seen, ask.Caller)
	return time.Millisecond, nil, nil
}

func (l *prioLimiter) Learn(hook.Answer) {}

// A call's priority is its context's (WithPriority), else its policy's,
// else interactive: the Limiter is asked with it, and the attempt's line
// says it.
func TestPriorityReachesLimiterAndLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy Priority
		ctx    Priority
		want   Priority
	}{
		{"default", "", "", "interactive"},
		{"nightly policy", PriorityBatch, "", "batch"},
		{"context over policy", PriorityBatch, PriorityInteractive, "interactive"},
		{"context batch", PriorityInteractive, PriorityBatch, "batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fastPolicy()
			p.Priority = tc.policy
			r := newRig(t, "200", p)
			lim := &prioLimiter{}
			r.tr.Limiter = lim
			req := r.request("/v1/chat/completions", `{"model":"gpt-4o-mini","messages":[]}`)
			if tc.ctx != "" {
				req = req.WithContext(WithPriority(req.Context(), tc.ctx))
			}
			resp, err := r.tr.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			readAll(t, resp)
			if len(lim.seen) != 1 || lim.seen[0] != (Caller{Priority: tc.want}) {
				t.Errorf("the Limiter was asked for %v, want %s", lim.seen, tc.want)
			}
			lines := r.lines()
			if len(lines) != 1 || lines[0]["priority"] != string(tc.want) {
				t.Fatalf("lines %v, want one with priority %s", lines, tc.want)
			}
		})
	}
	if Nightly().Priority != PriorityBatch || Interactive().WithDefaults().Priority != PriorityInteractive || (Policy{}).WithDefaults().Priority != PriorityInteractive {
		t.Error("Nightly's priority is not batch, or Interactive's (or the zero Policy's) not interactive")
	}
}

// Send's caller is Body.Caller, whatever the request's context says: its
// ID and priority reach the Limiter as they are given, and the context's
// caller (WithCaller) is RoundTrip's alone.
func TestSendCallerReachesLimiter(t *testing.T) {
	r := newRig(t, "200", fastPolicy())
	lim := &prioLimiter{}
	r.tr.Limiter = lim
	body := `{"model":"gpt-4o-mini","messages":[]}`
	req := r.request("/v1/chat/completions", body)
	req = req.WithContext(WithCaller(req.Context(), Caller{ID: "from-context", Priority: PriorityInteractive}))
	resp, err := r.tr.Send(req, Body{Bytes: []byte(body), Model: "gpt-4o-mini", Caller: Caller{ID: "alice", Priority: PriorityBatch}})
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	resp, err = r.tr.RoundTrip(r.request("/v1/chat/completions", body).WithContext(WithCaller(context.Background(), Caller{ID: "bob"})))
	if err != nil {
		t.Fatal(err)
	}
	readAll(t, resp)
	want := []Caller{{ID: "alice", Priority: PriorityBatch}, {ID: "bob", Priority: PriorityInteractive}}
	if !slices.Equal(lim.seen, want) {
		t.Errorf("the Limiter was asked for %v, want %v", lim.seen, want)
	}
}
