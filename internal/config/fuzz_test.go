package config

import (
	"os"
	"strings"
	"testing"
)

// FuzzParse: Parse never panics, refuses with one line starting with
// "config: ", and every config it accepts passes Validate. (The worst
// case of its routes is fuzzed in internal/check, which reckons it.)
func FuzzParse(f *testing.F) {
	if data, err := os.ReadFile("testdata/design.yaml"); err == nil {
		f.Add(data)
	}
	for _, tc := range badConfigs {
		f.Add([]byte(tc.src))
	}
	f.Add([]byte("policies:\n  interactive: &b {retry: {max_attempts: 2}}\n  x: {<<: *b}\n"))
	f.Add([]byte("routes: [{prefix: /a, provider: openai, fallbacks: [{provider: openai, model: m}]}]\n"))
	f.Add([]byte("limits: {max_body: 1GiB}\nbudgets: [{name: d, limit_usd: 1, period: 1h}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse(data)
		if err != nil {
			msg := err.Error()
			if !strings.HasPrefix(msg, "config: ") || strings.ContainsAny(msg, "\n\r") {
				t.Fatalf("error %q is not one line starting with config:", msg)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted config fails Validate: %v", err)
		}
	})
}
