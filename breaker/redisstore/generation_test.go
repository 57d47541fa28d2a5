//go:build unix

package redisstore

import (
	"reflect"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// A Failure from a permit taken before the breaker opened, reported after
// it closed again, counts nothing in Redis either.
func TestStalePermitFromEarlierCycleIgnored(t *testing.T) {
	srv := redistest.Start(t)
	st, _ := newStore(t, srv, Options{})
	b := breaker.New("p", breaker.Settings{Failures: 2, Cool: time.Millisecond, Lease: time.Minute}, st)
	stale, err := b.Allow()
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		p, err := b.Allow()
		if err != nil {
			t.Fatal(err)
		}
		p.Done(breaker.Failure, time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		probe, err := b.Allow()
		if err == nil && probe.State() == breaker.HalfOpen {
			probe.Done(breaker.Success, time.Millisecond)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no probe within 5s: %v", err)
		}
		time.Sleep(time.Millisecond)
	}
	stale.Done(breaker.Failure, time.Millisecond)
	rec, err := b.Record()
	if err != nil {
		t.Fatal(err)
	}
	if rec.State != breaker.Closed || rec.Failures != 0 || rec.Transitions != 3 {
		t.Fatalf("after a stale failure: %+v, want closed, 0 failures, 3 transitions", rec)
	}
}

// The script checks an outcome's generation as Settings.Next does.
func TestScriptMatchesNextOnGenerations(t *testing.T) {
	srv := redistest.Start(t)
	st, _ := newStore(t, srv, Options{})
	n := int64(nowMicros) * 1000
	records := []breaker.Record{
		{Failures: 1, Transitions: 4},
		{Failures: 2},
		{State: breaker.HalfOpen, Probe: 7, Until: n + int64(time.Second), Transitions: 2},
		{State: breaker.Open, Until: n + int64(time.Second), Reason: "failures", Transitions: 1},
	}
	kinds := []breaker.EventKind{breaker.Acquire, breaker.EventSuccess, breaker.EventFailure,
		breaker.EventIgnored, breaker.EventReset, breaker.EventTrip}
	s := breaker.Settings{Failures: 3}
	for _, r := range records {
		for _, k := range kinds {
			for _, gen := range []uint64{0, 1, 2, 3, 5, 1 << 40} {
				e := breaker.Event{Kind: k, Token: 7, Gen: gen}
				want := viaGo(r, s, e, nowMicros)
				got := viaScript(t, st, srv, r, s, e, nowMicros)
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("record %+v, event %+v:\nLua %+v\nGo  %+v", r, e, got, want)
				}
			}
		}
	}
}
