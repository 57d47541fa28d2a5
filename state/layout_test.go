package state

import (
	"strings"
	"testing"
)

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
