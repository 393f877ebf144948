package teams

import (
	"math"
	"slices"
	"testing"
)

// A joiner who displaces a strong bot. Red is one human of 50 with two bots of 80 (210),
// Blue two humans of 60 with a bot of 40 (160); the server wants 3 a team. Joining the
// weaker Blue looks right, but Blue then has 3 humans and its bot leaves: 160+30-40 = 150
// against 210. Joining Red sends one of Red's bots away (which one is not known: the mean of
// Red's bots, 80): 210+30-80 = 160 against 160. The joiner goes to the stronger team.
func TestAssignCountsTheBotItDisplaces(t *testing.T) {
	teams := []Roster{
		{Players: []float64{50}, Bots: []float64{80, 80}},
		{Players: []float64{60, 60}, Bots: []float64{40}},
	}
	rule := &BotRule{MeanWeight: 45, TargetPlayers: 6, RecommendedMin: 6, RecommendedMax: 6}
	r, err := Assign(teams, 30, AssignOptions{Bots: rule, Objective: Difference})
	if err != nil {
		t.Fatal(err)
	}
	if r.Team != 0 || !slices.Equal(r.Totals, []float64{160, 160}) || r.Difference != 0 {
		t.Fatalf("joined %d with totals %v, want Red at 160/160", r.Team, r.Totals)
	}
	if !slices.Equal(r.BotChange, []int{-1, 0}) {
		t.Fatalf("bot change %v, want Red loses one", r.BotChange)
	}
	blue := r.Choices[1]
	if !slices.Equal(blue.Totals, []float64{210, 150}) || !slices.Equal(blue.BotChange, []int{0, -1}) {
		t.Fatalf("Blue would give %v with bots %v, want [210 150] and [0 -1]", blue.Totals, blue.BotChange)
	}
	if !slices.Equal(r.Before, []float64{210, 160}) {
		t.Fatalf("before %v", r.Before)
	}
}

// A joiner who makes his team the largest brings bots to the others, of unknown identity,
// so of the mean bot weight. Red 50+50, Blue 40+40, the server wants 2 a team: either way
// the joiner's team has 3, every team needs 3 and the other team gains a bot of 45.
// Red: 170 vs 125; Blue: 150 vs 145. He joins Blue.
func TestAssignCountsTheBotItAdds(t *testing.T) {
	teams := []Roster{{Players: []float64{50, 50}}, {Players: []float64{40, 40}}}
	rule := &BotRule{MeanWeight: 45, TargetPlayers: 4, RecommendedMin: 2, RecommendedMax: 4}
	r, err := Assign(teams, 70, AssignOptions{Bots: rule})
	if err != nil {
		t.Fatal(err)
	}
	if r.Objective != Ratio {
		t.Fatalf("objective %q, want ratio (bots, all weights positive)", r.Objective)
	}
	if r.Team != 1 || !slices.Equal(r.Totals, []float64{145, 150}) || !slices.Equal(r.BotChange, []int{1, 0}) {
		t.Fatalf("joined %d totals %v bots %v, want Blue, [145 150], [1 0]", r.Team, r.Totals, r.BotChange)
	}
	if math.Abs(r.Balance-145.0/150) > 1e-15 {
		t.Fatalf("balance %v", r.Balance)
	}
}

// Without bots the joiner goes to a team with the fewest humans, even when the other team
// would balance better: teams differ by at most one player, as in a split. Red is one
// strong player of 100, Blue two of 20: the joiner of 60 would even them on Blue (100/100)
// but goes to Red (160/40).
func TestAssignWithoutBotsKeepsSizesEven(t *testing.T) {
	teams := []Roster{{Players: []float64{100}}, {Players: []float64{20, 20}}}
	r, err := Assign(teams, 60, AssignOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Team != 0 || r.Choices[1].Allowed || r.MaxHumans != 0 || r.Difference != 120 {
		t.Fatalf("joined %d (Blue allowed %v) difference %v", r.Team, r.Choices[1].Allowed, r.Difference)
	}
	if r.Choices[1].Difference != 0 {
		t.Fatalf("Blue would give difference %v, want 0", r.Choices[1].Difference)
	}
	// Among equally small teams the weights decide: Red 10 and Blue 90 with one human each.
	teams = []Roster{{Players: []float64{10}}, {Players: []float64{90}}}
	r, _ = Assign(teams, 100, AssignOptions{})
	if r.Team != 0 || r.Difference != 20 {
		t.Fatalf("joined %d difference %v, want Red and 20", r.Team, r.Difference)
	}
}

// With bots the cap holds: Red has 3 humans and the cap is 3, so the joiner cannot go there
// however much Red would need him.
func TestAssignRespectsTheCap(t *testing.T) {
	teams := []Roster{{Players: []float64{1, 1, 1}}, {Players: []float64{90}, Bots: []float64{50, 50}}}
	rule := &BotRule{MeanWeight: 50, TargetPlayers: 6, RecommendedMin: 2, RecommendedMax: 8}
	r, err := Assign(teams, 100, AssignOptions{Bots: rule, MaxHumansPerTeam: 3})
	if err != nil {
		t.Fatal(err)
	}
	if r.Team != 1 || r.Choices[0].Allowed {
		t.Fatalf("joined %d, Red allowed %v", r.Team, r.Choices[0].Allowed)
	}
}

func TestAssignValidation(t *testing.T) {
	ok := []Roster{{Players: []float64{1}}, {Players: []float64{2}}}
	tests := []struct {
		name   string
		teams  []Roster
		joiner float64
		opt    AssignOptions
		fields []string
	}{
		{"one team", ok[:1], 1, AssignOptions{}, []string{"teams"}},
		{"five teams", []Roster{{}, {}, {}, {}, {}}, 1, AssignOptions{}, []string{"teams"}},
		{"bad player", []Roster{{Players: []float64{1}}, {Players: []float64{2, math.NaN()}}}, 1, AssignOptions{}, []string{"teams[1].players[1]"}},
		{"bad bot", []Roster{{Bots: []float64{-3}}, {}}, 1, AssignOptions{}, []string{"teams[0].bots[0]"}},
		{"bad joiner", ok, math.Inf(1), AssignOptions{}, []string{"joiner"}},
		{"negative joiner", ok, -1, AssignOptions{}, []string{"joiner"}},
		{"bad rule", ok, 1, AssignOptions{Bots: &BotRule{MeanWeight: 1, RecommendedMin: 5, RecommendedMax: 4}}, []string{"bots.recommended.max"}},
		{"cap too small", ok, 1, AssignOptions{MaxHumansPerTeam: 1}, []string{"max_humans_per_team"}},
		{"negative cap", ok, 1, AssignOptions{MaxHumansPerTeam: -2}, []string{"max_humans_per_team"}},
		{"objective", ok, 1, AssignOptions{Objective: "best"}, []string{"objective"}},
		{"too many humans", []Roster{{Players: make([]float64, 200)}, {Players: make([]float64, 56)}}, 1, AssignOptions{}, []string{"teams"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Assign(tt.teams, tt.joiner, tt.opt)
			wantFields(t, err, tt.fields...)
		})
	}
}

// A party joins one team as one joiner of its total weight and head count: with bots, a
// party of two displaces two of Red's bots (Red 50 + bots 80, 80, 80; Blue 60, 60, 60 + bot
// 40; 4 a team): on Red, 290+60-160 = 190 against 220; on Blue it would make Blue 5 humans,
// over the cap of 4, so Red it is.
func TestAssignPlacesAPartyAsOne(t *testing.T) {
	teams := []Roster{
		{Players: []float64{50}, Bots: []float64{80, 80, 80}},
		{Players: []float64{60, 60, 60}, Bots: []float64{40}},
	}
	rule := &BotRule{MeanWeight: 45, TargetPlayers: 8, RecommendedMin: 8, RecommendedMax: 8}
	r, err := Assign(teams, 60, AssignOptions{Bots: rule, Humans: 2, MaxHumansPerTeam: 4, Objective: Difference})
	if err != nil {
		t.Fatal(err)
	}
	if r.Team != 0 || !slices.Equal(r.BotChange, []int{-2, 0}) || !slices.Equal(r.Totals, []float64{190, 220}) {
		t.Fatalf("joined %d bots %v totals %v, want Red, [-2 0], [190 220]", r.Team, r.BotChange, r.Totals)
	}
	if r.Choices[1].Allowed {
		t.Fatal("Blue would hold 5 humans over the cap of 4")
	}
}

// A closed team takes no joiner but counts in the balance, and without bots the fewest
// humans are counted among the open teams; with every team closed there is no answer.
func TestAssignSkipsClosedTeams(t *testing.T) {
	teams := []Roster{{Players: []float64{100}}, {Players: []float64{20, 20}}}
	r, err := Assign(teams, 60, AssignOptions{Closed: []bool{true, false}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Team != 1 || r.Choices[0].Allowed || !slices.Equal(r.Totals, []float64{100, 100}) {
		t.Fatalf("joined %d totals %v choices %+v, want Blue at 100/100", r.Team, r.Totals, r.Choices)
	}
	if _, err := Assign(teams, 60, AssignOptions{Closed: []bool{true, true}}); err == nil {
		t.Fatal("every team closed: want an error")
	}
}
