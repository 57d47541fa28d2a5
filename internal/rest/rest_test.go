package rest

import (
	"errors"
	"testing"
	"time"
)

// A store rests Period after each failure, with that failure's error, and
// may be asked again from then on.
func TestRest(t *testing.T) {
	var r Rest
	t0 := time.Unix(1000, 0)
	if err := r.Err(t0); err != nil {
		t.Fatalf("a store that never failed rests: %v", err)
	}
	down := errors.New("down")
	r.Fail(t0, down)
	for _, tt := range []struct {
		at   time.Duration
		want error
	}{
		{0, down},
		{Period - time.Nanosecond, down},
		{Period, nil},
		{Period + time.Second, nil},
	} {
		if got := r.Err(t0.Add(tt.at)); got != tt.want {
			t.Errorf("%v after the failure: %v, want %v", tt.at, got, tt.want)
		}
	}
	again := errors.New("down again")
	r.Fail(t0.Add(5*time.Second), again)
	if got := r.Err(t0.Add(5*time.Second + Period/2)); got != again {
		t.Errorf("after a second failure: %v, want its error", got)
	}
}
