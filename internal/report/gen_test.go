package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/sluice-llm/sluice"
)

// genStart is the first instant of the generated log.
var genStart = time.Date(2025, 3, 4, 10, 0, 0, 0, time.UTC)

// Known figures of the breaker opening the generator scripts.
var (
	genOpenAt  = time.Date(2025, 3, 4, 11, 20, 0, 0, time.UTC)
	genCloseAt = time.Date(2025, 3, 4, 11, 21, 6, 0, time.UTC)
)

const (
	genFastFails    = 13 // calls failed fast during the opening, one attempt each
	genProbes       = 2
	genFailedProbes = 1
	genCronPerHour  = 30 // calls at :00 of each hour whose first attempt gets a 429
)

// step is one scripted attempt.
type step struct {
	status  int
	outcome string
	err     string
	breaker string
}

var (
	ok       = step{200, "ok", "", "closed"}
	r429     = step{429, "retry", "status_429", "closed"}
	r503     = step{503, "retry", "status_503", "closed"}
	f503     = step{503, "fail", "status_503", "closed"}
	rTimeout = step{0, "retry", "timeout_first_byte", "closed"}
	f400     = step{400, "fail", "status_400", "closed"}
	stalled  = step{200, "stream_stalled", "timeout_idle", "closed"}
	fastFail = step{0, "circuit_open", "circuit_open", "open"}
	probeBad = step{503, "fail", "status_503", "half_open"}
	probeOK  = step{200, "ok", "", "half_open"}
)

// prices is the cost of one ok attempt per model, in USD.
var prices = map[string]float64{"gpt-4o-mini": 0.0003, "gpt-4o": 0.004, "claude-sonnet-4": 0.006}

// gen builds an attempt log with known figures.
type gen struct {
	r     *rand.Rand
	lines []Line
	calls int
}

// call appends the attempts of one call starting at ts.
func (g *gen) call(ts time.Time, provider, model string, steps ...step) {
	g.calls++
	id := fmt.Sprintf("req-%05d", g.calls)
	for i, s := range steps {
		l := Line{TS: ts, RequestID: id, Attempt: i + 1, Policy: "interactive",
			Provider: provider, Model: model, Method: "POST", Path: "/v1/chat/completions",
			Status: s.status, Outcome: sluice.Outcome(s.outcome), Error: s.err, Breaker: s.breaker,
			BytesOut: 900 + int64(g.r.IntN(400))}
		l.LatencyMS, l.TTFBMS = g.timing(s)
		if s.outcome == "retry" {
			l.RetryInMS = round3(400 + g.r.Float64()*1600)
		}
		if s.outcome == "ok" {
			l.CostUSD = prices[model]
			l.BytesIn = 2000 + int64(g.r.IntN(3000))
		}
		l.Stream = s.outcome == "stream_stalled"
		g.lines = append(g.lines, l)
		ts = ts.Add(time.Duration((l.LatencyMS + l.RetryInMS) * float64(time.Millisecond))).Truncate(time.Millisecond)
	}
}

// timing draws the latency and time to first byte of an attempt.
func (g *gen) timing(s step) (lat, ttfb float64) {
	switch {
	case s.outcome == "circuit_open":
		return 0.05, 0
	case s.err == "timeout_first_byte":
		return 20000 + g.r.Float64()*10, 0
	case s.status == 200:
		lat = 300 + g.r.ExpFloat64()*500
		return round3(lat), round3(lat * (0.2 + 0.2*g.r.Float64()))
	}
	lat = 30 + g.r.ExpFloat64()*60
	return round3(lat), round3(lat * 0.9)
}

func round3(f float64) float64 { return math.Round(f*1000) / 1000 }

// background adds ordinary traffic every 20 s or so over three hours,
// leaving anthropic out around the scripted opening.
func (g *gen) background() {
	end := genStart.Add(3 * time.Hour)
	for ts := genStart.Add(7 * time.Second); ts.Before(end); ts = ts.Add(time.Duration(15+g.r.IntN(10)) * time.Second) {
		provider, model := "openai", "gpt-4o-mini"
		switch x := g.r.IntN(10); {
		case x < 2:
			model = "gpt-4o"
		case x < 4:
			provider, model = "anthropic", "claude-sonnet-4"
		}
		if provider == "anthropic" && ts.After(genOpenAt.Add(-90*time.Second)) && ts.Before(genCloseAt.Add(5*time.Second)) {
			continue
		}
		var steps []step
		switch x := g.r.IntN(100); {
		case x < 5:
			steps = []step{r503, ok}
		case x < 7:
			steps = []step{rTimeout, ok}
		case x < 8:
			steps = []step{f400}
		case x < 9:
			steps = []step{stalled}
		default:
			steps = []step{ok}
		}
		g.call(ts, provider, model, steps...)
	}
}

// cron adds the burst of calls that jobs started at :00 make, each
// answered 429 first (every third twice), plus two 429s at :30.
func (g *gen) cron() {
	for h := range 3 {
		top := genStart.Add(time.Duration(h) * time.Hour)
		for i := range genCronPerHour {
			steps := []step{r429, ok}
			if i%3 == 0 {
				steps = []step{r429, r429, ok}
			}
			g.call(top.Add(time.Duration(i)*1500*time.Millisecond), "openai", "gpt-4o-mini", steps...)
		}
		g.call(top.Add(30*time.Minute+10*time.Second), "openai", "gpt-4o", r429, ok)
	}
}

// opening scripts five 503s on anthropic, then its breaker open with fast
// failures, a failed probe, a good probe, and closed again.
func (g *gen) opening() {
	const p, m = "anthropic", "claude-sonnet-4"
	g.call(genOpenAt.Add(-20*time.Second), p, m, r503, r503, f503)
	g.call(genOpenAt.Add(-8*time.Second), p, m, r503, f503)
	for i := range 8 {
		g.call(genOpenAt.Add(time.Duration(i)*4*time.Second), p, m, fastFail)
	}
	g.call(genOpenAt.Add(32*time.Second), p, m, probeBad)
	for i := range 5 {
		g.call(genOpenAt.Add(time.Duration(36+6*i)*time.Second), p, m, fastFail)
	}
	g.call(genOpenAt.Add(63*time.Second), p, m, probeOK)
	g.call(genCloseAt, p, m, ok)
}

// generate returns the known log: lines in the order written (by call,
// not by time, as concurrent writers would leave them).
func generate() *gen {
	g := &gen{r: rand.New(rand.NewPCG(1, 2))}
	g.background()
	g.cron()
	g.opening()
	return g
}

// jsonl encodes lines as an attempt log.
func jsonl(t testing.TB, lines []Line) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, l := range lines {
		j, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(j)
		b.WriteByte('\n')
	}
	return b.Bytes()
}
