package matchrules

import (
	"cmp"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// The kinds of a Rule.
const (
	// RuleEqual: the tickets the rule binds have one value of Attribute (a string or a
	// number) across the match.
	RuleEqual = "equal"
	// RuleIntersect: the lists of Attribute (a string_list) of the tickets the rule binds
	// share at least MinCommon values.
	RuleIntersect = "intersect"
	// RuleDistance: the largest minus the smallest value of Attribute (a number) of the
	// tickets the rule binds is at most their tolerance.
	RuleDistance = "distance"
	// RuleTeamBalance: the teams' average ratings differ by at most the tolerance of the
	// tickets the rule binds.
	RuleTeamBalance = "team_balance"
	// RulePartyMix: the largest party on each team differs by at most MaxDifference
	// players between the teams (premades meet premades), while the rule binds some
	// ticket of the match.
	RulePartyMix = "party_mix"
)

// RatingAttribute is the reserved attribute a distance rule may read without a declaration:
// a ticket's rating (a party's mean), so that the rule bounds the spread of the whole
// match's ratings (FlexMatch's batchDistance), where the interval is anchor-centred.
const RatingAttribute = "rating"

// The names "why a ticket waits" gives the built-in rules: the rating interval
// (Config.Interval), latency (Config.MaxLatency) and a shape its candidates cannot fill
// (enough of them passed every rule, but their parties do not pack into the teams, or their
// roles do not meet the composition). A Rule may not take them.
const (
	WaitInterval = "interval"
	WaitLatency  = "latency"
	WaitTeams    = "teams"
)

// MaxRules bounds a queue's rules.
const MaxRules = 16

// DefaultBalance bounds the team-average difference of a match that holds a party, in a
// queue of two teams (TeamSize, or a shape of two) without a team_balance rule, as a
// fraction of its anchor's current interval: a
// match more uneven than that is turned down and its anchor waits for a better set (saying
// so as the teams, WaitTeams), until its wait has widened the interval, and with it the
// bound, enough. A match of solo players is not bound: its split has the most freedom, and
// in a 1v1 the difference is the pair's, which the interval bounds already.
// docs/simulator.md measures what the bound buys and what it costs in wait.
const DefaultBalance = 0.1

// Rule is one of a queue's match rules (DESIGN, "Match rules"). A rule binds a ticket
// until the ticket has waited OptionalAfterS; a match satisfies the rule when the tickets
// of the match it still binds satisfy it together. A tolerance (Expansions, by wait as the
// interval's) is the smallest current value among those tickets.
type Rule struct {
	Name      string // unique in the queue; what "why a ticket waits" calls it
	Kind      string // RuleEqual, RuleIntersect, RuleDistance, RuleTeamBalance or RulePartyMix
	Attribute string // the declared attribute it reads (not for team_balance and party_mix)
	MinCommon int    // intersect: the values the lists share at least; 0 means 1
	// Expansions is the tolerance by wait (distance, team_balance): the first step at 0,
	// after_s increasing, values never decreasing.
	Expansions []Step
	// OptionalAfterS, when set (> 0), is the wait from which the rule no longer binds a
	// ticket.
	OptionalAfterS *float64
	// MaxDifference (party_mix) is how many players the largest parties of two teams may
	// differ by: 0, premades only against premades of their size.
	MaxDifference int
	// OptionalOnly, when set, limits OptionalAfterS to the tickets whose value of Attribute
	// (an equal rule's string) is OptionalOnly: the others stay bound whatever their wait.
	// The queue's low-priority pool is such a rule, of its own: a low-priority ticket meets
	// the others once it has waited, not once they have. Not in the API's rules.
	OptionalOnly string
}

// MinCommonValues is the values an intersect rule's lists share at least: MinCommon, or 1.
func (r Rule) MinCommonValues() int { return cmp.Or(r.MinCommon, 1) }

// HasTolerance: the rule has a tolerance by wait (distance, team_balance).
func (r Rule) HasTolerance() bool { return r.Kind == RuleDistance || r.Kind == RuleTeamBalance }

// ReadsAttribute: the rule reads a declared attribute of the tickets.
func (r Rule) ReadsAttribute() bool {
	return r.Kind != RuleTeamBalance && r.Kind != RulePartyMix && !r.ReadsRating()
}

// JudgedOnMatch: the rule is judged on a match as a whole (its spread, its teams), not
// ticket by ticket against the anchor alone.
func (r Rule) JudgedOnMatch() bool { return r.HasTolerance() || r.Kind == RulePartyMix }

// ReadsRating: a distance rule on the tickets' ratings (RatingAttribute).
func (r Rule) ReadsRating() bool { return r.Kind == RuleDistance && r.Attribute == RatingAttribute }

// ReportsValue: the match's tickets agree on values of the rule's attribute (equal,
// intersect), which the match reports.
func (r Rule) ReportsValue() bool { return r.Kind == RuleEqual || r.Kind == RuleIntersect }

// BindsAt: the rule binds a ticket that has waited wait seconds (of any value, for a rule
// with OptionalOnly: BindsValue).
func (r Rule) BindsAt(wait float64) bool {
	return r.OptionalAfterS == nil || wait < *r.OptionalAfterS
}

// BindsValue: the rule binds a ticket that has waited wait seconds, with value v of its
// attribute (read only for a rule with OptionalOnly).
func (r Rule) BindsValue(wait float64, v *Value) bool {
	return r.BindsAt(wait) || r.OptionalOnly != "" && v.Str != r.OptionalOnly
}

// ValidateRules reports the faults of c's attributes and rules alone (attributes.<name>.*,
// rules[i].*), for a service that checks the rest of its definition itself.
func (c Config) ValidateRules() error {
	var f apperr.Fields
	c.addRuleFaults(&f)
	return f.Err()
}

func (c *Config) addRuleFaults(f *apperr.Fields) {
	c.addAttributeDeclarationFaults(f)
	if len(c.Rules) > MaxRules {
		f.Add("rules", "must hold at most %d rules", MaxRules)
	}
	names := make(map[string]bool, len(c.Rules))
	for i, r := range c.Rules {
		at := func(field string) string { return "rules[" + strconv.Itoa(i) + "]." + field }
		switch {
		case r.Name == "":
			f.Add(at("name"), "must not be empty")
		case r.Name == WaitInterval || r.Name == WaitLatency || r.Name == WaitTeams:
			f.Add(at("name"), "must not be %q, %q or %q: they name the built-in rules", WaitInterval, WaitLatency, WaitTeams)
		case names[r.Name]:
			f.Add(at("name"), "must be unique in the queue: %q is taken", r.Name)
		}
		names[r.Name] = true
		want, known := attributeTypesOf(r.Kind)
		if !known {
			f.Add(at("type"), "must be %q, %q, %q, %q or %q", RuleEqual, RuleIntersect, RuleDistance, RuleTeamBalance, RulePartyMix)
			continue
		}
		c.addRuleFieldFaults(f, r, at, want)
	}
}

// attributeTypes are the types of attribute a rule may read, one or two ("" for none).
type attributeTypes [2]string

// list is the types as a list, for a fault's message.
func (t attributeTypes) list() []string {
	if t[1] == "" {
		return []string{t[0]}
	}
	return []string{t[0], t[1]}
}

// attributeTypesOf is the attribute types a rule of kind reads (none for team_balance and
// party_mix); known false for a kind that is not one.
func attributeTypesOf(kind string) (want attributeTypes, known bool) {
	switch kind {
	case RuleEqual:
		return attributeTypes{TypeString, TypeNumber}, true
	case RuleIntersect:
		return attributeTypes{TypeStringList}, true
	case RuleDistance:
		return attributeTypes{TypeNumber}, true
	case RuleTeamBalance, RulePartyMix:
		return attributeTypes{}, true
	}
	return attributeTypes{}, false
}

// addRuleFieldFaults checks the fields of rule r, of a known kind whose attribute is of a
// type of want.
func (c *Config) addRuleFieldFaults(f *apperr.Fields, r Rule, at func(string) string, want attributeTypes) {
	if r.MaxDifference != 0 && (r.Kind != RulePartyMix || r.MaxDifference < 0 || r.MaxDifference > MaxTeamSize) {
		f.Add(at("max_difference"), "must be between 0 and %d, for a party_mix rule only", MaxTeamSize)
	}
	if r.ReadsRating() {
		// the reserved attribute: every ticket has a rating
	} else if r.ReadsAttribute() {
		a, ok := c.Attributes[r.Attribute]
		switch {
		case r.Attribute == "":
			f.Add(at("attribute"), "must name the attribute the rule reads")
		case !ok:
			f.Add(at("attribute"), "must be a declared attribute: %q is not", r.Attribute)
		case a.Type != want[0] && (want[1] == "" || a.Type != want[1]):
			f.Add(at("attribute"), "must be an attribute of type %v for a rule of type %s: %q is a %s",
				want.list(), r.Kind, r.Attribute, a.Type)
		}
	} else if r.Attribute != "" {
		f.Add(at("attribute"), "must be empty for a rule of type %s", r.Kind)
	}
	if r.MinCommon != 0 && (r.Kind != RuleIntersect || r.MinCommon < 1 || r.MinCommon > MaxListItems) {
		f.Add(at("min_common"), "must be between 1 and %d, for an intersect rule only", MaxListItems)
	}
	switch {
	case r.HasTolerance() && len(r.Expansions) == 0:
		f.Add(at("expansions"), "must have at least one step, the first at after_s 0")
	case !r.HasTolerance() && len(r.Expansions) > 0:
		f.Add(at("expansions"), "must be empty for a rule of type %s: it has no tolerance", r.Kind)
	}
	addStepFaults(f, at("expansions"), r.Expansions)
	if o := r.OptionalAfterS; o != nil && !(*o > 0 && *o <= MaxMagnitude) {
		f.Add(at("optional_after_s"), "must be a number greater than 0 and at most %g", MaxMagnitude)
	}
}
