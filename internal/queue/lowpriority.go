package queue

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// The low-priority pool in the pass (LowPriorityPenalty): a hidden equal rule of the pass's
// own, on a hidden attribute every ticket has ("normal" by default, "low" for a ticket with
// a low-priority player), that stops binding a low-priority ticket once it has waited
// extra_wait_s and never stops binding the others (matchrules.Rule.OptionalOnly). So a
// low-priority ticket meets only other low-priority ones until then, and anyone after; the
// rule is the rules machinery's, in both passes, with its waiting_on. It is added only to a
// pass with a low-priority ticket: the others run as before.

// WaitLowPriority is the name waiting_on gives the low-priority pool, as a rule's.
const WaitLowPriority = "low_priority"

const (
	// lowPriorityAttribute is the hidden attribute: no declared name holds a '!'.
	lowPriorityAttribute = "low_priority!"
	lowPriorityValue     = "low"
)

var normalPriority = matchrules.StringValue("normal")

// lowPriorityPass says whether a pass of q over waiting holds the pool: q has the penalty
// and some ticket has a low-priority player.
func lowPriorityPass(q Queue, waiting []Ticket) bool {
	if q.Penalties.LowPriority == nil {
		return false
	}
	return slices.ContainsFunc(waiting, lowPriorityTicket)
}

// lowPriorityTicket: some player of t owes low-priority games.
func lowPriorityTicket(t Ticket) bool {
	return slices.ContainsFunc(t.Players, func(p Player) bool { return p.LowPriority })
}

// lowPriorityConfig is cfg with the pool's attribute and rule.
func lowPriorityConfig(cfg matchrules.Config, lp *LowPriorityPenalty) matchrules.Config {
	attrs := make(map[string]matchrules.Attribute, len(cfg.Attributes)+1)
	maps.Copy(attrs, cfg.Attributes)
	attrs[lowPriorityAttribute] = matchrules.Attribute{Type: matchrules.TypeString, Default: &normalPriority}
	extra := lp.ExtraWait.Seconds()
	cfg.Attributes = attrs
	cfg.Rules = append(slices.Clip(cfg.Rules), matchrules.Rule{Name: WaitLowPriority, Kind: matchrules.RuleEqual,
		Attribute: lowPriorityAttribute, OptionalAfterS: &extra, OptionalOnly: lowPriorityValue})
	return cfg
}

// lowPriorityAttributes are a low-priority ticket's attributes in the pool's pass.
func lowPriorityAttributes(attrs map[string]matchrules.Value) map[string]matchrules.Value {
	out := make(map[string]matchrules.Value, len(attrs)+1)
	maps.Copy(out, attrs)
	out[lowPriorityAttribute] = matchrules.StringValue(lowPriorityValue)
	return out
}

// withoutLowPriority is a match's attributes without the pool's.
func withoutLowPriority(attrs []matchpool.MatchAttribute) []matchpool.MatchAttribute {
	i := slices.IndexFunc(attrs, func(a matchpool.MatchAttribute) bool { return a.Name == lowPriorityAttribute })
	if i < 0 {
		return attrs
	}
	out := slices.Delete(slices.Clone(attrs), i, i+1)
	if len(out) == 0 {
		return nil
	}
	return out
}

// LowPriorityPlayers counts the low-priority players of a match.
func LowPriorityPlayers(m Match) int {
	n := 0
	for _, t := range m.Teams {
		for _, p := range t.Players {
			if p.LowPriority {
				n++
			}
		}
	}
	return n
}

// lowPriorityBroken says whether a match of these tickets, checked at now, puts a
// low-priority ticket that has not yet waited the pool's extra_wait_s with a normal ticket,
// which the pass's low_priority rule keeps apart (a normal ticket is bound by it however long
// it waited): RejectLowPriority and which tickets, or "". A match function's proposals are
// held to it (matchfunction_check.go) as the pass's matches are.
func lowPriorityBroken(q *Queue, tickets []*Ticket, now time.Time) (RejectReason, string) {
	lp := q.Penalties.LowPriority
	if lp == nil {
		return "", ""
	}
	normal := slices.IndexFunc(tickets, func(t *Ticket) bool { return !lowPriorityTicket(*t) })
	if normal < 0 {
		return "", ""
	}
	for _, t := range tickets {
		if waited := max(now.Sub(t.CreatedAt), 0); lowPriorityTicket(*t) && waited < lp.ExtraWait {
			return RejectLowPriority, fmt.Sprintf("ticket %q is low priority and has waited %.0f s of the pool's extra_wait_s %.0f: normal ticket %q may not meet it yet",
				t.ID, waited.Seconds(), lp.ExtraWait.Seconds(), tickets[normal].ID)
		}
	}
	return "", ""
}
