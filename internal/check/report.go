package check

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluice-llm/sluice/internal/config"
)

// report is everything `sluice check` found; --json prints it as it is.
type report struct {
	Config      string         `json:"config"` // the file read; "" for the built-in defaults
	Policies    []policyRow    `json:"policies"`
	Routes      []routeRow     `json:"routes"`
	Rates       []rateRow      `json:"rate_limits"`
	Priorities  prioritiesRow  `json:"priorities"`
	Pools       []poolRow      `json:"key_pools,omitempty"`
	Idempotency idempotencyRow `json:"idempotency"`
	Warnings    []warning      `json:"warnings"`
	Target      judgedBy       `json:"judged_against"`
	Units       []string       `json:"units"`
	Findings    []finding      `json:"findings"`
}

// judgedBy says what the units were judged against.
type judgedBy struct {
	Policy   string `json:"policy"`
	Reason   string `json:"reason"`
	WorstMS  int64  `json:"worst_case_ms"` // with fallbacks
	MarginMS int64  `json:"margin_ms"`
	NeedMS   int64  `json:"need_ms"`  // worst case + margin
	DrainMS  int64  `json:"drain_ms"` // what a unit running `sluice serve` needs, less the margin
}

// clean reports whether r has nothing to fix or look at.
func (r *report) clean() bool { return len(r.Warnings) == 0 && len(r.Findings) == 0 }

// counts returns the number of warnings (the config's and the units') and
// of findings.
func (r *report) counts() (warnings, findings int) {
	warnings = len(r.Warnings)
	for _, f := range r.Findings {
		if f.Severity == severityWarning {
			warnings++
		} else {
			findings++
		}
	}
	return warnings, findings
}

// failed reports whether check exits 1: on any finding, and with strict
// on any warning too.
func (r *report) failed(strict bool) bool {
	w, f := r.counts()
	return f > 0 || strict && w > 0
}

// writeJSON prints r as one indented JSON object.
func (r *report) writeJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// writeText prints r for a person: the policies and routes tables, the
// warnings, the findings as "file:line: finding — fix", and a summary.
func (r *report) writeText(w io.Writer) error {
	ew := &errWriter{w: w}
	src := r.Config
	if src == "" {
		src = "built-in defaults (no --config, no $" + config.EnvConfig + ")"
	}
	fmt.Fprintf(ew, "config: %s\n\n", src)
	r.policiesTable(ew)
	r.routesTable(ew)
	r.ratesTable(ew)
	r.prioritiesText(ew)
	r.poolsTable(ew)
	r.idempotencyText(ew)
	if len(r.Warnings) > 0 {
		fmt.Fprintf(ew, "\nWarnings\n")
		for _, x := range r.Warnings {
			fmt.Fprintln(ew, x.Message)
		}
	}
	r.unitsText(ew)
	fmt.Fprintf(ew, "\n%s\n", r.summary())
	return ew.err
}

func (r *report) policiesTable(w io.Writer) {
	fmt.Fprintln(w, "Policies: the longest one call can take to fail for good or start its answer")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  POLICY\tATTEMPTS\tPER ATTEMPT\tTOTAL\tUNBOUNDED\tWORST CASE\tWITH FALLBACKS\tMAX QUEUE\tNOTE")
	for _, p := range r.Policies {
		note := ""
		if p.CutByTotal {
			note = "total bounds it: the last attempts of a failing call never start"
		}
		fmt.Fprintf(tw, "  %s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Name, p.Attempts, ms(p.PerAttempt),
			ms(p.Total), ms(p.Unbounded), ms(p.WorstCase), ms(p.WithFallbacks), ms(p.MaxQueue), note)
	}
	tw.Flush()
}

func (r *report) routesTable(w io.Writer) {
	fmt.Fprintln(w, "\nRoutes: the same, with every fallback target's attempts after the primary's")
	if len(r.Routes) == 0 {
		fmt.Fprintln(w, "  none")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  PREFIX\tPROVIDER\tPOLICY\tFALLBACKS\tUNBOUNDED\tWORST CASE\tNOTE")
	for _, x := range r.Routes {
		fb := make([]string, len(x.Fallbacks))
		for i, t := range x.Fallbacks {
			fb[i] = t.Provider + "/" + t.Model
		}
		note := ""
		switch {
		case x.CutByTotal && len(fb) > 0:
			note = "total bounds it: a fallback gets only the time the primary leaves"
		case x.CutByTotal:
			note = "total bounds it"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.Prefix, x.Provider, x.Policy,
			cmp.Or(strings.Join(fb, ", "), "none"), ms(x.Unbounded), ms(x.WorstCase), note)
	}
	tw.Flush()
}

func (r *report) ratesTable(w io.Writer) {
	fmt.Fprintln(w, "\nRate limits: a call over one (or over its provider's max_concurrent) waits for its slot, at most its policy's MAX QUEUE (within its total), then gets 429 rate_limited")
	if len(r.Rates) == 0 {
		fmt.Fprintln(w, "  none configured (pauses the providers ask for are still kept)")
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tPROVIDER\tSCOPE\tREQUESTS/MIN\tTOKENS/MIN\tIN FLIGHT\tSPACING")
	for _, x := range r.Rates {
		spacing, rpm, tpm, conc := "-", "-", "-", "-"
		if x.Concurrent > 0 {
			conc = fmt.Sprint(x.Concurrent)
		}
		if x.RequestsPerMinute > 0 {
			spacing, rpm = ms(x.SpacingMS), fmt.Sprint(x.RequestsPerMinute)
		}
		if x.TokensPerMinute > 0 {
			tpm = fmt.Sprint(x.TokensPerMinute)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\n", x.Name, cmp.Or(x.Provider, "every"), x.Scope, rpm, tpm, conc, spacing)
	}
	tw.Flush()
}

func (r *report) unitsText(w io.Writer) {
	if len(r.Units) == 0 {
		fmt.Fprintln(w, "\nUnits: none given; name .service and .timer files or directories to check them")
		return
	}
	t := r.Target
	fmt.Fprintf(w, "\nUnits: %d checked against policy %s (%s): worst case %s + margin %s = %s\n",
		len(r.Units), t.Policy, t.Reason, ms(t.WorstMS), ms(t.MarginMS), ms(t.NeedMS))
	if len(r.Findings) == 0 {
		fmt.Fprintln(w, "no findings")
	}
	for _, f := range r.Findings {
		fmt.Fprintln(w, f.String())
	}
}

// summary is the closing line.
func (r *report) summary() string {
	if r.clean() {
		return fmt.Sprintf("sluice check: clean (%s)", plural(len(r.Units), "unit"))
	}
	w, f := r.counts()
	return fmt.Sprintf("sluice check: %s, %s in %s", plural(w, "warning"),
		plural(f, "finding"), plural(len(r.Units), "unit"))
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

func ms(v int64) string { return fmtDur(time.Duration(v) * time.Millisecond) }

// errWriter keeps the first write error so that a report is written
// without checking every line.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(p)
	e.err = err
	return n, err
}
