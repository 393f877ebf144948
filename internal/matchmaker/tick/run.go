package tick

import (
	"math"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/check"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/shaped"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/twoteam"
)

// Run makes one pass over the waiting tickets at time now (seconds, on the tickets' clock)
// with the queue's rules cfg, and returns the matches to make, the backfills filled, the
// tickets that expired and why each anchor left waiting waits. It reads no clock and keeps
// no state: the same input gives the same result.
//
// Expiry: a ticket expires when now >= ExpiresAt (a ticket lives in [WaitingSince,
// ExpiresAt)); it is reported in Expired (matchpool.ReasonTTL) and never matched. With latency
// considered, a ticket whose every measured region is beyond the widest limit (the last
// MaxLatency step) can never match: it is reported at once (matchpool.ReasonNoRegion).
//
// Expansions: a ticket's wait is now - WaitingSince (in float64; 0 when negative), and its
// current interval and latency limit are the values of the last steps whose AfterS <= wait
// (matchrules.Current).
//
// A config of two teams of TeamSize is served by twoteam.Run, one with a team shape by
// shaped.Run; each package's documentation says how it chooses and splits the tickets.
//
// Errors: an apperr.Invalid error naming every invalid field of cfg (see
// matchrules.Config.Validate), now, and of the tickets as tickets[i].field (see
// matchpool.Ticket.Validate, and ValidateTicket for attributes and roles); a pass with more than
// matchpool.MaxRegions region names is invalid too.
func Run(tickets []matchpool.Ticket, now float64, cfg matchrules.Config) (matchpool.Result, error) {
	var f apperr.Fields
	cfg.AddFaults(&f)
	if !(math.Abs(now) <= matchrules.MaxMagnitude) {
		f.Add("now", "must be a finite number between %g and %g", -matchrules.MaxMagnitude, matchrules.MaxMagnitude)
	}
	if f.Len() > 0 {
		teamSize := min(max(cfg.TeamSize, 1), matchrules.MaxTeamSize) // checks parties even when team_size is wrong
		for i := range tickets {
			tickets[i].AddFaults(&f, i, teamSize)
			check.Attributes(&f, &cfg, &tickets[i], i)
		}
		return matchpool.Result{}, f.Err()
	}
	if len(tickets) > math.MaxInt32 {
		return matchpool.Result{}, apperr.New(apperr.TooLarge, "at most %d tickets in one pass", math.MaxInt32)
	}
	if cfg.Shaped() {
		return shaped.Run(tickets, now, &cfg)
	}
	return twoteam.Run(tickets, now, &cfg)
}

// ValidateTicket reports every invalid field of a ticket for the queue of cfg as one
// apperr.Invalid error: those matchpool.Ticket.Validate names, attributes.<name> (undeclared, of
// the wrong type, too many values, missing where a rule reads it without a default) and
// roles (not the queue's, repeated, a party no team's composition takes).
func ValidateTicket(cfg matchrules.Config, t matchpool.Ticket) error {
	var f apperr.Fields
	check.Ticket(&f, &cfg, &t, -1, nil)
	return f.Err()
}

// ValidateAttributes reports the faults of a ticket's attributes against cfg's
// declarations and rules (attributes.<name>), as Run would; with backfill, of a backfill
// ticket's (whose attributes are all optional).
func ValidateAttributes(cfg matchrules.Config, attrs map[string]matchrules.Value, backfill bool) error {
	var f apperr.Fields
	t := &matchpool.Ticket{Attributes: attrs}
	if backfill {
		t.Backfill = &matchpool.Backfill{}
	}
	check.Attributes(&f, &cfg, t, -1)
	return f.Err()
}
