package main

import (
	"strings"
	"testing"

	"github.com/sluice-llm/sluice/fake"
)

// TestFakeHelpListsSteps: sluice fake --help lists every script step on a
// line of its own with an example, and every example is a valid script.
func TestFakeHelpListsSteps(t *testing.T) {
	var out strings.Builder
	if code := run([]string{"fake", "--help"}, strings.NewReader(""), &out, &out); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	lines := strings.Split(out.String(), "\n")
	for _, head := range []string{"STATUS", "hang", "slow:DUR", "reset", "overloaded", "stream:stall-after=N", "stream:cut-after=N"} {
		found := false
		for _, l := range lines {
			if strings.HasPrefix(strings.TrimSpace(l), head+" ") && strings.Contains(l, "e.g. ") {
				found = true
			}
		}
		if !found {
			t.Errorf("--help has no line for step %s with an example:\n%s", head, out.String())
		}
	}
	for _, s := range fakeSteps {
		if _, err := fake.ParseScript(s.example); err != nil {
			t.Errorf("example %q of %s does not parse: %v", s.example, s.step, err)
		}
	}
}
