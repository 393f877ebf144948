package queue

import (
	"net/url"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Match functions (DESIGN, "Match functions"): a queue may have a studio's own code decide
// its matches. At each tick the leader POSTs the queue's pool (its searching tickets, oldest
// first, at most MaxPool, each with its players, attributes, latencies, wait and current
// tolerances) to the function, signed as webhooks are, and reads back the matches it
// proposes (matchfunction_wire.go). Every proposed match is checked on its own against the
// pool, the queue's shape and the tickets' state (matchfunction_check.go): a match that fails
// is dropped with its reason, the others are built as the queue keeps matches (teams,
// ratings, pairs, quality) and take the path of the built-in pass's: the tick's commit
// through the lifecycle, or a ready check and a placement, then events and results.
//
// In Mode FunctionShadow the built-in pass still makes the queue's matches; the function's
// proposals are checked and measured beside them, never committed, so that a studio
// compares a function with its rules on live traffic before it switches. A function that
// errs, answers late or answers what cannot be read leaves the tick to OnFailure: the
// tickets wait (FailureWait, their waiting_on naming the match function) or the built-in
// pass matches them (FailureRules); repeated failures back off.

// FunctionMode says who makes a queue's matches when it has a match function.
type FunctionMode string

const (
	// FunctionReplace: the function makes the matches; the queue's rules only filter the
	// pool (a ticket the queue no longer admits, or past its time, leaves as it would).
	FunctionReplace FunctionMode = "replace"
	// FunctionShadow: the built-in pass makes the matches; the function's are checked and
	// measured beside them (Stats.Function).
	FunctionShadow FunctionMode = "shadow"
)

// FunctionFailure says what a tick does when its match function fails.
type FunctionFailure string

const (
	FailureWait  FunctionFailure = "wait"  // the tickets keep searching
	FailureRules FunctionFailure = "rules" // the built-in pass makes this tick's matches
)

// Limits and defaults of a match function.
const (
	DefaultFunctionTimeout = time.Second
	MinFunctionTimeout     = 10 * time.Millisecond
	MaxFunctionTimeout     = 30 * time.Second
	DefaultFunctionPool    = 10_000
	MaxFunctionPool        = 100_000
)

// MatchFunction is a queue's match function: where the leader POSTs the pool (URL, under the
// webhook address rule, signed with Secret), how long it waits for the answer, who makes the
// matches (Mode), what a failed call leaves the tick to (OnFailure), and the most tickets one
// call carries (MaxPool, the oldest).
type MatchFunction struct {
	URL       string
	Secret    string
	Timeout   time.Duration
	Mode      FunctionMode
	OnFailure FunctionFailure
	MaxPool   int
}

// WaitMatchFunction is the rule a ticket's waiting_on names when the queue's match function
// failed or left it out of its matches.
const WaitMatchFunction = "match_function"

func (q *Queue) addMatchFunctionFaults(f *apperr.Fields) {
	mf := q.MatchFunction
	if mf == nil {
		return
	}
	u, err := url.Parse(mf.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		f.Add("match_function.url", "must be an absolute http or https URL")
	case len(mf.URL) > MaxWebhookURLLen:
		f.Add("match_function.url", "must be at most %d bytes", MaxWebhookURLLen)
	}
	addSecretFault(f, "match_function", mf.Secret)
	if mf.Timeout < MinFunctionTimeout || mf.Timeout > MaxFunctionTimeout {
		f.Add("match_function.timeout_ms", "must be %d..%d", MinFunctionTimeout.Milliseconds(), MaxFunctionTimeout.Milliseconds())
	}
	if mf.Mode != FunctionReplace && mf.Mode != FunctionShadow {
		f.Add("match_function.mode", "must be %q or %q", FunctionReplace, FunctionShadow)
	}
	if mf.OnFailure != FailureWait && mf.OnFailure != FailureRules {
		f.Add("match_function.on_failure", "must be %q or %q", FailureWait, FailureRules)
	}
	if mf.MaxPool < 1 || mf.MaxPool > MaxFunctionPool {
		f.Add("match_function.max_pool", "must be 1..%d", MaxFunctionPool)
	}
}

// ProposedMatch is one match a match function proposed: the tickets of each team, in the
// queue's team order, and optionally each player's role (by player id), the values of the
// queue's attributes the match is played with, and its region.
type ProposedMatch struct {
	Teams      [][]string
	Roles      map[string]string
	Attributes map[string]matchrules.Value
	Region     string
}

// RejectReason says why a proposed match was not made.
type RejectReason string

// The reasons of a rejected proposal, as the metric's reason label and the stats name them.
const (
	RejectEmpty        RejectReason = "empty"          // no ticket in the match
	RejectUnknown      RejectReason = "unknown_ticket" // a ticket not in the pool the function was sent
	RejectNotSearching RejectReason = "not_searching"  // a ticket that left the queue meanwhile
	RejectDuplicate    RejectReason = "duplicate"      // a ticket twice on a team, or in an earlier match of the answer
	RejectPartySplit   RejectReason = "party_split"    // a ticket (a party) on two teams
	RejectTeams        RejectReason = "teams"          // not the queue's number of teams
	RejectTeamSize     RejectReason = "team_size"      // a team larger than its size, or smaller than its minimum
	RejectRoles        RejectReason = "roles"          // roles for a player not in the match, not the queue's, or not his
	RejectComposition  RejectReason = "composition"    // the players' roles cannot meet a team's composition
	RejectAttributes   RejectReason = "attributes"     // an attribute the queue does not declare, or of the wrong type
	RejectRegion       RejectReason = "region"         // a region not the queue's
	RejectAvoid        RejectReason = "avoid"          // two players of whom one avoids the other
	RejectLowPriority  RejectReason = "low_priority"   // a low-priority ticket with a normal one before its extra wait
)

// Rejection is a proposed match not made: its index in the answer, why, a sentence that
// says more, and its tickets (for the log line).
type Rejection struct {
	Match   int
	Reason  RejectReason
	Detail  string
	Tickets []string
}
