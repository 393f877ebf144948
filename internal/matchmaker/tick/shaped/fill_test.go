package shaped

import (
	"math"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// A party that no team can hold with its composition (two dps where every team of two
// needs a tank) passes the compositions summed, and a walk that took it tried and failed
// a split with every candidate after it; beyond the candidates the exhaustive search
// takes, the oldest ticket then waited although its match was there. The fill states
// refuse the party.
func TestShapedWalkRefusesAPartyNoTeamCanSeat(t *testing.T) {
	t.Parallel()
	comp := map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}
	cfg := matchrules.Config{TeamSize: 2, Interval: []matchrules.Step{{AfterS: 0, Value: 1000}}, Roles: []string{"tank", "dps"},
		Shape: []matchrules.TeamDef{{Size: 2, Composition: comp}, {Size: 2, Composition: comp}}}
	tk := []matchpool.Ticket{
		{Ratings: []float64{100}, Roles: [][]string{{"tank"}}},
		{Ratings: []float64{101, 101}, Roles: [][]string{{"dps"}, {"dps"}}}, // nearest the anchor
	}
	for i := range 2 * fallbackCandidates {
		role := []string{"tank"}
		if i%2 == 1 {
			role = []string{"dps"}
		}
		tk = append(tk, matchpool.Ticket{Ratings: []float64{102 + float64(i)}, Roles: [][]string{role}})
	}
	for i := range tk {
		tk[i].WaitingSince, tk[i].ExpiresAt = float64(i), math.Inf(1)
	}
	res, err := Run(tk, 100, &cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Matches) == 0 || res.Matches[0].Tickets[0] != 0 {
		t.Fatalf("matches %+v, waiting %+v: want the oldest ticket's match first", res.Matches, res.Waiting)
	}
	for _, m := range res.Matches {
		if slices.Contains(m.Tickets, 1) {
			t.Fatalf("match %+v holds the party of two dps", m)
		}
	}
	for _, m := range res.Matches { // every team of two with its one tank
		for _, team := range m.Shaped {
			if len(team.Players) != 2 || len(slices.DeleteFunc(slices.Clone(team.Roles), func(r string) bool { return r != "tank" })) != 1 {
				t.Fatalf("match %+v: team %+v breaks the composition", m.Tickets, team)
			}
		}
	}
}

// The role benchmark's shape keeps its states (324: each team's tank 0..1, healers and dps
// 0..2); a shape of 30 teams would need 4^30 and keeps the summed check.
func TestFillSpaceSize(t *testing.T) {
	t.Parallel()
	_, _, cfg := testqueue.BenchRoles(1, 1)
	in := newShapeInfo(&cfg)
	if fs := newFillSpace(&cfg, &in); fs == nil || fs.states != 324 {
		t.Fatalf("fill space %+v, want 324 states", fs)
	}
	comp := map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}
	cfg.Shape = testqueue.Symmetric(30, 3)
	for k := range cfg.Shape {
		cfg.Shape[k].Composition = comp
	}
	in = newShapeInfo(&cfg)
	if fs := newFillSpace(&cfg, &in); fs != nil {
		t.Fatalf("fill space of %d states for 30 teams", fs.states)
	}
}
