package sluice

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/dialect"
	"github.com/sluice-llm/sluice/internal/priority"
)

// prioLimiter records the priority each Wait's context carries.
type prioLimiter struct{ seen []string }

func (l *prioLimiter) Wait(ctx context.Context, _ *http.Request, _, _ string, _ int, _ int64, _ time.Duration) (time.Duration, func(int64), error) {
	l.seen = append(l.seen, priority.From(ctx))
	return time.Millisecond, nil, nil
}

func (l *prioLimiter) Learn(dialect.Dialect, string, string, time.Time, int, bool, http.Header, time.Duration) {
}

// A call's priority is its context's (WithPriority), else its policy's,
// else interactive: the Limiter reads it from the context it is given,
// and the attempt's line says it.
func TestPriorityReachesLimiterAndLog(t *testing.T) {
	for _, tc := range []struct {
		name   string
		policy Priority
		ctx    Priority
		limit  string // what the Limiter reads ("" is interactive)
		want   string
	}{
		{"default", "", "", "", "interactive"},
		{"nightly policy", PriorityBatch, "", "batch", "batch"},
		{"context over policy", PriorityBatch, PriorityInteractive, "interactive", "interactive"},
		{"context batch", PriorityInteractive, PriorityBatch, "batch", "batch"},
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
			if len(lim.seen) != 1 || lim.seen[0] != tc.limit {
				t.Errorf("the Limiter read %q, want %q", lim.seen, tc.limit)
			}
			lines := r.lines()
			if len(lines) != 1 || lines[0]["priority"] != tc.want {
				t.Fatalf("lines %v, want one with priority %s", lines, tc.want)
			}
		})
	}
	if Nightly().Priority != PriorityBatch || Interactive().WithDefaults().Priority != PriorityInteractive || (Policy{}).WithDefaults().Priority != PriorityInteractive {
		t.Error("Nightly's priority is not batch, or Interactive's (or the zero Policy's) not interactive")
	}
}
