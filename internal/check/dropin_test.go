package check

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestDropInDirs(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		{"foo.service", []string{"foo.service.d", "service.d"}},
		{"foo-bar-baz.service", []string{"foo-bar-baz.service.d", "foo-bar-.service.d", "foo-.service.d", "service.d"}},
		{"agent@tickets.service", []string{"agent@tickets.service.d", "agent@.service.d", "service.d"}},
		{"llm-agent@a-b.service", []string{"llm-agent@a-b.service.d", "llm-agent@.service.d", "llm-.service.d", "service.d"}},
		{"nightly.timer", []string{"nightly.timer.d", "timer.d"}},
	}
	for _, tt := range tests {
		got := dropInDirs("", tt.name)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("dropInDirs(%q) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDropInOrder(t *testing.T) {
	const dir = "testdata/dropins"
	tests := []struct {
		unit string
		want []string
	}{
		// 20-b.conf in foo.service.d hides service.d's; README is not a .conf.
		{"foo.service", []string{"foo.service.d/10-a.conf", "service.d/15-x.conf", "foo.service.d/20-b.conf"}},
		{"bar-baz.service", []string{"bar-.service.d/10-stop.conf", "service.d/15-x.conf", "service.d/20-b.conf"}},
		{"tick.timer", []string{"tick.timer.d/delay.conf"}},
	}
	for _, tt := range tests {
		got, err := dropIns(dir, tt.unit)
		if err != nil {
			t.Fatal(err)
		}
		for i := range got {
			got[i] = strings.TrimPrefix(filepath.ToSlash(got[i]), dir+"/")
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("dropIns(%s) = %q, want %q", tt.unit, got, tt.want)
		}
	}
}

// TestDropInsApplied checks the effective values once drop-ins are read in
// order, whether the directory or the unit file alone is named.
func TestDropInsApplied(t *testing.T) {
	for _, arg := range []string{"testdata/dropins", "testdata/dropins/foo.service"} {
		units, err := collect([]string{arg})
		if err != nil {
			t.Fatal(err)
		}
		var foo *unitFiles
		for i := range units {
			if filepath.Base(units[i].Path) == "foo.service" {
				foo = &units[i]
			}
		}
		if foo == nil {
			t.Fatalf("%s: foo.service not collected: %+v", arg, units)
		}
		var es []entry
		for _, f := range append([]string{foo.Path}, foo.DropIns...) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got, err := parseUnit(f, data)
			if err != nil {
				t.Fatal(err)
			}
			es = append(es, got...)
		}
		sv := readService(foo.Path, es)
		if sv.Stop.D != time.Minute || filepath.ToSlash(sv.Stop.At.File) != "testdata/dropins/foo.service.d/20-b.conf" || sv.Stop.At.Line != 2 {
			t.Errorf("%s: stop = %v at %v, want 1m at foo.service.d/20-b.conf:2", arg, sv.Stop.D, sv.Stop.At)
		}
		if sv.Runtime.D != 25*time.Second || filepath.ToSlash(sv.Runtime.At.File) != "testdata/dropins/service.d/15-x.conf" {
			t.Errorf("%s: runtime = %v at %v, want 25s from service.d/15-x.conf", arg, sv.Runtime.D, sv.Runtime.At)
		}
	}
}

func TestCollect(t *testing.T) {
	tmp := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("units/a.service", "[Service]\nExecStart=/bin/a\n")
	write("units/b.timer", "[Timer]\nOnCalendar=daily\n")
	write("units/c.socket", "[Socket]\nListenStream=80\n")
	write("units/notes.txt", "not a unit\n")
	if err := os.Mkdir(filepath.Join(tmp, "units", "dir.service"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(os.DevNull, filepath.Join(tmp, "units", "masked.service")); err != nil {
		t.Fatal(err)
	}
	write("units/agents/nightly/d.service", "[Service]\nExecStart=/bin/d\n")
	write("units/agents/e.timer", "[Timer]\nOnCalendar=daily\n")
	write("units/a.service.d/10-x.conf", "[Service]\nTimeoutStopSec=1m\n")
	write("units/.git/f.service", "[Service]\n")
	vendor := write("vendor/v.service", "[Service]\n")
	if err := os.MkdirAll(filepath.Join(tmp, "units", "multi-user.target.wants"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(vendor, filepath.Join(tmp, "units", "multi-user.target.wants", "v.service")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(tmp, "units", "a.service"), filepath.Join(tmp, "units", "alias.service")); err != nil {
		t.Fatal(err)
	}
	sock := write("c.socket", "[Socket]\n")
	empty := filepath.Join(tmp, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}

	units, err := collect([]string{filepath.Join(tmp, "units"), filepath.Join(tmp, "units", "a.service")})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range units {
		names = append(names, filepath.Base(u.Path))
	}
	// Below the directory named, subdirectories too; not drop-ins, hidden
	// directories or the links of enabled units, and a unit once.
	want := []string{"a.service", "e.timer", "d.service", "b.timer"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("collected %q, want %q (subdirectories; no socket, no directory, no masked unit, no .wants link, no hidden directory, no repeat)", names, want)
	}
	if len(units) > 0 && (len(units[0].DropIns) != 1 || filepath.Base(units[0].DropIns[0]) != "10-x.conf") {
		t.Errorf("a.service's drop-ins %q, want its 10-x.conf", units[0].DropIns)
	}

	for _, tt := range []struct {
		path, want string
	}{
		{filepath.Join(tmp, "missing.service"), "no such file or directory"},
		{sock, "not a .service or .timer file"},
		{empty, "no .service or .timer files in it"},
	} {
		_, err := collect([]string{tt.path})
		if err == nil || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), tt.path) {
			t.Errorf("collect(%s) error = %v, want one naming the path and %q", tt.path, err, tt.want)
		}
	}
}
