package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// Step is one step of a queue's interval expansion, as in a queue definition
// (expansions.interval): from AfterS seconds of waiting the ticket accepts rating
// differences up to Value. It is the queue definition's own JSON (package rulesjson).
type Step = rulesjson.Step

// Widening is the thesis's widening interval put on a clock: Initial at first, Step wider
// every EverySeconds of waiting, up to Max (0: no limit). EverySeconds 0 is the thesis as
// written: all 500 players are in one pass, which widens the interval by Step until a
// partner is found, so at any wait the interval has no limit.
type Widening struct {
	Initial      float64 `json:"initial"`
	Step         float64 `json:"step"`
	EverySeconds float64 `json:"every_s"`
	Max          float64 `json:"max,omitzero"`
}

// ThesisWidening is the thesis's interval (+-25, widening by 25 until a partner is found).
var ThesisWidening = Widening{Initial: 25, Step: 25}

// Expansion is a ticket's tolerance as a function of its wait: explicit Steps (a queue
// definition's form), or a Widening when Steps is empty.
type Expansion struct {
	Steps    []Step
	Widening Widening
}

func (e Expansion) validate(name string) error {
	if len(e.Steps) > 0 {
		for i, s := range e.Steps {
			if !(s.AfterS >= 0 && s.AfterS <= 1e9 && s.Value >= 0 && s.Value <= 1e12) {
				return fmt.Errorf("%s.expansions.interval[%d]: after_s and value must be finite and non-negative", name, i)
			}
			if i == maxSteps {
				return fmt.Errorf("%s.expansions.interval: a queue definition holds at most %d steps", name, maxSteps)
			}
			if i == 0 && s.AfterS != 0 {
				return fmt.Errorf("%s.expansions.interval[0].after_s must be 0", name)
			}
			if i > 0 && !(s.AfterS > e.Steps[i-1].AfterS && s.Value >= e.Steps[i-1].Value) {
				return fmt.Errorf("%s.expansions.interval[%d]: after_s must increase and value must not decrease", name, i)
			}
		}
		return nil
	}
	w := e.Widening
	if !(w.Initial >= 0 && w.Initial <= 1e12 && w.Step > 0 && w.Step <= 1e12 &&
		w.EverySeconds >= 0 && w.EverySeconds <= 1e9 && (w.Max == 0 || w.Max >= w.Initial && w.Max <= 1e12)) {
		return fmt.Errorf("%s.widening: initial >= 0, step > 0, every_s >= 0 and max 0 (none) or >= initial, all finite", name)
	}
	return nil
}

// At is the interval of a ticket that has waited wait: the value of the last step whose
// AfterS is at most the wait.
func (e Expansion) At(wait time.Duration) float64 {
	if len(e.Steps) > 0 {
		v := e.Steps[0].Value
		for _, s := range e.Steps[1:] {
			if seconds(s.AfterS) > wait {
				break
			}
			v = s.Value
		}
		return v
	}
	w := e.Widening
	if w.EverySeconds == 0 {
		return math.Inf(1)
	}
	v := w.Initial + w.Step*math.Floor(wait.Seconds()/w.EverySeconds)
	if w.Max > 0 {
		v = min(v, w.Max)
	}
	return v
}

// Schedule lists the expansion as a queue definition's steps (what the queue pass runs).
// Explicit Steps are themselves. A Widening is listed from 0, one step every EverySeconds,
// until its value reaches Max, or limit when it has none (wider than any two ratings
// differ), until a step at or after untilS seconds (the ticket's time to live; 0: no
// bound), and for at most 32 steps (a queue definition's limit): the last step holds from
// then on. A thesis Widening (EverySeconds 0, no limit from the start) is one step of value
// limit.
func (e Expansion) Schedule(limit, untilS float64) []Step {
	if len(e.Steps) > 0 {
		return e.Steps
	}
	w := e.Widening
	if w.EverySeconds == 0 {
		return []Step{{AfterS: 0, Value: limit}}
	}
	top := limit
	if w.Max > 0 {
		top = w.Max
	}
	var steps []Step
	for k := range maxSteps {
		at := w.EverySeconds * float64(k)
		v := min(w.Initial+w.Step*float64(k), top)
		steps = append(steps, Step{AfterS: at, Value: v})
		if v >= top || untilS > 0 && at >= untilS {
			break
		}
	}
	return steps
}

// slower returns the expansion with every step reached factor times later (factor > 1
// widens more slowly): the knob of the wait-versus-quality trade-off.
func (e Expansion) slower(factor float64) Expansion {
	if len(e.Steps) > 0 {
		steps := make([]Step, len(e.Steps))
		for i, s := range e.Steps {
			steps[i] = Step{AfterS: s.AfterS * factor, Value: s.Value}
		}
		return Expansion{Steps: steps}
	}
	w := e.Widening
	w.EverySeconds *= factor
	return Expansion{Widening: w}
}
