package teams

import (
	"math"
	"testing"
)

// Red 100 (humans 60 + a bot of 40) against Blue 110: Blue wins 110/210 of the time, and
// giving Red a 1.1 advantage over Blue evens them.
func TestAdvantageTwoTeams(t *testing.T) {
	r, err := Advantage([]Roster{
		{Players: []float64{60}, Bots: []float64{40}},
		{Players: []float64{70, 40}},
	})
	if err != nil {
		t.Fatal(err)
	}
	red, blue := r.Teams[0], r.Teams[1]
	if red.Total != 100 || blue.Total != 110 || r.Strongest != 1 {
		t.Fatalf("totals %v %v strongest %d", red.Total, blue.Total, r.Strongest)
	}
	if math.Abs(red.Handicap-1.1) > 1e-15 || blue.Handicap != 1 {
		t.Fatalf("handicaps %v %v, want 1.1 and 1", red.Handicap, blue.Handicap)
	}
	if math.Abs(blue.WinProbability-110.0/210) > 1e-15 || math.Abs(red.WinProbability+blue.WinProbability-1) > 1e-15 {
		t.Fatalf("probabilities %v %v", red.WinProbability, blue.WinProbability)
	}
	// The seed's balance r gives the weaker side r/(1+r).
	if math.Abs(red.WinProbability-r.Balance/(1+r.Balance)) > 1e-15 || r.Difference != 10 {
		t.Fatalf("balance %v difference %v", r.Balance, r.Difference)
	}
}

// With handicaps applied every team is as strong as the strongest, and the model then gives
// each the same chance.
func TestAdvantageHandicapsEvenAllTeams(t *testing.T) {
	r, err := Advantage([]Roster{{Players: []float64{30, 20}}, {Players: []float64{90}}, {Bots: []float64{45}}, {Players: []float64{80, 5}}})
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, team := range r.Teams {
		sum += team.WinProbability
		if even := team.Total * team.Handicap; math.Abs(even-90) > 1e-12 {
			t.Fatalf("%+v: total x handicap = %v, want 90", team, even)
		}
	}
	if math.Abs(sum-1) > 1e-15 || r.Strongest != 1 {
		t.Fatalf("probabilities sum to %v, strongest %d", sum, r.Strongest)
	}
}

// An empty team cannot be evened by any multiplier (handicap 0, probability 0); when every
// team is empty they are even.
func TestAdvantageZeroTotals(t *testing.T) {
	r, _ := Advantage([]Roster{{Players: []float64{50}}, {}})
	if r.Teams[1].Handicap != 0 || r.Teams[1].WinProbability != 0 || r.Teams[0].WinProbability != 1 || r.Balance != 0 {
		t.Fatalf("%+v", r)
	}
	r, _ = Advantage([]Roster{{}, {}, {}})
	for _, team := range r.Teams {
		if team.Handicap != 1 || math.Abs(team.WinProbability-1.0/3) > 1e-15 {
			t.Fatalf("%+v", r)
		}
	}
	if r.Balance != 1 {
		t.Fatalf("balance %v", r.Balance)
	}
}

func TestAdvantageValidation(t *testing.T) {
	tests := []struct {
		name   string
		teams  []Roster
		fields []string
	}{
		{"one team", []Roster{{}}, []string{"teams"}},
		{"five teams", make([]Roster, 5), []string{"teams"}},
		{"bad player", []Roster{{}, {Players: []float64{1, 2, math.NaN()}}}, []string{"teams[1].players[2]"}},
		{"bad bot", []Roster{{Bots: []float64{-0.5}}, {}}, []string{"teams[0].bots[0]"}},
		{"too many bots", []Roster{{Bots: make([]float64, MaxBots)}, {Bots: []float64{1}}}, []string{"teams"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Advantage(tt.teams)
			wantFields(t, err, tt.fields...)
		})
	}
}
