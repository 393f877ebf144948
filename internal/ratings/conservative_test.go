package ratings_test

import (
	"cmp"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// TestConservativeK measures what the conservative leaderboard's k buys (RATINGS_TUNE=1;
// RATINGS_DATA=atp-doubles.csv adds real data). Each history is learnt up to 60% by the
// default model; the players who play again afterwards are ranked by skill - k sigma, and
// the board's top 20 are scored by how their teams do in the rest of the history (the share
// of their matches won, a draw half): a board that puts players who keep winning on top
// scores higher. It also reports how many games the top 20 had played when ranked.
func TestConservativeK(t *testing.T) {
	if os.Getenv("RATINGS_TUNE") == "" {
		t.Skip("set RATINGS_TUNE=1 to measure the conservative leaderboard's k")
	}
	ks := []float64{0, 1, 2, 3, 4}
	var b strings.Builder
	fmt.Fprintf(&b, "%-14s", "history")
	for _, k := range ks {
		fmt.Fprintf(&b, "  k=%g: wins games", k)
	}
	b.WriteString("\n")
	for _, set := range tuneSets(t) {
		h := set.rp.Results()
		cut := len(h) * 6 / 10
		m := ratings.DefaultModel()
		st, err := ratings.Replay(m, h[:cut])
		if err != nil {
			t.Fatal(err)
		}
		type tally struct{ won, played float64 }
		future := map[string]*tally{}
		for _, r := range h[cut:] {
			for ti, team := range r.Teams {
				g := r.Score()
				if ti == 1 {
					g = 1 - g
				}
				for _, p := range team.Players {
					if p.ID == "" {
						continue
					}
					f := future[p.ID]
					if f == nil {
						f = &tally{}
						future[p.ID] = f
					}
					f.won += g
					f.played++
				}
			}
		}
		var eligible []ratings.RatedParticipant
		for p, rt := range st.Ratings {
			if f := future[p.ID]; !p.Bot && f != nil && f.played >= 3 {
				eligible = append(eligible, ratings.RatedParticipant{Participant: p, Rating: rt})
			}
		}
		fmt.Fprintf(&b, "%-14s", set.name)
		for _, k := range ks {
			by := ratings.Ranking{K: k, PriorSigma: m.PriorSigma()}
			slices.SortFunc(eligible, func(x, y ratings.RatedParticipant) int {
				return cmp.Or(cmp.Compare(by.Score(y.Rating), by.Score(x.Rating)), strings.Compare(x.Participant.ID, y.Participant.ID))
			})
			var won, played, games float64
			top := eligible[:min(20, len(eligible))]
			for _, e := range top {
				f := future[e.Participant.ID]
				won, played, games = won+f.won, played+f.played, games+float64(e.Rating.Games)
			}
			fmt.Fprintf(&b, "  %10.3f %5.0f", won/played, games/float64(len(top)))
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())
}
