package report

import (
	"bytes"
	"fmt"
	"strings"
)

// chartRows is the height of the text bar chart of 429s by minute.
const chartRows = 4

// blocks are the eighth-height bar glyphs, from empty to full.
var blocks = []rune(" ▁▂▃▄▅▆▇█")

// writeMinutes draws the 429s by minute of the hour as a text bar chart,
// one column per minute, and names the busiest minutes.
func writeMinutes(b *bytes.Buffer, r *RateLimited) {
	fmt.Fprintf(b, "\n429s BY MINUTE OF THE HOUR (UTC): %d\n", r.Total)
	if r.Total == 0 {
		return
	}
	peak := 0
	for _, n := range r.ByMinute {
		peak = max(peak, n)
	}
	var heights [60]int
	for m, n := range r.ByMinute {
		if n > 0 {
			heights[m] = max(1, (n*chartRows*8+peak-1)/peak)
		}
	}
	label := fmt.Sprint(peak)
	for row := chartRows - 1; row >= 0; row-- {
		lbl := ""
		if row == chartRows-1 {
			lbl = label
		}
		fmt.Fprintf(b, "  %*s │", len(label), lbl)
		var line strings.Builder
		for _, h := range heights {
			line.WriteRune(blocks[min(max(h-row*8, 0), 8)])
		}
		b.WriteString(strings.TrimRight(line.String(), " ") + "\n")
	}
	pad := strings.Repeat(" ", len(label)+3)
	b.WriteString(pad + "└" + strings.Repeat("┬─────────", 6) + "\n")
	b.WriteString(pad + " :00       :10       :20       :30       :40       :50\n")
	parts := make([]string, len(r.Top))
	for i, t := range r.Top {
		parts[i] = fmt.Sprintf(":%02d %d (%s)", t.Minute, t.N, pct(t.Share))
	}
	b.WriteString("  busiest: " + strings.Join(parts, "   ") + "\n")
}
