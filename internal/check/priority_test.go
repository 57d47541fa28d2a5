package check

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// check prints which policies are batch, promote_after and each limit's
// reserve, in the text and the JSON.
func TestRunPriorities(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "sluice.yaml")
	os.WriteFile(cfg, []byte(`limits:
  promote_after: 45s
  rates:
    - {name: openai, provider: openai, requests_per_minute: 500, reserve: 20%}
policies:
  interactive: {}
  nightly: {}
  cron: {priority: batch}
`), 0o600)
	code, out, errOut := runCheck(t, "--config", cfg)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"Priorities: where calls wait for a slot, interactive calls go before batch ones",
		"  batch policies: cron, nightly; a batch call that has waited 45s goes as interactive\n",
		"  limit openai: 20% reserved from batch calls\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	_, js, _ := runCheck(t, "--config", cfg, "--json")
	var r struct {
		Priorities prioritiesRow `json:"priorities"`
	}
	if err := json.Unmarshal([]byte(js), &r); err != nil || len(r.Priorities.Batch) != 2 || r.Priorities.PromoteAfterMS != 45000 || r.Priorities.Reserves["openai"] != 0.2 {
		t.Errorf("JSON priorities %+v (%v)", r.Priorities, err)
	}
	_, out, _ = runCheck(t)
	if !strings.Contains(out, "  batch policies: nightly; a batch call that has waited 30s goes as interactive\n") {
		t.Errorf("the defaults' text lacks nightly as batch:\n%s", out)
	}
}
