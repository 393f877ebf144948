package teams

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// seedExample is the seed's example input file, in its order (Boring John, Silly Billy,
// Slartibartfast, Chewbacca, Ignoramus, Riddick, Luke Skywalker, Darth Vader, Peter Griffin,
// Roger, Annoying Git, Cheat, Lame, Twonk, Foogilicious, Flunk Basket, Jack O'Neill).
var seedExample = []float64{5, 3, 2, 7, 23, 92, 93, 95, 27, 56, 28, 99, 1, 23, 83, 41, 49}

// seedBots is the seed program's set-up: mean bot 20, target 8, map for 6-12 players.
var seedBots = BotRule{MeanWeight: 20, TargetPlayers: 8, RecommendedMin: 6, RecommendedMax: 12}

// The seed's 17 players on its settings: the humans weigh 727 in all; the cap of 9 humans a
// team makes it 9 against 8, so the bot rule wants max(8, 9x2) = 18 players, 9 a team, and
// the 8-human team gets one bot of 20. 747 cannot split evenly; the best is 373 against 374.
func TestSplitSeedExample(t *testing.T) {
	seed := int64(7)
	r, err := Split(seedExample, SplitOptions{Teams: 2, Bots: &seedBots, Seed: &seed})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Exact || r.Objective != Ratio || r.Selection != SelectBest {
		t.Fatalf("exact %v objective %q selection %q, want exact ratio best", r.Exact, r.Objective, r.Selection)
	}
	if r.MaxHumans != 9 || r.MinPlayers != 18 {
		t.Fatalf("cap %d min players %d, want 9 and 18", r.MaxHumans, r.MinPlayers)
	}
	if want := 373.0 / 374.0; math.Abs(r.Balance-want) > 1e-15 || r.Difference != 1 {
		t.Fatalf("balance %.6f difference %v, want %.6f (0.99733) and 1", r.Balance, r.Difference, want)
	}
	totals := []float64{r.Teams[0].Total, r.Teams[1].Total}
	slices.Sort(totals)
	if totals[0] != 373 || totals[1] != 374 {
		t.Fatalf("totals %v, want 373 and 374", totals)
	}
	for _, team := range r.Teams {
		if len(team.Players)+team.Bots != 9 {
			t.Fatalf("team %v has %d players, want 9", team.Players, len(team.Players)+team.Bots)
		}
	}
	checkResult(t, seedExample, SplitOptions{Teams: 2, Bots: &seedBots}, r)
	if len(r.Candidates) != 5 {
		t.Fatalf("%d candidates, want the default 5", len(r.Candidates))
	}
	for i, c := range r.Candidates {
		t.Logf("candidate %d: balance %.5f teams %v+%d bots / %v+%d bots", i, c.Balance,
			c.Teams[0].Players, c.Teams[0].Bots, c.Teams[1].Players, c.Teams[1].Bots)
	}
}

// Without the cap the seed's "best" split puts 13 humans against 4 humans and 9 bots; with
// max_humans_per_team = 17 that is what comes out.
func TestSplitSeedExampleWithoutCap(t *testing.T) {
	r, err := Split(seedExample, SplitOptions{Teams: 2, Bots: &seedBots, MaxHumansPerTeam: 17})
	if err != nil {
		t.Fatal(err)
	}
	sizes := []int{len(r.Teams[0].Players), len(r.Teams[1].Players)}
	slices.Sort(sizes)
	if sizes[0] != 4 || sizes[1] != 13 || r.MinPlayers != 26 {
		t.Fatalf("human counts %v min players %d, want [4 13] and 26", sizes, r.MinPlayers)
	}
	if r.Balance <= 373.0/374.0 {
		t.Fatalf("balance %v should beat the capped 373/374", r.Balance)
	}
}

// Without bots the teams differ by at most one player and the default objective is the
// difference. 1..6 split into 10.5 each is impossible (21 is odd): 10 against 11.
func TestSplitWithoutBots(t *testing.T) {
	r, err := Split([]float64{1, 2, 3, 4, 5, 6}, SplitOptions{Teams: 2, Candidates: 20})
	if err != nil {
		t.Fatal(err)
	}
	if r.Objective != Difference || r.Difference != 1 || r.MinPlayers != 0 {
		t.Fatalf("objective %q difference %v min players %d", r.Objective, r.Difference, r.MinPlayers)
	}
	// C(6,3)/2 = 10 distinct 3-3 splits; all are kept when 20 are asked for.
	if len(r.Candidates) != 10 {
		t.Fatalf("%d candidates, want all 10 splits", len(r.Candidates))
	}
	if len(r.Teams[0].Players) != 3 || r.Teams[0].Players[0] != 0 {
		t.Fatalf("team 0 is %v, want 3 players starting with player 0", r.Teams[0].Players)
	}
}

// Three and four teams: 12 players of 1..12 (78 in all) split into 3 teams of 26 exactly,
// and into 4 teams of 19.5 at best 19/19/20/20.
func TestSplitThreeAndFourTeams(t *testing.T) {
	w := make([]float64, 12)
	for i := range w {
		w[i] = float64(i + 1)
	}
	r3, err := Split(w, SplitOptions{Teams: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !r3.Exact || r3.Difference != 0 || r3.Balance != 1 {
		t.Fatalf("3 teams: exact %v difference %v", r3.Exact, r3.Difference)
	}
	r4, err := Split(w, SplitOptions{Teams: 4})
	if err != nil {
		t.Fatal(err)
	}
	if !r4.Exact || r4.Difference != 1 {
		t.Fatalf("4 teams: exact %v difference %v", r4.Exact, r4.Difference)
	}
	for _, team := range r4.Teams {
		if len(team.Players) != 3 {
			t.Fatalf("4 teams of 12 must have 3 each: %v", r4.Teams)
		}
	}
}

// Teams without humans are possible with bots: one human on a 3-team server for 6 plays
// with one bot against two teams of two bots; teams of bots only come last.
func TestSplitTeamOfBotsOnly(t *testing.T) {
	r, err := Split([]float64{60}, SplitOptions{Teams: 3, Bots: &BotRule{MeanWeight: 60, TargetPlayers: 6, RecommendedMin: 2, RecommendedMax: 8}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Teams[0].Players) != 1 || r.Teams[0].Bots != 1 || r.Teams[1].Bots != 2 || r.Teams[2].Bots != 2 {
		t.Fatalf("teams %+v", r.Teams)
	}
	if r.Balance != 1 {
		t.Fatalf("60+60 against 60+60 twice: balance %v", r.Balance)
	}
}

// Weighted selection follows the seed's select_cand: reproducible with a seed, and over many
// seeds each candidate is picked about in proportion to its balance.
func TestSplitWeightedSelection(t *testing.T) {
	opt := SplitOptions{Teams: 2, Bots: &seedBots, Selection: SelectWeighted, Candidates: 3}
	seed := int64(42)
	opt.Seed = &seed
	a, err := Split(seedExample, opt)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Split(seedExample, opt)
	if a.Chosen != b.Chosen || a.Seed != 42 {
		t.Fatalf("same seed, chosen %d and %d (seed %d)", a.Chosen, b.Chosen, a.Seed)
	}
	// A gap of balance: candidates 1 and 0.5 and 0.25 (weights 1, 2, 4 and bots of 0).
	counts := make([]int, 3)
	w := []float64{1, 1, 2, 4}
	for s := range int64(4000) {
		r, err := Split(w, SplitOptions{Teams: 2, Selection: SelectWeighted, Seed: &s, Candidates: 3, Objective: Ratio})
		if err != nil {
			t.Fatal(err)
		}
		counts[r.Chosen]++
	}
	bal := []float64{}
	r, _ := Split(w, SplitOptions{Teams: 2, Candidates: 3, Objective: Ratio})
	sum := 0.0
	for _, c := range r.Candidates {
		bal = append(bal, c.Balance)
		sum += c.Balance
	}
	for i, n := range counts {
		want := 4000 * bal[i] / sum
		if math.Abs(float64(n)-want) > 5*math.Sqrt(want) {
			t.Fatalf("candidate %d (balance %v) picked %d times of 4000, want about %.0f", i, bal[i], n, want)
		}
	}
	// Without a seed, Split draws one and reports it, so the pick can be replayed.
	opt.Seed = nil
	c, _ := Split(seedExample, opt)
	opt.Seed = &c.Seed
	d, _ := Split(seedExample, opt)
	if c.Chosen != d.Chosen {
		t.Fatalf("replaying drawn seed %d: chosen %d then %d", c.Seed, c.Chosen, d.Chosen)
	}
}

// Every validation rule, each with the field it names.
func TestSplitValidation(t *testing.T) {
	ok := []float64{10, 20, 30, 40}
	bots := func(mean float64, target, lo, hi int) *BotRule {
		return &BotRule{MeanWeight: mean, TargetPlayers: target, RecommendedMin: lo, RecommendedMax: hi}
	}
	neg, big := int64(-1), int64(1)<<53
	tests := []struct {
		name    string
		weights []float64
		opt     SplitOptions
		fields  []string
	}{
		{"one team", ok, SplitOptions{Teams: 1}, []string{"teams"}},
		{"five teams", ok, SplitOptions{Teams: 5}, []string{"teams"}},
		{"teams missing", ok, SplitOptions{}, []string{"teams"}},
		{"no players", nil, SplitOptions{Teams: 2}, []string{"weights"}},
		{"too many players", make([]float64, MaxHumans+1), SplitOptions{Teams: 2}, []string{"weights"}},
		{"negative weight", []float64{1, -2, 3}, SplitOptions{Teams: 2}, []string{"weights[1]"}},
		{"NaN weight", []float64{math.NaN(), 2}, SplitOptions{Teams: 2}, []string{"weights[0]"}},
		{"infinite weight", []float64{1, 2, math.Inf(1)}, SplitOptions{Teams: 2}, []string{"weights[2]"}},
		{"huge weight", []float64{1, 2e9}, SplitOptions{Teams: 2}, []string{"weights[1]"}},
		{"negative bot weight", ok, SplitOptions{Teams: 2, Bots: bots(-1, 8, 6, 12)}, []string{"bots.mean_weight"}},
		{"NaN bot weight", ok, SplitOptions{Teams: 2, Bots: bots(math.NaN(), 8, 6, 12)}, []string{"bots.mean_weight"}},
		{"negative target", ok, SplitOptions{Teams: 2, Bots: bots(20, -1, 6, 12)}, []string{"bots.target_players"}},
		{"huge target", ok, SplitOptions{Teams: 2, Bots: bots(20, 5000, 6, 12)}, []string{"bots.target_players"}},
		{"recommended min > max", ok, SplitOptions{Teams: 2, Bots: bots(20, 8, 12, 6)}, []string{"bots.recommended.max"}},
		{"negative recommended min", ok, SplitOptions{Teams: 2, Bots: bots(20, 8, -1, 6)}, []string{"bots.recommended.min"}},
		{"huge recommended max", ok, SplitOptions{Teams: 2, Bots: bots(20, 8, 6, 2000)}, []string{"bots.recommended.max"}},
		{"negative cap", ok, SplitOptions{Teams: 2, MaxHumansPerTeam: -1}, []string{"max_humans_per_team"}},
		{"cap too small", ok, SplitOptions{Teams: 2, Bots: bots(20, 8, 6, 12), MaxHumansPerTeam: 1}, []string{"max_humans_per_team"}},
		{"candidates negative", ok, SplitOptions{Teams: 2, Candidates: -1}, []string{"candidates"}},
		{"candidates over 20", ok, SplitOptions{Teams: 2, Candidates: 21}, []string{"candidates"}},
		{"unknown selection", ok, SplitOptions{Teams: 2, Selection: "random"}, []string{"selection"}},
		{"unknown objective", ok, SplitOptions{Teams: 2, Objective: "sum"}, []string{"objective"}},
		{"negative seed", ok, SplitOptions{Teams: 2, Seed: &neg}, []string{"seed"}},
		{"seed over 2^53-1", ok, SplitOptions{Teams: 2, Seed: &big}, []string{"seed"}},
		{"every fault at once", []float64{-1, math.NaN()},
			SplitOptions{Teams: 9, Candidates: 99, Selection: "x", Objective: "y", Bots: bots(-1, -1, 3, 2)},
			[]string{"teams", "weights[0]", "weights[1]", "bots.mean_weight", "bots.target_players",
				"bots.recommended.max", "candidates", "selection", "objective"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Split(tt.weights, tt.opt)
			wantFields(t, err, tt.fields...)
		})
	}
}

// wantFields checks err is an Invalid apperr naming exactly these fields, in order.
func wantFields(t *testing.T, err error, fields ...string) {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.Invalid {
		t.Fatalf("err = %v, want an invalid apperr", err)
	}
	var got []string
	for _, f := range e.Fields {
		got = append(got, f.Field)
	}
	if !slices.Equal(got, fields) {
		t.Fatalf("fields %v, want %v (%v)", got, fields, err)
	}
}
