package queue

import (
	"crypto/sha256"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// NewBackfill is a request for a backfill ticket (POST /v1/queues/{name}/backfill): a
// running match that lost players asks the queue for joiners.
type NewBackfill struct {
	Queue   string
	MatchID string
	// Teams are the match's two teams as they are: the players still in it (rated inline,
	// else by their stored rating in the queue's context, else the default) and its bots.
	Teams     []NewBackfillTeam
	OpenSlots []int  // players wanted per team
	Region    string // where the match is played; "": any
	Bots      *BotRule
	// Attributes are the running match's values of the queue's attributes, which its
	// joiners must keep by the queue's rules; each is optional.
	Attributes map[string]matchrules.Value
	TTL        time.Duration // 0: the queue's ticket_ttl_s
	// IdempotencyKey makes retries safe, as for tickets.
	IdempotencyKey string
}

// NewBackfillTeam is a team of a running match.
type NewBackfillTeam struct {
	Players []NewPlayer
	Bots    []float64 // the bots' ratings, on the matchmaking scale
}

// PlayerField is the request's path of a player's id.
func (nb *NewBackfill) PlayerField(player string) string {
	for i, t := range nb.Teams {
		if j := slices.IndexFunc(t.Players, func(p NewPlayer) bool { return p.ID == player }); j >= 0 {
			return "teams[" + strconv.Itoa(i) + "].players[" + strconv.Itoa(j) + "].id"
		}
	}
	return "teams"
}

// Validate checks a backfill request against its queue, every fault at once.
func (nb *NewBackfill) Validate(q Queue) error {
	var f apperr.Fields
	if err := ratings.ValidateID(nb.MatchID); err != nil {
		f.Add("match_id", "%s", err)
	}
	if q.Shaped() {
		f.Add("teams", "cannot be backfilled in this queue: backfill is for queues of two teams without a team shape")
		return f.Err()
	}
	if len(nb.Teams) != q.Teams {
		f.Add("teams", "must list the match's %d teams", q.Teams)
	}
	if len(nb.OpenSlots) != q.Teams {
		f.Add("open_slots", "must give one count per team (%d)", q.Teams)
	}
	nb.addTeamFaults(&f, q)
	if nb.Region != "" {
		if err := ratings.ValidateName(nb.Region); err != nil {
			f.Add("region", "%s", err)
		} else if len(q.Regions) > 0 && !slices.Contains(q.Regions, nb.Region) {
			f.Add("region", "%q is not one of the queue's regions %v", nb.Region, q.Regions)
		}
	}
	nb.addBotRuleFaults(&f)
	if nb.TTL != 0 && (nb.TTL < time.Second || nb.TTL > MaxTicketTTL) {
		f.Add("ttl_s", "must be 1..%d seconds", int(MaxTicketTTL.Seconds()))
	}
	if len(nb.Attributes) > 0 {
		f.Include(tick.ValidateAttributes(q.tickConfig(), nb.Attributes, true)) // attributes.<name>
	}
	addBackfillPartitionFault(&f, &q, nb.Attributes)
	return f.Err()
}

// addTeamFaults checks the running match's teams: their players (each once, rated from 0),
// their bots, and the open slots each team asks for within its size, at least one in all.
func (nb *NewBackfill) addTeamFaults(f *apperr.Fields, q Queue) {
	seen := map[string]string{}
	players, open := 0, 0
	for i, t := range nb.Teams {
		at := "teams[" + strconv.Itoa(i) + "]"
		players += len(t.Players)
		if len(t.Players) > q.TeamSize {
			f.Add(at+".players", "must hold at most team_size (%d) players", q.TeamSize)
		}
		for j, p := range t.Players {
			path := at + ".players[" + strconv.Itoa(j) + "]"
			if err := ratings.ValidateID(p.ID); err != nil {
				f.Add(path+".id", "%s", err)
			} else if other, dup := seen[p.ID]; dup {
				f.Add(path+".id", "repeats %s: a player is in a match once", other)
			} else {
				seen[p.ID] = path + ".id"
			}
			if p.Rating != nil && !(*p.Rating >= 0 && *p.Rating <= MaxRating) {
				f.Add(path+".rating", "must be a finite number between 0 and %g", float64(MaxRating))
			}
		}
		if len(t.Bots) > teams.MaxBots {
			f.Add(at+".bots", "must hold at most %d bots", teams.MaxBots)
		}
		for j, w := range t.Bots {
			if !(w >= 0 && w <= MaxRating) {
				f.Add(at+".bots["+strconv.Itoa(j)+"]", "must be a finite number between 0 and %g", float64(MaxRating))
			}
		}
		if i < len(nb.OpenSlots) {
			open += nb.addOpenSlotFault(f, q, i, len(t.Players))
		}
	}
	if players == 0 && len(nb.Teams) == q.Teams {
		f.Add("teams", "must hold at least one player still in the match")
	}
	if open == 0 && len(nb.OpenSlots) == q.Teams && !slices.ContainsFunc(nb.OpenSlots, func(n int) bool { return n < 0 }) {
		f.Add("open_slots", "must ask for at least one player")
	}
}

// addOpenSlotFault checks team i's open slots, with the players it has, and returns them
// when they are valid.
func (nb *NewBackfill) addOpenSlotFault(f *apperr.Fields, q Queue, i, players int) int {
	switch n := nb.OpenSlots[i]; {
	case n < 0:
		f.Add("open_slots["+strconv.Itoa(i)+"]", "must not be negative")
	case players+n > q.TeamSize:
		f.Add("open_slots["+strconv.Itoa(i)+"]", "must leave the team at most team_size (%d) players: it has %d", q.TeamSize, players)
	default:
		return n
	}
	return 0
}

// addBotRuleFaults checks the server's bot rule, if given.
func (nb *NewBackfill) addBotRuleFaults(f *apperr.Fields) {
	r := nb.Bots
	if r == nil {
		return
	}
	if !(r.MeanRating >= 0 && r.MeanRating <= MaxRating) {
		f.Add("bots.mean_rating", "must be a finite number between 0 and %g", float64(MaxRating))
	}
	if r.TargetPlayers < 0 || r.TargetPlayers > teams.MaxBots {
		f.Add("bots.target_players", "must be 0..%d", teams.MaxBots)
	}
	if r.RecommendedMin < 0 || r.RecommendedMin > teams.MaxBots {
		f.Add("bots.recommended.min", "must be 0..%d", teams.MaxBots)
	}
	if r.RecommendedMax < 0 || r.RecommendedMax > teams.MaxBots {
		f.Add("bots.recommended.max", "must be 0..%d", teams.MaxBots)
	} else if r.RecommendedMax < r.RecommendedMin {
		f.Add("bots.recommended.max", "must be at least recommended.min (%d)", r.RecommendedMin)
	}
}

// Fingerprint identifies a backfill request by its meaning, for Idempotency-Key retries:
// a team's players are a set.
func (nb *NewBackfill) Fingerprint() [32]byte {
	b := []byte("backfill")
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	num := func(x float64) { b = binary.BigEndian.AppendUint64(b, math.Float64bits(x)) }
	str(nb.Queue)
	str(nb.MatchID)
	str(nb.Region)
	for i, t := range nb.Teams {
		b = binary.AppendUvarint(b, uint64(i))
		b = appendPlayerSet(b, t.Players)
		b = append(b, 0xff)
		for _, w := range t.Bots {
			num(w)
		}
		b = append(b, 0xfe)
	}
	for _, n := range nb.OpenSlots {
		b = binary.AppendVarint(b, int64(n))
	}
	if r := nb.Bots; r != nil {
		num(r.MeanRating)
		b = binary.AppendVarint(b, int64(r.TargetPlayers))
		b = binary.AppendVarint(b, int64(r.RecommendedMin))
		b = binary.AppendVarint(b, int64(r.RecommendedMax))
	}
	b = binary.AppendVarint(b, int64(nb.TTL))
	if len(nb.Attributes) > 0 { // a request without attributes hashes as it did before them
		b = appendAttributes(b, nb.Attributes)
	}
	return sha256.Sum256(b)
}
