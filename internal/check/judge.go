package check

import (
	"fmt"
	"slices"
	"time"
)

// target is what units are judged against.
type target struct {
	Policy  string        // the policy the units' agents call with
	Worst   time.Duration // its worst case, fallbacks included
	Margin  time.Duration // added to every bound
	Drain   time.Duration // the config's drain, for units that run the gateway
	KeepFor time.Duration // idempotency.ttl: how long a kept answer waits for a restarted agent; 0 when off
}

// need is the shortest limit a unit running an agent may have.
func (t target) need() time.Duration { return addSat(t.Worst, t.Margin) }

// versus says what a limit is compared with: "policy interactive's worst
// case 30s + margin 10s = 40s".
func (t target) versus() string {
	return fmt.Sprintf("policy %s's worst case %s + margin %s = %s",
		t.Policy, fmtDur(t.Worst), fmtDur(t.Margin), fmtDur(t.need()))
}

// startBoundTypes are the service types whose start-up systemd bounds by
// TimeoutStartSec= while the program itself runs: oneshot for its whole
// run, the others until the program reports that it is up. A simple, exec
// or idle service is up as soon as it is forked or executed.
var startBoundTypes = []string{"oneshot", "forking", "dbus", "notify", "notify-reload"}

// judgeService returns the findings of s: the lines systemd ignores, then
// each limit shorter than t allows.
func judgeService(s service, t target) []finding {
	out := slices.Clone(s.Problems)
	if s.servesGateway() {
		return append(out, judgeGateway(s, t)...)
	}
	return append(out, judgeAgent(s, t)...)
}

// judgeGateway judges a unit running `sluice serve`: its stop timeout
// must cover the drain.
func judgeGateway(s service, t target) []finding {
	need := addSat(t.Drain, t.Margin)
	if s.Stop.D >= need {
		return nil
	}
	return []finding{warn(tooShort(s.Path, "TimeoutStopSec", s.Stop, need,
		fmt.Sprintf("is shorter than the config's drain %s + margin %s = %s: on SIGTERM the gateway lets calls and streams in flight finish for up to drain, and systemd would SIGKILL it first, cutting them mid-answer",
			fmtDur(t.Drain), fmtDur(t.Margin), fmtDur(need)),
		setHint("TimeoutStopSec", s.Stop, need, "Service")+", or lower drain in the config"))}
}

// judgeAgent judges a unit running an agent: every limit that can kill
// it during a call must cover the call's worst case.
func judgeAgent(s service, t target) []finding {
	var out []finding
	need := t.need()
	if s.Stop.D < need {
		out = append(out, warn(tooShort(s.Path, "TimeoutStopSec", s.Stop, need,
			fmt.Sprintf("is shorter than %s: on stop systemd sends SIGTERM and after %s SIGKILL, killing the agent mid-retry, and the rerun pays for the call again",
				t.versus(), fmtDur(s.Stop.D)),
			setHint("TimeoutStopSec", s.Stop, need, "Service")+", or shorten the policy's total")))
	}
	if slices.Contains(startBoundTypes, s.Type) && s.Start.D < need {
		out = append(out, tooShort(s.Path, "TimeoutStartSec", s.Start, need,
			fmt.Sprintf("is shorter than %s: %s, so systemd kills it mid-retry and the rerun pays for the call again",
				t.versus(), startScope(s.Type)),
			setHint("TimeoutStartSec", s.Start, need, "Service")+startFixNote(s.Type)+", or shorten the policy's total"))
	}
	if s.Type != "oneshot" && s.Runtime.D < need {
		out = append(out, tooShort(s.Path, "RuntimeMaxSec", s.Runtime, need,
			fmt.Sprintf("is shorter than %s: systemd kills the service once it has run that long, mid-retry when a call is under way",
				t.versus()),
			setHint("RuntimeMaxSec", s.Runtime, need, "Service")+", or remove it"))
	}
	if t.KeepFor > 0 && s.Restart.D > 0 && s.Restart.D >= t.KeepFor {
		f := finding{File: s.Restart.At.File, Line: s.Restart.At.Line, Unit: unitName(s.Path), Setting: s.Restart.Key, Value: s.Restart.Raw,
			Problem: fmt.Sprintf("%s=%s restarts the agent %s after it dies, but the gateway keeps an answer for its Idempotency-Key only %s (idempotency.ttl): the restarted agent's call runs and is billed again",
				s.Restart.Key, s.Restart.Raw, fmtDur(s.Restart.D), fmtDur(t.KeepFor)),
			Fix: fmt.Sprintf("raise idempotency.ttl above %s, or restart sooner", fmtDur(s.Restart.D))}
		out = append(out, warn(f))
	}
	return out
}

// startScope says what TimeoutStartSec= bounds for a service type.
func startScope(typ string) string {
	if typ == "oneshot" {
		return "it bounds the whole run of this Type=oneshot unit"
	}
	return "it bounds the start-up of this Type=" + typ + " unit, calls made before it reports ready included"
}

// startFixNote adds to the fix of a start timeout what only a oneshot
// unit needs.
func startFixNote(typ string) string {
	if typ == "oneshot" {
		return " (more for a job that makes several calls in a row)"
	}
	return ""
}

// judgeTimer returns the findings of t: the lines systemd ignores, and a
// calendar timer with no random delay.
func judgeTimer(t timer) []finding {
	out := slices.Clone(t.Problems)
	if len(t.Calendar) == 0 || t.Delay.D > 0 {
		return out
	}
	cal := t.Calendar[0]
	what := fmt.Sprintf("OnCalendar=%s fires on the clock with no RandomizedDelaySec", cal.Value)
	fix := "add RandomizedDelaySec=5min or similar under [Timer]"
	if t.Delay.Key != "" {
		fix = "set RandomizedDelaySec=5min or similar"
		what = fmt.Sprintf("%s with OnCalendar=%s fires on the clock with no random delay", t.Delay.set(), cal.Value)
	}
	return append(out, finding{
		File: t.Delay.At.File, Line: t.Delay.At.Line, Unit: unitName(t.Path),
		Setting: "RandomizedDelaySec", Value: t.Delay.Raw,
		Problem: what + ": every host and job on the same schedule starts in the same second (cron agents at :00), and the provider's 429s cluster there",
		Fix:     fix + " (and FixedRandomDelay=true for a stable offset per host)",
	})
}

// addSat adds two non-negative durations, saturating at infinity.
func addSat(a, b time.Duration) time.Duration {
	if a > infinity-b {
		return infinity
	}
	return a + b
}
