package limit

import (
	"math"
	"testing"
	"time"
)

func TestInterval(t *testing.T) {
	day := 24 * time.Hour
	tests := []struct {
		name string
		r    Rate
		cost int64
		want int64
	}{
		{"120 per minute", Rate{Limit: 120, Per: time.Minute}, 1, int64(500 * time.Millisecond)},
		{"three requests", Rate{Limit: 120, Per: time.Minute}, 3, int64(1500 * time.Millisecond)},
		{"tokens", Rate{Limit: 10_000, Per: time.Minute}, 1_000, int64(6 * time.Second)},
		{"rounds up", Rate{Limit: 3, Per: time.Second}, 1, 333_333_334},
		{"exact stays exact", Rate{Limit: 3, Per: time.Second}, 3, int64(time.Second)},
		{"1e9 tokens per day, 1e9 tokens", Rate{Limit: 1_000_000_000, Per: day}, 1_000_000_000, int64(day)},
		{"1e9 days is beyond int64: saturated", Rate{Limit: 1, Per: day}, 1_000_000_000, math.MaxInt64},
		{"zero cost", Rate{Limit: 1, Per: time.Second}, 0, 0},
		{"negative cost", Rate{Limit: 1, Per: time.Second}, -5, 0},
		{"no limit", Rate{Limit: 0, Per: time.Second}, 5, 0},
		{"no period", Rate{Limit: 5, Per: 0}, 5, 0},
		{"max cost, max per", Rate{Limit: 1, Per: math.MaxInt64}, math.MaxInt64, math.MaxInt64},
		{"max cost over max limit", Rate{Limit: math.MaxInt64, Per: math.MaxInt64}, math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		if got := tt.r.Interval(tt.cost); got != tt.want {
			t.Errorf("%s: Interval(%d) of %v = %d, want %d", tt.name, tt.cost, tt.r, got, tt.want)
		}
	}
	// Just under and over the edge of int64: 1e9 tokens per day at 1e5 per day.
	r := Rate{Limit: 100_000, Per: day}
	if got, want := r.Interval(1_000_000_000), 10_000*int64(day); got != want {
		t.Errorf("Interval(1e9) at 1e5/day = %d, want %d", got, want)
	}
}

func TestStep(t *testing.T) {
	const s = int64(time.Second)
	rpm := Rate{Limit: 120, Per: time.Minute} // 500 ms a request
	tests := []struct {
		name                string
		tat, now, notBefore int64
		r                   Rate
		cost                int64
		maxWait             time.Duration
		wantTAT, wantAt     int64
		wantOK              bool
	}{
		{"idle bucket: now", 0, 100 * s, 0, rpm, 1, 0, 100*s + s/2, 100 * s, true},
		{"no credit for idle time", 50 * s, 100 * s, 0, rpm, 1, 0, 100*s + s/2, 100 * s, true},
		{"queued behind the TAT", 103 * s, 100 * s, 0, rpm, 1, 5 * time.Second, 103*s + s/2, 103 * s, true},
		{"wait exactly maxWait", 105 * s, 100 * s, 0, rpm, 1, 5 * time.Second, 105*s + s/2, 105 * s, true},
		{"wait over maxWait: refused, nothing taken", 105*s + 1, 100 * s, 0, rpm, 1, 5 * time.Second, 105*s + 1, 105*s + 1, false},
		{"zero maxWait, busy: refused", 100*s + 1, 100 * s, 0, rpm, 1, 0, 100*s + 1, 100*s + 1, false},
		{"negative maxWait counts as zero", 0, 100 * s, 0, rpm, 1, -time.Second, 100*s + s/2, 100 * s, true},
		{"notBefore later than TAT", 101 * s, 100 * s, 102 * s, rpm, 1, 5 * time.Second, 102*s + s/2, 102 * s, true},
		{"notBefore earlier than TAT", 103 * s, 100 * s, 102 * s, rpm, 1, 5 * time.Second, 103*s + s/2, 103 * s, true},
		{"notBefore beyond maxWait", 0, 100 * s, 106 * s, rpm, 1, 5 * time.Second, 0, 106 * s, false},
		{"cost of many units", 0, 100 * s, 0, Rate{Limit: 10_000, Per: time.Minute}, 1_000, 0, 106 * s, 100 * s, true},
		{"clock gone back: the wait grows", 103 * s, 90 * s, 0, rpm, 1, 20 * time.Second, 103*s + s/2, 103 * s, true},
		{"clock gone back beyond maxWait: refused", 103 * s, 90 * s, 0, rpm, 1, 5 * time.Second, 103 * s, 103 * s, false},
		{"TAT saturates, never wraps", math.MaxInt64 - 10, math.MaxInt64 - 10, 0, Rate{Limit: 1, Per: time.Hour}, 1, 0, math.MaxInt64, math.MaxInt64 - 10, true},
		{"huge cost saturates", 0, 100 * s, 0, Rate{Limit: 1, Per: 24 * time.Hour}, 1_000_000_000, 0, math.MaxInt64, 100 * s, true},
		{"maxWait near the end of time: no overflow", 0, math.MaxInt64 - 5, 0, rpm, 1, time.Duration(math.MaxInt64), math.MaxInt64, math.MaxInt64 - 5, true},
		{"no limit: notBefore still holds", 7, 100 * s, 101 * s, Rate{}, 1, 0, 7, 101 * s, true},
	}
	for _, tt := range tests {
		tat, at, ok := Step(tt.tat, tt.now, tt.notBefore, tt.r, tt.cost, tt.maxWait)
		if tat != tt.wantTAT || at != tt.wantAt || ok != tt.wantOK {
			t.Errorf("%s: Step = (%d, %d, %v), want (%d, %d, %v)", tt.name, tat, at, ok, tt.wantTAT, tt.wantAt, tt.wantOK)
		}
	}
}

// TestStepNeverOverLimit replays Step over random arrivals and checks the
// package's promise: at most Limit units start in any window of length Per
// (Limit+1 when one starts on each closed end).
func TestStepNeverOverLimit(t *testing.T) {
	r := Rate{Limit: 7, Per: time.Second}
	var tat, now int64 = 0, int64(time.Hour)
	var starts []int64
	seed := uint64(1)
	for range 5000 {
		seed = seed*6364136223846793005 + 1442695040888963407
		now += int64(seed>>33) % int64(300*time.Millisecond)
		var at int64
		var ok bool
		if tat, at, ok = Step(tat, now, 0, r, 1, 2*time.Second); ok {
			starts = append(starts, at)
		}
	}
	j := 0
	for i, s := range starts {
		for starts[j] < s-int64(r.Per) {
			j++
		}
		if n := i - j + 1; n > int(r.Limit)+1 {
			t.Fatalf("%d starts within %v up to %d", n, r.Per, s)
		}
	}
	for i := range starts[:len(starts)-1] {
		if d := starts[i+1] - starts[i]; d < r.Interval(1) {
			t.Fatalf("starts %d and %d are %d ns apart, less than the interval", i, i+1, d)
		}
	}
	if len(starts) < 4000 {
		t.Fatalf("only %d of 5000 admitted: the test exercised little", len(starts))
	}
}
