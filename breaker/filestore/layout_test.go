package filestore

import (
	"reflect"
	"testing"

	"github.com/sluice-llm/sluice/breaker"
)

func TestRecordEncodingRoundTrip(t *testing.T) {
	slow16 := make([]int64, 16)
	for i := range slow16 {
		slow16[i] = int64(1e18) + int64(i)
	}
	tests := []struct {
		name string
		in   breaker.Record
		want breaker.Record
	}{
		{"zero", breaker.Record{}, breaker.Record{}},
		{"closed with failures", breaker.Record{Failures: 999, Transitions: 7}, breaker.Record{Failures: 999, Transitions: 7}},
		{"open", breaker.Record{State: breaker.Open, Until: 5e18, Reason: "failures", Changed: 4e18, Transitions: 1},
			breaker.Record{State: breaker.Open, Until: 5e18, Reason: "failures", Changed: 4e18, Transitions: 1}},
		{"half-open", breaker.Record{State: breaker.HalfOpen, Until: 9, Probe: 1<<64 - 1, Reason: "probe_failed"},
			breaker.Record{State: breaker.HalfOpen, Until: 9, Probe: 1<<64 - 1, Reason: "probe_failed"}},
		{"slow times", breaker.Record{Slow: []int64{1, 2, 3}}, breaker.Record{Slow: []int64{1, 2, 3}}},
		{"16 slow times", breaker.Record{Slow: slow16}, breaker.Record{Slow: slow16}},
		{"20 slow times keep the newest 16", breaker.Record{Slow: append([]int64{-4, -3, -2, -1}, slow16...)}, breaker.Record{Slow: slow16}},
		{"unknown reason", breaker.Record{State: breaker.Open, Reason: "custom"}, breaker.Record{State: breaker.Open, Reason: "custom"}},
		{"long reason cut", breaker.Record{Reason: "a-reason-longer-than-sixteen"}, breaker.Record{Reason: "a-reason-longer-"}},
	}
	for _, tt := range tests {
		var p payload
		encodeRecord(&p, tt.in)
		got, ok := decodeRecord(&p)
		if !ok || !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: got %+v (ok %v), want %+v", tt.name, got, ok, tt.want)
		}
	}
}

func TestDecodeRejectsMalformed(t *testing.T) {
	bad := map[string]func(p *payload){
		"state 3":          func(p *payload) { p.w[0] = 3 },
		"17 slow times":    func(p *payload) { p.w[0] = 17 << 8 },
		"17 byte reason":   func(p *payload) { p.w[0] = 17 << 16 },
		"high header bits": func(p *payload) { p.w[0] = 1 << 40 },
		"negative count":   func(p *payload) { p.w[1] = 1 << 63 },
		"short length":     func(p *payload) { p.n = 8 },
	}
	for name, spoil := range bad {
		var p payload
		encodeRecord(&p, breaker.Record{})
		spoil(&p)
		if got, ok := decodeRecord(&p); ok {
			t.Errorf("%s: decoded %+v, want rejected", name, got)
		}
	}
}
