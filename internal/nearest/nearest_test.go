package nearest

import "testing"

func TestName(t *testing.T) {
	keys := []string{"max_attempts", "bass", "base", "cap", "limit_usd", "TimeoutStartSec", "Persistent", "gemini", "openai"}
	for _, c := range []struct{ got, want string }{
		{"max_atempts", "max_attempts"}, // one edit
		{"MaxAttempts", "max_attempts"}, // case and '_' set aside
		{"timeoutstartsec", "TimeoutStartSec"},
		{"time-out_start-sec", "TimeoutStartSec"}, // three edits, but for '_' and '-'
		{"Persistant", "Persistent"},
		{"gemeni", "gemini"},               // two edits
		{"limit", "limit_usd"},             // a prefix of four letters or more
		{"limit_usd_per_day", "limit_usd"}, // starts with one
		{"cab", "cap"},                     // the fewest edits win: cap at 1, base at 2
		{"bas", "base"},                    // a tie goes to the first sorted: base before bass
		{"zzzzzz", ""},
		{"qq", ""}, // no name within two edits
		{"", ""},
	} {
		if got := Name(c.got, keys); got != c.want {
			t.Errorf("Name(%q) = %q, want %q", c.got, got, c.want)
		}
	}
	if got := Name("x", nil); got != "" {
		t.Errorf("Name with no candidates = %q, want \"\"", got)
	}
}
