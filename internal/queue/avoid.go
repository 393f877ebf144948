package queue

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Avoid lists (DESIGN, "A player across queues, avoid lists, penalties"): a player may
// carry the ids of players he blocked (Player.Avoid); two players of which one avoids the
// other are never in one match, or with the queue's avoid scope team never on one team,
// until the avoiding ticket has waited the queue's avoid.optional_after_s. The pass keeps
// them apart (tick/internal/avoid), and a ticket it holds for them waits on "avoid".

// addAvoidFaults checks a new ticket's players' avoid lists: at most matchrules.MaxAvoid
// ids each, every id by the one id rule, none repeated, none a player of the party (a party
// plays in one match, on one team: it could never be matched).
func (nt *NewTicket) addAvoidFaults(f *apperr.Fields) {
	for i, p := range nt.Players {
		path := "players[" + strconv.Itoa(i) + "].avoid"
		if len(p.Avoid) > matchrules.MaxAvoid {
			f.Add(path, "must hold at most %d player ids", matchrules.MaxAvoid)
			continue
		}
		for j, id := range p.Avoid {
			field := path + "[" + strconv.Itoa(j) + "]"
			switch {
			case ratings.ValidateID(id) != nil:
				f.Add(field, "%s", ratings.ValidateID(id))
			case slices.ContainsFunc(nt.Players, func(x NewPlayer) bool { return x.ID == id }):
				f.Add(field, "must not name a player of the party: %q plays in its match", id)
			case slices.Contains(p.Avoid[:j], id):
				f.Add(field, "must not repeat an id: %q is listed before", id)
			}
		}
	}
}

// avoiding: some player of the tickets carries an avoid list.
func avoiding(waiting []Ticket) bool {
	return slices.ContainsFunc(waiting, func(t Ticket) bool {
		return slices.ContainsFunc(t.Players, func(p Player) bool { return len(p.Avoid) > 0 })
	})
}

// playerAvoids gives the pass a ticket's players' ids, appended to ids (which it returns:
// the pass's tickets share one array), and their avoid lists.
func playerAvoids(t Ticket, tt *matchpool.Ticket, ids []string) []string {
	for _, p := range t.Players {
		ids = append(ids, p.ID)
	}
	n := len(ids)
	tt.Players = ids[n-len(t.Players) : n : n]
	for j, p := range t.Players {
		if len(p.Avoid) > 0 {
			if tt.Avoid == nil {
				tt.Avoid = make([][]string, len(t.Players))
			}
			tt.Avoid[j] = p.Avoid
		}
	}
	return ids
}

// avoidBroken says whether a match of these teams of tickets holds two players of which
// one avoids the other (in the match, or with the queue's scope team on one team) while
// the avoiding ticket's lists bind it at now, as the pass keeps them: RejectAvoid and who,
// or "".
func avoidBroken(q *Queue, teams [][]*Ticket, now time.Time) (RejectReason, string) {
	for ta, team := range teams {
		for _, a := range team {
			if !slices.ContainsFunc(a.Players, func(p Player) bool { return len(p.Avoid) > 0 }) ||
				!q.Avoid.BindsAt(max(now.Sub(a.CreatedAt).Seconds(), 0)) {
				continue
			}
			for tb, other := range teams {
				if q.Avoid.Team() && tb != ta {
					continue
				}
				for _, b := range other {
					if a == b {
						continue
					}
					if who, whom, ok := avoids(a, b); ok {
						return RejectAvoid, fmt.Sprintf("player %q avoids %q", who, whom)
					}
				}
			}
		}
	}
	return "", ""
}

// avoids: a player of ticket a avoids one of ticket b (who, whom).
func avoids(a, b *Ticket) (who, whom string, ok bool) {
	for _, p := range a.Players {
		for _, id := range p.Avoid {
			if slices.ContainsFunc(b.Players, func(x Player) bool { return x.ID == id }) {
				return p.ID, id, true
			}
		}
	}
	return "", "", false
}
