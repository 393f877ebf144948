package testqueue

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// WithAvoid gives every ordinary ticket's players ids ("t<ticket>p<player>") and half of
// the tickets avoid lists naming one to three players of the other tickets (now and then
// one no ticket has), in a queue of scope match or team, whose lists turn optional after
// the waits of its tickets in a third of the queues: a small queue where the lists bite.
func WithAvoid(rng *rand.Rand, tk []matchpool.Ticket, now float64, cfg matchrules.Config) ([]matchpool.Ticket, matchrules.Config) {
	cfg.Avoid = matchrules.Avoid{Scope: []string{"", matchrules.AvoidMatch, matchrules.AvoidTeam}[rng.IntN(3)]}
	if rng.IntN(3) == 0 {
		after := 1 + 30*rng.Float64()
		cfg.Avoid.OptionalAfterS = &after
	}
	for i := range tk {
		if tk[i].Backfill != nil {
			continue
		}
		tk[i].Players = make([]string, len(tk[i].Ratings))
		for j := range tk[i].Players {
			tk[i].Players[j] = fmt.Sprintf("t%dp%d", i, j)
		}
	}
	for i := range tk {
		if tk[i].Backfill != nil || rng.IntN(2) == 0 {
			continue
		}
		tk[i].Avoid = make([][]string, 1+rng.IntN(len(tk[i].Ratings)))
		for n := 1 + rng.IntN(3); n > 0; n-- {
			o := rng.IntN(len(tk))
			id := "nobody"
			if o != i && tk[o].Backfill == nil {
				id = fmt.Sprintf("t%dp%d", o, rng.IntN(len(tk[o].Ratings)))
			}
			p := rng.IntN(len(tk[i].Avoid))
			if !slices.Contains(tk[i].Avoid[p], id) {
				tk[i].Avoid[p] = append(tk[i].Avoid[p], id)
			}
		}
	}
	return tk, cfg
}
