package ratings

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// solveLeague is a small history: six players in 3v3, some joining late; a team's strength is
// the sum of its players' letters (a = 0, b = 1, ...) and it wins with the logistic of half
// the difference.
func solveLeague(n int) []Result {
	var out []Result
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range n {
		var teams [2]Team
		perm := rng.Perm(6)
		for s := range 6 {
			p := perm[s]
			pl := Player{ID: string(rune('a' + p)), LeftS: 1200}
			if (i+s)%7 == 0 {
				pl.JoinedS = 300
			}
			teams[s%2].Players = append(teams[s%2].Players, pl)
		}
		teams[0].Side, teams[1].Side = "marines", "aliens"
		var strength [2]float64
		for t := range 2 {
			for _, p := range teams[t].Players {
				strength[t] += float64(p.ID[0] - 'a')
			}
		}
		w := 1
		if rng.Float64() < sigmoid((strength[0]-strength[1])/2) {
			w = 0
		}
		out = append(out, Result{MatchID: fmt.Sprintf("m%d", i), GameType: "ns2", Map: "tram", DurationS: 1200, Teams: teams[:], Winner: &w})
	}
	return out
}

// The solve ends where the log posterior's gradient is zero for every skill, and ranks the
// players as their strength.
func TestSolveReachesTheMaximum(t *testing.T) {
	h := solveLeague(1000)
	var st State
	for _, r := range h {
		if _, err := st.Apply(DefaultKalman(), r); err != nil {
			t.Fatal(err)
		}
	}
	prior := DefaultSolvePrior
	s, err := newSolver(h, st.Bias, prior)
	if err != nil {
		t.Fatal(err)
	}
	u, _, sweeps := s.solve()
	if sweeps > 500 {
		t.Fatalf("no convergence in %d sweeps", sweeps)
	}
	mean := prior.K * prior.Theta
	for i := range u {
		grad := (prior.K-1)/u[i] - 1/prior.Theta
		for _, j := range s.byGame[i] {
			g := s.games[j]
			x := g.base
			for k, id := range g.who {
				x += g.coef[k] * (u[id] - mean)
			}
			grad += coefOf(&g, int32(i)) * (g.g - sigmoid(x))
		}
		if math.Abs(grad) > 1e-5 {
			t.Errorf("%s: gradient %g at the solution", s.players[i], grad)
		}
	}
	solved, _, err := Solve(h, st.Bias, prior)
	if err != nil {
		t.Fatal(err)
	}
	for p := 'a'; p < 'f'; p++ {
		lo, hi := solved[Participant{ID: string(p)}], solved[Participant{ID: string(p + 1)}]
		if !(lo.Skill < hi.Skill) || lo.Games == 0 || !(lo.Sigma > 0 && lo.Sigma < 2) {
			t.Errorf("%c %+v, %c %+v: want the stronger higher, with an uncertainty under the prior's", p, lo, p+1, hi)
		}
	}
	if _, _, err := Solve(h, st.Bias, SolvePrior{K: 0.5, Theta: 1}); err == nil {
		t.Error("a prior with K < 1 (no mode) was accepted")
	}
}
