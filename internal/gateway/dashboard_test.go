package gateway

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-llm/sluice/breaker"
	"github.com/sluice-llm/sluice/fake"
	"github.com/sluice-llm/sluice/internal/config"
	"github.com/sluice-llm/sluice/spend"
)

const dashboardFile = "../../deploy/grafana/sluice.json"

// grafanaDatasource is a panel's, a query's or a variable's data source.
type grafanaDatasource struct{ Type, UID string }

// grafanaPanel is the part of a Grafana panel the tests read.
type grafanaPanel struct {
	ID         int
	Type       string
	Title      string
	Datasource *grafanaDatasource
	GridPos    struct{ H, W, X, Y int }
	Targets    []struct {
		RefID      string `json:"refId"`
		Expr       string
		Datasource *grafanaDatasource
	}
	Panels []grafanaPanel // a collapsed row's
}

// grafanaDashboard is the part of a Grafana dashboard the tests read.
type grafanaDashboard struct {
	SchemaVersion int
	UID           string
	Panels        []grafanaPanel
	Templating    struct {
		List []struct {
			Name, Type, Definition string
			Query                  json.RawMessage
			Datasource             *grafanaDatasource
			Multi, IncludeAll      bool
		}
	}
}

// dashboardQuery is one PromQL expression of the dashboard and where it is.
type dashboardQuery struct{ where, expr string }

func loadDashboard(t *testing.T) grafanaDashboard {
	t.Helper()
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s is not valid JSON: %v", dashboardFile, err)
	}
	return d
}

// allPanels returns every panel of d, rows' panels included.
func allPanels(d grafanaDashboard) []grafanaPanel {
	var out []grafanaPanel
	for _, p := range d.Panels {
		out = append(out, p)
		out = append(out, p.Panels...)
	}
	return out
}

// queries returns every PromQL expression of d: the panels' targets, and
// the selector of each label_values variable.
func (d grafanaDashboard) queries() []dashboardQuery {
	var out []dashboardQuery
	for _, p := range allPanels(d) {
		for _, tg := range p.Targets {
			out = append(out, dashboardQuery{fmt.Sprintf("panel %q query %s", p.Title, tg.RefID), tg.Expr})
		}
	}
	for _, v := range d.Templating.List {
		if sel, ok := strings.CutPrefix(v.Definition, "label_values("); ok {
			if i := strings.LastIndexByte(sel, ','); i >= 0 {
				sel = sel[:i]
			}
			out = append(out, dashboardQuery{"variable " + v.Name, sel})
		}
	}
	return out
}

// metricNames returns the metric names the dashboard's queries use, each
// with the first place that uses it.
func (d grafanaDashboard) metricNames(t *testing.T) map[string]string {
	t.Helper()
	names := map[string]string{}
	for _, q := range d.queries() {
		got, err := promqlMetrics(q.expr)
		if err != nil {
			t.Errorf("%s: %v", q.where, err)
		}
		if len(got) == 0 && err == nil {
			t.Errorf("%s selects no metric: %q", q.where, q.expr)
		}
		for _, n := range got {
			if _, ok := names[n]; !ok {
				names[n] = q.where
			}
		}
	}
	return names
}

func TestDashboardShape(t *testing.T) {
	d := loadDashboard(t)
	if d.SchemaVersion < 39 || d.UID == "" {
		t.Errorf("schemaVersion %d, uid %q; want ≥ 39 and a uid", d.SchemaVersion, d.UID)
	}
	vars := map[string]int{}
	for i, v := range d.Templating.List {
		vars[v.Name] = i
	}
	if i, ok := vars["datasource"]; !ok || d.Templating.List[i].Type != "datasource" || string(d.Templating.List[i].Query) != `"prometheus"` {
		t.Error(`no variable "datasource" of type datasource over prometheus`)
	}
	if i, ok := vars["provider"]; !ok {
		t.Error(`no variable "provider"`)
	} else if v := d.Templating.List[i]; v.Type != "query" || !strings.HasPrefix(v.Definition, "label_values(") ||
		!strings.HasSuffix(v.Definition, ", provider)") || !strings.Contains(string(v.Query), v.Definition) ||
		v.Datasource == nil || v.Datasource.UID != "${datasource}" || !v.Multi || !v.IncludeAll {
		t.Errorf("variable provider %+v: want a multi-value query label_values(…, provider) on ${datasource}", v)
	}
	ids := map[int]bool{}
	graphs := 0
	for _, p := range allPanels(d) {
		if ids[p.ID] {
			t.Errorf("panel %q: id %d used twice", p.Title, p.ID)
		}
		ids[p.ID] = true
		if g := p.GridPos; g.W <= 0 || g.H <= 0 || g.X < 0 || g.X+g.W > 24 {
			t.Errorf("panel %q: gridPos %+v outside the 24 columns", p.Title, g)
		}
		if p.Type == "row" {
			continue
		}
		graphs++
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: data source %+v, want ${datasource}", p.Title, p.Datasource)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			if strings.TrimSpace(tg.Expr) == "" || tg.RefID == "" || refs[tg.RefID] {
				t.Errorf("panel %q: query %q with refId %q: want an expression and a refId of its own", p.Title, tg.Expr, tg.RefID)
			}
			refs[tg.RefID] = true
			if tg.Datasource != nil && tg.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q query %s: data source %+v, want ${datasource}", p.Title, tg.RefID, tg.Datasource)
			}
		}
	}
	if graphs < 10 {
		t.Errorf("%d panels with queries; the dashboard looks truncated", graphs)
	}
	d.metricNames(t) // every expression parses and selects a metric
}

// degradedStore is a memory breaker store that says it is degraded, as the
// Redis store does while Redis is unreachable and its breakers are local.
type degradedStore struct{ *breaker.Memory }

func (degradedStore) Degraded() bool         { return true }
func (degradedStore) FallbacksTotal() uint64 { return 1 }

// scrape is a parsed Prometheus text exposition: each family's type, and
// each series' value.
type scrape struct {
	types  map[string]string  // family → counter, gauge, histogram, …
	values map[string]float64 // `name{labels}` as exposed → value
}

func parseScrape(text string) scrape {
	s := scrape{types: map[string]string{}, values: map[string]float64{}}
	for l := range strings.SplitSeq(text, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			s.types[f[2]] = f[3]
		} else if i := strings.LastIndexByte(l, ' '); i > 0 && !strings.HasPrefix(l, "#") {
			if v, err := strconv.ParseFloat(l[i+1:], 64); err == nil {
				s.values[l[:i]] = v
			}
		}
	}
	return s
}

// family returns the family that exports the series called name: name
// itself, or the histogram (summary) whose _bucket, _sum or _count it is;
// "" when none does.
func (s scrape) family(name string) string {
	if _, ok := s.types[name]; ok {
		return name
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if typ := s.types[base]; ok && (typ == "histogram" || typ == "summary" && suffix != "_bucket") {
			return base
		}
	}
	return ""
}

// anthropicCall is a non-streamed Anthropic call of 5 output tokens at most.
const anthropicCall = `{"model":"claude-haiku-4-5","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`

// driveEveryMetric starts a gateway on a degraded breaker store with a
// pool, a rate limit, a budget and a route with a fallback, and sends it
// calls that make every metric family appear: successes, a 429 that moves
// to the pool's other key, a 503 retried, a breaker opening and a call it
// refuses, calls answered by the fallback, a call that waits for a
// rate-limit slot and one refused beyond max_queue. It returns the scrape
// of /metrics after them.
func driveEveryMetric(t *testing.T) scrape {
	flaky, backup := fake.NewServer("500"), fake.NewServer("200")
	t.Cleanup(func() { flaky.Close(); backup.Close() })
	e := newEnvWith(t, "200", func(c *config.Config) {
		withPool(c)
		withRate("anthropic-rpm", "anthropic", 60)(c) // a slot a second
		c.Providers["flaky"] = config.Provider{Kind: "openai", BaseURL: flaky.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 8}
		c.Providers["backup"] = config.Provider{Kind: "openai", BaseURL: backup.URL, APIKeyEnv: "UPSTREAM_KEY", MaxConcurrent: 8}
		c.Routes = append(c.Routes, config.Route{Prefix: "/flaky", Provider: "flaky", Policy: "nightly", RetrySafe: true,
			Fallbacks: []config.Target{{Provider: "backup", Model: "gpt-4o-mini-backup"}}})
		nightly := c.Policies["nightly"]
		nightly.Breaker.Failures, nightly.Breaker.Cool, nightly.Retry.MaxAttempts = 1, 30*time.Second, 1
		c.Policies["nightly"] = nightly
		interactive := c.Policies["interactive"]
		interactive.MaxQueue = 1200 * time.Millisecond // a wait of one slot, not of two
		c.Policies["interactive"] = interactive
		c.Prices = map[string]spend.Price{"gpt-4o-mini*": {Output: 20000}, "claude-haiku-4-5": {Output: 1000}}
		c.Budgets = []spend.Budget{{Name: "daily", LimitUSD: 1000, Period: "day", Scope: "all"}}
		c.Idempotency.MaxAnswer = 1000 // a chat answer fits, a stream does not
	}, Options{Store: degradedStore{breaker.NewMemory()}})
	e.up.Provider.KeyScripts = map[string]string{poolKeyA: "429:retry-after=30"}

	call := func(path, reqBody string, header ...string) int {
		resp := e.do("POST", path, reqBody, header...)
		body(t, resp)
		return resp.StatusCode
	}
	for i := range 6 {
		if s := call("/openai/v1/chat/completions", cappedBody); s != 200 {
			t.Fatalf("openai call %d: %d", i, s)
		}
	}
	if s := call("/openai/v1/chat/completions", cappedBody, "Sluice-Fake-Script", "503,200"); s != 200 {
		t.Fatalf("openai call after a 503: %d, want 200 (retried)", s)
	}
	for i := range 2 {
		if s := call("/flaky/v1/chat/completions", cappedBody); s != 200 {
			t.Fatalf("flaky call %d: %d, want 200 from the fallback", i, s)
		}
	}
	// Three at once under a slot a second: one goes, one waits a slot,
	// one would wait two and is refused.
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			s := call("/anthropic/v1/messages", anthropicCall)
			mu.Lock()
			statuses[s]++
			mu.Unlock()
		})
	}
	wg.Wait()
	if statuses[200] != 2 || statuses[429] != 1 {
		t.Fatalf("anthropic statuses %v, want two 200 and one 429", statuses)
	}
	// Upstream: six openai calls and key A's 429, the 503 and its retry,
	// two anthropic calls; flaky once (then its breaker is open); the
	// fallback twice.
	if e.up.Calls() != 11 || flaky.Calls() != 1 || backup.Calls() != 2 {
		t.Errorf("upstream calls: main %d, flaky %d, backup %d; want 11, 1, 2", e.up.Calls(), flaky.Calls(), backup.Calls())
	}
	// Idempotency-Key: an answer kept and replayed, the key reused for
	// another body (422), and a stream over max_answer, relayed, not kept.
	for _, want := range []int{200, 200} {
		if s := call("/openai/v1/chat/completions", cappedBody, "Idempotency-Key", "metrics-1"); s != want {
			t.Fatalf("call with a key: %d, want %d", s, want)
		}
	}
	if s := call("/openai/v1/chat/completions", chatBody, "Idempotency-Key", "metrics-1"); s != 422 {
		t.Fatalf("key reused: %d, want 422", s)
	}
	if s := call("/openai/v1/chat/completions", chatStream, "Idempotency-Key", "metrics-2"); s != 200 {
		t.Fatalf("stream with a key: %d, want 200", s)
	}
	resp := e.do("GET", "/metrics", "")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d", resp.StatusCode)
	}
	return parseScrape(body(t, resp))
}

// A gateway driven through successes, retries, a breaker opening, a
// fallback, rate-limit waits and refusals, a key pool and a budget exports
// every metric the dashboard queries; and the dashboard shows every
// sluice_ metric the gateway exports.
func TestDashboardMetricsExported(t *testing.T) {
	s := driveEveryMetric(t)
	for series, want := range map[string]float64{
		`sluice_keys{provider="openai",state="paused"}`:                             1,
		`sluice_attempts_total{outcome="retry",provider="openai",status="429"}`:     1,
		`sluice_attempts_total{outcome="retry",provider="openai",status="503"}`:     1,
		`sluice_retries_total{provider="openai"}`:                                   2,
		`sluice_breaker_state{breaker="flaky"}`:                                     1,
		`sluice_attempts_total{outcome="circuit_open",provider="flaky",status="0"}`: 1,
		`sluice_fallbacks_total{provider="backup",route="/flaky"}`:                  2,
		`sluice_ratelimit_refused_total{provider="anthropic"}`:                      1,
		`sluice_ratelimit_queued`:                                                   0,
		`sluice_state_store_degraded`:                                               1,
		`sluice_budget_spent_usd{budget="daily"}`:                                   1.11, // 11 × $0.10 (two with an Idempotency-Key; its replay is free) + 2 × $0.005
		`sluice_budget_remaining_usd{budget="daily"}`:                               998.89,
		`sluice_spend_usd_total{model="gpt-4o-mini-backup",provider="backup"}`:      0.2,
	} {
		if got, ok := s.values[series]; !ok || math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v (exported %v), want %v", series, got, ok, want)
		}
	}
	// One anthropic call waited a slot (a second); the one whose slot was
	// free did not wait, and the third was refused.
	admitted := s.values[`sluice_ratelimit_admitted_total{provider="anthropic"}`]
	waits := s.values[`sluice_ratelimit_wait_seconds_count{provider="anthropic"}`]
	short := s.values[`sluice_ratelimit_wait_seconds_bucket{provider="anthropic",le="0.5"}`]
	if admitted != 1 || waits != 1 || short != 0 {
		t.Errorf("rate-limit waits: %v admitted, %v waits, %v of them under 0.5 s; want one wait of about a second", admitted, waits, short)
	}

	names := loadDashboard(t).metricNames(t)
	if missing := unexported(names, s); len(missing) > 0 {
		t.Errorf("the dashboard queries metrics the gateway does not export:\n%s", strings.Join(missing, "\n"))
	}
	shown := map[string]bool{}
	for n := range names {
		shown[s.family(n)] = true
	}
	for fam := range s.types {
		if strings.HasPrefix(fam, "sluice_") && !shown[fam] {
			t.Errorf("the gateway exports %s but no dashboard panel shows it", fam)
		}
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(readme), "### Metrics and dashboard\n")
	section, _, _ = strings.Cut(section, "\n### ")
	for fam := range s.types {
		if strings.HasPrefix(fam, "sluice_") && !strings.Contains(section, "`"+fam+"`") {
			t.Errorf("README's \"Metrics and dashboard\" table lacks %s", fam)
		}
	}
}

// unexported returns, sorted, the names of names (with the place that
// uses each) that no family of s exports.
func unexported(names map[string]string, s scrape) []string {
	var out []string
	for n, where := range names {
		if s.family(n) == "" {
			out = append(out, fmt.Sprintf("%s (%s)", n, where))
		}
	}
	slices.Sort(out)
	return out
}

func TestUnexportedCatchesMisspeltNames(t *testing.T) {
	s := parseScrape(`# HELP sluice_attempts_total x
# TYPE sluice_attempts_total counter
sluice_attempts_total{outcome="ok",provider="openai",status="200"} 1
# TYPE sluice_attempt_duration_seconds histogram
sluice_attempt_duration_seconds_bucket{provider="openai",le="+Inf"} 1
sluice_attempt_duration_seconds_sum{provider="openai"} 0.1
sluice_attempt_duration_seconds_count{provider="openai"} 1
# TYPE go_gc_duration_seconds summary
go_gc_duration_seconds_sum 0.1
`)
	names := map[string]string{
		"sluice_attempts_total": "a", "sluice_attempt_duration_seconds_bucket": "b",
		"sluice_attempt_duration_seconds_sum": "c", "sluice_attempt_duration_seconds_count": "d",
		"go_gc_duration_seconds_sum": "e", "sluice_attempt_total": "f", "sluice_attempts_total_bucket": "g",
		"go_gc_duration_seconds_bucket": "h",
	}
	got := unexported(names, s)
	want := []string{"go_gc_duration_seconds_bucket (h)", "sluice_attempt_total (f)", "sluice_attempts_total_bucket (g)"}
	if !slices.Equal(got, want) {
		t.Errorf("unexported = %q, want %q", got, want)
	}
}
