package ratings

import (
	"fmt"
	"testing"
)

// BenchmarkApply5v5 is one rating update in memory: validate a 5v5 result with two
// substitutes and commanders, predict, learn, against a prior of 200 ratings and a bias table.
func BenchmarkApply5v5(b *testing.B) {
	cfg := defaultLeague(5)
	cfg.warmup, cfg.scored = 400, 0
	ms := simulateLeague(cfg)
	m := DefaultModel()
	var st State
	for _, sm := range ms {
		if _, err := st.Apply(m, sm.r); err != nil {
			b.Fatal(err)
		}
	}
	r := Result{MatchID: "bench", GameType: "ns2", Mutators: []string{"nocheat"}, Map: "ns2_map3", DurationS: 1800, Winner: intp(0)}
	for ti, side := range []string{"marines", "aliens"} {
		t := Team{Side: side}
		for slot := range 5 {
			t.Players = append(t.Players, Player{ID: fmt.Sprintf("p%03d", ti*5+slot), LeftS: 1800})
		}
		t.Players[0].CommanderS = 1500
		t.Players[4].LeftS = 900
		t.Players = append(t.Players, Player{ID: fmt.Sprintf("p%03d", 100+ti), JoinedS: 900, LeftS: 1800})
		r.Teams = append(r.Teams, t)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Apply(st.Ratings, st.Bias, r); err != nil {
			b.Fatal(err)
		}
	}
}
