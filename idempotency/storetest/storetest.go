// Package storetest holds the checks every idempotency.Store must pass,
// for the tests of each store.
package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/idempotency"
)

// Secret is the credential the checks put in request and answer headers:
// a store's own test looks for it in what the store wrote and must not
// find it.
const Secret = "sk-live-SECRET-7f3a9c1e"

// Clock is the time the checks pass to a store. A store that keeps time
// itself (Redis) gets a Clock whose Advance really waits.
type Clock interface {
	Now() time.Time
	Advance(d time.Duration)
}

// FakeClock is a Clock that Advance moves at once.
type FakeClock struct {
	mu sync.Mutex
	t  time.Time
}

// NewFakeClock returns a FakeClock at a fixed instant.
func NewFakeClock() *FakeClock { return &FakeClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *FakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

// Advance moves the clock d ahead.
func (c *FakeClock) Advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// RealClock is the wall clock; Advance waits d.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Advance waits d: the store's own clock must pass it.
func (RealClock) Advance(d time.Duration) { time.Sleep(d) }

// Open returns a new, empty store whose MaxAnswer is maxAnswer, and the
// clock to drive it with.
type Open func(t *testing.T, maxAnswer int64) (idempotency.Store, Clock)

// Run runs every check on stores made by open. Unit is the step of the
// checks' leases and ttls (a few of them): a second on a FakeClock, a
// tenth of one for a store on the real clock.
func Run(t *testing.T, open Open, unit time.Duration) {
	checks := []struct {
		name string
		f    func(*testing.T, Open, time.Duration)
	}{
		{"KeepThenReplay", KeepThenReplay},
		{"OtherFingerprintConflicts", OtherFingerprintConflicts},
		{"LiveMarkIsInFlight", LiveMarkIsInFlight},
		{"ReleaseKeepsNothing", ReleaseKeepsNothing},
		{"ExpiredMarkIsTaken", ExpiredMarkIsTaken},
		{"AnswerExpires", AnswerExpires},
		{"TooLargeNotKept", TooLargeNotKept},
		{"OneRunAmongMany", OneRunAmongMany},
		{"IDsAreSeparate", IDsAreSeparate},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) { c.f(t, open, unit) })
	}
}

// ID returns the store ID of a test key.
func ID(value string) string {
	return idempotency.Key{Scope: "openai", Caller: "team-a", Value: value}.ID()
}

// FP returns a test fingerprint of body.
func FP(body string) [32]byte {
	return idempotency.Fingerprint("POST", "/v1/chat/completions", nil, []byte(body))
}

// SampleAnswer is an answer whose header holds Secret under every name a
// credential travels in, beside its content headers.
func SampleAnswer(body string) *idempotency.Answer {
	return &idempotency.Answer{
		Status: 200,
		Header: http.Header{
			"Content-Type":        {"text/event-stream"},
			"Content-Encoding":    {"identity"},
			"Authorization":       {"Bearer " + Secret},
			"X-Api-Key":           {Secret},
			"Api-Key":             {Secret},
			"Set-Cookie":          {"session=" + Secret},
			"Cookie":              {"s=" + Secret},
			"X-Goog-Api-Key":      {Secret},
			"Openai-Organization": {Secret},
		},
		Body:      []byte(body),
		Stream:    true,
		RequestID: "req-original-1",
		CostUSD:   0.0123,
	}
}

func begin(t *testing.T, s idempotency.Store, id string, fp [32]byte, lease time.Duration, c Clock) idempotency.Result {
	t.Helper()
	r, err := s.Begin(id, fp, lease, c.Now())
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	return r
}

func want(t *testing.T, r idempotency.Result, v idempotency.Verdict) {
	t.Helper()
	if r.Verdict != v {
		t.Fatalf("verdict %v, want %v", r.Verdict, v)
	}
}

// KeepThenReplay: a kept answer is replayed whole: status, content
// headers only, body byte for byte, stream flag, request id, cost, when
// kept; the mark is cleared.
func KeepThenReplay(t *testing.T, open Open, unit time.Duration) {
	s, c := open(t, 0)
	id, fp := ID("job-1"), FP("hello")
	r := begin(t, s, id, fp, 10*unit, c)
	want(t, r, idempotency.Run)
	body := "data: {\"a\":1}\n\ndata: {\"b\":\"\\u00e9\"}\n\ndata: [DONE]\n\n\x00\xff"
	kept := c.Now()
	if err := s.Keep(r.Mark, SampleAnswer(body), 100*unit, kept); err != nil {
		t.Fatalf("Keep: %v", err)
	}
	for range 2 { // replayed as often as asked
		r2 := begin(t, s, id, fp, 10*unit, c)
		want(t, r2, idempotency.Replay)
		a := r2.Answer
		if a.Status != 200 || !a.Stream || a.RequestID != "req-original-1" || a.CostUSD != 0.0123 || !a.Kept.Equal(kept) {
			t.Errorf("replayed %+v", a)
		}
		if !bytes.Equal(a.Body, []byte(body)) {
			t.Errorf("body %q, want %q", a.Body, body)
		}
		wantH := http.Header{"Content-Type": {"text/event-stream"}, "Content-Encoding": {"identity"}}
		if !reflect.DeepEqual(a.Header, wantH) {
			t.Errorf("header %v, want only %v", a.Header, wantH)
		}
		a.Body[0] = 'X' // the caller's copy: the kept answer is unchanged
	}
	if err := s.Release(r.Mark); err != nil {
		t.Errorf("Release after Keep: %v", err)
	}
	want(t, begin(t, s, id, fp, 10*unit, c), idempotency.Replay)
}

// OtherFingerprintConflicts: the key reused with another payload is a
// conflict, not a replay; the kept answer stays.
func OtherFingerprintConflicts(t *testing.T, open Open, unit time.Duration) {
	s, c := open(t, 0)
	id := ID("job-2")
	r := begin(t, s, id, FP("one"), 10*unit, c)
	if err := s.Keep(r.Mark, SampleAnswer("first"), 100*unit, c.Now()); err != nil {
		t.Fatal(err)
	}
	want(t, begin(t, s, id, FP("two"), 10*unit, c), idempotency.Conflict)
	r = begin(t, s, id, FP("one"), 10*unit, c)
	want(t, r, idempotency.Replay)
	if string(r.Answer.Body) != "first" {
		t.Errorf("body %q after a conflict, want first", r.Answer.Body)
	}
}

// LiveMarkIsInFlight: a second Begin while the first holds its mark is
// InFlight with the lease's end, or Conflict for another fingerprint.
func LiveMarkIsInFlight(t *testing.T, open Open, unit time.Duration) {
	s, c := open(t, 0)
	id, fp := ID("job-3"), FP("x")
	r := begin(t, s, id, fp, 10*unit, c)
	want(t, r, idempotency.Run)
	r2 := begin(t, s, id, fp, 10*unit, c)
	want(t, r2, idempotency.InFlight)
	if d := r2.Until.Sub(r.Mark.Until); d < -unit || d > unit {
		t.Errorf("in flight until %v, want the mark's %v", r2.Until, r.Mark.Until)
	}
	r3 := begin(t, s, id, FP("y"), 10*unit, c)
	want(t, r3, idempotency.Conflict)
	if r3.Until.IsZero() {
		t.Error("a conflict with a live mark gives no lease end")
	}
}

// ReleaseKeepsNothing: after Release the next Begin runs; Release is
// idempotent.
func ReleaseKeepsNothing(t *testing.T, open Open, unit time.Duration) {
	s, c := open(t, 0)
	id, fp := ID("job-4"), FP("x")
	r := begin(t, s, id, fp, 10*unit, c)
	for range 2 {
		if err := s.Release(r.Mark); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	r2 := begin(t, s, id, fp, 10*unit, c)
	want(t, r2, idempotency.Run)
	if r2.Mark.Token == r.Mark.Token {
		t.Error("the new mark has the old token")
	}
	if err := s.Keep(r.Mark, SampleAnswer("late"), 100*unit, c.Now()); !errors.Is(err, idempotency.ErrMarkLost) {
		t.Errorf("Keep with a released mark: %v, want ErrMarkLost", err)
	}
	if err := s.Release(r.Mark); err != nil { // the old holder's release leaves the new mark
		t.Fatal(err)
	}
	want(t, begin(t, s, id, fp, 10*unit, c), idempotency.InFlight)
}

// ExpiredMarkIsTaken: a mark whose lease ran out (its holder died) counts
// as absent; the late holder can neither keep over nor clear the new
// holder's mark, and the new holder's answer is the one kept.
func ExpiredMarkIsTaken(t *testing.T, open Open, unit time.Duration) {
	s, c := open(t, 0)
	id, fp := ID("job-5"), FP("x")
	old := begin(t, s, id, fp, 2*unit, c)
	want(t, old, idempotency.Run)
	c.Advance(unit)
	want(t, begin(t, s, id, fp, 2*unit, c), idempotency.InFlight)
	c.Advance(2 * unit)
	r := begin(t, s, id, fp, 10*unit, c)
	want(t, r, idempotency.Run)
	if err := s.Keep(old.Mark, SampleAnswer("old"), 100*unit, c.Now()); !errors.Is(err, idempotency.ErrMarkLost) {
		t.Fatalf("Keep by the expired holder: %v, want ErrMarkLost", err)
	}
	if err := s.Release(old.Mark); err != nil {
		t.Fatal(err)
	}
	want(t, begin(t, s, id, fp, 10*unit, c), idempotency.InFlight)
	if err := s.Keep(r.Mark, SampleAnswer("new"), 100*unit, c.Now()); err != nil {
		t.Fatal(err)
	}
	r = begin(t, s, id, fp, 10*unit, c)
	want(t, r, idempotency.Replay)
	if string(r.Answer.Body) != "new" {
		t.Errorf("replayed %q, want the new holder's", r.Answer.Body)
	}
}

// AnswerExpires: a kept answer is replayed within its ttl, and gone after.
func AnswerExpires(t *testing.T, open Open, unit time.Duration) {
	s, c := open(t, 0)
	id, fp := ID("job-6"), FP("x")
	r := begin(t, s, id, fp, 10*unit, c)
	if err := s.Keep(r.Mark, SampleAnswer("a"), 4*unit, c.Now()); err != nil {
		t.Fatal(err)
	}
	c.Advance(unit)
	want(t, begin(t, s, id, fp, 10*unit, c), idempotency.Replay)
	c.Advance(4 * unit)
	want(t, begin(t, s, id, fp, 10*unit, c), idempotency.Run)
}

// TooLargeNotKept: an answer over MaxAnswer is refused with ErrTooLarge
// and its mark cleared; one at MaxAnswer is kept.
func TooLargeNotKept(t *testing.T, open Open, unit time.Duration) {
	s, c := open(t, 1000)
	id, fp := ID("job-7"), FP("x")
	r := begin(t, s, id, fp, 10*unit, c)
	big := SampleAnswer(string(make([]byte, 1001)))
	if err := s.Keep(r.Mark, big, 100*unit, c.Now()); !errors.Is(err, idempotency.ErrTooLarge) {
		t.Fatalf("Keep of 1001 bytes: %v, want ErrTooLarge", err)
	}
	r = begin(t, s, id, fp, 10*unit, c)
	want(t, r, idempotency.Run)
	if err := s.Keep(r.Mark, SampleAnswer(string(make([]byte, 1000))), 100*unit, c.Now()); err != nil {
		t.Fatalf("Keep of 1000 bytes: %v", err)
	}
	want(t, begin(t, s, id, fp, 10*unit, c), idempotency.Replay)
}

// OneRunAmongMany: of 16 concurrent Begins on one ID exactly one runs.
func OneRunAmongMany(t *testing.T, open Open, unit time.Duration) {
	s, c := open(t, 0)
	id, fp := ID("job-8"), FP("x")
	var mu sync.Mutex
	got := map[idempotency.Verdict]int{}
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			r, err := s.Begin(id, fp, 100*unit, c.Now())
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got[r.Verdict]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if got[idempotency.Run] != 1 || got[idempotency.InFlight] != 15 {
		t.Errorf("verdicts %v, want 1 run and 15 in flight", got)
	}
}

// IDsAreSeparate: marks and answers of different IDs (another caller's
// same key) do not meet.
func IDsAreSeparate(t *testing.T, open Open, unit time.Duration) {
	s, c := open(t, 0)
	fp := FP("x")
	a := idempotency.Key{Scope: "openai", Caller: "team-a", Value: "k"}.ID()
	b := idempotency.Key{Scope: "openai", Caller: "team-b", Value: "k"}.ID()
	r := begin(t, s, a, fp, 10*unit, c)
	if err := s.Keep(r.Mark, SampleAnswer("a's"), 100*unit, c.Now()); err != nil {
		t.Fatal(err)
	}
	rb := begin(t, s, b, fp, 10*unit, c)
	want(t, rb, idempotency.Run)
	if rb.Answer != nil {
		t.Error(fmt.Sprint("another caller got ", rb.Answer))
	}
}
