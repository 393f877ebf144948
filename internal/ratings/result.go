package ratings

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Result is a finished match as POST /v1/results reports it. The context is kept raw (game type
// and every mutator the server ran) so that the stored history can be re-split into contexts
// when an admin reclassifies a mutator; MutatorPolicy.Context derives the rating context.
type Result struct {
	MatchID   string
	GameType  string   // context.game_type
	Mutators  []string // context.mutators, as reported
	Map       string
	DurationS float64
	Teams     []Team // exactly two
	Winner    *int   // index into Teams; nil for a draw
	// EndedAt is when the match ended: the result's ended_at, or when the service accepted it.
	// Zero for a result stored without one (before round 4): it then carries no time, and the
	// idle drift (Kalman.SkillDriftPerDay) does not apply to it.
	EndedAt time.Time `json:",omitzero"`
	// checked says Validate passed and r has not changed since: the self-tuning's copy of its
	// history, checked once, not again by each candidate's replay (prepare). Never set on a
	// result from outside the package.
	checked bool
}

// idleDays is how many days before r its participant last played, last being the Unix second
// of the end of his last match (Rating.LastPlayed); 0 when either is unknown, or r came first.
func (r *Result) idleDays(last int64) float64 {
	if last == 0 || r.EndedAt.IsZero() {
		return 0
	}
	return max(float64(r.EndedAt.Unix()-last)/86400, 0)
}

// lastPlayed is a participant's Rating.LastPlayed after r: the end of the later of his last
// match and r (results may arrive out of order).
func (r *Result) lastPlayed(last int64) int64 {
	if r.EndedAt.IsZero() {
		return last
	}
	return max(last, r.EndedAt.Unix())
}

// Team is one side of a match.
type Team struct {
	Side    string // e.g. "marines", "red"; compared case-insensitively
	Players []Player
}

// Player is one participant's presence in a match: a player (ID) or a bot (Bot), exactly one
// of the two. Times are seconds from the start of the match.
type Player struct {
	ID         string
	Bot        string
	JoinedS    float64
	LeftS      float64
	CommanderS float64 // seconds spent commanding, counted from JoinedS (see Model)
}

// Participant is who the entry rates. Only meaningful for a valid entry.
func (p Player) Participant() Participant {
	if p.Bot != "" {
		return Participant{ID: p.Bot, Bot: true}
	}
	return Participant{ID: p.ID}
}

// MinTeamPresence is the share of the time a match was played (first join to last leave)
// some participant of each team must have played for the result to count.
const MinTeamPresence = 0.05

// Validate reports every fault of the result at once, as an apperr.Invalid error whose fields
// are the API's JSON paths (match_id, context.game_type, teams[0].players[2].left_s, ...).
func (r *Result) Validate() error {
	var f apperr.Fields
	if msg := checkID(r.MatchID); msg != "" {
		f.Add("match_id", "%s", msg)
	}
	checkContext(&f, r.GameType, r.Mutators)
	if msg := checkMap(r.Map); msg != "" {
		f.Add("map", "%s", msg)
	}
	durOK := true
	switch d := r.DurationS; {
	case math.IsNaN(d) || math.IsInf(d, 0):
		f.Add("duration_s", "must be a finite number")
		durOK = false
	case d <= 0:
		f.Add("duration_s", "must be positive")
		durOK = false
	case d > MaxDurationS:
		f.Add("duration_s", "must be at most %d seconds", MaxDurationS)
		durOK = false
	}
	if len(r.Teams) != 2 {
		f.Add("teams", "must list exactly 2 teams, got %d: unknown side count", len(r.Teams))
	} else {
		if r.Teams[0].Side != "" && strings.EqualFold(r.Teams[0].Side, r.Teams[1].Side) {
			f.Add("teams[1].side", "must differ from teams[0].side")
		}
	}
	if r.Winner != nil && (*r.Winner < 0 || *r.Winner >= 2) {
		f.Add("winner", "must be 0 or 1 (a team index), or null for a draw")
	}
	if !r.EndedAt.IsZero() && (r.EndedAt.Year() < 1970 || r.EndedAt.Year() > 9999) {
		f.Add("ended_at", "must be a time from 1970 to 9999")
	}
	total := 0
	for ti, team := range r.Teams {
		if ti >= 4 { // a broken request; the count is reported above
			break
		}
		if msg := checkName(team.Side); msg != "" {
			f.Add(teamField(ti, "side"), "%s", msg)
		}
		switch {
		case len(team.Players) == 0:
			f.Add(teamField(ti, "players"), "must not be empty")
			continue
		case len(team.Players) > MaxTeamSize:
			f.Add(teamField(ti, "players"), "must list at most %d participants", MaxTeamSize)
			continue
		}
		total += len(team.Players)
		longest, timesOK := 0.0, true
		for pi, p := range team.Players {
			if !checkPlayer(&f, ti, pi, p, r.DurationS, durOK) {
				timesOK = false
			}
			longest = max(longest, p.LeftS-p.JoinedS)
		}
		if timesOK && longest <= 0 {
			f.Add(teamField(ti, "players"), "no participant was present for any time (every left_s equals joined_s)")
		}
	}
	if len(r.Teams) == 2 && total > 0 {
		checkDuplicates(&f, r.Teams)
	}
	return f.Err()
}

// CheckPresence is the rule a new result keeps beyond Validate's: some participant of each
// team played MinTeamPresence of the time the match was played. A team that barely played is
// not evidence: its opponents' loss to it would be read as a huge upset (a forged result with
// a 1e-300 s presence moved a loser by -1.97 where a normal loss moves -0.74). It is checked
// when a result is recorded, not when the history is replayed, so that a rebuild of results
// stored before it still runs.
func (r *Result) CheckPresence() error {
	if len(r.Teams) != 2 {
		return nil // Validate says so
	}
	var f apperr.Fields
	span := playedSpan(r.Teams)
	for ti, team := range r.Teams {
		longest := 0.0
		for _, p := range team.Players {
			longest = max(longest, p.LeftS-p.JoinedS)
		}
		if longest > 0 && longest < MinTeamPresence*span {
			f.Add(teamField(ti, "players"), "no participant was present for %g%% of the time played (%g s of %g s): a team must have played to count",
				100*MinTeamPresence, MinTeamPresence*span, span)
		}
	}
	return f.Err()
}

// playedSpan is the time the match was played: from the first join to the last leave (0 for
// times that are not numbers; their fields are reported on their own).
func playedSpan(teams []Team) float64 {
	first, last := math.Inf(1), math.Inf(-1)
	for _, t := range teams {
		for _, p := range t.Players {
			first, last = min(first, p.JoinedS), max(last, p.LeftS)
		}
	}
	if span := last - first; span > 0 && !math.IsInf(span, 0) {
		return span
	}
	return 0
}

// teamField is the JSON path of a team's field.
func teamField(team int, name string) string { return fmt.Sprintf("teams[%d].%s", team, name) }

// playerField is the JSON path of a participant's field; built only when a fault is reported.
func playerField(team, slot int, name string) string {
	return fmt.Sprintf("teams[%d].players[%d].%s", team, slot, name)
}

// checkPlayer validates one participant and reports whether its times were usable.
func checkPlayer(f *apperr.Fields, ti, pi int, p Player, dur float64, durOK bool) bool {
	switch {
	case p.ID == "" && p.Bot == "":
		f.Add(playerField(ti, pi, "id"), "one of id or bot is required")
	case p.ID != "" && p.Bot != "":
		f.Add(playerField(ti, pi, "bot"), "must be empty when id is set: a participant is a player or a bot")
	case p.ID != "":
		if msg := checkID(p.ID); msg != "" {
			f.Add(playerField(ti, pi, "id"), "%s", msg)
		}
	default:
		if msg := checkID(p.Bot); msg != "" {
			f.Add(playerField(ti, pi, "bot"), "%s", msg)
		}
	}
	timesOK := true
	for _, tm := range []struct {
		name string
		v    float64
	}{{"joined_s", p.JoinedS}, {"left_s", p.LeftS}} {
		switch {
		case math.IsNaN(tm.v) || math.IsInf(tm.v, 0):
			f.Add(playerField(ti, pi, tm.name), "must be a finite number")
			timesOK = false
		case tm.v < 0:
			f.Add(playerField(ti, pi, tm.name), "must not be negative")
			timesOK = false
		case durOK && tm.v > dur:
			f.Add(playerField(ti, pi, tm.name), "must not exceed duration_s (%g)", dur)
			timesOK = false
		}
	}
	if timesOK && p.LeftS < p.JoinedS {
		f.Add(playerField(ti, pi, "left_s"), "must not be before joined_s")
		timesOK = false
	}
	switch c := p.CommanderS; {
	case math.IsNaN(c) || math.IsInf(c, 0):
		f.Add(playerField(ti, pi, "commander_s"), "must be a finite number")
	case c < 0:
		f.Add(playerField(ti, pi, "commander_s"), "must not be negative")
	case timesOK && c > p.LeftS-p.JoinedS:
		f.Add(playerField(ti, pi, "commander_s"), "must not exceed the time present (left_s - joined_s = %g)", p.LeftS-p.JoinedS)
	}
	return timesOK
}

// checkDuplicates reports a participant listed twice, on one team or on both.
func checkDuplicates(f *apperr.Fields, teams []Team) {
	type pos struct {
		p          Participant
		team, slot int
	}
	n := len(teams[0].Players) + len(teams[1].Players)
	var buf [32]pos // the common case needs no allocation
	all := buf[:0]
	if n > len(buf) {
		all = make([]pos, 0, n)
	}
	for ti, team := range teams {
		for pi, p := range team.Players {
			if (p.ID == "") != (p.Bot == "") { // exactly one set: a participant
				all = append(all, pos{p.Participant(), ti, pi})
			}
		}
	}
	if len(all) <= len(buf) { // pairwise: cheaper than sorting for a few dozen
		for i := 1; i < len(all); i++ {
			for j := range i {
				if all[j].p == all[i].p {
					b, a := all[i], all[j]
					f.Add(playerField(b.team, b.slot, idField(b.p)), "%s already appears at teams[%d].players[%d]", b.p, a.team, a.slot)
					break
				}
			}
		}
		return
	}
	slices.SortFunc(all, func(a, b pos) int {
		if c := a.p.Compare(b.p); c != 0 {
			return c
		}
		if a.team != b.team {
			return a.team - b.team
		}
		return a.slot - b.slot
	})
	first := 0 // the first listing of the current run of equal participants
	for i := 1; i < len(all); i++ {
		a, b := all[first], all[i]
		if a.p != b.p {
			first = i
			continue
		}
		f.Add(playerField(b.team, b.slot, idField(b.p)), "%s already appears at teams[%d].players[%d]", b.p, a.team, a.slot)
	}
}

func idField(p Participant) string {
	if p.Bot {
		return "bot"
	}
	return "id"
}
