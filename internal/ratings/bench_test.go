package ratings_test

import (
	"fmt"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// BenchmarkApply5v5 is one rating update in memory, per model: validate a 5v5 result with two
// substitutes and commanders, predict, learn, against a prior of 200 ratings and a bias table.
func BenchmarkApply5v5(b *testing.B) {
	cfg := league.Default(5)
	cfg.Matches = 400
	ms := league.Simulate(cfg)
	winner := 0
	r := ratings.Result{MatchID: "bench", GameType: "ns2", Mutators: []string{"nocheat"}, Map: "ns2_map3", DurationS: 1800, Winner: &winner}
	for ti, side := range []string{"marines", "aliens"} {
		t := ratings.Team{Side: side}
		for slot := range 5 {
			t.Players = append(t.Players, ratings.Player{ID: fmt.Sprintf("p%03d", ti*5+slot), LeftS: 1800})
		}
		t.Players[0].CommanderS = 1500
		t.Players[4].LeftS = 900
		t.Players = append(t.Players, ratings.Player{ID: fmt.Sprintf("p%03d", 100+ti), JoinedS: 900, LeftS: 1800})
		r.Teams = append(r.Teams, t)
	}
	for _, name := range ratings.ModelNames() {
		b.Run(name, func(b *testing.B) {
			// The state is built here, so that only this model's is alive while it is timed.
			m, err := ratings.ModelByName(name)
			if err != nil {
				b.Fatal(err)
			}
			var st ratings.State
			for _, sm := range ms {
				if _, err := st.Apply(m, sm.Result); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Apply(st.Ratings, st.Bias, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkTune1v1 is one self-tuning search of the default model over the history the soak
// leaves (2,000 1v1 results of 200 players), the first a replica runs (MATCHMAKER_AUTO_TUNE).
func BenchmarkTune1v1(b *testing.B) {
	cfg := league.Default(1)
	cfg.Matches, cfg.TeamSize = 2000, 1
	history := league.Results(league.Simulate(cfg))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ratings.Tune(ratings.DefaultKalman(), history); err != nil {
			b.Fatal(err)
		}
	}
}
