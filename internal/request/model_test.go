package request

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckModel(t *testing.T) {
	tests := []struct {
		name, model string
		ok          bool
	}{
		{"plain", "gpt-4o-mini", true},
		{"empty", "", true},
		{"path and space", "accounts/fireworks/models/llama v3", true},
		{"unicode letters", "modèle-日本", true},
		{"exactly 256 bytes", strings.Repeat("m", 256), true},
		{"257 bytes", strings.Repeat("m", 257), false},
		{"100 kB", strings.Repeat("m", 100_000), false},
		{"invalid UTF-8", "gpt-\xff\xfe", false},
		{"a control character", "gpt\x01", false},
		{"a line break", "gpt\r\nX-Injected: 1", false},
		{"a tab", "gpt\t4", false},
		{"DEL", "gpt\x7f", false},
	}
	for _, tt := range tests {
		err := CheckModel(tt.model)
		if (err == nil) != tt.ok {
			t.Errorf("%s: CheckModel = %v, want ok=%v", tt.name, err, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidModel) {
			t.Errorf("%s: %v is not ErrInvalidModel", tt.name, err)
		}
	}
	if err := CheckModel(strings.Repeat("m", 257)); !strings.Contains(err.Error(), "256") {
		t.Errorf("the error %q does not name the limit", err)
	}
}

func TestBodyModel(t *testing.T) {
	tests := []struct {
		body, want string
		ok         bool
	}{
		{`{"model":"gpt-4o"}`, "gpt-4o", true},
		{`{"messages":[]}`, "", true},
		{`not json`, "", true},
		{`{"model":5}`, "", false},
		{`{"model":null}`, "", false},
		{`{"model":{"name":"x"}}`, "", false},
		{`{"model":"a\u0001"}`, "a\x01", false},
		{`{"model":"` + strings.Repeat("m", 256) + `"}`, strings.Repeat("m", 256), true},
		{`{"model":"` + strings.Repeat("m", 255) + `\u00e9"}`, strings.Repeat("m", 255) + "é", false}, // 257 bytes decoded
	}
	for _, tt := range tests {
		got, err := BodyModel([]byte(tt.body))
		if got != tt.want || (err == nil) != tt.ok {
			t.Errorf("BodyModel(%.40s) = %q, %v; want %q, ok=%v", tt.body, got, err, tt.want, tt.ok)
		}
	}
}

func TestLoggable(t *testing.T) {
	if got := Loggable("gpt-4o"); got != "gpt-4o" {
		t.Errorf("Loggable changed a valid name: %q", got)
	}
	got := Loggable(strings.Repeat("\xff", 100_000))
	if len(got) > 300 || !strings.Contains(got, "100000 bytes") || !strings.HasPrefix(got, `"\xff`) {
		t.Errorf("Loggable of 100 kB of invalid UTF-8 = %q", got)
	}
	if got := Loggable("a\r\nb"); strings.ContainsAny(got, "\r\n") {
		t.Errorf("Loggable kept a line break: %q", got)
	}
}
