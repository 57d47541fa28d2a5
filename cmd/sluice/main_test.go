package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRunDispatch(t *testing.T) {
	tests := []struct {
		args []string
		code int
		out  string
	}{
		{nil, exitUsage, "Usage: sluice"},
		{[]string{"help"}, exitOK, "Commands:"},
		{[]string{"version"}, exitOK, "sluice (devel)"},
		{[]string{"--version"}, exitOK, "sluice (devel)"},
		{[]string{"nope"}, exitUsage, `unknown command "nope"`},
		{[]string{"fake", "--script", "5o3"}, exitUsage, "--script"},
		{[]string{"fake", "--bogus"}, exitUsage, "flag provided but not defined"},
		{[]string{"help", "fake"}, exitOK, "Usage: sluice fake"},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		code := run(tt.args, strings.NewReader(""), &out, &out)
		if code != tt.code || !strings.Contains(out.String(), tt.out) {
			t.Errorf("sluice %v: exit %d, output %q; want exit %d with %q", tt.args, code, out.String(), tt.code, tt.out)
		}
	}
}
