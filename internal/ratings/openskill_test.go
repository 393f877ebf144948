package ratings

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// The fixture made by tools/openskill-fixture with the reference implementation, the npm
// package openskill.
type osFixture struct {
	Reference string
	Cases     []struct {
		Model  string
		Params struct{ Mu, Sigma, Beta, Tau, Kappa float64 }
		Teams  [2][]struct{ Mu, Sigma, W float64 }
		Winner *int
		After  [2][]struct{ Mu, Sigma float64 }
	}
	History []struct {
		Model   string
		Players int
		Matches []struct {
			Teams   [2][]int
			Weights [2][]float64
			Winner  *int
		}
		Final []struct{ Mu, Sigma float64 }
	}
}

func readOSFixture(t *testing.T) osFixture {
	t.Helper()
	b, err := os.ReadFile("testdata/openskill-fixture.json")
	if err != nil {
		t.Fatal(err)
	}
	var f osFixture
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return f
}

func closeTo(got, want float64) bool { return math.Abs(got-want) <= 1e-9*max(1, math.Abs(want)) }

// TestWengLinMatchesOpenSkill holds both Weng-Lin likelihoods to the reference on hundreds of
// random matches: uneven teams, draws, custom parameters and partial play.
func TestWengLinMatchesOpenSkill(t *testing.T) {
	t.Parallel()
	f := readOSFixture(t)
	if len(f.Cases) < 500 {
		t.Fatalf("%d cases in the fixture", len(f.Cases))
	}
	var partial, uneven, draws int
	for n, c := range f.Cases {
		m := WengLin{PlackettLuce: c.Model == "openskill-pl", Mu: c.Params.Mu, Sigma: c.Params.Sigma, Beta: c.Params.Beta,
			Tau: c.Params.Tau, Kappa: c.Params.Kappa}
		if m.Name() != c.Model {
			t.Fatalf("case %d: model %q", n, c.Model)
		}
		var teams [2][]wlPlayer
		for ti, team := range c.Teams {
			for _, p := range team {
				teams[ti] = append(teams[ti], wlPlayer{mu: p.Mu, sigma: p.Sigma, w: p.W})
				if p.W != 1 {
					partial++
				}
			}
		}
		m.rate(teams, c.Winner)
		for ti := range teams {
			for i, p := range teams[ti] {
				if want := c.After[ti][i]; !closeTo(p.mu, want.Mu) || !closeTo(p.sigma, want.Sigma) {
					t.Errorf("case %d (%s), team %d player %d: mu %.15g sigma %.15g, want %.15g %.15g",
						n, c.Model, ti, i, p.mu, p.sigma, want.Mu, want.Sigma)
				}
			}
		}
		if len(c.Teams[0]) != len(c.Teams[1]) {
			uneven++
		}
		if c.Winner == nil {
			draws++
		}
	}
	if partial < 100 || uneven < 300 || draws < 50 {
		t.Errorf("fixture coverage: %d partial players, %d uneven matches, %d draws", partial, uneven, draws)
	}
}

// TestWengLinHistoryMatchesOpenSkill replays the fixture's chained histories through Apply,
// as the service would: results in, ratings stored, the next result rated from them.
func TestWengLinHistoryMatchesOpenSkill(t *testing.T) {
	t.Parallel()
	for _, h := range readOSFixture(t).History {
		m := DefaultWengLin(h.Model == "openskill-pl")
		var st State
		for n, match := range h.Matches {
			r := Result{MatchID: "h", GameType: "g", Map: "m", DurationS: 100, Winner: match.Winner}
			for ti, ids := range match.Teams {
				team := Team{Side: []string{"a", "b"}[ti]}
				for i, id := range ids {
					// Present from the start for the share w of the seed's weighting:
					// 2^(-2 left/d) = 1 - 0.75 w.
					left := -math.Log2(1-0.75*match.Weights[ti][i]) / 2 * r.DurationS
					team.Players = append(team.Players, Player{ID: string(rune('A' + id)), LeftS: left})
				}
				r.Teams = append(r.Teams, team)
			}
			if _, err := st.Apply(m, r); err != nil {
				t.Fatalf("%s match %d: %v", h.Model, n, err)
			}
		}
		for id, want := range h.Final {
			got := st.Ratings[Participant{ID: string(rune('A' + id))}]
			mu, sigma := got.Skill+m.Mu, m.sigmaOf(got)
			// The weights went through a time and back: a few ulps more than the direct cases.
			if math.Abs(mu-want.Mu) > 1e-9*max(1, want.Mu) || math.Abs(sigma-want.Sigma) > 1e-9*max(1, want.Sigma) {
				t.Errorf("%s player %d: mu %.15g sigma %.15g, want %.15g %.15g", h.Model, id, mu, sigma, want.Mu, want.Sigma)
			}
		}
	}
}
