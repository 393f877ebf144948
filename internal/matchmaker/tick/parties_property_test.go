package tick

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Random small queues with many parties, with and without rules: every match's teams are
// at least as even as those of the tickets the pass chose before it looked ahead (the
// brute force of the plain choice, at the moment the match's anchor was served, among the
// tickets still waiting then) when that choice keeps the balance, every match keeps the balance and every rule, nobody is
// matched twice, and the oldest ticket waits only when no match within the balance and the
// rules exists (checkResult).
func TestPartiesChosenForTheirTeamsAreNeverLessEven(t *testing.T) {
	t.Parallel()
	cases := 20000
	if testing.Short() {
		cases = 2000
	}
	evener, matched := 0, 0
	for seed := range uint64(cases) {
		rng := rand.New(rand.NewPCG(seed, 0x9a27))
		tk, now, cfg := testqueue.Random(rng, 11)
		cfg.TeamSize = max(cfg.TeamSize, 2)
		withParties(rng, tk, cfg.TeamSize)
		if rng.IntN(3) == 0 {
			tk, cfg = testqueue.WithRules(rng, tk, cfg)
		}
		res, err := Run(tk, now, cfg)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, describe(tk, now, cfg))
		}
		if err := checkResult(tk, now, cfg, res); err != nil {
			t.Fatalf("seed %d: %v\n%s%+v", seed, err, describe(tk, now, cfg), res)
		}
		plain, w := newWorld(tk, now, cfg), newWorld(tk, now, cfg)
		plain.plain = true
		free := map[int]bool{}
		for _, i := range plain.live {
			free[i] = true
		}
		for _, m := range res.Matches {
			var waiting []int
			for _, i := range plain.live {
				if free[i] {
					waiting = append(waiting, i)
				}
			}
			matched++
			greedy := plain.refWindow(m.Tickets[0], waiting)
			// (A plain choice that breaks the balance is no match now: the pass may choose one
			// of solo players instead, less even but not bound.)
			if greedy != nil && cfg.Strategy == matchrules.RatingWindow && !w.balanceBroken(greedy) {
				got, was := plain.bestSplit(m.Tickets), plain.bestSplit(greedy)
				if got > was+1e-9*(1+sumAbs(plain, m.Tickets)+sumAbs(plain, greedy)) {
					t.Fatalf("seed %d: match %v splits at best by %g, the plain choice %v by %g\n%s",
						seed, m.Tickets, got, greedy, was, describe(tk, now, cfg))
				}
				if !slices.Equal(greedy, m.Tickets) {
					evener++
				}
			}
			for _, i := range m.Tickets {
				free[i] = false
			}
		}
	}
	if evener < cases/100 || matched < cases/5 {
		t.Fatalf("%d matches, %d of them chosen otherwise than plainly, in %d cases: the test hardly tests", matched, evener, cases)
	}
	t.Logf("%d matches, %d of them chosen otherwise than plainly, in %d cases", matched, evener, cases)
}

// withParties makes half the tickets parties of 2..teamSize players rated near the ticket's
// first (a backfill ticket stays as it is).
func withParties(rng *rand.Rand, tk []matchpool.Ticket, teamSize int) {
	for i := range tk {
		x := &tk[i]
		if x.Backfill != nil || len(x.Ratings) == 0 || rng.IntN(2) == 0 {
			continue
		}
		for len(x.Ratings) < 2+rng.IntN(teamSize-1) {
			x.Ratings = append(x.Ratings, x.Ratings[0]+math.Round(20*rng.NormFloat64()))
		}
	}
}
