package sluice

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A quota error event after a stream's first event ends the attempt as a
// failure, logged quota_exhausted, and like a quota 429 it is never
// counted by the breaker; an overloaded error there is (stream_error), and
// two of them open it.
func TestErrorEventAfterFirstEvent(t *testing.T) {
	const first = "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
	for _, tc := range []struct {
		name, event, class string
		opens              bool
	}{
		{"quota", `data: {"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, "quota_exhausted", false},
		{"overloaded", `data: {"error":{"message":"Overloaded","type":"server_error","code":"overloaded"}}`, "stream_error", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := fastPolicy()
			p.Breaker.Failures = 2
			p.Breaker.Cool = time.Hour
			up, r, url := sseRig(t, p, 0, first+tc.event+"\n\n")
			up.end = true
			for i := range 2 {
				resp, err := r.post(url)
				if err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
				if got := readAll(t, resp); !strings.Contains(got, `"error"`) || !strings.HasPrefix(got, first) {
					t.Fatalf("call %d: body %q, want the first event and the error", i+1, got)
				}
			}
			resp, err := r.post(url)
			if err == nil {
				readAll(t, resp)
			}
			if opened := errors.Is(err, ErrCircuitOpen); opened != tc.opens {
				t.Errorf("third call: %v; want the breaker open = %v", err, tc.opens)
			}
			lines := r.lines()
			for _, l := range lines[:2] {
				if l["outcome"] != "fail" || l["error"] != tc.class {
					t.Errorf("line %v, want fail %s", l, tc.class)
				}
			}
			if want := map[bool]int{true: 2, false: 3}[tc.opens]; up.Calls() != want {
				t.Errorf("upstream calls %d, want %d (one per call admitted, none retried)", up.Calls(), want)
			}
		})
	}
}
