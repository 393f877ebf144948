package matchrules

import "github.com/matchmakerhq/matchmaker/internal/apperr"

// The scopes of an Avoid rule: two players of which one avoids the other are never in one
// match (AvoidMatch, the default), or never on one team (AvoidTeam).
const (
	AvoidMatch = "match"
	AvoidTeam  = "team"
)

// WaitAvoid is the name "why a ticket waits" gives the avoid lists (Avoid), like the
// built-in rules'.
const WaitAvoid = "avoid"

// MaxAvoid bounds a player's avoid list (the players he blocked), as FlexMatch's block
// list is bounded.
const MaxAvoid = 100

// Avoid is how a queue holds its players' avoid lists (matchpool.Ticket.Avoid). A ticket's
// list binds it until its wait reaches OptionalAfterS, like any rule; two tickets may not
// meet while one binds a list naming a player of the other.
type Avoid struct {
	Scope string // AvoidMatch (also when empty) or AvoidTeam
	// OptionalAfterS, when set (> 0), is the wait from which a ticket's avoid lists no
	// longer bind it.
	OptionalAfterS *float64
}

// Team: the lists keep players off one team only, not out of one match.
func (a Avoid) Team() bool { return a.Scope == AvoidTeam }

// BindsAt: a ticket that has waited wait seconds is bound by its lists.
func (a Avoid) BindsAt(wait float64) bool {
	return a.OptionalAfterS == nil || wait < *a.OptionalAfterS
}

// Validate reports the faults of a, avoid.scope and avoid.optional_after_s.
func (a Avoid) Validate() error {
	var f apperr.Fields
	a.addFaults(&f)
	return f.Err()
}

func (a Avoid) addFaults(f *apperr.Fields) {
	switch a.Scope {
	case "", AvoidMatch, AvoidTeam:
	default:
		f.Add("avoid.scope", "must be %q or %q", AvoidMatch, AvoidTeam)
	}
	if o := a.OptionalAfterS; o != nil && !(*o > 0 && *o <= MaxMagnitude) {
		f.Add("avoid.optional_after_s", "must be a number greater than 0 and at most %g", MaxMagnitude)
	}
}
