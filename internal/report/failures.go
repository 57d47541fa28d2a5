package report

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-llm/sluice"
)

// maxSamples is how many request ids a failure row keeps: enough to grep
// the log or quote to a provider's support, few enough to read.
const maxSamples = 3

// Failure is one reason attempts failed at one provider: what an operator
// reads first in an incident, with request ids to look up next.
type Failure struct {
	// Class is the attempt log's error class (timeout_idle, stream_cut,
	// quota_exhausted, status_503, …), or the outcome when the line has no
	// error class (circuit_open, budget_exhausted). A client's cancellation
	// is not a failure: the call results count it.
	Class    string `json:"class"`
	Provider string `json:"provider"`
	// Attempts counts the attempts that failed so, retried or not; Calls
	// the calls that ended on it. A refusal line folded by the attempt log
	// counts as the refused calls it stands for. The Calls of every row add
	// up to Incident.FailedCalls.
	Attempts int `json:"attempts"`
	Calls    int `json:"calls"`
	// First and Last are the times of the first and last such attempt.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Samples are request ids of the latest calls that failed so (or, when
	// every one was retried past, of the latest attempts), newest first.
	Samples []string `json:"samples"`
}

// Incident is the report's opening view: which calls failed, since when,
// at which provider.
type Incident struct {
	// FailedCalls counts the calls whose last attempt was not ok and not a
	// client's cancellation, of Calls.
	FailedCalls int `json:"failed_calls"`
	Calls       int `json:"calls"`
	// Providers has a row per provider with a failed call, most failed
	// calls first.
	Providers []ProviderIncident `json:"providers"`
}

// ProviderIncident is how calls to one provider failed.
type ProviderIncident struct {
	Provider    string `json:"provider"`
	FailedCalls int    `json:"failed_calls"`
	Calls       int    `json:"calls"`
	// First and Last are the ends of the first and last failed call.
	First time.Time `json:"first"`
	Last  time.Time `json:"last"`
	// Failing is true when the provider's last call in the log failed;
	// Since is then when the run of failed calls that the log ends on
	// began. LastOK is the end of the provider's last ok call (zero when
	// none).
	Failing bool      `json:"failing"`
	Since   time.Time `json:"since"`
	LastOK  time.Time `json:"last_ok"`
	// Classes counts its failed calls by the class they ended on, most
	// frequent first.
	Classes []Count `json:"classes"`
}

// reason names why an attempt failed: its error class, else its outcome,
// else its status. An attempt that did not fail has no reason, nor has one
// the caller cancelled: a caller leaving is not a failure (failedCall).
func reason(l *Line) string {
	switch {
	case l.Outcome == sluice.OutcomeOK || l.Outcome == sluice.OutcomeClientCancel || l.Outcome == sluice.OutcomeReplayed:
		return ""
	case l.Error != "":
		return l.Error
	case l.Outcome != "" && l.Outcome != "retry" && l.Outcome != "fail":
		return string(l.Outcome)
	case l.Status >= 400:
		return "status_" + strconv.Itoa(l.Status)
	case l.Outcome != "":
		return string(l.Outcome)
	}
	return "unknown"
}

// failedCall reports whether a call that ended on l failed, as the caller
// saw it: neither ok, nor replayed from a kept answer, nor the caller's
// own cancellation.
func failedCall(l *Line) bool {
	return l.Outcome != sluice.OutcomeOK && l.Outcome != sluice.OutcomeClientCancel && l.Outcome != sluice.OutcomeReplayed
}

type classAt struct{ class, provider string }

// failures counts failed attempts and calls by class and provider. Lines
// must be sorted by time.
func failures(lines []Line, ends []callEnd) []Failure {
	by := map[classAt]*Failure{}
	get := func(l *Line) *Failure {
		k := classAt{reason(l), l.Provider}
		f := by[k]
		if f == nil {
			f = &Failure{Class: k.class, Provider: k.provider, First: l.TS}
			by[k] = f
		}
		return f
	}
	var attemptIDs = map[classAt][]string{}
	unnamed := 0
	for i := range lines {
		l := &lines[i]
		if reason(l) == "" {
			continue
		}
		f := get(l)
		f.Last = l.TS
		k := classAt{f.Class, f.Provider}
		callsOf(l, &unnamed, func(key string, _ bool) {
			f.Attempts++
			if key[0] != anonymous[0] {
				attemptIDs[k] = append(attemptIDs[k], key)
			}
		})
	}
	for i := len(ends) - 1; i >= 0; i-- { // newest first, for the samples
		l := ends[i].last
		if reason(l) == "" {
			continue
		}
		f := get(l)
		f.Calls++
		if ends[i].id != "" && len(f.Samples) < maxSamples {
			f.Samples = append(f.Samples, ends[i].id)
		}
	}
	out := make([]Failure, 0, len(by))
	for k, f := range by {
		if len(f.Samples) == 0 {
			ids := attemptIDs[k]
			for i := len(ids) - 1; i >= 0 && len(f.Samples) < maxSamples; i-- {
				if !slices.Contains(f.Samples, ids[i]) {
					f.Samples = append(f.Samples, ids[i])
				}
			}
		}
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b Failure) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), cmp.Compare(b.Attempts, a.Attempts),
			cmp.Compare(a.Class, b.Class), cmp.Compare(a.Provider, b.Provider))
	})
	return out
}

// incident finds which providers' calls failed, and since when.
func incident(ends []callEnd) Incident {
	var in Incident
	type track struct {
		ProviderIncident
		classes map[string]int
	}
	by := map[string]*track{}
	var order []string
	for _, e := range ends {
		l := e.last
		t := by[l.Provider]
		if t == nil {
			t = &track{ProviderIncident: ProviderIncident{Provider: l.Provider}, classes: map[string]int{}}
			by[l.Provider] = t
			order = append(order, l.Provider)
		}
		in.Calls++
		t.Calls++
		if !failedCall(l) {
			if l.Outcome == "ok" {
				t.Failing, t.LastOK = false, l.TS
			}
			continue
		}
		in.FailedCalls++
		t.FailedCalls++
		t.classes[reason(l)]++
		if t.First.IsZero() {
			t.First = l.TS
		}
		t.Last = l.TS
		if !t.Failing {
			t.Failing, t.Since = true, l.TS
		}
	}
	for _, p := range order {
		t := by[p]
		if t.FailedCalls == 0 {
			continue
		}
		if !t.Failing {
			t.Since = time.Time{}
		}
		t.Classes = sortedCounts(t.classes, t.FailedCalls, byCount)
		in.Providers = append(in.Providers, t.ProviderIncident)
	}
	slices.SortStableFunc(in.Providers, func(a, b ProviderIncident) int {
		return cmp.Or(cmp.Compare(b.FailedCalls, a.FailedCalls), cmp.Compare(a.Provider, b.Provider))
	})
	return in
}

// cause names what an attempt ended on: its status when it is an error
// status, else its error class (so that a stream that failed inside a 200
// reads as its failure, not as "200"), else its status, else its outcome.
func cause(l Line) string {
	switch {
	case l.Status >= 400:
		return strconv.Itoa(l.Status)
	case l.Error != "":
		return l.Error
	case l.Status != 0:
		return strconv.Itoa(l.Status)
	case l.Outcome != "":
		return string(l.Outcome)
	}
	return "unknown"
}
