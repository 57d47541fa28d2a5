package check

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// fmtDur writes d the short way that both a sluice config and a systemd
// unit accept: 1h, 10m, 1m59s, 2.5s, 500ms; infinity for no limit.
func fmtDur(d time.Duration) string {
	switch {
	case d == infinity:
		return "infinity"
	case d < time.Second:
		return d.String()
	}
	var b strings.Builder
	if h := d / time.Hour; h > 0 {
		b.WriteString(strconv.FormatInt(int64(h), 10) + "h")
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		b.WriteString(strconv.FormatInt(int64(m), 10) + "m")
		d -= m * time.Minute
	}
	if d > 0 {
		b.WriteString(strconv.FormatInt(int64(d/time.Second), 10))
		if ns := d % time.Second; ns > 0 {
			b.WriteString(strings.TrimRight(fmt.Sprintf(".%09d", ns), "0"))
		}
		b.WriteString("s")
	}
	return b.String()
}
