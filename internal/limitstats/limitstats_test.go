package limitstats

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/sluice-llm/sluice"
	"github.com/sluice-llm/sluice/hook"
	"github.com/sluice-llm/sluice/limit"
)

// A call holding a slot shows in the view: the limits as configured (a
// rate per minute), the concurrency key's slot taken, this process's
// count under the limit and under its priority; and in the metrics.
func TestReadAndMetrics(t *testing.T) {
	l := &limit.Limiter{Store: limit.NewMemory(), Limits: []limit.Limit{
		{Name: "rpm", Provider: "p", Scope: "provider", Requests: limit.Rate{Limit: 10, Per: 30 * time.Second}},
		{Name: "slots", Provider: "p", Scope: "provider", Concurrent: 2},
	}}
	_, done, err := l.Wait(context.Background(), hook.Ask{Caller: hook.Caller{Priority: hook.Batch}, Provider: "p", Model: "m", MaxWait: time.Second, Total: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	v, err := Read(l)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Limits) != 2 || v.Limits[0].RequestsPerMinute != 20 || v.Limits[1].Concurrent != 2 {
		t.Errorf("limits %+v, want rpm at 20 a minute and 2 slots", v.Limits)
	}
	if got := v.Stats["slots"].InFlight; got != 1 {
		t.Errorf("stats[slots].in_flight %d, want 1", got)
	}
	held := false
	for _, b := range v.Buckets {
		held = held || strings.HasSuffix(b.Key, ":concurrent") && b.InFlight == 1
	}
	if !held {
		t.Errorf("no concurrency key with its slot taken in %+v", v.Buckets)
	}
	if got := v.Priorities["batch"].Admitted; got != 1 {
		t.Errorf("batch admitted %d, want 1", got)
	}

	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, func() *limit.Limiter { return l }, func() []*limit.Limiter { return []*limit.Limiter{l} })
	m.Observe(&sluice.Attempt{Provider: "p", Outcome: sluice.OutcomeRateLimited, Refused: 3})
	if got := gauge(t, reg, "sluice_ratelimit_refused_total"); got != 3 {
		t.Errorf("refused %v, want the 3 the line folds", got)
	}
	if got := gauge(t, reg, "sluice_ratelimit_in_flight"); got != 1 {
		t.Errorf("in flight %v, want 1", got)
	}
	done(0)
	if v, _ := Read(l); v.Stats["slots"].InFlight != 0 {
		t.Errorf("in flight %d after the call's end, want 0", v.Stats["slots"].InFlight)
	}
}

// gauge returns the value of the one series of the metric called name
// in reg, a counter's or a gauge's.
func gauge(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			m := mf.GetMetric()[0]
			return m.GetCounter().GetValue() + m.GetGauge().GetValue()
		}
	}
	t.Fatalf("no single series of %s", name)
	return 0
}
