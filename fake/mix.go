package fake

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Share is one step of a Mix and the share of calls that play it.
type Share struct {
	// Step is the step played; never a Mix.
	Step Step
	// Percent is the share of calls, from 0 to 100.
	Percent float64
}

var errMixWant = errors.New("want mix:STEP=P%;STEP=P%… such as mix:503=10%;reset=5%;hang=1%;stall=2%;seed=7")

// parseMix parses the modifiers of a mix step.
func parseMix(mods []modifier) (Step, error) {
	if len(mods) == 0 {
		return Step{}, errMixWant
	}
	st := Step{Kind: Mix}
	var total float64
	for _, m := range mods {
		if !m.hasValue {
			return Step{}, fmt.Errorf("mix share %q needs a percentage, as in %s=5%%", m.name, m.name)
		}
		if m.name == "seed" {
			n, err := strconv.ParseUint(m.value, 10, 64)
			if err != nil {
				return Step{}, fmt.Errorf("seed=%s: want a whole number from 0 to %d", m.value, uint64(1<<64-1))
			}
			st.Seed = n
			continue
		}
		sh, err := parseShare(m)
		if err != nil {
			return Step{}, err
		}
		total += sh.Percent
		st.Shares = append(st.Shares, sh)
	}
	if len(st.Shares) == 0 {
		return Step{}, errMixWant
	}
	if total > 100+1e-9 { // a sum such as 33.3+33.3+33.4 may round a hair over
		return Step{}, fmt.Errorf("the shares add up to %s%%; keep them at 100%% or less (the rest answers 200)",
			strconv.FormatFloat(total, 'g', -1, 64))
	}
	return st, nil
}

// parseShare parses one STEP=P% of a mix.
func parseShare(m modifier) (Share, error) {
	step, err := parseStep(m.name)
	if err != nil {
		return Share{}, fmt.Errorf("mix share %q: %w", m.name, err)
	}
	if step.Kind == Mix {
		return Share{}, fmt.Errorf("mix share %q: a mix cannot hold a mix", m.name)
	}
	num, ok := strings.CutSuffix(m.value, "%")
	p, err := strconv.ParseFloat(num, 64)
	if !ok || err != nil || !(p >= 0 && p <= 100) {
		return Share{}, fmt.Errorf("%s=%s: want a percentage from 0%% to 100%%, such as 2.5%%", m.name, m.value)
	}
	return Share{Step: step, Percent: p}, nil
}

// newPicker returns the random source of a Mix step: the same seed gives
// the same sequence of picks.
func newPicker(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x5eed))
}

// pick chooses the step a call of a Mix step plays: each share's step
// with its probability, else a 200 answer.
func (s Step) pick(r *rand.Rand) Step {
	u := r.Float64() * 100
	for _, sh := range s.Shares {
		if u < sh.Percent {
			return sh.Step
		}
		u -= sh.Percent
	}
	return Step{Kind: Respond, Status: 200}
}

func (s Step) mixString() string {
	mods := make([]string, 0, len(s.Shares)+1)
	for _, sh := range s.Shares {
		mods = append(mods, sh.Step.String()+"="+strconv.FormatFloat(sh.Percent, 'g', -1, 64)+"%")
	}
	if s.Seed != 0 {
		mods = append(mods, "seed="+strconv.FormatUint(s.Seed, 10))
	}
	return joinMods("mix", mods)
}
