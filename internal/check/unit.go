package check

import (
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// where is a place in a unit file: its path and 1-based line, or line 0
// when a value is systemd's default and no line set it.
type where struct {
	File string
	Line int
}

func (w where) String() string {
	if w.Line == 0 {
		return w.File
	}
	return fmt.Sprintf("%s:%d", w.File, w.Line)
}

// limit is the effective value of a time setting and where it was set.
type limit struct {
	D   time.Duration // infinity when there is no limit
	Key string        // the key that set it (TimeoutSec for TimeoutStopSec, say); "" for the default
	Raw string        // the value as written
	At  where
}

// set is the assignment that set l, "TimeoutSec=20s"; "" for the default.
func (l limit) set() string {
	if l.Key == "" {
		return ""
	}
	return l.Key + "=" + l.Raw
}

// Defaults of systemd-system.conf(5): DefaultTimeoutStartSec= and
// DefaultTimeoutStopSec=.
const (
	defaultStartTimeout = 90 * time.Second
	defaultStopTimeout  = 90 * time.Second
)

// service is what a .service unit, drop-ins applied, says about how long
// systemd lets it run.
type service struct {
	Path     string
	Type     string // effective Type=: simple, exec, forking, oneshot, dbus, notify, notify-reload or idle
	Start    limit  // TimeoutStartSec
	Stop     limit  // TimeoutStopSec
	Runtime  limit  // RuntimeMaxSec
	Restart  limit  // the longest delay before a restart: RestartSec, or RestartMaxDelaySec when longer
	Exec     []string
	Problems []finding // lines systemd ignores
}

var serviceTypes = []string{"simple", "exec", "forking", "oneshot", "dbus", "notify", "notify-reload", "idle"}

// readService works out the effective settings of the service at path
// from its entries, the main file's first and then each drop-in's, as
// systemd does: a later assignment replaces an earlier one, TimeoutSec=
// sets both TimeoutStartSec= and TimeoutStopSec=, a value systemd cannot
// parse (an empty one included) is ignored, an empty ExecStart= empties
// the list, and Type=oneshot turns the start timeout off unless one was
// set.
func readService(path string, entries []entry) service {
	s := service{Path: path,
		Start:   limit{D: defaultStartTimeout, At: where{File: path}},
		Stop:    limit{D: defaultStopTimeout, At: where{File: path}},
		Runtime: limit{D: infinity, At: where{File: path}},
	}
	var typ string
	var startSet, bus bool
	for _, e := range entries {
		if e.Section != "Service" {
			continue
		}
		switch e.Key {
		case "Type":
			if slices.Contains(serviceTypes, e.Value) {
				typ = e.Value
			} else {
				s.Problems = append(s.Problems, badType(path, e))
			}
		case "BusName":
			bus = e.Value != ""
		case "ExecStart":
			if e.Value == "" {
				s.Exec = nil
			} else {
				s.Exec = append(s.Exec, e.Value)
			}
		case "RestartSec", "RestartMaxDelaySec":
			d, err := parseSpan(e.Value)
			if err != nil {
				s.Problems = append(s.Problems, badSpan(path, e, err))
				continue
			}
			if d > s.Restart.D {
				s.Restart = limit{D: d, Key: e.Key, Raw: e.Value, At: where{File: e.File, Line: e.Line}}
			}
		case "TimeoutSec", "TimeoutStartSec", "TimeoutStopSec", "RuntimeMaxSec":
			l, ok := s.timeSetting(e)
			if !ok {
				continue
			}
			if e.Key == "TimeoutSec" || e.Key == "TimeoutStartSec" {
				s.Start, startSet = l, true
			}
			if e.Key == "TimeoutSec" || e.Key == "TimeoutStopSec" {
				s.Stop = l
			}
			if e.Key == "RuntimeMaxSec" {
				s.Runtime = l
			}
		}
	}
	s.Type = effectiveType(typ, bus, len(s.Exec) > 0)
	if s.Type == "oneshot" && !startSet {
		s.Start = limit{D: infinity, At: where{File: path}}
	}
	return s
}

// timeSetting parses the time span of e, recording a problem when systemd
// would ignore it. The timeouts take 0 as infinity, as systemd does;
// RuntimeMaxSec=0 is 0.
func (s *service) timeSetting(e entry) (limit, bool) {
	d, err := parseSpan(e.Value)
	if err != nil {
		s.Problems = append(s.Problems, badSpan(s.Path, e, err))
		return limit{}, false
	}
	if d == 0 && e.Key != "RuntimeMaxSec" {
		d = infinity
	}
	return limit{D: d, Key: e.Key, Raw: e.Value, At: e.where()}, true
}

// effectiveType is systemd's choice of Type= when none is set: dbus with
// a BusName=, simple with an ExecStart=, else oneshot.
func effectiveType(typ string, bus, exec bool) string {
	switch {
	case typ != "":
		return typ
	case bus:
		return "dbus"
	case exec:
		return "simple"
	}
	return "oneshot"
}

// servesGateway reports whether the service runs `sluice serve`.
func (s service) servesGateway() bool {
	for _, cmd := range s.Exec {
		f := strings.Fields(cmd)
		for i := 0; i+1 < len(f); i++ {
			name := strings.Trim(strings.TrimLeft(f[i], "@-:+!|"), `"'`)
			if path.Base(name) == "sluice" && strings.Trim(f[i+1], `"'`) == "serve" {
				return true
			}
		}
	}
	return false
}

// timer is what a .timer unit, drop-ins applied, says about when it fires.
type timer struct {
	Path     string
	Calendar []entry // the OnCalendar= assignments in effect
	Delay    limit   // RandomizedDelaySec; 0 by default
	Problems []finding
}

// readTimer works out the effective OnCalendar= list and
// RandomizedDelaySec= of the timer at path: an empty OnCalendar= empties
// the list, a later RandomizedDelaySec= replaces an earlier one, and one
// systemd cannot parse is ignored.
func readTimer(path string, entries []entry) timer {
	t := timer{Path: path, Delay: limit{At: where{File: path}}}
	for _, e := range entries {
		if e.Section != "Timer" {
			continue
		}
		switch e.Key {
		case "OnCalendar":
			if e.Value == "" {
				t.Calendar = nil
			} else {
				t.Calendar = append(t.Calendar, e)
			}
		case "RandomizedDelaySec":
			d, err := parseSpan(e.Value)
			if err != nil {
				t.Problems = append(t.Problems, badSpan(path, e, err))
				continue
			}
			t.Delay = limit{D: d, Key: e.Key, Raw: e.Value, At: e.where()}
		}
	}
	return t
}

// unitName is the file name of a unit's main file: foo.service.
func unitName(p string) string { return filepath.Base(p) }
