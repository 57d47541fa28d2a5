package sluice

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/sluice-llm/sluice/breaker"
)

// refusedLines decodes a log and returns, per breaker name in its path
// field, the lines and the sum of their refused counts. Each line must
// list the request id of every call it counts.
func refusedLines(t *testing.T, log string) (lines map[string]int, refused map[string]int) {
	t.Helper()
	lines, refused, _ = refusedIDs(t, log)
	return lines, refused
}

// refusedIDs is refusedLines, with the request ids the lines list.
func refusedIDs(t *testing.T, log string) (lines, refused map[string]int, ids map[string]bool) {
	t.Helper()
	lines, refused, ids = map[string]int{}, map[string]int{}, map[string]bool{}
	sc := bufio.NewScanner(strings.NewReader(log))
	for sc.Scan() {
		var a Attempt
		if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
			t.Fatalf("line does not parse: %v: %s", err, sc.Text())
		}
		if a.Outcome == OutcomeOK {
			continue // an upstream attempt's line
		}
		if a.Refused < 1 {
			t.Errorf("refusal line without its count: %s", sc.Text())
		}
		if len(a.RefusedIDs) != a.Refused || a.RefusedIDs[len(a.RefusedIDs)-1] != a.RequestID {
			t.Errorf("line counts %d refusals, lists ids %q, its own %q last", a.Refused, a.RefusedIDs, a.RequestID)
		}
		for _, id := range a.RefusedIDs {
			ids[id] = true
		}
		lines[a.Provider]++
		refused[a.Provider] += a.Refused
	}
	return lines, refused, ids
}

// maxLines is the most lines n refusals under one key within a second
// may take: one at once, then one per maxFoldedIDs.
func maxLines(n int) int { return 2 + n/maxFoldedIDs }

func TestRefusalsFoldedPerKeyAtFixedInstants(t *testing.T) {
	var buf lockedBuffer
	l := NewAttemptLog(&buf)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	const n = 10_000
	for i := range n {
		at := t0.Add(time.Duration(i) * (time.Second / n)) // spread over one second
		for _, key := range []string{"a", "b"} {
			id := fmt.Sprintf("%s%023d", key, i)
			l.WriteRefused("breaker:"+key, &Attempt{TS: at, RequestID: id, Provider: key, Outcome: OutcomeCircuitOpen})
		}
	}
	lines, refused := refusedLines(t, buf.String())
	for _, key := range []string{"a", "b"} {
		if lines[key] > maxLines(n) {
			t.Errorf("key %s: %d lines for %d refusals in one second, want ≤ %d", key, lines[key], n, maxLines(n))
		}
	}
	// Bounded: the ids, and a line per 256 of them; a line per refusal
	// takes ~300 bytes.
	if per := buf.b.Len() / (2 * n); per > 40 {
		t.Errorf("%d bytes written per refusal, want ≤ 40", per)
	}
	// An upstream attempt's line after the second writes what was folded.
	l.Write(&Attempt{TS: t0.Add(3 * time.Second), Provider: "upstream", Outcome: OutcomeOK})
	lines, refused, ids := refusedIDs(t, buf.String())
	for _, key := range []string{"a", "b"} {
		if refused[key] != n {
			t.Errorf("key %s: refused counts sum to %d, want %d", key, refused[key], n)
		}
		if lines[key] > maxLines(n)+1 {
			t.Errorf("key %s: %d lines, want ≤ %d", key, lines[key], maxLines(n)+1)
		}
		for i := range n {
			if id := fmt.Sprintf("%s%023d", key, i); !ids[id] {
				t.Fatalf("request id %s of a refused call is not in the log", id)
			}
		}
	}
}

func TestRefusalFlushedByNextRefusalAfterTheSecond(t *testing.T) {
	var buf lockedBuffer
	l := NewAttemptLog(&buf)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	refuse := func(d time.Duration) {
		l.WriteRefused("k", &Attempt{TS: t0.Add(d), Provider: "p", Outcome: OutcomeCircuitOpen})
	}
	refuse(0)                      // first in a quiet period: written at once, refused 1
	refuse(100 * time.Millisecond) // folded
	refuse(900 * time.Millisecond) // folded
	if lines, _ := refusedLines(t, buf.String()); lines["p"] != 1 {
		t.Fatalf("%d lines after three refusals within a second, want 1", lines["p"])
	}
	refuse(1500 * time.Millisecond) // after the second: a line for the three since the first
	var got []int
	for line := range strings.Lines(buf.String()) {
		var a Attempt
		json.Unmarshal([]byte(line), &a)
		got = append(got, a.Refused)
	}
	if len(got) != 2 || got[0] != 1 || got[1] != 3 {
		t.Errorf("refused counts %v, want [1 3]", got)
	}
	refuse(1600 * time.Millisecond) // folded again, then written by Flush
	l.Flush()
	if _, refused := refusedLines(t, buf.String()); refused["p"] != 5 {
		t.Errorf("refused counts sum to %d after Flush, want 5", refused["p"])
	}
}

// Every Transport sharing an AttemptLog shares its throttle; Observe still
// sees every refused call.
func TestBreakerRefusalsFoldedAcrossTransports(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var buf lockedBuffer
		log := NewAttemptLog(&buf)
		store := breaker.NewMemory()
		var observed atomic.Int64
		p := fastPolicy()
		p.Breaker.Failures = 1
		p.Breaker.Cool = time.Hour
		var trs [2]*Transport
		for i := range trs {
			trs[i] = &Transport{Policy: p, Provider: "openai", Store: store, Log: log,
				Observe: func(a *Attempt) {
					if a.Outcome == OutcomeCircuitOpen {
						observed.Add(1)
					}
				}}
		}
		permit, _ := trs[0].Breaker("openai").Allow()
		permit.Done(breaker.Failure, 0)
		const n = 10_000
		for i := range n {
			req, _ := http.NewRequest("POST", "http://provider.test/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
			if _, err := trs[i%2].RoundTrip(req); !errors.Is(err, ErrCircuitOpen) {
				t.Fatalf("call %d: err %v, want ErrCircuitOpen", i, err)
			}
		}
		if got := observed.Load(); got != n {
			t.Errorf("Observe saw %d refusals, want %d", got, n)
		}
		lines, _ := refusedLines(t, buf.String())
		if want := 1 + (n-1)/maxFoldedIDs; lines["openai"] != want {
			t.Errorf("%d lines for %d refusals at one instant, want %d (the first, then one per %d ids)", lines["openai"], n, want, maxFoldedIDs)
		}
		time.Sleep(2 * time.Second)
		log.Flush()
		lines, refused, ids := refusedIDs(t, buf.String())
		if want := 2 + (n-1)/maxFoldedIDs; refused["openai"] != n || lines["openai"] != want {
			t.Errorf("%d lines, refused counts sum to %d; want %d lines summing to %d", lines["openai"], refused["openai"], want, n)
		}
		if len(ids) != n {
			t.Errorf("the log lists %d distinct request ids, want all %d refused calls'", len(ids), n)
		}
	})
}
