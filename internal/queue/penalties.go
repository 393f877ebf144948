package queue

import (
	"slices"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Penalties for players who dodge ready checks and leave matches (DESIGN, "A player across
// queues, avoid lists, penalties"). A player's standing is kept per rating context (the
// queue's game type and mutators), so that a queue's penalties reach the player in every
// queue of its context: the dodges of all of them count, and a cooldown refuses his tickets
// in each one that has a dodge penalty.
//
// What a player did is recorded always (a dodge, a leave from a queue match); what it costs
// him is the queue's penalties': a dodge's cooldown is computed when a ticket is created,
// from the dodges kept and the creating queue's steps, so that the record is append-only and
// every replica computes the same cooldown from it.

// Limits of a queue's penalties.
const (
	MaxPenaltyWindow = 30 * 24 * time.Hour // longest window_s: how long a dodge or leave is kept
	MaxCooldown      = 7 * 24 * time.Hour  // longest cooldown_s
	MaxCooldownSteps = 16
	MaxPenaltyCount  = 1000 // the largest count, leaves and games
	// MaxStandingRecords bounds the dodges and leaves a standing keeps: the newest.
	MaxStandingRecords = 100
)

// Penalties are a queue's: nil parts are off.
type Penalties struct {
	Dodge       *DodgePenalty
	LowPriority *LowPriorityPenalty
}

// Any says whether some penalty is on.
func (p Penalties) Any() bool { return p.Dodge != nil || p.LowPriority != nil }

// DodgePenalty turns dodges into cooldowns: a player whose dodges within Window of his last
// one reach a step's Count may create no ticket for that step's Cooldown after it.
type DodgePenalty struct {
	Window time.Duration
	Steps  []CooldownStep // Count ascending, Cooldown never decreasing
}

// CooldownStep is a cooldown from the Count-th dodge on.
type CooldownStep struct {
	Count    int
	Cooldown time.Duration
}

// LowPriorityPenalty sends a player who left Leaves matches within Window to the
// low-priority pool for his next Games matches: matched only with other low-priority
// tickets until he has waited ExtraWait.
type LowPriorityPenalty struct {
	Leaves    int
	Window    time.Duration
	Games     int
	ExtraWait time.Duration
}

// addPenaltyFaults checks the queue's penalties, naming penalties.dodge.* and
// penalties.low_priority.*.
func (q *Queue) addPenaltyFaults(f *apperr.Fields) {
	window := func(field string, d time.Duration) {
		if d < time.Second || d > MaxPenaltyWindow {
			f.Add(field, "must be 1..%d seconds", int(MaxPenaltyWindow.Seconds()))
		}
	}
	count := func(field string, n int) {
		if n < 1 || n > MaxPenaltyCount {
			f.Add(field, "must be 1..%d", MaxPenaltyCount)
		}
	}
	if d := q.Penalties.Dodge; d != nil {
		window("penalties.dodge.window_s", d.Window)
		switch {
		case len(d.Steps) == 0:
			f.Add("penalties.dodge.steps", "must have at least one step")
		case len(d.Steps) > MaxCooldownSteps:
			f.Add("penalties.dodge.steps", "must have at most %d steps", MaxCooldownSteps)
		}
		for i, s := range d.Steps {
			at := "penalties.dodge.steps[" + strconv.Itoa(i) + "]."
			count(at+"count", s.Count)
			if i > 0 && s.Count <= d.Steps[i-1].Count {
				f.Add(at+"count", "must be greater than the previous step's (%d): steps are in order of count", d.Steps[i-1].Count)
			}
			switch {
			case s.Cooldown < time.Second || s.Cooldown > MaxCooldown:
				f.Add(at+"cooldown_s", "must be 1..%d seconds (a week)", int(MaxCooldown.Seconds()))
			case i > 0 && s.Cooldown < d.Steps[i-1].Cooldown:
				f.Add(at+"cooldown_s", "must not be less than the previous step's: cooldowns only grow")
			}
		}
	}
	for i, r := range q.Rules {
		if r.Name == WaitLowPriority {
			f.Add("rules["+strconv.Itoa(i)+"].name", "must not be %q: it names the low-priority pool in waiting_on", WaitLowPriority)
		}
	}
	if lp := q.Penalties.LowPriority; lp != nil {
		if len(q.Rules) >= matchrules.MaxRules {
			f.Add("penalties.low_priority", "takes one of the queue's %d rules for its pool: the queue has %d", matchrules.MaxRules, len(q.Rules))
		}
		count("penalties.low_priority.leaves", lp.Leaves)
		window("penalties.low_priority.window_s", lp.Window)
		count("penalties.low_priority.games", lp.Games)
		if lp.ExtraWait < time.Second || lp.ExtraWait > MaxTicketTTL {
			f.Add("penalties.low_priority.extra_wait_s", "must be 1..%d seconds", int(MaxTicketTTL.Seconds()))
		}
	}
}

// StandingContext is the key a queue's players' standing is kept under: its rating
// context's.
func StandingContext(q Queue) string {
	return ratings.Context{GameType: q.GameType, Mutators: q.Mutators}.Key()
}

// Standing is a player's record in one context: his dodges and leaves (the newest
// MaxStandingRecords, oldest first) and the low-priority games he has left to play.
type Standing struct {
	Context, Player string
	Dodges          []Dodge
	Leaves          []Leave
	// LowPriorityGames is how many of his next matches he plays in the low-priority pool.
	LowPriorityGames int
	// LeavesCounted is the time of the leave that last sent him to the low-priority pool:
	// the leaves up to it have been paid for.
	LeavesCounted time.Time
}

// Dodge is a ready check a player declined or let time out.
type Dodge struct {
	At           time.Time
	Queue, Match string
}

// Leave is a queue match a player left early: present less than half of it.
type Leave struct {
	At    time.Time
	Match string
}

// Cooldown is when a player of standing s may search again under penalty p, at now: the
// zero time when he may at once. The count of a dodge is of the dodges within p.Window up
// to it, and the cooldown of the step it reaches runs from it; the latest end is his.
func (p DodgePenalty) Cooldown(s Standing, now time.Time) time.Time {
	var until time.Time
	for _, d := range s.Dodges { // in any order: a store appends them as they commit
		n := 0
		for _, e := range s.Dodges {
			if since := d.At.Sub(e.At); since >= 0 && since < p.Window {
				n++
			}
		}
		step := -1
		for k, st := range p.Steps {
			if n >= st.Count {
				step = k
			}
		}
		if step >= 0 {
			if end := d.At.Add(p.Steps[step].Cooldown); end.After(until) {
				until = end
			}
		}
	}
	if !until.After(now) {
		return time.Time{}
	}
	return until
}

// DodgesWithin counts the dodges of s within window before now.
func (s Standing) DodgesWithin(window time.Duration, now time.Time) int {
	n := 0
	for _, d := range s.Dodges {
		if now.Sub(d.At) < window {
			n++
		}
	}
	return n
}

// AddLeave records that the player left match at at under penalty p: a match already
// recorded changes nothing (a result sent again). When his leaves within p.Window of this
// one, since those already paid for, reach p.Leaves, he plays his next p.Games matches in
// the low-priority pool. It reports whether s changed, and whether he was sent there.
func (s *Standing) AddLeave(p LowPriorityPenalty, match string, at time.Time) (changed, sent bool) {
	if slices.ContainsFunc(s.Leaves, func(l Leave) bool { return l.Match == match }) {
		return false, false
	}
	s.Leaves = append(s.Leaves, Leave{At: at, Match: match})
	slices.SortStableFunc(s.Leaves, func(a, b Leave) int { return a.At.Compare(b.At) })
	s.Leaves = trimOldest(s.Leaves)
	n := 0
	for _, l := range s.Leaves {
		if at.Sub(l.At) < p.Window && l.At.After(s.LeavesCounted) && !l.At.After(at) {
			n++
		}
	}
	if n < p.Leaves {
		return true, false
	}
	s.LowPriorityGames = max(s.LowPriorityGames, p.Games)
	s.LeavesCounted = at
	return true, true
}

// AddDodges appends dodges to s, keeping the newest MaxStandingRecords.
func (s *Standing) AddDodges(ds ...Dodge) {
	s.Dodges = append(s.Dodges, ds...)
	slices.SortStableFunc(s.Dodges, func(a, b Dodge) int { return a.At.Compare(b.At) })
	s.Dodges = trimOldest(s.Dodges)
}

// Forget drops the dodges and leaves older than MaxPenaltyWindow before now: no penalty
// counts them.
func (s *Standing) Forget(now time.Time) {
	s.Dodges = slices.DeleteFunc(s.Dodges, func(d Dodge) bool { return now.Sub(d.At) >= MaxPenaltyWindow })
	s.Leaves = slices.DeleteFunc(s.Leaves, func(l Leave) bool { return now.Sub(l.At) >= MaxPenaltyWindow })
}

// Empty says whether s holds nothing worth keeping.
func (s *Standing) Empty() bool {
	return len(s.Dodges) == 0 && len(s.Leaves) == 0 && s.LowPriorityGames == 0
}

func trimOldest[T any](xs []T) []T {
	if n := len(xs) - MaxStandingRecords; n > 0 {
		return slices.Delete(xs, 0, n)
	}
	return xs
}

// CooldownError is the refusal of a ticket whose player is in a dodge cooldown: a 429
// naming the player and when he may search again.
func CooldownError(field, player string, until, now time.Time) error {
	return &apperr.Error{Code: apperr.TooManyRequests, RetryAt: until, RetryAfter: until.Sub(now),
		Message: "player " + player + " dodged too many ready checks: he may search again at " + until.UTC().Format(time.RFC3339),
		Fields:  []apperr.FieldError{{Field: field, Message: "is in a dodge cooldown until " + until.UTC().Format(time.RFC3339)}}}
}

// Dodgers counts the players who dodged p, resolved: who declined it, or, timed out, who
// did not answer (as the lifecycle marks them).
func Dodgers(p Proposal) int {
	n := 0
	for _, t := range p.Match.Teams {
		for _, pl := range t.Players {
			accepted, answered := p.Answers[pl.ID]
			if p.State == ProposalTimedOut && !answered || p.State == ProposalDeclined && answered && !accepted {
				n++
			}
		}
	}
	return n
}

// Leavers are the players of queue match m who left it early, by a result of the match
// that lasted durationS: present (from join to leave) less than half of it, or not in the
// result at all (presence: seconds by player).
func Leavers(m Match, durationS float64, presence map[string]float64) []string {
	var out []string
	for _, t := range m.Teams {
		for _, p := range t.Players {
			if m.BackfillOf != "" && p.TicketID == m.BackfillTicket {
				continue // a backfill's players played the running match before: not this one's
			}
			if present, ok := presence[p.ID]; !ok || present < durationS/2 {
				out = append(out, p.ID)
			}
		}
	}
	return out
}
