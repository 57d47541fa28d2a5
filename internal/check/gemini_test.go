package check

import (
	"strings"
	"testing"
)

func TestGeminiConfigChecks(t *testing.T) {
	t.Setenv("GEMINI_API_KEY", "test-key")
	code, stdout, stderr := runCheck(t, "--config", "testdata/config/gemini.yaml")
	if code != 0 || stderr != "" {
		t.Fatalf("exit %d, stderr %q; want a clean check of a gemini provider", code, stderr)
	}
	if !strings.Contains(stdout, "/gemini") || !strings.Contains(stdout, "gemini/gemini-2.0-flash") {
		t.Errorf("the routes table lacks the gemini route and its fallback:\n%s", stdout)
	}
	code, _, stderr = runCheck(t, "--config", "testdata/config/gemini-typo.yaml")
	if code != 2 || !strings.Contains(stderr, `unknown kind "gemeni" (did you mean gemini?)`) {
		t.Errorf("exit %d, stderr %q; want 2 and the kind named", code, stderr)
	}
}
