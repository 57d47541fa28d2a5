package check

import (
	"errors"
	"reflect"
	"testing"
)

func TestParseUnit(t *testing.T) {
	type kv struct {
		Line                int
		Section, Key, Value string
	}
	tests := []struct {
		name    string
		in      string
		want    []kv
		wantErr int // line of a *syntaxError; 0 for none
	}{
		{"plain", "[Service]\nType=oneshot\nTimeoutSec=5\n",
			[]kv{{2, "Service", "Type", "oneshot"}, {3, "Service", "TimeoutSec", "5"}}, 0},
		{"whitespace around = and line", "[Service]\n  TimeoutStopSec =  1min 30s  \n\t[Timer]\t\n",
			[]kv{{2, "Service", "TimeoutStopSec", "1min 30s"}}, 0},
		{"comments", "# c\n; c\n[Service]\n   # indented comment\nA=1 # not a comment\n",
			[]kv{{5, "Service", "A", "1 # not a comment"}}, 0},
		{"continuation", "[Service]\nExecStart=/bin/a \\\n  --b \\\n--c\nX=1\n",
			[]kv{{2, "Service", "ExecStart", "/bin/a    --b  --c"}, {5, "Service", "X", "1"}}, 0},
		{"comment inside continuation", "[Service]\nTimeoutStopSec=1min\\\n# skipped\n; skipped\n 30s\n",
			[]kv{{2, "Service", "TimeoutStopSec", "1min  30s"}}, 0},
		{"escaped backslash does not continue", "[Service]\nA=x\\\\\nB=y\n",
			[]kv{{2, "Service", "A", `x\\`}, {3, "Service", "B", "y"}}, 0},
		{"space after backslash does not continue", "[Service]\nA=x\\ \nB=y\n",
			[]kv{{2, "Service", "A", `x\`}, {3, "Service", "B", "y"}}, 0},
		{"continuation at end of file", "[Service]\nA=x\\",
			[]kv{{2, "Service", "A", "x"}}, 0},
		{"empty line ends a continuation", "[Service]\nA=x\\\n\nB=y\n",
			[]kv{{2, "Service", "A", "x"}, {4, "Service", "B", "y"}}, 0},
		{"empty value", "[Service]\nTimeoutStopSec=\n",
			[]kv{{2, "Service", "TimeoutStopSec", ""}}, 0},
		{"value keeps its = signs", "[Service]\nEnvironment=A=b C=d\n",
			[]kv{{2, "Service", "Environment", "A=b C=d"}}, 0},
		{"outside any section", "TimeoutStopSec=5\n[Service]\nB=2\n",
			[]kv{{3, "Service", "B", "2"}}, 0},
		{"no = and no key are ignored", "[Service]\njust words\n=value\nB=2\n",
			[]kv{{4, "Service", "B", "2"}}, 0},
		{"any section is kept, for the reader to ignore", "[X-Mine]\nA=1\n[Service]\nB=2\n",
			[]kv{{2, "X-Mine", "A", "1"}, {4, "Service", "B", "2"}}, 0},
		{"keys are case-sensitive", "[Service]\ntimeoutstopsec=5\n",
			[]kv{{2, "Service", "timeoutstopsec", "5"}}, 0},
		{"CRLF and a byte order mark", "\uFEFF[Service]\r\nA=1\r\nB=2\r\n",
			[]kv{{2, "Service", "A", "1"}, {3, "Service", "B", "2"}}, 0},
		{"lone CR and NUL end lines too", "[Service]\rA=1\x00B=2\n\nC=3",
			[]kv{{2, "Service", "A", "1"}, {3, "Service", "B", "2"}, {5, "Service", "C", "3"}}, 0},
		{"not UTF-8", "[Service]\nA=\xff\nB=2\n",
			[]kv{{3, "Service", "B", "2"}}, 0},
		{"unclosed section header", "[Service]\nA=1\n[Timer\nB=2\n",
			[]kv{{2, "Service", "A", "1"}}, 3},
		{"quote in section header", "[Ser\"vice]\n", nil, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			es, err := parseUnit("u.service", []byte(tt.in))
			var got []kv
			for _, e := range es {
				if e.File != "u.service" {
					t.Errorf("entry file = %q", e.File)
				}
				got = append(got, kv{e.Line, e.Section, e.Key, e.Value})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("entries:\n got %+v\nwant %+v", got, tt.want)
			}
			var se *syntaxError
			gotErr := 0
			if errors.As(err, &se) {
				gotErr = se.Line
			} else if err != nil {
				t.Fatalf("error %v is not a *syntaxError", err)
			}
			if gotErr != tt.wantErr {
				t.Errorf("syntax error at line %d, want %d (%v)", gotErr, tt.wantErr, err)
			}
		})
	}
}

func TestSplitLines(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"a", []string{"a"}},
		{"a\n", []string{"a"}},
		{"a\nb", []string{"a", "b"}},
		{"a\r\nb\r\n", []string{"a", "b"}},
		{"a\n\rb", []string{"a", "b"}},
		{"a\n\nb", []string{"a", "", "b"}},
		{"a\r\rb", []string{"a", "", "b"}},
		{"a\x00b", []string{"a", "b"}},
	}
	for _, tt := range tests {
		got := splitLines([]byte(tt.in))
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("splitLines(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
