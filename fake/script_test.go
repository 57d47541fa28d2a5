package fake

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseScript(t *testing.T) {
	ok200 := Step{Kind: Respond, Status: 200}
	tests := []struct {
		script string
		want   []Step
	}{
		{"", []Step{ok200}},
		{"  ", []Step{ok200}},
		{"200", []Step{ok200}},
		{"201", []Step{{Kind: Respond, Status: 201}}},
		{"503,503,200", []Step{{Kind: Respond, Status: 503}, {Kind: Respond, Status: 503}, ok200}},
		{" 529 , 200 ", []Step{{Kind: Respond, Status: 529}, ok200}},
		{"hang", []Step{{Kind: Hang}}},
		{"reset", []Step{{Kind: Reset}}},
		{"overloaded", []Step{{Kind: Overloaded}}},
		{"throttled", []Step{{Kind: Throttled}}},
		{"429:model_not_ready", []Step{{Kind: Respond, Status: 429, Error: "model_not_ready"}}},
		{"stream:error-after=0", []Step{{Kind: Stream, End: Fail}}},
		{"slow:16s", []Step{{Kind: Slow, Delay: 16 * time.Second}}},
		{"slow:50ms", []Step{{Kind: Slow, Delay: 50 * time.Millisecond}}},
		{"429:retry-after=2", []Step{{Kind: Respond, Status: 429, Hints: []Hint{{"retry-after", "2"}}}}},
		{"429:retry-after-ms=1500", []Step{{Kind: Respond, Status: 429, Hints: []Hint{{"retry-after-ms", "1500"}}}}},
		{"503:retry-after-date=3", []Step{{Kind: Respond, Status: 503, Hints: []Hint{{"retry-after-date", "3"}}}}},
		{"503:should-retry=0", []Step{{Kind: Respond, Status: 503, Hints: []Hint{{"should-retry", "false"}}}}},
		{"429:insufficient_quota", []Step{{Kind: Respond, Status: 429, Error: "insufficient_quota"}}},
		{"429: retry-after=02 ; insufficient_quota", []Step{{Kind: Respond, Status: 429,
			Error: "insufficient_quota", Hints: []Hint{{"retry-after", "2"}}}}},
		{"400:context_length_exceeded", []Step{{Kind: Respond, Status: 400, Error: "context_length_exceeded"}}},
		{"400:content_policy", []Step{{Kind: Respond, Status: 400, Error: "content_policy"}}},
		{"stream", []Step{{Kind: Stream}}},
		{"stream:stall-after=3", []Step{{Kind: Stream, End: Stall, After: 3}}},
		{"stream:stall-after=0", []Step{{Kind: Stream, End: Stall}}},
		{"stream:cut-after=40", []Step{{Kind: Stream, End: Cut, After: 40}}},
		{"stream:error-after=2", []Step{{Kind: Stream, End: Fail, After: 2}}},
		{"stream:events=64;interval=20ms", []Step{{Kind: Stream, Events: 64, Interval: 20 * time.Millisecond}}},
		{"hang,reset,200", []Step{{Kind: Hang}, {Kind: Reset}, ok200}},
	}
	for _, tt := range tests {
		got, err := ParseScript(tt.script)
		if err != nil {
			t.Errorf("ParseScript(%q): %v", tt.script, err)
			continue
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("ParseScript(%q) = %+v, want %+v", tt.script, got, tt.want)
		}
	}
}

func TestParseScriptErrors(t *testing.T) {
	tests := []struct{ script, want string }{
		{"200,5o3", `fake: script step 2 "5o3": want a status (e.g. 503), hang, reset, stall, cut, slow:DUR, overloaded, throttled, stream:... or mix:...`},
		{"200,,200", `fake: script step 2 "": want a status`},
		{"0503", "want a status"},
		{"+503", "want a status"},
		{"302", "status 302: want a 2xx, 4xx or 5xx status"},
		{"600", "status 600"},
		{"199", "status 199"},
		{"hang:5s", "hang takes no modifiers"},
		{"overloaded:1", "overloaded takes no modifiers"},
		{"slow", "want slow:DUR"},
		{"slow:abc", "want slow:DUR"},
		{"slow:-1s", "want slow:DUR"},
		{"429:foo", `unknown modifier "foo"`},
		{"429:retry-after", `unknown modifier "retry-after"`},
		{"429:insufficient_quota=1", `unknown modifier "insufficient_quota"`},
		{"429:", "empty modifier"},
		{"429:retry-after=1;", "empty modifier"},
		{"429:retry-after=x", "retry-after=x: want a whole number"},
		{"429:retry-after=-1", "want a whole number"},
		{"429:retry-after-ms=99999999999", "want a whole number"},
		{"429:retry-after=1;retry-after=2", "modifier retry-after given twice"},
		{"503:should-retry=maybe", "should-retry=maybe: want true or false"},
		{"200:insufficient_quota", "insufficient_quota needs a 4xx or 5xx status"},
		{"400:content_policy;insufficient_quota", "both name the error"},
		{"stream:", "empty modifier"},
		{"stream:stall-after", `stream modifier "stall-after" needs a value`},
		{"stream:foo=1", `unknown stream modifier "foo"`},
		{"stream:stall-after=3;cut-after=2", "stall-after and cut-after both end the stream"},
		{"stream:events=0", "events=0: want a whole number from 1"},
		{"stream:events=1000000", "want a whole number from 1 to 100000"},
		{"stream:cut-after=-1", "cut-after=-1"},
		{"stream:interval=fast", "interval=fast: want a duration"},
		{"200,stream:events=2;events=3", `fake: script step 2 "stream:events=2;events=3": modifier events given twice`},
	}
	for _, tt := range tests {
		steps, err := ParseScript(tt.script)
		if err == nil {
			t.Errorf("ParseScript(%q) = %+v, want an error", tt.script, steps)
			continue
		}
		if got := err.Error(); !strings.Contains(got, tt.want) || !strings.HasPrefix(got, "fake: script step ") {
			t.Errorf("ParseScript(%q) error = %q, want it to contain %q", tt.script, got, tt.want)
		}
	}
}

func TestStepString(t *testing.T) {
	tests := []struct{ script, want string }{
		{"200", "200"},
		{"429:retry-after=2;insufficient_quota", "429:insufficient_quota;retry-after=2"},
		{"503:retry-after-ms=1500;retry-after=2", "503:retry-after-ms=1500;retry-after=2"},
		{"503:should-retry=0", "503:should-retry=false"},
		{"slow:1m", "slow:1m0s"},
		{"hang", "hang"},
		{"reset", "reset"},
		{"overloaded", "overloaded"},
		{"throttled", "throttled"},
		{"429:model_not_ready", "429:model_not_ready"},
		{"stream:error-after=0", "stream:error-after=0"},
		{"stream:error-after=3", "stream:error-after=3"},
		{"stream:interval=20ms;events=64", "stream:events=64;interval=20ms"},
		{"stream:cut-after=40", "stream:cut-after=40"},
		{"stream", "stream"},
	}
	for _, tt := range tests {
		steps, err := ParseScript(tt.script)
		if err != nil {
			t.Fatalf("ParseScript(%q): %v", tt.script, err)
		}
		if got := steps[0].String(); got != tt.want {
			t.Errorf("ParseScript(%q)[0].String() = %q, want %q", tt.script, got, tt.want)
		}
	}
}

func FuzzParseScript(f *testing.F) {
	for _, s := range []string{
		"", "503,503,200", "hang", "reset", "overloaded", "throttled", "slow:16s", "429:retry-after=2",
		"429:insufficient_quota;retry-after-ms=1500", "503:retry-after-date=3;should-retry=false",
		"400:context_length_exceeded", "stream:stall-after=3", "stream:cut-after=40",
		"stream:events=64;interval=20ms;error-after=2", "5o3", "429:;", "stream:",
		"stall", "cut", soakMix, "mix:cut=0.5%;slow:1s=2%", "mix:503=60%;500=50%",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		steps, err := ParseScript(s)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fake: ") {
				t.Fatalf("ParseScript(%q) error %q lacks the fake: prefix", s, err)
			}
			return
		}
		if len(steps) == 0 {
			t.Fatalf("ParseScript(%q) gave no steps and no error", s)
		}
		for _, st := range steps {
			again, err := ParseScript(st.String())
			if err != nil || len(again) != 1 || !reflect.DeepEqual(again[0], st) {
				t.Fatalf("step %+v: String %q parses to %+v, %v", st, st.String(), again, err)
			}
		}
	})
}
