package redisstore

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/sluice-llm/sluice/breaker"
)

func TestParseRecord(t *testing.T) {
	good := []string{"1", "3", "1700000000000000", "18446744073709551615", "failures", "5", "2", "1,2,3", "9", "4"}
	r, err := parseRecord(good)
	want := breaker.Record{State: breaker.Open, Failures: 3, Until: 1700000000000000, Probe: 1<<64 - 1,
		Reason: "failures", Changed: 5, Transitions: 2, Slow: []int64{1, 2, 3}}
	if err != nil || !reflect.DeepEqual(r.rec, want) || r.ver != 9 || r.epoch != 4 {
		t.Fatalf("parseRecord(%q) = %+v, %v; want %+v", good, r, err, want)
	}
	if r, err := parseRecord(make([]string, len(fields))); err != nil || !reflect.DeepEqual(r.rec, breaker.Record{}) {
		t.Fatalf("empty fields: %+v, %v; want the zero record", r, err)
	}
	for i, bad := range []string{"3", "x", "", "", "", "", "-1", "1,,2", "", ""} {
		if bad == "" {
			continue
		}
		f := append([]string(nil), good...)
		f[i] = bad
		if _, err := parseRecord(f); err == nil {
			t.Errorf("field %s = %q accepted", fields[i], bad)
		}
	}
	if _, err := parseRecord(good[:3]); err == nil {
		t.Error("3 fields accepted")
	}
}

// The script's answer is a record, the time it used and the state before:
// a state out of range, a missing or extra field is refused.
func TestParseResult(t *testing.T) {
	rec := []string{"1", "3", "17", "0", "failures", "5", "2", "", "9", "4"}
	rr, at, from, err := parseResult(append(rec[:len(rec):len(rec)], "1700", "0"))
	if err != nil || rr.rec.State != breaker.Open || at != 1700 || from != breaker.Closed {
		t.Fatalf("parseResult = %+v, %d, %s, %v; want open at 1700, from closed", rr.rec, at, from, err)
	}
	for _, tail := range [][]string{{"1700"}, {"1700", "3"}, {"1700", "x"}, {"x", "0"}, {"1700", "0", "0"}} {
		if _, _, _, err := parseResult(append(rec[:len(rec):len(rec)], tail...)); err == nil {
			t.Errorf("tail %q accepted", tail)
		}
	}
}

func FuzzParseRecord(f *testing.F) {
	f.Add("1", "3", "17", "7", "slow", "1,2")
	f.Fuzz(func(t *testing.T, s, fail, until, probe, reason, slow string) {
		r, err := parseRecord([]string{s, fail, until, probe, reason, "", "", slow, "", ""})
		if err != nil {
			return
		}
		if r.rec.State > breaker.HalfOpen || r.rec.Failures < 0 {
			t.Fatalf("accepted %+v", r.rec)
		}
		if got := fmt.Sprint(r.rec.Reason); got != reason {
			t.Fatalf("reason %q, want %q", got, reason)
		}
	})
}
