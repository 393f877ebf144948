// Package matchrules is a queue's matching rules as a pass reads them (Config): the team size or
// shape, the rating interval and latency limit by wait, the attributes tickets carry and
// the match rules on them, and the roles a composition bounds; with the checks that refuse
// a config no pass could run (Validate). It holds no algorithm: the passes that apply the
// rules are tick/twoteam and tick/shaped.
package matchrules

import (
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
)

// The strategies, named as pairing's.
const (
	RatingWindow = string(pairing.RatingWindow) // the default
	GreedyPairs  = string(pairing.GreedyPairs)
)

// Limits.
const (
	MaxTeamSize  = pairing.MaxTeamSize
	MaxMagnitude = pairing.MaxMagnitude // bound of ratings, times, intervals and latencies
)

// Step is one step of an expansion: from AfterS seconds of waiting on, the value is Value.
type Step struct {
	AfterS, Value float64
}

// Config is a queue's matching rules.
type Config struct {
	TeamSize int    // players per team, 1..MaxTeamSize; a match is 2 x TeamSize players
	Strategy string // RatingWindow (also when empty) or GreedyPairs
	// Interval is the rating interval by wait: a ticket accepts another whose rating differs
	// from its own by at most its current value. The first step is at 0, AfterS increase
	// and values never decrease (tolerances widen).
	Interval []Step
	// MaxLatency is the latency (ms) a ticket accepts by wait, with the same rules; empty
	// means latency is not considered.
	MaxLatency []Step
	// Attributes declares the attributes tickets carry, by name; Rules are the match rules
	// beside the interval and latency, in the order "why a ticket waits" tries them. A
	// config without rules matches as it did before rules existed.
	Attributes map[string]Attribute
	Rules      []Rule
	// Shape, when set, replaces the two teams of TeamSize: any number of teams, named, of
	// their own sizes, minimum sizes and role compositions (shape.go). TeamSize is then the
	// largest team's size (a party may be no larger). Roles are the roles players may list
	// (a ticket's roles), which a composition bounds.
	Shape []TeamDef
	Roles []string
	// Avoid is the scope of the tickets' avoid lists and when they turn optional.
	Avoid Avoid
}

// Validate reports every invalid field of the config as one apperr.Invalid error naming
// team_size, strategy, interval, interval[i].after_s, interval[i].value and the same of
// max_latency, attributes.<name>.type|max_items|default, rules[i].name|type|attribute|
// min_common|expansions[j].after_s|expansions[j].value|optional_after_s, avoid.scope and
// avoid.optional_after_s, and the shape's fields (ValidateShape).
func (c Config) Validate() error {
	var f apperr.Fields
	c.AddFaults(&f)
	return f.Err()
}

// AddFaults adds the faults Validate reports to f, for a pass that reports them with its
// tickets'.
func (c *Config) AddFaults(f *apperr.Fields) {
	c.addRuleFaults(f)
	c.addShapeFaults(f)
	c.Avoid.addFaults(f)
	if !c.Shaped() && (c.TeamSize < 1 || c.TeamSize > MaxTeamSize) {
		f.Add("team_size", "must be between 1 and %d", MaxTeamSize)
	}
	switch c.Strategy {
	case "", RatingWindow, GreedyPairs:
	default:
		f.Add("strategy", "must be %q or %q", RatingWindow, GreedyPairs)
	}
	if len(c.Interval) == 0 {
		f.Add("interval", "must have at least one step, the first at after_s 0")
	}
	addStepFaults(f, "interval", c.Interval)
	addStepFaults(f, "max_latency", c.MaxLatency)
}

func addStepFaults(f *apperr.Fields, name string, steps []Step) {
	for i, s := range steps {
		// The field's name is built only for a fault: a valid schedule is checked at every
		// pass.
		at := func() string { return name + "[" + strconv.Itoa(i) + "]" }
		switch {
		case i == 0 && s.AfterS != 0:
			f.Add(at()+".after_s", "must be 0: the first step holds from the start")
		case i > 0 && !(s.AfterS > steps[i-1].AfterS && s.AfterS <= MaxMagnitude):
			f.Add(at()+".after_s", "must be greater than the previous step's and at most %g", MaxMagnitude)
		}
		switch {
		case !(s.Value >= 0 && s.Value <= MaxMagnitude): // false for NaN too
			f.Add(at()+".value", "must be a finite number between 0 and %g", MaxMagnitude)
		case i > 0 && s.Value < steps[i-1].Value:
			f.Add(at()+".value", "must be at least the previous step's (%g): tolerances widen", steps[i-1].Value)
		}
	}
}

// Current is a tolerance after wait seconds: the value of the last step whose AfterS <=
// wait. A negative wait (a ticket stamped by a clock ahead of the caller's) counts as 0.
func Current(steps []Step, wait float64) float64 {
	v := steps[0].Value
	for _, s := range steps[1:] {
		if s.AfterS > wait {
			break
		}
		v = s.Value
	}
	return v
}

// Distance is how far apart two ratings or values are, computed one way for every
// comparison with an interval or a tolerance.
func Distance(a, b float64) float64 {
	if a < b {
		return b - a
	}
	return a - b
}
