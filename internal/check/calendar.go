package check

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// calendarShorthands are the OnCalendar= words systemd.time(7) expands.
var calendarShorthands = map[string]bool{
	"minutely": true, "hourly": true, "daily": true, "weekly": true, "monthly": true,
	"yearly": true, "annually": true, "quarterly": true, "semiannually": true,
}

// weekdays maps systemd's weekday names, short and long, to their number.
var weekdays = map[string]int{
	"mon": 1, "monday": 1, "tue": 2, "tuesday": 2, "wed": 3, "wednesday": 3,
	"thu": 4, "thursday": 4, "fri": 5, "friday": 5, "sat": 6, "saturday": 6,
	"sun": 7, "sunday": 7,
}

// parseCalendar checks s against systemd's calendar-event grammar
// (systemd.time(7)): a shorthand such as daily, or
//
//	[WEEKDAYS] [[YEAR-]MONTH-DAY | [YEAR-]MONTH~DAY] [HOUR:MINUTE[:SECOND]] [TIMEZONE]
//
// where weekdays are names and ranges (Mon..Fri, Sat,Sun), and each date
// and time component is * or a list of values, ranges (a..b) and
// repetitions (start/step), and ~ counts days back from the month's end.
// It returns nil when systemd would accept s.
func parseCalendar(s string) error {
	f := strings.Fields(s)
	if len(f) == 0 {
		return errors.New("empty calendar expression")
	}
	if len(f) > 1 && isTimezone(f[len(f)-1]) {
		f = f[:len(f)-1]
	}
	if len(f) == 1 && calendarShorthands[strings.ToLower(f[0])] {
		return nil
	}
	stage := 0 // 0 weekdays, 1 date, 2 time, 3 done
	for _, tok := range f {
		var err error
		next := 0
		switch {
		case strings.Contains(tok, ":"):
			err, next = parseClock(tok), 3
		case strings.ContainsAny(tok, "-~") && (tok[0] == '*' || tok[0] >= '0' && tok[0] <= '9'):
			err, next = parseDate(tok), 2
		default:
			err, next = parseWeekdays(tok), 1
		}
		if err != nil {
			return err
		}
		if next <= stage {
			return fmt.Errorf("%q is out of order: write weekdays, then the date, then the time", tok)
		}
		stage = next
	}
	return nil
}

// isTimezone reports whether tok is a timezone systemd would take: UTC or
// an IANA name this host knows, or one shaped like Area/City.
func isTimezone(tok string) bool {
	if tok == "UTC" || tok == "utc" {
		return true
	}
	if _, err := time.LoadLocation(tok); err == nil && tok != "Local" {
		return strings.Contains(tok, "/") || strings.ToUpper(tok) == tok
	}
	area, city, ok := strings.Cut(tok, "/")
	return ok && letters(area) && city != "" && strings.Trim(city, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_-+/0123456789") == ""
}

func letters(s string) bool {
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_') {
			return false
		}
	}
	return s != ""
}

// parseWeekdays checks a weekday list: Mon, Mon..Fri, Sat,Sun.
func parseWeekdays(tok string) error {
	for item := range strings.SplitSeq(tok, ",") {
		a, b, isRange := strings.Cut(item, "..")
		_, okA := weekdays[strings.ToLower(a)]
		_, okB := weekdays[strings.ToLower(b)]
		if !okA || isRange && !okB {
			return fmt.Errorf("%q is not a weekday, date or time (weekdays are Mon..Sun, dates *-*-*, times 02:00)", item)
		}
	}
	return nil
}

// parseDate checks [YEAR-]MONTH-DAY, or with ~ before the day, counted
// from the end of the month.
func parseDate(tok string) error {
	var parts []string
	if head, day, ok := strings.Cut(tok, "~"); ok {
		parts = append(strings.Split(head, "-"), day)
	} else {
		parts = strings.Split(tok, "-")
	}
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("date %q: want MONTH-DAY or YEAR-MONTH-DAY", tok)
	}
	limits := [][2]int{{1, 12}, {1, 31}}
	names := []string{"month", "day"}
	if len(parts) == 3 {
		limits = append([][2]int{{1970, 2199}}, limits...)
		names = append([]string{"year"}, names...)
	}
	for i, p := range parts {
		if err := parseComponent(p, limits[i][0], limits[i][1], false); err != nil {
			return fmt.Errorf("date %q: %s %v", tok, names[i], err)
		}
	}
	return nil
}

// parseClock checks HOUR:MINUTE[:SECOND]; seconds may have a fraction.
func parseClock(tok string) error {
	parts := strings.Split(tok, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return fmt.Errorf("time %q: want HOUR:MINUTE or HOUR:MINUTE:SECOND", tok)
	}
	limits := [][2]int{{0, 23}, {0, 59}, {0, 59}}
	names := []string{"hour", "minute", "second"}
	for i, p := range parts {
		if err := parseComponent(p, limits[i][0], limits[i][1], i == 2); err != nil {
			return fmt.Errorf("time %q: %s %v", tok, names[i], err)
		}
	}
	return nil
}

// parseComponent checks one date or time component: *, */step, or a list
// of values, ranges a..b and repetitions v/step or a..b/step, each value
// from lo to hi. Seconds may carry a fraction.
func parseComponent(c string, lo, hi int, fraction bool) error {
	if c == "" {
		return errors.New("is empty")
	}
	for item := range strings.SplitSeq(c, ",") {
		base, step, hasStep := strings.Cut(item, "/")
		if hasStep {
			if n, err := number(step, fraction); err != nil || n <= 0 {
				return fmt.Errorf("%q: the repetition after / must be a positive number", item)
			}
		}
		if base == "*" {
			if strings.Contains(c, ",") {
				return fmt.Errorf("%q: * cannot be part of a list", c)
			}
			continue
		}
		a, b, isRange := strings.Cut(base, "..")
		va, err := number(a, fraction)
		if err != nil || va < float64(lo) || va > float64(hi) {
			return fmt.Errorf("%q: want a number from %d to %d", a, lo, hi)
		}
		if isRange {
			vb, err := number(b, fraction)
			if err != nil || vb < float64(lo) || vb > float64(hi) || vb < va {
				return fmt.Errorf("%q: want a range a..b from %d to %d", base, lo, hi)
			}
		}
	}
	return nil
}

// number parses a whole number, or with fraction a decimal one.
func number(s string, fraction bool) (float64, error) {
	if s == "" || strings.TrimLeft(s, "0123456789.") != "" || !fraction && strings.Contains(s, ".") {
		return 0, errors.New("not a number")
	}
	return strconv.ParseFloat(s, 64)
}
