package matchpool

import (
	"fmt"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Wait says why a ticket that anchored a search found no match: the first rule that
// stopped it. The rules are tried in a fixed order, the built-in ones first (interval,
// latency), then the queue's in their order; a candidate is stopped by the first one it
// fails against the anchor. The rule named is the first after which the candidates left
// cannot make a match by their head counts alone; if they can, the rule whose classes
// (see tick/twoteam) they share none of, or when each rule alone leaves a match, the last such
// rule (they fail together); and for an anchor whose search found matches that a rule
// judged on the match turned down, the rule that turned down the first. An equal rule that
// partitions the walks (an equal rule binding at any wait, the first such) is named instead
// of the interval: the walk met only the candidates of the anchor's value.
type Wait struct {
	Ticket    int    // input index
	Rule      string // matchrules.WaitInterval, WaitLatency, WaitTeams, WaitAvoid or a rule's Name
	Kind      string // as Rule, or the rule's Kind
	Attribute string // the rule's attribute, if it reads one
	// Candidates are the tickets the rule was left to judge: those within the anchor's
	// interval that passed the rules before it; for an equal rule, those of them with the
	// anchor's value; for a match turned down, the match's tickets beside the anchor.
	Candidates int
	// Found: the rule turned down a match the search found, whose spread (a distance
	// rule's values, or the teams' average ratings) was Value, over Tolerance. For the teams
	// (matchrules.WaitTeams): the most even match found was more uneven than the bound a queue
	// without a team_balance rule keeps (twoteam.DefaultBalance, shaped.DefaultBalance).
	Found            bool
	Value, Tolerance float64
	// Short (interval): the queue's searching tickets, whatever their ratings, hold too
	// few players of the sizes a match needs.
	Short bool
	// Role (teams): the role too few searching players play for the shape's compositions.
	Role string
}

// Detail is the reason in a sentence, e.g. "no maps common to 9 candidates". It is built
// on demand: a pass of a large queue leaves thousands of tickets waiting.
func (w Wait) Detail() string {
	n := strconv.Itoa(w.Candidates) + " candidates"
	if w.Candidates == 1 {
		n = "1 candidate"
	}
	switch w.Kind {
	case matchrules.WaitInterval:
		if w.Short {
			return "too few players searching in the queue for a match"
		}
		if w.Candidates == 0 {
			return "no candidate within the interval"
		}
		return n + " within the interval: too few for a match"
	case matchrules.WaitLatency:
		if w.Candidates == 0 {
			return "no region within the ticket's latency limit"
		}
		return "no region common to " + n
	case matchrules.RuleEqual:
		return fmt.Sprintf("only %s with the same %s", n, w.Attribute)
	case matchrules.RuleIntersect:
		if w.Candidates == 0 {
			return fmt.Sprintf("the ticket's %s hold fewer values than the rule's min_common", w.Attribute)
		}
		return fmt.Sprintf("no %s common to %s", w.Attribute, n)
	case matchrules.RuleDistance:
		if w.Found {
			return fmt.Sprintf("%s spread %g over the tolerance %g in the match found", w.Attribute, w.Value, w.Tolerance)
		}
		return fmt.Sprintf("%s too far apart among %s", w.Attribute, n)
	case matchrules.RuleTeamBalance:
		return fmt.Sprintf("team averages differ by %g, over the tolerance %g in the match found", w.Value, w.Tolerance)
	case matchrules.RulePartyMix:
		return fmt.Sprintf("the teams' largest parties differ by %g players, over the %g allowed, in the match found", w.Value, w.Tolerance)
	case matchrules.WaitAvoid:
		if w.Found {
			return "the match found holds two players of which one avoids the other"
		}
		if w.Candidates == 0 {
			return "every candidate avoids or is avoided by the ticket's players"
		}
		return n + " that the ticket's players neither avoid nor are avoided by: too few for a match"
	case matchrules.WaitTeams:
		if w.Found {
			return fmt.Sprintf("the most even teams of the %s differ by %g in average rating, over the %g the wait allows",
				n, w.Value, w.Tolerance)
		}
		if w.Role != "" {
			return "too few players searching who play " + w.Role + " for the teams' compositions"
		}
		return "the " + n + " that passed every rule cannot fill the teams (party sizes, role composition)"
	}
	return w.Rule
}

// WaitOn is a Wait naming rule r.
func WaitOn(r *matchrules.Rule) Wait { return Wait{Rule: r.Name, Kind: r.Kind, Attribute: r.Attribute} }
