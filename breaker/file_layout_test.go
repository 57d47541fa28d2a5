package breaker

import (
	"reflect"
	"strings"
	"testing"
)

func TestRecordEncodingRoundTrip(t *testing.T) {
	slow16 := make([]int64, 16)
	for i := range slow16 {
		slow16[i] = int64(1e18) + int64(i)
	}
	tests := []struct {
		name string
		in   Record
		want Record
	}{
		{"zero", Record{}, Record{}},
		{"closed with failures", Record{Failures: 999, Transitions: 7}, Record{Failures: 999, Transitions: 7}},
		{"open", Record{State: Open, Until: 5e18, Reason: "failures", Changed: 4e18, Transitions: 1},
			Record{State: Open, Until: 5e18, Reason: "failures", Changed: 4e18, Transitions: 1}},
		{"half-open", Record{State: HalfOpen, Until: 9, Probe: 1<<64 - 1, Reason: "probe_failed"},
			Record{State: HalfOpen, Until: 9, Probe: 1<<64 - 1, Reason: "probe_failed"}},
		{"slow times", Record{Slow: []int64{1, 2, 3}}, Record{Slow: []int64{1, 2, 3}}},
		{"16 slow times", Record{Slow: slow16}, Record{Slow: slow16}},
		{"20 slow times keep the newest 16", Record{Slow: append([]int64{-4, -3, -2, -1}, slow16...)}, Record{Slow: slow16}},
		{"unknown reason", Record{State: Open, Reason: "custom"}, Record{State: Open, Reason: "custom"}},
		{"long reason cut", Record{Reason: "a-reason-longer-than-sixteen"}, Record{Reason: "a-reason-longer-"}},
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
		encodeRecord(&p, Record{})
		spoil(&p)
		if got, ok := decodeRecord(&p); ok {
			t.Errorf("%s: decoded %+v, want rejected", name, got)
		}
	}
}

func TestEscapeName(t *testing.T) {
	tests := []struct{ name, want string }{
		{"openai", "openai"},
		{"openai/gpt-4o", "openai%2Fgpt-4o"},
		{"anthropic/claude-3.5_x", "anthropic%2Fclaude-3.5_x"},
		{"OpenAI", "%4Fpen%41%49"},
		{".hidden", "%2Ehidden"},
		{"..", "%2E."},
		{"a%b", "a%25b"},
		{"sp ace", "sp%20ace"},
		{"é", "%C3%A9"},
	}
	for _, tt := range tests {
		got, err := escapeName(tt.name)
		if err != nil || got != tt.want {
			t.Errorf("escapeName(%q) = %q, %v; want %q", tt.name, got, err, tt.want)
		}
		back, ok := unescapeName(got)
		if !ok || back != tt.name {
			t.Errorf("unescapeName(%q) = %q, %v; want %q", got, back, ok, tt.name)
		}
	}
	for _, bad := range []string{"", strings.Repeat("/", 100)} {
		if _, err := escapeName(bad); err == nil {
			t.Errorf("escapeName(%q): no error", bad)
		}
	}
	for _, stem := range []string{"A", "%2f", "%2", "%zz", ".x", "%61"} {
		if name, ok := unescapeName(stem); ok {
			t.Errorf("unescapeName(%q) = %q, want rejected (not canonical)", stem, name)
		}
	}
}

func FuzzEscapeName(f *testing.F) {
	for _, s := range []string{"openai/gpt-4o", "..", "%", "A/b.c", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		stem, err := escapeName(name)
		if err != nil {
			return
		}
		for i := 0; i < len(stem); i++ {
			if c := stem[i]; !plainByte(c) && c != '%' && !(c >= 'A' && c <= 'F') {
				t.Fatalf("escapeName(%q) = %q: byte %q is not file-name safe", name, stem, c)
			}
		}
		if stem[0] == '.' || strings.Contains(stem, "/") {
			t.Fatalf("escapeName(%q) = %q: not a plain file name", name, stem)
		}
		if back, ok := unescapeName(stem); !ok || back != name {
			t.Fatalf("unescapeName(escapeName(%q)) = %q, %v", name, back, ok)
		}
	})
}
