package teams

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The NS2 post's case: teams already playing, 200 against 120. Swapping the 90 of team 0
// with the 50 of team 1 evens them (160/160) in one swap; nobody else moves.
func TestRebalanceOneSwapEvensTheTeams(t *testing.T) {
	teams := []Roster{{Players: []float64{100, 90, 10}}, {Players: []float64{50, 40, 30}}}
	r, err := Rebalance(teams, nil, RebalanceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Before.Difference != 80 || r.After.Difference != 0 || r.Swaps != 1 || len(r.Moves) != 1 {
		t.Fatalf("before %v after %v swaps %d", r.Before.Difference, r.After.Difference, r.Swaps)
	}
	m := r.Moves[0]
	if m.Kind != Swap || m.Player != (PlayerRef{0, 1}) || m.Other != (PlayerRef{1, 0}) || m.From != 0 || m.To != 1 {
		t.Fatalf("move %+v, want teams[0].players[1] <-> teams[1].players[0]", m)
	}
	want := [][]PlayerRef{{{0, 0}, {1, 0}, {0, 2}}, {{0, 1}, {1, 1}, {1, 2}}}
	for j := range want {
		slices.SortFunc(r.Teams[j], cmpPlayer)
		slices.SortFunc(want[j], cmpPlayer)
		if !slices.Equal(r.Teams[j], want[j]) {
			t.Fatalf("team %d is %v, want %v", j, r.Teams[j], want[j])
		}
	}
}

func cmpPlayer(a, b PlayerRef) int {
	if a.Team != b.Team {
		return a.Team - b.Team
	}
	return a.Index - b.Index
}

// Unplaced players first, then swaps. Team 0 has 60+50, team 1 has 40; two players of 30
// and 20 wait. Counts level to 2 and 3 either way; the best placement sends both to team 1
// (110 against 90), then swapping the 50 with the 40 makes it 100/100.
func TestRebalancePlacesThenSwaps(t *testing.T) {
	teams := []Roster{{Players: []float64{60, 50}}, {Players: []float64{40}}}
	r, err := Rebalance(teams, []float64{30, 20}, RebalanceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	kinds := []MoveKind{}
	for _, m := range r.Moves {
		kinds = append(kinds, m.Kind)
	}
	if !slices.Equal(kinds, []MoveKind{Place, Place, Swap}) {
		t.Fatalf("moves %v", kinds)
	}
	if r.Moves[0].To != 1 || r.Moves[1].To != 1 || !r.PlacementExact {
		t.Fatalf("placed on %d and %d (exact %v), want both on team 1", r.Moves[0].To, r.Moves[1].To, r.PlacementExact)
	}
	if r.Before.Difference != 70 || r.Placed.Difference != 20 || r.After.Difference != 0 {
		t.Fatalf("differences %v -> %v -> %v, want 70 -> 20 -> 0", r.Before.Difference, r.Placed.Difference, r.After.Difference)
	}
	// max_swaps 0: place only.
	zero := 0
	r, _ = Rebalance(teams, []float64{30, 20}, RebalanceOptions{MaxSwaps: &zero})
	if r.Swaps != 0 || len(r.Moves) != 2 || r.After.Difference != 20 {
		t.Fatalf("max_swaps 0: %d swaps, after %v", r.Swaps, r.After.Difference)
	}
}

// Three teams: the imbalance is max - min, and swaps between any two teams count.
func TestRebalanceThreeTeams(t *testing.T) {
	teams := []Roster{
		{Players: []float64{90, 80}},
		{Players: []float64{50, 40}},
		{Players: []float64{60, 30}, Bots: []float64{20}},
	}
	r, err := Rebalance(teams, nil, RebalanceOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("totals %v -> %v in %d swaps", r.Before.Totals, r.After.Totals, r.Swaps)
	if r.Before.Difference != 80 || r.After.Difference >= 20 {
		t.Fatalf("difference %v -> %v", r.Before.Difference, r.After.Difference)
	}
	checkRebalance(t, teams, nil, r, -1)
}

// checkRebalance checks that the moves replay to the final teams and totals, that each
// swap strictly helps, and, when the swaps stopped on their own, that no swap would help.
func checkRebalance(t *testing.T, teams []Roster, unplaced []float64, r RebalanceResult, maxSwaps int) {
	t.Helper()
	weight := func(p PlayerRef) float64 {
		if p.Team < 0 {
			return unplaced[p.Index]
		}
		return teams[p.Team].Players[p.Index]
	}
	totals := make([]float64, len(teams))
	for j, tm := range teams {
		for _, w := range tm.Bots {
			totals[j] += w
		}
	}
	seen := map[PlayerRef]bool{}
	for j, members := range r.Teams {
		for _, p := range members {
			if seen[p] {
				t.Fatalf("%v twice", p)
			}
			seen[p] = true
			totals[j] += weight(p)
		}
	}
	n := len(unplaced)
	for _, tm := range teams {
		n += len(tm.Players)
	}
	if len(seen) != n {
		t.Fatalf("%d players in the final teams, want %d", len(seen), n)
	}
	for j := range totals {
		if math.Abs(totals[j]-r.After.Totals[j]) > 1e-9*(1+totals[j]) {
			t.Fatalf("team %d totals %v, reported %v", j, totals[j], r.After.Totals[j])
		}
	}
	prev := r.Placed.Difference
	swaps := 0
	for _, m := range r.Moves {
		if m.Kind != Swap {
			continue
		}
		swaps++
		if m.Difference >= prev {
			t.Fatalf("swap %d: difference %v after %v", swaps, m.Difference, prev)
		}
		if math.Abs(weight(m.Player)-weight(m.Other)) == 0 {
			t.Fatalf("swap %d swaps equal weights", swaps)
		}
		prev = m.Difference
	}
	if swaps != r.Swaps || maxSwaps >= 0 && swaps > maxSwaps {
		t.Fatalf("%d swaps, reported %d, limit %d", swaps, r.Swaps, maxSwaps)
	}
	if maxSwaps >= 0 && swaps == maxSwaps {
		return
	}
	// no swap would help
	var all []PlayerRef
	team := map[PlayerRef]int{}
	for j, members := range r.Teams {
		for _, p := range members {
			all = append(all, p)
			team[p] = j
		}
	}
	for a := range all {
		for b := range all {
			ta, tb := team[all[a]], team[all[b]]
			if ta >= tb {
				continue
			}
			d := weight(all[b]) - weight(all[a])
			after := slices.Clone(r.After.Totals)
			after[ta] += d
			after[tb] -= d
			if _, diff := Balance(after); diff < r.After.Difference-1e-9*(1+r.After.Difference) {
				t.Fatalf("swapping %v and %v would give %v < %v", all[a], all[b], diff, r.After.Difference)
			}
		}
	}
}

// bestPlacement is the reference: every way to place the unplaced with head counts as
// even as possible (the smallest max - min of the final counts), the best max - min total.
func bestPlacement(teams []Roster, unplaced []float64) float64 {
	t, u := len(teams), len(unplaced)
	assign := make([]int, u)
	bestSpread, best := math.MaxInt, math.Inf(1)
	var rec func(i int)
	rec = func(i int) {
		if i == u {
			counts := make([]int, t)
			totals := make([]float64, t)
			for j, tm := range teams {
				counts[j] = len(tm.Players)
				totals[j] = tm.Total()
			}
			for k, j := range assign {
				counts[j]++
				totals[j] += unplaced[k]
			}
			spread := slices.Max(counts) - slices.Min(counts)
			_, diff := Balance(totals)
			if spread < bestSpread || spread == bestSpread && diff < best {
				bestSpread, best = spread, diff
			}
			return
		}
		for j := range t {
			assign[i] = j
			rec(i + 1)
		}
	}
	rec(0)
	return best
}

// Random teams with random unplaced players: the placement matches brute force, the moves
// replay, every swap helps and the last state is a swap optimum.
func TestRebalanceRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 9))
	instances := 600
	if testing.Short() {
		instances = 100
	}
	for it := range instances {
		nt := 2 + rng.IntN(3)
		teams := make([]Roster, nt)
		for j := range teams {
			teams[j].Players = randomWeights(rng, rng.IntN(5))
			if rng.IntN(3) == 0 {
				teams[j].Bots = randomWeights(rng, 1+rng.IntN(2))
			}
		}
		unplaced := randomWeights(rng, rng.IntN(map[int]int{2: 9, 3: 7, 4: 6}[nt]))
		maxSwaps := -1
		var opt RebalanceOptions
		if rng.IntN(3) == 0 {
			maxSwaps = rng.IntN(3)
			opt.MaxSwaps = &maxSwaps
		}
		name := fmt.Sprintf("instance %d: teams %v unplaced %v max %d", it, teams, unplaced, maxSwaps)
		r, err := Rebalance(teams, unplaced, opt)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(unplaced) > 0 {
			if want := bestPlacement(teams, unplaced); math.Abs(r.Placed.Difference-want) > 1e-9*(1+want) || !r.PlacementExact {
				t.Fatalf("%s: placed difference %v (exact %v), brute force %v", name, r.Placed.Difference, r.PlacementExact, want)
			}
		}
		checkRebalance(t, teams, unplaced, r, maxSwaps)
	}
}

func TestRebalanceValidation(t *testing.T) {
	ok := []Roster{{Players: []float64{1}}, {Players: []float64{2}}}
	neg := -1
	tests := []struct {
		name     string
		teams    []Roster
		unplaced []float64
		opt      RebalanceOptions
		fields   []string
	}{
		{"one team", ok[:1], nil, RebalanceOptions{}, []string{"teams"}},
		{"no teams", nil, nil, RebalanceOptions{}, []string{"teams"}},
		{"bad player", []Roster{{Players: []float64{-1}}, {}}, nil, RebalanceOptions{}, []string{"teams[0].players[0]"}},
		{"bad bot", []Roster{{}, {Bots: []float64{1, math.NaN()}}}, nil, RebalanceOptions{}, []string{"teams[1].bots[1]"}},
		{"bad unplaced", ok, []float64{3, math.Inf(-1)}, RebalanceOptions{}, []string{"unplaced[1]"}},
		{"negative max_swaps", ok, nil, RebalanceOptions{MaxSwaps: &neg}, []string{"max_swaps"}},
		{"too many humans", ok, make([]float64, MaxHumans-1), RebalanceOptions{}, []string{"teams"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Rebalance(tt.teams, tt.unplaced, tt.opt)
			wantFields(t, err, tt.fields...)
		})
	}
}
