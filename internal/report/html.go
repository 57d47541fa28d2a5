package report

import (
	"fmt"
	"html/template"
	"io"
	"strings"
)

// card is one headline figure at the top of the page.
type card struct{ Label, Value, Sub string }

// page is what the HTML template renders.
type page struct {
	S      *Summary
	Cards  []card
	Charts []chart
}

// WriteHTML writes s as one self-contained HTML page: inline CSS, charts as
// inline SVG drawn here (latency and outcomes over time, 429s by minute of
// the hour, breaker state per provider), no scripts, fonts or other
// external references, so it reads offline. The page is also well-formed
// XML.
func WriteHTML(w io.Writer, s *Summary) error {
	p := page{S: s, Cards: cards(s)}
	if s.Calls > 0 {
		p.Charts = []chart{latencyChart(s.OverTime), outcomesChart(s.OverTime),
			minutesChart(s.RateLimited), breakerChart(s)}
	}
	return pageTemplate.Execute(w, p)
}

// cards picks the headline figures.
func cards(s *Summary) []card {
	answered, ok, replayed := s.answered()
	top := "none"
	if len(s.RateLimited.Top) > 0 {
		t := s.RateLimited.Top[0]
		top = fmt.Sprintf("busiest :%02d (%s)", t.Minute, pct(t.Share))
	}
	return []card{
		{"calls", fmt.Sprint(s.Calls), fmt.Sprintf("%d attempts upstream, %.2f per call", s.Upstream, s.AttemptsPerCall.Mean)},
		{"answered", pct(answered), fmt.Sprintf("ok %s, replayed %s", pct(ok), pct(replayed))},
		{"p95 latency", fmtMS(s.Overall.Latency.P95), "p50 " + fmtMS(s.Overall.Latency.P50)},
		{"retries", fmt.Sprint(s.Retries.Count), "waited " + fmtMS(s.Retries.WaitSumMS)},
		{"breaker openings", fmt.Sprint(len(s.Openings)), ""},
		{"429s", fmt.Sprint(s.RateLimited.Total), top},
		{"failed calls", fmt.Sprint(s.Incident.FailedCalls), "of " + fmt.Sprint(s.Incident.Calls)},
		{"spend", "$" + fmtUSD(s.SpendUSD), ""},
	}
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"num": num, "pct": pct, "stamp": stamp, "ms": fmtMS, "why": why,
	"dash": orDash, "stampdash": stampOrDash, "status": statusName, "usd": fmtUSD, "join": strings.Join,
	"f1": func(v float64) string { return fmt.Sprintf("%.1f", v) },
}).Parse(pageHTML))

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>sluice report</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d1d1f; background: #fff; margin: 0; }
main { max-width: 1100px; margin: 0 auto; padding: 20px 24px 48px; }
h1 { font-size: 22px; margin: 0 0 4px; }
h2 { font-size: 17px; margin: 28px 0 6px; border-bottom: 1px solid #e3e3e3; padding-bottom: 4px; }
p.note, .note { color: #666; font-size: 12.5px; margin: 2px 0 8px; }
.cards { display: flex; flex-wrap: wrap; gap: 10px; margin: 16px 0; }
.card { border: 1px solid #e3e3e3; border-radius: 6px; padding: 8px 12px; min-width: 120px; }
.card b { display: block; font-size: 20px; }
.card span { color: #666; font-size: 12px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #eee; text-align: right; }
th { background: #f6f6f6; font-weight: 600; }
td.l, th.l { text-align: left; }
.row { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
svg { display: block; width: 100%; height: auto; font-size: 12px; }
svg text { fill: #444; }
.legend { font-size: 12.5px; margin: 0 0 14px; }
.legend i { display: inline-block; width: 11px; height: 11px; margin: 0 4px 0 12px; vertical-align: -1px; border-radius: 2px; }
</style>
</head>
<body>
<main>
<h1>sluice report</h1>
{{with .S}}<p class="note">{{.Attempts}} attempts, {{.Calls}} calls{{if .Calls}}, {{stamp .From}} … {{stamp .To}} (UTC){{end}}.
{{range .Inputs}}Input {{.Name}}: {{.Lines}} lines{{if .Malformed}}, {{.Malformed}} malformed skipped{{end}}{{if .Truncated}}, gzip stream cut short{{end}}. {{end}}
{{if .OutsideWindow}}{{.OutsideWindow}} attempts outside --since/--until left out.{{end}}</p>{{end}}
<div class="cards">{{range .Cards}}<div class="card"><span>{{.Label}}</span><b>{{.Value}}</b><span>{{.Sub}}</span></div>{{end}}</div>
{{with .S}}{{if .Calls}}
<h2 id="failed-calls">Failed calls: {{.Incident.FailedCalls}} of {{.Incident.Calls}}</h2>
{{if .Incident.Providers}}<table><tr><th class="l">provider</th><th>failed calls</th><th>calls</th><th class="l">first</th><th class="l">last</th><th class="l">now</th><th class="l">ended on</th></tr>
{{range .Incident.Providers}}<tr><td class="l">{{dash .Provider}}</td><td>{{.FailedCalls}}</td><td>{{.Calls}}</td><td class="l">{{stamp .First}}</td><td class="l">{{stamp .Last}}</td><td class="l">{{if .Failing}}failing since {{stamp .Since}}{{else}}ok again since {{stamp .LastOK}}{{end}}</td><td class="l">{{range $i, $c := .Classes}}{{if $i}}, {{end}}{{$c.Key}} {{$c.N}}{{end}}</td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
<h2 id="failures">Failures by reason and provider</h2>
<p class="note">Calls: calls that ended on the reason. Attempts: attempts that failed so, retried or not. Sample request ids: the latest calls, to look up in the log.</p>
{{if .Failures}}<table><tr><th class="l">reason</th><th class="l">provider</th><th>calls</th><th>attempts</th><th class="l">first</th><th class="l">last</th><th class="l">sample request ids</th></tr>
{{range .Failures}}<tr><td class="l">{{.Class}}</td><td class="l">{{dash .Provider}}</td><td>{{.Calls}}</td><td>{{.Attempts}}</td><td class="l">{{stamp .First}}</td><td class="l">{{stamp .Last}}</td><td class="l"><code>{{join .Samples " "}}</code></td></tr>
{{end}}</table>{{else}}<p>None.</p>{{end}}
{{end}}{{end}}
{{range .Charts}}
<h2>{{.Title}}</h2>
<p class="note">{{.Note}}</p>
<svg viewBox="0 0 {{num .W}} {{num .H}}" width="{{num .W}}" height="{{num .H}}" role="img" aria-label="{{.Title}}">
{{range .Lines}}<line x1="{{num .X1}}" y1="{{num .Y1}}" x2="{{num .X2}}" y2="{{num .Y2}}" stroke="{{.Stroke}}" stroke-width="1"/>
{{end}}{{range .Rects}}<rect x="{{num .X}}" y="{{num .Y}}" width="{{num .W}}" height="{{num .H}}" fill="{{.Fill}}">{{if .Tip}}<title>{{.Tip}}</title>{{end}}</rect>
{{end}}{{range .Paths}}<polyline points="{{.Points}}" fill="none" stroke="{{.Stroke}}" stroke-width="2"/>
{{end}}{{range .Dots}}<circle cx="{{num .X}}" cy="{{num .Y}}" r="3" fill="{{.Fill}}"><title>{{.Tip}}</title></circle>
{{end}}{{range .Texts}}<text x="{{num .X}}" y="{{num .Y}}" text-anchor="{{.Anchor}}">{{.Text}}</text>
{{end}}</svg>
{{if .Legend}}<div class="legend">{{range .Legend}}<i style="background: {{.Color}}"></i>{{.Name}}{{end}}</div>{{end}}
{{end}}
{{with .S}}{{if .Calls}}
<h2>Calls and attempts</h2>
<div class="row">
<table><tr><th class="l">upstream attempts per call</th><th>calls</th><th>share</th></tr>
{{range .AttemptsPerCall.Hist}}<tr><td class="l">{{.Key}}</td><td>{{.N}}</td><td>{{pct .Share}}</td></tr>{{end}}</table>
<table><tr><th class="l">call result</th><th>calls</th><th>share</th></tr>
{{range .CallResults}}<tr><td class="l">{{.Key}}</td><td>{{.N}}</td><td>{{pct .Share}}</td></tr>{{end}}</table>
<table><tr><th class="l">attempt outcome</th><th>attempts</th><th>share</th></tr>
{{range .Outcomes}}<tr><td class="l">{{.Key}}</td><td>{{.N}}</td><td>{{pct .Share}}</td></tr>{{end}}</table>
<table><tr><th class="l">status</th><th>attempts</th><th>share</th></tr>
{{range .Statuses}}<tr><td class="l">{{status .Key}}</td><td>{{.N}}</td><td>{{pct .Share}}</td></tr>{{end}}</table>
</div>
<h2>Latency</h2>
<p class="note">Milliseconds, nearest-rank percentiles. Latency: attempts that went upstream (no refusal, no replay of a kept answer). TTFB (time to first byte): attempts with ttfb_ms &gt; 0.</p>
<table><tr><th class="l">provider</th><th class="l">model</th><th>n</th><th>p50</th><th>p95</th><th>p99</th><th>max</th><th>ttfb n</th><th>ttfb p50</th><th>ttfb p95</th><th>ttfb p99</th></tr>
{{with .Overall}}<tr><td class="l"><b>all</b></td><td class="l"><b>all</b></td><td>{{.Latency.N}}</td><td>{{f1 .Latency.P50}}</td><td>{{f1 .Latency.P95}}</td><td>{{f1 .Latency.P99}}</td><td>{{f1 .Latency.Max}}</td><td>{{.TTFB.N}}</td><td>{{f1 .TTFB.P50}}</td><td>{{f1 .TTFB.P95}}</td><td>{{f1 .TTFB.P99}}</td></tr>{{end}}
{{range .Latency}}<tr><td class="l">{{dash .Provider}}</td><td class="l">{{dash .Model}}</td><td>{{.Latency.N}}</td><td>{{f1 .Latency.P50}}</td><td>{{f1 .Latency.P95}}</td><td>{{f1 .Latency.P99}}</td><td>{{f1 .Latency.Max}}</td><td>{{.TTFB.N}}</td><td>{{f1 .TTFB.P50}}</td><td>{{f1 .TTFB.P95}}</td><td>{{f1 .TTFB.P99}}</td></tr>
{{end}}</table>
<h2>Retries</h2>
{{with .Retries}}{{if .Count}}<p>{{.Count}} attempts retried; waited {{ms .WaitSumMS}} in all (p50 {{ms .WaitP50MS}}, max {{ms .WaitMaxMS}}).</p>
<table><tr><th class="l">retried after</th><th>attempts</th><th>share</th></tr>
{{range .After}}<tr><td class="l">{{.Key}}</td><td>{{.N}}</td><td>{{pct .Share}}</td></tr>{{end}}</table>{{else}}<p>None.</p>{{end}}{{end}}
{{with .Queued}}{{if or .Count .Refused}}<h2 id="queued">Queued for a rate-limit slot</h2>
{{if .Count}}<p>{{.Count}} attempts waited {{ms .WaitSumMS}} in all (p50 {{ms .WaitP50MS}}, p99 {{ms .WaitP99MS}}, max {{ms .WaitMaxMS}}).</p>{{end}}
{{if .Refused}}<p>{{.Refused}} calls refused: their turn was further than their max_queue (429 rate_limited).</p>{{end}}
{{if .ByPriority}}<table><tr><th class="l">priority</th><th>attempts</th><th>waited</th><th>wait in all</th><th>p50</th><th>p95</th><th>max</th><th>refused</th></tr>
{{range .ByPriority}}<tr><td class="l">{{.Priority}}</td><td>{{.Attempts}}</td><td>{{.Waited}}</td><td>{{ms .WaitSumMS}}</td><td>{{ms .WaitP50MS}}</td><td>{{ms .WaitP95MS}}</td><td>{{ms .WaitMaxMS}}</td><td>{{.Refused}}</td></tr>{{end}}</table>{{end}}{{end}}{{end}}
{{if .Keys}}<h2 id="keys">429s and quota by pool key</h2>
<p class="note">Keys by the first 8 hex digits of their SHA-256. Rate limited: 429s but quota_exhausted. Quota: attempts with error quota_exhausted. Other: every other attempt not ok, retried or not.</p>
<table><tr><th class="l">provider</th><th class="l">key</th><th>attempts</th><th>ok</th><th>rate limited</th><th>quota</th><th>other</th><th class="l">last 429</th></tr>
{{range .Keys}}<tr><td class="l">{{dash .Provider}}</td><td class="l"><code>{{.Key}}</code></td><td>{{.Attempts}}</td><td>{{.OK}}</td><td>{{.RateLimited}}</td><td>{{.Quota}}</td><td>{{.Other}}</td><td class="l">{{stampdash .Last429}}</td></tr>
{{end}}</table>{{if .KeysLeftOut}}<p class="note">({{.KeysLeftOut}} more keys)</p>{{end}}{{end}}
<h2>Breaker openings</h2>
{{if .Openings}}<table><tr><th class="l">provider</th><th class="l">opened</th><th class="l">closed</th><th>lasted</th><th>calls failed fast</th><th>fast-fail attempts</th><th>probes (failed)</th><th class="l">after</th></tr>
{{range .Openings}}<tr><td class="l">{{dash .Provider}}</td><td class="l">{{stamp .Start}}</td><td class="l">{{if .Ongoing}}still open at end{{else}}{{stamp .End}}{{end}}</td><td>{{ms .DurationMS}}</td><td>{{.CallsFailedFast}}</td><td>{{.FastFails}}</td><td>{{len .Probes}} ({{.FailedProbes}})</td><td class="l">{{why .Before}}</td></tr>
{{end}}</table>{{else}}<p>None seen.</p>{{end}}
<h2>Spend</h2>
<table><tr><th class="l">provider</th><th class="l">model</th><th>USD</th></tr>
{{range .Spend}}<tr><td class="l">{{dash .Provider}}</td><td class="l">{{dash .Model}}</td><td>{{usd .USD}}</td></tr>{{end}}
<tr><td class="l"><b>total</b></td><td class="l"></td><td><b>{{usd .SpendUSD}}</b></td></tr></table>
{{with .Replays}}{{if .Calls}}<p id="replays">Replayed from kept answers (Idempotency-Key): {{.Calls}} calls, ${{usd .SavedUSD}} not spent again{{if .Unpriced}} ({{.Unpriced}} whose first call this log does not hold){{end}}.</p>{{end}}{{end}}
<h2>429s: busiest minutes of the hour</h2>
{{with .RateLimited}}{{if .Total}}<table><tr><th class="l">minute</th><th>429s</th><th>share</th></tr>
{{range .Top}}<tr><td class="l">:{{printf "%02d" .Minute}}</td><td>{{.N}}</td><td>{{pct .Share}}</td></tr>{{end}}</table>{{else}}<p>None.</p>{{end}}{{end}}
{{end}}{{end}}
</main>
</body>
</html>
`
