// Package matchpool is what a pass is given and what it gives back: the queue's waiting tickets
// (its pool, as a match function sees it) and the Result, the matches, fills, expiries and
// waits it decided. Tickets are referred to by their index in the pass's input, players by
// Slot (ticket, index in the ticket).
package matchpool

import (
	"math"
	"slices"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// MaxRegions bounds the distinct region names in one pass: a ticket's usable regions are a
// bit set of one word. The queue service admits only its queue's regions.
const MaxRegions = 64

// Ticket is one waiting ticket: a player, or a party that plays on one team.
type Ticket struct {
	Ratings      []float64 // one per player, 1..TeamSize of them
	WaitingSince float64   // seconds, on the caller's clock
	ExpiresAt    float64   // seconds, same clock; +Inf never expires
	// Latencies to the regions the player or party measured, sorted by Region without
	// repeats. Empty means no data: the ticket accepts any region.
	Latencies []RegionLatency
	// Backfill, when set, makes this a backfill ticket: a running match that lost players
	// asks for joiners. Ratings are then empty (the match's players are in Backfill.Teams)
	// and Latencies hold at most the match's region (any ms: the match is played there).
	// tick/twoteam serves them; a queue with a team shape takes none.
	Backfill *Backfill
	// Attributes are the party's values of the queue's declared attributes
	// (matchrules.Config.Attributes), one value for the whole ticket; an attribute it does not
	// give takes the declaration's default.
	Attributes map[string]matchrules.Value
	// Roles are the roles each player plays, by Ratings' index, in order of preference;
	// a player without a list plays any (matchrules.Config.Roles).
	Roles [][]string
	// Players are the players' ids, by Ratings' index; a pass reads them only when some
	// ticket avoids someone. Avoid are the ids each player avoids (blocked), by Ratings'
	// index, at most matchrules.MaxAvoid each: the pass keeps the two tickets apart as
	// matchrules.Config.Avoid says. A ticket that avoids gives its Players.
	Players []string
	Avoid   [][]string
}

// Backfill describes a running match's request for players; see Ticket.Backfill.
type Backfill struct {
	// Teams are the players still in the match (their ratings, all in [0,
	// teams.MaxWeight]) and its bots, per team.
	Teams [2]teams.Roster
	// OpenSlots are the players wanted per team; a team never gets more, and never more
	// than TeamSize players in all.
	OpenSlots [2]int
	// Bots is the server's bot rule: with it a joiner's team may lose a bot, or the other
	// gain one, as teams.Assign counts it. nil: the bots stay as they are.
	Bots *teams.BotRule
}

// RegionLatency is a ticket's measured round trip to one region.
type RegionLatency struct {
	Region string
	MS     float64
}

// Validate reports every invalid field of a ticket for a queue of teams of teamSize as one
// apperr.Invalid error naming ratings, ratings[i], waiting_since, expires_at,
// latencies[i].region, latencies[i].ms, backfill, players, avoid or avoid[i][j], so that the queue service can refuse a
// ticket by the rules a pass applies. (tick.ValidateTicket checks its attributes and roles
// against a queue's rules too.)
func (t Ticket) Validate(teamSize int) error {
	var f apperr.Fields
	t.AddFaults(&f, -1, teamSize)
	return f.Err()
}

// TicketField names a ticket's field: as it is in a ticket, or with index >= 0 as a pass's
// tickets[index].field. Built only for a fault: a pass checks 100,000 tickets.
func TicketField(index int, field string) string {
	if index < 0 {
		return field
	}
	return "tickets[" + strconv.Itoa(index) + "]." + field
}

// AddFaults adds the faults Validate reports to f, the fields named by TicketField(index).
func (t *Ticket) AddFaults(f *apperr.Fields, index, teamSize int) {
	at := func(field string) string { return TicketField(index, field) }
	if b := t.Backfill; b != nil {
		b.addFaults(f, at, teamSize)
		if len(t.Ratings) > 0 {
			f.Add(at("ratings"), "must be empty for a backfill ticket: its players are in backfill.teams")
		}
		if len(t.Latencies) > 1 {
			f.Add(at("latencies"), "must hold at most the match's region for a backfill ticket")
		}
	} else if len(t.Ratings) == 0 || len(t.Ratings) > teamSize {
		f.Add(at("ratings"), "must hold 1 to team_size (%d) players", teamSize)
	}
	for i, r := range t.Ratings {
		if !(math.Abs(r) <= matchrules.MaxMagnitude) {
			f.Add(at("ratings["+strconv.Itoa(i)+"]"), "must be a finite number between %g and %g",
				-matchrules.MaxMagnitude, matchrules.MaxMagnitude)
		}
	}
	if !(math.Abs(t.WaitingSince) <= matchrules.MaxMagnitude) {
		f.Add(at("waiting_since"), "must be a finite number between %g and %g", -matchrules.MaxMagnitude, matchrules.MaxMagnitude)
	}
	if math.IsNaN(t.ExpiresAt) {
		f.Add(at("expires_at"), "must be a number (+Inf: never)")
	}
	for i, l := range t.Latencies {
		switch {
		case l.Region == "":
			f.Add(at(LatencyField(i, "region")), "must not be empty")
		case i > 0 && l.Region <= t.Latencies[i-1].Region:
			f.Add(at(LatencyField(i, "region")), "must come after %q: latencies are sorted by region, each once",
				t.Latencies[i-1].Region)
		}
		if !(l.MS >= 0 && l.MS <= matchrules.MaxMagnitude) {
			f.Add(at(LatencyField(i, "ms")), "must be a finite number between 0 and %g", matchrules.MaxMagnitude)
		}
	}
	if len(t.Players) > 0 || len(t.Avoid) > 0 {
		t.addAvoidFaults(f, at)
	}
}

// addAvoidFaults checks the players' ids and avoid lists: an id of the ticket's own players
// in a list is refused, since a party plays in one match and on one team, so it could
// never be matched. Ids are otherwise the service's to check (the one id rule).
func (t *Ticket) addAvoidFaults(f *apperr.Fields, at func(string) string) {
	if len(t.Players) != len(t.Ratings) && (len(t.Players) > 0 || len(t.Avoid) > 0) {
		f.Add(at("players"), "must give each player's id (%d) for a ticket with avoid lists", len(t.Ratings))
	}
	if t.Backfill != nil && len(t.Avoid) > 0 {
		f.Add(at("avoid"), "must be empty for a backfill ticket")
	} else if len(t.Avoid) > len(t.Ratings) {
		f.Add(at("avoid"), "must give at most one list per player (%d)", len(t.Ratings))
	}
	for i, ids := range t.Avoid {
		list := func() string { return "avoid[" + strconv.Itoa(i) + "]" }
		if len(ids) > matchrules.MaxAvoid {
			f.Add(at(list()), "must hold at most %d player ids", matchrules.MaxAvoid)
			continue
		}
		for j, id := range ids {
			field := func() string { return at(list() + "[" + strconv.Itoa(j) + "]") }
			switch {
			case id == "":
				f.Add(field(), "must not be empty")
			case slices.Contains(t.Players, id):
				f.Add(field(), "must not name a player of the ticket: %q plays in its match", id)
			case slices.Contains(ids[:j], id):
				f.Add(field(), "must not repeat an id: %q is listed before", id)
			}
		}
	}
}

func (b *Backfill) addFaults(f *apperr.Fields, at func(string) string, teamSize int) {
	open, players := 0, 0
	for i, r := range b.Teams {
		players += len(r.Players)
		team := func(field string) string { return at("backfill.teams[" + strconv.Itoa(i) + "]." + field) }
		for j, w := range r.Players {
			if !(w >= 0 && w <= teams.MaxWeight) {
				f.Add(team("players["+strconv.Itoa(j)+"]"), "must be a finite number between 0 and %g", float64(teams.MaxWeight))
			}
		}
		for j, w := range r.Bots {
			if !(w >= 0 && w <= teams.MaxWeight) {
				f.Add(team("bots["+strconv.Itoa(j)+"]"), "must be a finite number between 0 and %g", float64(teams.MaxWeight))
			}
		}
		n := b.OpenSlots[i]
		switch {
		case n < 0:
			f.Add(at("backfill.open_slots["+strconv.Itoa(i)+"]"), "must not be negative")
		case len(r.Players)+n > teamSize:
			f.Add(at("backfill.open_slots["+strconv.Itoa(i)+"]"), "must leave the team at most team_size (%d) players: it has %d",
				teamSize, len(r.Players))
		default:
			open += n
		}
	}
	if open == 0 && b.OpenSlots[0] >= 0 && b.OpenSlots[1] >= 0 {
		f.Add(at("backfill.open_slots"), "must ask for at least one player")
	}
	if players == 0 {
		f.Add(at("backfill.teams"), "must hold at least one player still in the match")
	}
	if b.Bots != nil {
		b.Bots.Check(f, at("backfill.bots"))
	}
}

// LatencyField names field of a ticket's latency i.
func LatencyField(i int, field string) string {
	return "latencies[" + strconv.Itoa(i) + "]." + field
}

// ExpiryReason says why a ticket leaves a pass at now unmatched: ReasonTTL when its
// ExpiresAt has come, ReasonNoRegion when latency is considered (widest >= 0, the last
// max_latency step's limit) and every region it measured is beyond even that limit; ""
// while it may still match.
func ExpiryReason(t *Ticket, now, widest float64) string {
	if now >= t.ExpiresAt {
		return ReasonTTL
	}
	if widest < 0 || len(t.Latencies) == 0 {
		return ""
	}
	for _, l := range t.Latencies {
		if l.MS <= widest || l.MS != l.MS { // NaN: invalid, reported with the live tickets
			return ""
		}
	}
	return ReasonNoRegion
}
