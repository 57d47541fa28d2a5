//go:build unix

package redisstore

import (
	"context"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/internal/redistest"
)

// nowMicros is the instant the parity cases run at, in µs.
const nowMicros = 1_700_000_000_000_000

// writeRecord stores r (times in ns, multiples of 1µs) as the script's
// hash at key.
func writeRecord(t *testing.T, srv *redistest.Server, key string, r breaker.Record) {
	t.Helper()
	slow := make([]string, len(r.Slow))
	for i, x := range r.Slow {
		slow[i] = strconv.FormatInt(x/1000, 10)
	}
	ctx := context.Background()
	_, err := srv.Client().Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, key)
		p.HSet(ctx, key, "s", int(r.State), "f", r.Failures, "u", r.Until/1000,
			"p", strconv.FormatUint(r.Probe, 10), "r", r.Reason, "c", r.Changed/1000,
			"n", r.Transitions, "w", strings.Join(slow, ","), "v", 1, "e", 1)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// viaScript applies e to r with the Lua script at time now (µs). It fails
// the test unless the script reports r's state as the state before.
func viaScript(t *testing.T, st *Store, srv *redistest.Server, r breaker.Record, s breaker.Settings, e breaker.Event, now int64) breaker.Record {
	t.Helper()
	writeRecord(t, srv, st.key("parity"), r)
	res, err := transition.Run(context.Background(), st.client, []string{st.key("parity")},
		scriptArgs(s, e, time.Hour, strconv.FormatInt(now, 10))...).StringSlice()
	if err != nil {
		t.Fatal(err)
	}
	rr, at, from, err := parseResult(res)
	if err != nil {
		t.Fatal(err)
	}
	if from != r.State || at != now {
		t.Fatalf("record %+v, event %+v: the script says it was %s at %d, want %s at %d", r, e, from, at, r.State, now)
	}
	got := rr.rec
	got.Until, got.Changed = got.Until*1000, got.Changed*1000
	for i := range got.Slow {
		got.Slow[i] *= 1000
	}
	return got
}

// viaGo applies e to r with breaker.Settings.Next, Slow.Count capped as
// the shared stores cap it.
func viaGo(r breaker.Record, s breaker.Settings, e breaker.Event, now int64) breaker.Record {
	if s.Slow.Count > breaker.MaxStoredSlow {
		s.Slow.Count = breaker.MaxStoredSlow
	}
	got := s.Next(r, e, time.UnixMicro(now))
	if len(got.Slow) == 0 {
		got.Slow = nil
	}
	return got
}

func TestScriptMatchesNext(t *testing.T) {
	srv := redistest.Start(t)
	st, _ := newStore(t, srv, Options{})
	n := int64(nowMicros) * 1000
	sec := int64(time.Second)
	records := []breaker.Record{
		{},
		{Failures: 2, Transitions: 4},
		{Failures: 4, Slow: []int64{n - 90*sec, n - 30*sec, n - 20*sec}},
		{Slow: []int64{n - 3*sec, n - 2*sec, n - sec}},
		{State: breaker.Open, Until: n + sec, Reason: "failures", Changed: n - sec, Transitions: 1},
		{State: breaker.Open, Until: n, Reason: "slow", Changed: n - 9*sec, Transitions: 3},
		{State: breaker.HalfOpen, Probe: 7, Until: n + sec, Changed: n - sec, Transitions: 2},
		{State: breaker.HalfOpen, Probe: 7, Until: n - 1000, Changed: n - sec, Transitions: 2},
		{State: breaker.HalfOpen, Probe: 1<<63 + 7, Until: n + sec, Transitions: 2},
	}
	settings := []breaker.Settings{
		{},
		{Failures: 3, Cool: 10 * time.Second, Lease: 5 * time.Second,
			Slow: breaker.Slow{Threshold: time.Second, Count: 2, Window: 30 * time.Second}},
		{Failures: 1, Cool: time.Millisecond, Lease: time.Microsecond, Slow: breaker.Slow{Count: 40, Window: time.Hour}},
	}
	kinds := []breaker.EventKind{breaker.Acquire, breaker.EventSuccess, breaker.EventFailure,
		breaker.EventIgnored, breaker.EventReset, breaker.EventTrip}
	cases := 0
	for _, r := range records {
		for _, s := range settings {
			for _, k := range kinds {
				for _, tok := range []uint64{0, 7, 9, 1<<63 + 7} {
					for _, slow := range []bool{false, true} {
						e := breaker.Event{Kind: k, Token: tok, Slow: slow}
						want := viaGo(r, s, e, nowMicros)
						got := viaScript(t, st, srv, r, s, e, nowMicros)
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("record %+v, settings %+v, event %+v:\nLua %+v\nGo  %+v", r, s, e, got, want)
						}
						cases++
					}
				}
			}
		}
	}
	t.Logf("%d cases agree", cases)
}

func TestScriptMatchesNextOnRandomWalks(t *testing.T) {
	srv := redistest.Start(t)
	st, _ := newStore(t, srv, Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	s := breaker.Settings{Failures: 3, Cool: 2 * time.Second, Lease: time.Second,
		Slow: breaker.Slow{Threshold: time.Second, Count: 3, Window: 5 * time.Second}}
	var goRec breaker.Record
	now := int64(nowMicros)
	for step := range 2000 {
		now += rng.Int64N(700_000)
		e := breaker.Event{Kind: breaker.EventKind(rng.IntN(6)), Slow: rng.IntN(2) == 0}
		if rng.IntN(3) > 0 {
			e.Token = goRec.Probe
		}
		if e.Kind == breaker.Acquire {
			e.Token = rng.Uint64() | 1
		}
		want := viaGo(goRec, s, e, now)
		got := viaScript(t, st, srv, goRec, s, e, now)
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("step %d, record %+v, event %+v:\nLua %+v\nGo  %+v", step, goRec, e, got, want)
		}
		goRec = want
	}
}
