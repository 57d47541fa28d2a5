package cmdline

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
)

func newSet() (*flag.FlagSet, *string, *bool) {
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	cfg := fs.String("config", "", "")
	js := fs.Bool("json", false, "")
	return fs, cfg, js
}

func TestParse(t *testing.T) {
	tests := []struct {
		args    string
		pos     []string
		config  string
		json    bool
		wantErr string
	}{
		{"", nil, "", false, ""},
		{"reset NAME --config F", []string{"reset", "NAME"}, "F", false, ""},
		{"--config F reset NAME", []string{"reset", "NAME"}, "F", false, ""},
		{"reset --config F NAME", []string{"reset", "NAME"}, "F", false, ""},
		{"reset --config=F NAME --json", []string{"reset", "NAME"}, "F", true, ""},
		{"-config F a -json b", []string{"a", "b"}, "F", true, ""},
		{"--json a", []string{"a"}, "", true, ""}, // a bool flag does not eat the next argument
		{"--json=false a", []string{"a"}, "", false, ""},
		{"a -- --config F", []string{"a", "--config", "F"}, "", false, ""},
		{"--config -- a", []string{"a"}, "--", false, ""}, // "--" as a flag's value is that value
		{"- a", []string{"-", "a"}, "", false, ""},
		{"a --bogus", nil, "", false, "flag provided but not defined: -bogus"},
		{"a --config", nil, "", false, "flag needs an argument: -config"},
		{"a --json=maybe", nil, "", false, "invalid boolean value"},
	}
	for _, tt := range tests {
		fs, cfg, js := newSet()
		pos, err := Parse(fs, strings.Fields(tt.args))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Parse(%q): err %v, want %q", tt.args, err, tt.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.args, err)
			continue
		}
		if !slices.Equal(pos, tt.pos) || *cfg != tt.config || *js != tt.json {
			t.Errorf("Parse(%q) = %q, config %q, json %v; want %q, %q, %v", tt.args, pos, *cfg, *js, tt.pos, tt.config, tt.json)
		}
	}
}

func TestParseHelp(t *testing.T) {
	for _, h := range []string{"-h", "--help", "-help"} {
		fs, _, _ := newSet()
		if _, err := Parse(fs, []string{"a", h}); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("Parse(a %s): %v, want flag.ErrHelp", h, err)
		}
	}
}

func TestUnexpected(t *testing.T) {
	if got, want := Unexpected([]string{"x"}, "flags only").Error(), `unexpected argument "x" (want flags only)`; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := Unexpected([]string{"x", "y"}, "reset NAME").Error(); !strings.Contains(got, `["x" "y"]`) {
		t.Errorf("got %q", got)
	}
}

// TestLocateConfig: --config, else $SLUICE_CONFIG, else the built-in
// defaults, each said as such.
func TestLocateConfig(t *testing.T) {
	t.Setenv("SLUICE_CONFIG", "")
	for _, tc := range []struct {
		flag, env string
		want      Source
		says      string
	}{
		{"", "", Source{}, "no --config and no $SLUICE_CONFIG: the built-in defaults"},
		{"", "/etc/sluice.yaml", Source{Path: "/etc/sluice.yaml", FromEnv: true}, "config /etc/sluice.yaml, named by $SLUICE_CONFIG"},
		{"f.yaml", "/etc/sluice.yaml", Source{Path: "f.yaml"}, "config f.yaml"},
		{"f.yaml", "", Source{Path: "f.yaml"}, "config f.yaml"},
	} {
		t.Setenv("SLUICE_CONFIG", tc.env)
		got := LocateConfig(tc.flag)
		if got != tc.want || got.String() != tc.says {
			t.Errorf("--config %q, $SLUICE_CONFIG %q: %+v, %q; want %+v, %q", tc.flag, tc.env, got, got.String(), tc.want, tc.says)
		}
	}
	var b strings.Builder
	Reading(&b, "sluice breakers", "state file:/var/lib/sluice", Named("--state"))
	if want := "sluice breakers: reading state file:/var/lib/sluice (--state)\n"; b.String() != want {
		t.Errorf("Reading wrote %q, want %q", b.String(), want)
	}
}
