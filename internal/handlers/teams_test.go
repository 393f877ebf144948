package handlers

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func postTeams(t testing.TB, h http.Handler, path, body string, headers ...string) *http.Response {
	t.Helper()
	return exchange(t, h, http.MethodPost, path, "application/json", body, headers...)
}

// teamsPlayersJSON lists players p0, p1, ... with the given weights.
func teamsPlayersJSON(weights ...float64) string {
	var b strings.Builder
	b.WriteString(`[`)
	for i, w := range weights {
		if i > 0 {
			b.WriteString(`,`)
		}
		fmt.Fprintf(&b, `{"id":"p%d","weight":%g}`, i, w)
	}
	b.WriteString(`]`)
	return b.String()
}

// seedPlayers are the UT2004 seed's example input, in its order, with its weights and names
// (an id may hold single spaces between words: ratings.ValidateID).
var seedPlayers = []struct {
	name   string
	weight float64
}{
	{"Boring John", 5}, {"Silly Billy", 3}, {"Slartibartfast", 2}, {"Chewbacca", 7},
	{"Ignoramus", 23}, {"Riddick", 92}, {"Luke Skywalker", 93}, {"Darth Vader", 95},
	{"Peter Griffin", 27}, {"Roger", 56}, {"Annoying Git", 28}, {"Cheat", 99}, {"Lame", 1},
	{"Twonk", 23}, {"Foogilicious", 83}, {"Flunk Basket", 41}, {"Jack O'Neill", 49},
}

// seedTeamsBody is the seed program's run: its 17 players, mean bot 20, target 8 players on a
// map for 6 to 12.
func seedTeamsBody() string {
	var b strings.Builder
	b.WriteString(`{"teams":2,"bots":{"mean_weight":20,"target_players":8,"recommended":{"min":6,"max":12}},"players":[`)
	for i, p := range seedPlayers {
		if i > 0 {
			b.WriteString(`,`)
		}
		fmt.Fprintf(&b, `{"id":%q,"weight":%g}`, p.name, p.weight)
	}
	b.WriteString(`]}`)
	return b.String()
}

// The seed's own example over HTTP: 727 of human weight, at most 9 humans a team (the seed's
// cap), so 9 against 8; the bot rule wants max(8, 9x2) = 18 players, so the 8 get one bot
// of 20; 747 cannot split evenly and the best is 373 against 374.
func TestTeamsSplitsTheSeedsSeventeenPlayersExactly(t *testing.T) {
	t.Parallel()
	var got teamsResponse
	decodeJSON(t, postTeams(t, NewServer(Deps{}), "/v1/teams", seedTeamsBody()), &got)

	if math.Abs(got.Balance-373.0/374.0) > 1e-5 || got.Difference != 1 {
		t.Fatalf("balance %.6f difference %g, want 373/374 = 0.99733 and 1", got.Balance, got.Difference)
	}
	if !got.Exact || got.Objective != "ratio" || got.Selection != "best" || got.Chosen != 0 {
		t.Fatalf("exact %v objective %s selection %s chosen %d: want an exact best split by ratio",
			got.Exact, got.Objective, got.Selection, got.Chosen)
	}
	if got.MinPlayers != 18 || got.MaxHumansPerTeam != 9 {
		t.Fatalf("min_players %d max_humans_per_team %d, want 18 and 9", got.MinPlayers, got.MaxHumansPerTeam)
	}
	if len(got.Teams) != 2 || len(got.Candidates) != 5 {
		t.Fatalf("%d teams and %d candidates, want 2 and the default 5", len(got.Teams), len(got.Candidates))
	}
	weight := map[string]float64{}
	for _, p := range seedPlayers {
		weight[p.name] = p.weight
	}
	seen := map[string]bool{}
	var totals []float64
	for _, team := range got.Teams {
		sum := float64(team.Bots) * 20
		for _, id := range team.Players {
			if seen[id] {
				t.Fatalf("%s is on two teams", id)
			}
			seen[id] = true
			sum += weight[id]
		}
		if sum != team.Total || len(team.Players)+team.Bots != 9 {
			t.Fatalf("team %+v: total %g recomputed, want %d players in all", team, sum, 9)
		}
		totals = append(totals, team.Total)
	}
	slices.Sort(totals)
	if len(seen) != 17 || !slices.Equal(totals, []float64{373, 374}) {
		t.Fatalf("%d players placed, totals %v: want all 17 and 373, 374", len(seen), totals)
	}
	if !slices.Equal(got.Candidates[0].Teams[0].Players, got.Teams[0].Players) {
		t.Fatal("teams must be candidates[chosen].teams")
	}
	if got.Weights["Cheat"] != 99 || len(got.Weights) != 17 {
		t.Fatalf("weights %v", got.Weights)
	}
}

func TestTeamsWithoutBotsEvensTheHeadCountsAndMinimisesTheDifference(t *testing.T) {
	t.Parallel()
	body := `{"players":` + teamsPlayersJSON(10, 20, 30, 40, 50) + `}`
	var got teamsResponse
	decodeJSON(t, postTeams(t, NewServer(Deps{}), "/v1/teams", body), &got)
	// 150 in all, 3 players against 2: every sum is a multiple of 10, so 75 each is out of
	// reach and 70 against 80 (20+50 against 10+30+40, say) is the best.
	if got.Objective != "difference" || got.Difference != 10 || got.MinPlayers != 0 || got.MaxHumansPerTeam != 3 {
		t.Fatalf("objective %s difference %g min_players %d cap %d", got.Objective, got.Difference, got.MinPlayers, got.MaxHumansPerTeam)
	}
	n := []int{len(got.Teams[0].Players), len(got.Teams[1].Players)}
	slices.Sort(n)
	if !slices.Equal(n, []int{2, 3}) || got.Teams[0].Bots != 0 || got.Teams[1].Bots != 0 {
		t.Fatalf("teams %+v: want 3 and 2 humans, no bots", got.Teams)
	}
}

func TestTeamsWeightedSelectionIsReproducibleWithItsSeed(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	body := `{"selection":"weighted","candidates":4,"teams":3,"players":` + teamsPlayersJSON(5, 17, 23, 31, 44, 52, 68, 71, 86) + `}`
	var drawn teamsResponse
	decodeJSON(t, postTeams(t, h, "/v1/teams", body), &drawn)
	if drawn.Selection != "weighted" || len(drawn.Candidates) != 4 || len(drawn.Teams) != 3 {
		t.Fatalf("selection %s, %d candidates, %d teams", drawn.Selection, len(drawn.Candidates), len(drawn.Teams))
	}
	// Replaying the seed the service drew gives the same pick.
	replay := strings.TrimSuffix(body, `}`) + fmt.Sprintf(`,"seed":%d}`, drawn.Seed)
	for range 3 {
		var again teamsResponse
		decodeJSON(t, postTeams(t, h, "/v1/teams", replay), &again)
		if again.Chosen != drawn.Chosen || again.Seed != drawn.Seed {
			t.Fatalf("seed %d chose %d, then %d", drawn.Seed, drawn.Chosen, again.Chosen)
		}
	}
}

func TestTeamsAboveTheExactLimitSaysTheSplitIsHeuristic(t *testing.T) {
	t.Parallel()
	w := make([]float64, 64)
	for i := range w {
		w[i] = float64((i*37)%100 + 1)
	}
	var got teamsResponse
	decodeJSON(t, postTeams(t, NewServer(Deps{}), "/v1/teams", `{"players":`+teamsPlayersJSON(w...)+`}`), &got)
	if got.Exact || len(got.Teams[0].Players) != 32 || len(got.Teams[1].Players) != 32 {
		t.Fatalf("64 players: exact %v, sizes %d and %d", got.Exact, len(got.Teams[0].Players), len(got.Teams[1].Players))
	}
}

// Players without a weight get their stored weight in the request's context; players the
// store does not know get 50; bots get theirs by name, a bot the store does not know the
// context's mean bot weight (the ratings service's one rule), and so does the bot rule's
// missing mean_weight.
func TestTeamsUseStoredWeightsInTheRequestsContext(t *testing.T) {
	t.Parallel()
	h, store := openServer(t)
	// alice and bob (and the bot Jakob's opponents) win three times against carol, dave and
	// the bot Jakob: alice's stored weight rises above 50, carol's and Jakob's fall below.
	for i := range 3 {
		postResult(t, h, resultBody(fmt.Sprintf("m%d", i), 0))
	}
	c, err := ratings.NewContext("ctf", nil)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := store.Ratings(context.Background(), c, []ratings.Participant{{ID: "alice"}, {ID: "carol"}, {ID: "Jakob", Bot: true}})
	if err != nil {
		t.Fatal(err)
	}
	alice, carol, jakob := stored[ratings.Participant{ID: "alice"}].Weight(),
		stored[ratings.Participant{ID: "carol"}].Weight(), stored[ratings.Participant{ID: "Jakob", Bot: true}].Weight()
	if !(alice > 50 && carol < 50 && jakob < 50) {
		t.Fatalf("stored weights alice %g carol %g Jakob %g: the set-up did not teach", alice, carol, jakob)
	}
	mean, _, err := store.BotMean(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}

	body := `{"context":{"game_type":"ctf"},"bots":{"target_players":4},
		"players":[{"id":"alice"},{"id":"newcomer"},{"id":"carol"},{"id":"given","weight":10}]}`
	var split teamsResponse
	decodeJSON(t, postTeams(t, h, "/v1/teams", body), &split)
	want := map[string]float64{"alice": alice, "newcomer": 50, "carol": carol, "given": 10}
	for id, w := range want {
		if math.Abs(split.Weights[id]-w) > 1e-9 {
			t.Errorf("weight of %s = %g, want %g", id, split.Weights[id], w)
		}
	}
	total := 0.0
	for _, team := range split.Teams {
		total += team.Total
	}
	if humans := alice + 50 + carol + 10; math.Abs(total-humans) > 1e-9 || split.MinPlayers != 4 {
		t.Fatalf("totals add to %g with min_players %d, want the humans' %g and no bot", total, split.MinPlayers, humans)
	}
	// Five players on two teams of at most 3: one bot, of the stored mean bot weight.
	body = `{"context":{"game_type":"ctf"},"bots":{"target_players":6},"players":` + teamsPlayersJSON(10, 20, 30, 40, 50) + `}`
	decodeJSON(t, postTeams(t, h, "/v1/teams", body), &split)
	if total := split.Teams[0].Total + split.Teams[1].Total; math.Abs(total-(150+mean)) > 1e-9 {
		t.Fatalf("totals add to %g, want 150 + one bot of the stored mean %g", total, mean)
	}

	var adv advantageResponse
	decodeJSON(t, postTeams(t, h, "/v1/teams/advantage", `{"context":{"game_type":"ctf"},"teams":[
		{"players":[{"id":"alice"}]},{"players":[{"id":"carol"}],"bots":[{"name":"Jakob"},{"name":"Unknown"}]}]}`), &adv)
	if math.Abs(adv.Teams[0].Total-alice) > 1e-9 || math.Abs(adv.Teams[1].Total-(carol+jakob+mean)) > 1e-9 {
		t.Fatalf("totals %v, want alice %g and carol + Jakob + the mean bot = %g", adv.Teams, alice, carol+jakob+mean)
	}

	// Without a context nothing is read: 50 for everyone.
	decodeJSON(t, postTeams(t, h, "/v1/teams", `{"players":[{"id":"alice"},{"id":"carol"}]}`), &split)
	if split.Weights["alice"] != 50 || split.Weights["carol"] != 50 {
		t.Fatalf("weights without a context: %v", split.Weights)
	}
	resp := postTeams(t, h, "/v1/teams", `{"context":{"game_type":"no spaces allowed"},"players":[{"id":"a","weight":1}]}`)
	if p := readProblem(t, resp); resp.StatusCode != 400 || !hasField(p, "context.game_type") {
		t.Fatalf("bad context, even unused: %d %+v", resp.StatusCode, p)
	}
}

// Without bots a late joiner goes to a team with the fewest humans; among those, to the one
// the join balances best: here the weaker one.
func TestTeamsAssignSendsALateJoinerToTheWeakerTeam(t *testing.T) {
	t.Parallel()
	body := `{"teams":[
		{"players":[{"id":"ann","weight":90},{"id":"ben","weight":60}]},
		{"players":[{"id":"cat","weight":70},{"id":"dan","weight":50}]}],
		"joiner":{"id":"eve","weight":40}}`
	var got assignResponse
	decodeJSON(t, postTeams(t, NewServer(Deps{}), "/v1/teams/assign", body), &got)
	if got.Team != 1 || !slices.Equal(got.Totals, []float64{150, 160}) || got.Difference != 10 {
		t.Fatalf("team %d totals %v difference %g, want team 1 (150 vs 160)", got.Team, got.Totals, got.Difference)
	}
	if !slices.Equal(got.Before, []float64{150, 120}) || got.Objective != "difference" || got.MaxHumansPerTeam != 0 {
		t.Fatalf("before %v objective %s cap %d", got.Before, got.Objective, got.MaxHumansPerTeam)
	}
	if len(got.Choices) != 2 || !got.Choices[0].Allowed || got.Choices[0].Difference != 70 {
		t.Fatalf("choices %+v: joining team 0 would leave 190 vs 120", got.Choices)
	}
	if got.Weights["eve"] != 40 {
		t.Fatalf("weights %v", got.Weights)
	}
}

// With a bot rule the join changes the bots: joining the team with a bot sends that bot away
// (counted at the mean of that team's bots, 30 here); joining the other team would make it
// the largest and bring a bot of mean_weight to the first.
func TestTeamsAssignCountsTheBotsAJoinChanges(t *testing.T) {
	t.Parallel()
	body := `{"bots":{"mean_weight":40,"target_players":4},"max_humans_per_team":3,"teams":[
		{"players":[{"id":"ann","weight":50},{"id":"ben","weight":50}]},
		{"players":[{"id":"cat","weight":50}],"bots":[{"name":"Jakob","weight":30}]}],
		"joiner":{"id":"eve","weight":50}}`
	var got assignResponse
	decodeJSON(t, postTeams(t, NewServer(Deps{}), "/v1/teams/assign", body), &got)
	if got.Team != 1 || !slices.Equal(got.BotChange, []int{0, -1}) || !slices.Equal(got.Totals, []float64{100, 100}) {
		t.Fatalf("team %d bot_change %v totals %v, want team 1, its bot gone, 100 each", got.Team, got.BotChange, got.Totals)
	}
	other := got.Choices[0]
	if !slices.Equal(other.BotChange, []int{0, 1}) || !slices.Equal(other.Totals, []float64{150, 120}) {
		t.Fatalf("joining team 0: %+v, want one bot of 40 for team 1 (150 vs 50+30+40)", other)
	}
	if got.MaxHumansPerTeam != 3 || got.Objective != "ratio" {
		t.Fatalf("cap %d objective %s", got.MaxHumansPerTeam, got.Objective)
	}
}

// 220 against 120: the one swap that evens them is 90 for 40; the service makes it and stops.
func TestTeamsRebalanceReturnsTheMinimalSwap(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	body := `{"teams":[
		{"players":[{"id":"ann","weight":90},{"id":"ben","weight":70},{"id":"cat","weight":60}]},
		{"players":[{"id":"dan","weight":50},{"id":"eve","weight":40},{"id":"fay","weight":30}]}]}`
	var got rebalanceResponse
	decodeJSON(t, postTeams(t, h, "/v1/teams/rebalance", body), &got)
	if got.Swaps != 1 || len(got.Moves) != 1 {
		t.Fatalf("%d swaps, moves %+v: want exactly one", got.Swaps, got.Moves)
	}
	m := got.Moves[0]
	if m.Kind != "swap" || m.Player != "ann" || m.Other != "eve" || m.From == nil || *m.From != 0 || m.To != 1 {
		t.Fatalf("move %+v, want ann (team 0) swapped with eve (team 1)", m)
	}
	if got.Before.Difference != 100 || got.After.Difference != 0 || !slices.Equal(m.Totals, []float64{170, 170}) {
		t.Fatalf("before %+v after %+v", got.Before, got.After)
	}
	if !slices.Equal(got.Teams[0].Players, []string{"ben", "cat", "eve"}) || !slices.Equal(got.Teams[1].Players, []string{"ann", "dan", "fay"}) {
		t.Fatalf("teams %+v", got.Teams)
	}

	// max_swaps 0 only places: a newcomer joins the weaker team, nobody else moves.
	body = strings.TrimSuffix(body, `}`) + `,"unplaced":[{"id":"gus","weight":45}],"max_swaps":0}`
	got = rebalanceResponse{}
	decodeJSON(t, postTeams(t, h, "/v1/teams/rebalance", body), &got)
	if got.Swaps != 0 || len(got.Moves) != 1 || got.Moves[0].Kind != "place" || got.Moves[0].Player != "gus" ||
		got.Moves[0].To != 1 || got.Moves[0].From != nil || !got.PlacementExact {
		t.Fatalf("moves %+v", got.Moves)
	}
	if !slices.Equal(got.After.Totals, []float64{220, 165}) || !slices.Equal(got.Placed.Totals, got.After.Totals) {
		t.Fatalf("placed %+v after %+v", got.Placed, got.After)
	}
}

// Blue's total is 10% above Red's: Red needs a 1.1 handicap to even them, and Bradley-Terry
// on the totals gives Blue 110/210.
func TestTeamsAdvantageGivesTheWeakerTeamTheHandicapThatEvensThem(t *testing.T) {
	t.Parallel()
	body := `{"teams":[
		{"players":[{"id":"red1","weight":60},{"id":"red2","weight":40}]},
		{"players":[{"id":"blue1","weight":70}],"bots":[{"name":"Jakob","weight":40}]}]}`
	var got advantageResponse
	decodeJSON(t, postTeams(t, NewServer(Deps{}), "/v1/teams/advantage", body), &got)
	red, blue := got.Teams[0], got.Teams[1]
	if red.Total != 100 || blue.Total != 110 || got.Strongest != 1 || got.Difference != 10 {
		t.Fatalf("teams %+v strongest %d difference %g", got.Teams, got.Strongest, got.Difference)
	}
	if math.Abs(red.Handicap-1.1) > 1e-12 || blue.Handicap != 1 {
		t.Fatalf("handicaps %g and %g, want 1.1 and 1", red.Handicap, blue.Handicap)
	}
	if math.Abs(blue.WinProbability-110.0/210) > 1e-12 || math.Abs(red.WinProbability+blue.WinProbability-1) > 1e-12 {
		t.Fatalf("win probabilities %g and %g, want 100/210 and 110/210", red.WinProbability, blue.WinProbability)
	}
}

func TestTeamsRejectBadInputNamingTheField(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 129)
	two := func(a, b string) string { return `{"teams":[` + a + `,` + b + `]` }
	ok := `{"players":[{"id":"a","weight":50}]}`
	tests := []struct {
		name, path, body, field string
	}{
		// POST /v1/teams
		{"malformed JSON", "/v1/teams", `{"players":[`, "body"},
		{"empty body", "/v1/teams", ``, "body"},
		{"players missing", "/v1/teams", `{}`, "players"},
		{"players null", "/v1/teams", `{"players":null}`, "players"},
		{"no players", "/v1/teams", `{"players":[]}`, "players"},
		{"players not an array", "/v1/teams", `{"players":{}}`, "players"},
		{"one team", "/v1/teams", `{"teams":1,"players":[{"id":"a"}]}`, "teams"},
		{"five teams", "/v1/teams", `{"teams":5,"players":[{"id":"a"}]}`, "teams"},
		{"teams a string", "/v1/teams", `{"teams":"two","players":[{"id":"a"}]}`, "teams"},
		{"teams fractional", "/v1/teams", `{"teams":2.5,"players":[{"id":"a"}]}`, "teams"},
		{"negative weight", "/v1/teams", `{"players":[{"id":"a","weight":-1}]}`, "players[0].weight"},
		{"weight overflows", "/v1/teams", `{"players":[{"id":"a","weight":1},{"id":"b","weight":1e999}]}`, "players[1].weight"},
		{"weight above 1e9", "/v1/teams", `{"players":[{"id":"a","weight":2e9}]}`, "players[0].weight"},
		{"weight a string", "/v1/teams", `{"players":[{"id":"a","weight":"50"}]}`, "players[0].weight"},
		{"id missing", "/v1/teams", `{"players":[{"weight":1}]}`, "players[0].id"},
		{"id too long", "/v1/teams", `{"players":[{"id":"` + long + `"}]}`, "players[0].id"},
		{"id with a NUL", "/v1/teams", `{"players":[{"id":"a\u0000b"}],"context":{"game_type":"ctf"}}`, "players[0].id"},
		{"id with a line break", "/v1/teams", `{"players":[{"id":"a\nb"}]}`, "players[0].id"},
		{"id a number", "/v1/teams", `{"players":[{"id":7}]}`, "players[0].id"},
		{"duplicate id", "/v1/teams", `{"players":[{"id":"a"},{"id":"b"},{"id":"a"}]}`, "players[2].id"},
		{"unknown player field", "/v1/teams", `{"players":[{"id":"a","rating":5}]}`, "players[0].rating"},
		{"unknown field", "/v1/teams", `{"players":[{"id":"a"}],"team":2}`, "team"},
		{"duplicate field", "/v1/teams", `{"players":[{"id":"a"}],"teams":2,"teams":3}`, "teams"},
		{"recommended min above max", "/v1/teams", `{"players":[{"id":"a"}],"bots":{"target_players":8,"recommended":{"min":12,"max":6}}}`, "bots.recommended.max"},
		{"target_players missing", "/v1/teams", `{"players":[{"id":"a"}],"bots":{"mean_weight":20}}`, "bots.target_players"},
		{"target_players above 1024", "/v1/teams", `{"players":[{"id":"a"}],"bots":{"target_players":5000}}`, "bots.target_players"},
		{"negative mean bot", "/v1/teams", `{"players":[{"id":"a"}],"bots":{"target_players":8,"mean_weight":-3}}`, "bots.mean_weight"},
		{"unknown bots field", "/v1/teams", `{"players":[{"id":"a"}],"bots":{"target_players":8,"size":3}}`, "bots.size"},
		{"max_humans_per_team zero", "/v1/teams", `{"players":[{"id":"a"}],"max_humans_per_team":0}`, "max_humans_per_team"},
		{"max_humans_per_team negative", "/v1/teams", `{"players":[{"id":"a"}],"max_humans_per_team":-1}`, "max_humans_per_team"},
		{"max_humans_per_team too small", "/v1/teams", `{"players":` + teamsPlayersJSON(1, 2, 3, 4, 5) + `,"bots":{"target_players":6},"max_humans_per_team":2}`, "max_humans_per_team"},
		{"candidates zero", "/v1/teams", `{"players":[{"id":"a"}],"candidates":0}`, "candidates"},
		{"candidates 21", "/v1/teams", `{"players":[{"id":"a"}],"candidates":21}`, "candidates"},
		{"selection unknown", "/v1/teams", `{"players":[{"id":"a"}],"selection":"random"}`, "selection"},
		{"selection empty", "/v1/teams", `{"players":[{"id":"a"}],"selection":""}`, "selection"},
		{"objective unknown", "/v1/teams", `{"players":[{"id":"a"}],"objective":"fairness"}`, "objective"},
		{"seed negative", "/v1/teams", `{"players":[{"id":"a"}],"seed":-1}`, "seed"},
		{"seed above 2^53-1", "/v1/teams", `{"players":[{"id":"a"}],"seed":9007199254740992}`, "seed"},
		{"seed overflows int64", "/v1/teams", `{"players":[{"id":"a"}],"seed":1e30}`, "seed"},
		{"context game_type bad", "/v1/teams", `{"players":[{"id":"a"}],"context":{"game_type":""}}`, "context.game_type"},
		{"context unknown field", "/v1/teams", `{"players":[{"id":"a"}],"context":{"game":"ctf"}}`, "context.game"},

		// POST /v1/teams/assign
		{"assign: teams missing", "/v1/teams/assign", `{"joiner":{"id":"j","weight":1}}`, "teams"},
		{"assign: one team", "/v1/teams/assign", `{"teams":[{}],"joiner":{"id":"j"}}`, "teams"},
		{"assign: five teams", "/v1/teams/assign", `{"teams":[{},{},{},{},{}],"joiner":{"id":"j"}}`, "teams"},
		{"assign: joiner missing", "/v1/teams/assign", two(`{}`, `{}`) + `}`, "joiner"},
		{"assign: joiner weight overflows", "/v1/teams/assign", two(`{}`, `{}`) + `,"joiner":{"id":"j","weight":-1e999}}`, "joiner.weight"},
		{"assign: joiner weight negative", "/v1/teams/assign", two(`{}`, `{}`) + `,"joiner":{"id":"j","weight":-0.5}}`, "joiner.weight"},
		{"assign: joiner already playing", "/v1/teams/assign", two(`{"players":[{"id":"j","weight":1}]}`, `{}`) + `,"joiner":{"id":"j"}}`, "joiner.id"},
		{"assign: duplicate across teams", "/v1/teams/assign", two(`{"players":[{"id":"a"}]}`, `{"players":[{"id":"a"}]}`) + `,"joiner":{"id":"j"}}`, "teams[1].players[0].id"},
		{"assign: player weight negative", "/v1/teams/assign", two(`{"players":[{"id":"a","weight":-2}]}`, `{}`) + `,"joiner":{"id":"j"}}`, "teams[0].players[0].weight"},
		{"assign: bot without name", "/v1/teams/assign", two(`{}`, `{"bots":[{"weight":3}]}`) + `,"joiner":{"id":"j"}}`, "teams[1].bots[0].name"},
		{"assign: bot weight negative", "/v1/teams/assign", two(`{}`, `{"bots":[{"name":"b","weight":-3}]}`) + `,"joiner":{"id":"j"}}`, "teams[1].bots[0].weight"},
		{"assign: unknown roster field", "/v1/teams/assign", two(`{"side":"red"}`, `{}`) + `,"joiner":{"id":"j"}}`, "teams[0].side"},
		{"assign: teams not an array", "/v1/teams/assign", `{"teams":2,"joiner":{"id":"j"}}`, "teams"},
		{"assign: cap too small", "/v1/teams/assign", two(`{"players":[{"id":"a"}]}`, `{"players":[{"id":"b"}]}`) + `,"joiner":{"id":"j"},"bots":{"target_players":4},"max_humans_per_team":1}`, "max_humans_per_team"},
		{"assign: cap zero", "/v1/teams/assign", two(`{}`, `{}`) + `,"joiner":{"id":"j"},"max_humans_per_team":0}`, "max_humans_per_team"},
		{"assign: recommended min above max", "/v1/teams/assign", two(`{}`, `{}`) + `,"joiner":{"id":"j"},"bots":{"target_players":4,"recommended":{"min":5,"max":4}}}`, "bots.recommended.max"},
		{"assign: objective unknown", "/v1/teams/assign", two(`{}`, `{}`) + `,"joiner":{"id":"j"},"objective":"ratios"}`, "objective"},

		// POST /v1/teams/rebalance
		{"rebalance: teams missing", "/v1/teams/rebalance", `{"unplaced":[{"id":"a"}]}`, "teams"},
		{"rebalance: five teams", "/v1/teams/rebalance", `{"teams":[{},{},{},{},{}]}`, "teams"},
		{"rebalance: max_swaps negative", "/v1/teams/rebalance", two(`{}`, `{}`) + `,"max_swaps":-1}`, "max_swaps"},
		{"rebalance: max_swaps fractional", "/v1/teams/rebalance", two(`{}`, `{}`) + `,"max_swaps":1.5}`, "max_swaps"},
		{"rebalance: unplaced weight negative", "/v1/teams/rebalance", two(`{}`, `{}`) + `,"unplaced":[{"id":"u","weight":-1}]}`, "unplaced[0].weight"},
		{"rebalance: unplaced id empty", "/v1/teams/rebalance", two(`{}`, `{}`) + `,"unplaced":[{"id":""}]}`, "unplaced[0].id"},
		{"rebalance: unplaced already playing", "/v1/teams/rebalance", two(`{"players":[{"id":"a"}]}`, `{}`) + `,"unplaced":[{"id":"b"},{"id":"a"}]}`, "unplaced[1].id"},
		{"rebalance: players not an array", "/v1/teams/rebalance", two(`{"players":"a"}`, `{}`) + `}`, "teams[0].players"},
		{"rebalance: bot weight overflows", "/v1/teams/rebalance", two(`{}`, `{"bots":[{"name":"b","weight":1e400}]}`) + `}`, "teams[1].bots[0].weight"},

		// POST /v1/teams/advantage
		{"advantage: one team", "/v1/teams/advantage", `{"teams":[{"players":[{"id":"a","weight":1}]}]}`, "teams"},
		{"advantage: teams null", "/v1/teams/advantage", `{"teams":null}`, "teams"},
		{"advantage: bot name too long", "/v1/teams/advantage", two(`{}`, `{"bots":[{"name":"`+long+`","weight":1}]}`) + `}`, "teams[1].bots[0].name"},
		{"advantage: weight above 1e9", "/v1/teams/advantage", two(`{"players":[{"id":"a","weight":1e10}]}`, `{}`) + `}`, "teams[0].players[0].weight"},
		{"advantage: unknown top-level field", "/v1/teams/advantage", two(`{}`, `{}`) + `,"model":"elo"}`, "model"},
		{"advantage: bad context", "/v1/teams/advantage", two(`{}`, `{}`) + `,"context":{"game_type":"ctf","mutators":["a b"]}}`, "context.mutators[0]"},
	}
	h := NewServer(Deps{})
	if resp := postTeams(t, h, "/v1/teams", ok); resp.StatusCode != http.StatusOK {
		t.Fatalf("the valid request answers %d", resp.StatusCode)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := postTeams(t, h, tt.path, tt.body)
			if resp.StatusCode != http.StatusBadRequest {
				t.Fatalf("status = %d, want 400", resp.StatusCode)
			}
			if p := readProblem(t, resp); !hasField(p, tt.field) {
				t.Fatalf("problem does not name %q: %+v", tt.field, p.Errors)
			}
		})
	}
	for _, path := range []string{"/v1/teams", "/v1/teams/assign", "/v1/teams/rebalance", "/v1/teams/advantage"} {
		resp := exchange(t, h, http.MethodPost, path, "text/plain", ok)
		if p := readProblem(t, resp); resp.StatusCode != http.StatusUnsupportedMediaType || !hasField(p, "Content-Type") {
			t.Fatalf("%s as text/plain: %d %+v", path, resp.StatusCode, p)
		}
	}
}

func TestTeamsEnforceThePlayerLimit(t *testing.T) {
	t.Parallel()
	limits := DefaultLimits()
	limits.MaxTeamPlayers = 4
	h := NewServer(Deps{Limits: limits})
	resp := postTeams(t, h, "/v1/teams", `{"players":`+teamsPlayersJSON(1, 2, 3, 4, 5)+`}`)
	if p := readProblem(t, resp); resp.StatusCode != 400 || !hasField(p, "players") {
		t.Fatalf("5 players over a limit of 4: %d %+v", resp.StatusCode, p)
	}
	if resp := postTeams(t, h, "/v1/teams", `{"players":`+teamsPlayersJSON(1, 2, 3, 4)+`}`); resp.StatusCode != 200 {
		t.Fatalf("4 players: %d", resp.StatusCode)
	}
	roster := `{"players":[{"id":"a"},{"id":"b"}]},{"players":[{"id":"c"},{"id":"d"}]}`
	for path, body := range map[string]string{
		"/v1/teams/assign":    `{"teams":[` + roster + `],"joiner":{"id":"e"}}`,
		"/v1/teams/rebalance": `{"teams":[` + roster + `],"unplaced":[{"id":"e"}]}`,
		"/v1/teams/advantage": `{"teams":[` + roster + `,{"players":[{"id":"e"}]}]}`,
	} {
		resp := postTeams(t, h, path, body)
		if p := readProblem(t, resp); resp.StatusCode != 400 || !hasField(p, "teams") {
			t.Fatalf("%s with 5 humans: %d %+v", path, resp.StatusCode, p)
		}
	}
	// Limits from a configuration that predates MaxTeamPlayers (0) mean the default, 256.
	limits.MaxTeamPlayers = 0
	w := make([]float64, 257)
	resp = postTeams(t, NewServer(Deps{Limits: limits}), "/v1/teams", `{"players":`+teamsPlayersJSON(w...)+`}`)
	if p := readProblem(t, resp); resp.StatusCode != 400 || !hasField(p, "players") || !strings.Contains(p.Errors[0].Message, "256") {
		t.Fatalf("257 players: %d %+v", resp.StatusCode, p)
	}
}

func TestTeamsNeedAKeyWithTheMatchScope(t *testing.T) {
	t.Parallel()
	keys, err := ParseAPIKeys("matcher:match:" + HashKey("m-key") + ",reader:read:" + HashKey("r-key"))
	if err != nil {
		t.Fatal(err)
	}
	h := NewServer(Deps{Auth: &Auth{Keys: keys}})
	bodies := map[string]string{
		"/v1/teams":           `{"players":[{"id":"a"},{"id":"b"}]}`,
		"/v1/teams/assign":    `{"teams":[{},{}],"joiner":{"id":"a"}}`,
		"/v1/teams/rebalance": `{"teams":[{},{}]}`,
		"/v1/teams/advantage": `{"teams":[{},{}]}`,
	}
	for path, body := range bodies {
		for _, c := range []struct {
			key  string
			want int
		}{{"", 401}, {"Bearer r-key", 403}, {"Bearer m-key", 200}} {
			var headers []string
			if c.key != "" {
				headers = []string{"Authorization", c.key}
			}
			if resp := postTeams(t, h, path, body, headers...); resp.StatusCode != c.want {
				t.Errorf("%s with %q: %d, want %d", path, c.key, resp.StatusCode, c.want)
			}
		}
	}
}

func TestTeamsRecordTheirDurationAndPlayersInMetrics(t *testing.T) {
	t.Parallel()
	h := NewServer(Deps{})
	postTeams(t, h, "/v1/teams", seedTeamsBody())
	postTeams(t, h, "/v1/teams/assign", `{"teams":[{},{}],"joiner":{"id":"a","weight":1}}`)
	postTeams(t, h, "/v1/teams/rebalance", `{"teams":[{},{}]}`)
	postTeams(t, h, "/v1/teams/advantage", `{"teams":[{},{}]}`)
	text := readAll(t, exchange(t, h, http.MethodGet, "/metrics", "", ""))
	for _, want := range []string{
		`matchmaker_matchmaking_duration_seconds_count{endpoint="teams",strategy="exact"} 1`,
		`matchmaker_matchmaking_duration_seconds_count{endpoint="teams_assign",strategy="-"} 1`,
		`matchmaker_matchmaking_duration_seconds_count{endpoint="teams_rebalance",strategy="-"} 1`,
		`matchmaker_matchmaking_duration_seconds_count{endpoint="teams_advantage",strategy="-"} 1`,
		`matchmaker_request_players_sum{endpoint="teams"} 17`,
		`matchmaker_http_request_duration_seconds_count{code="200",method="POST",route="/v1/teams"} 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// The gate lets at most its capacity of heavy searches run at once, lets light ones through,
// and turns a wait that outlives its request into an Unavailable error.
func TestWorkGateBoundsTheHeavySearchesRunningAtOnce(t *testing.T) {
	t.Parallel()
	g := newWorkGate(2)
	var running, most atomic.Int32
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			leave, err := g.enter(context.Background(), true)
			if err != nil {
				t.Error(err)
				return
			}
			n := running.Add(1)
			for {
				m := most.Load()
				if n <= m || most.CompareAndSwap(m, n) {
					break
				}
			}
			time.Sleep(time.Millisecond)
			running.Add(-1)
			leave()
		})
	}
	wg.Wait()
	if m := most.Load(); m > 2 || m < 1 {
		t.Fatalf("%d heavy searches ran at once through a gate of 2", m)
	}

	full := newWorkGate(1)
	leave, _ := full.enter(context.Background(), true)
	defer leave()
	light, err := full.enter(context.Background(), false)
	if err != nil {
		t.Fatalf("a light search must not wait: %v", err)
	}
	light()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if _, err := full.enter(ctx, true); apperr.CodeOf(err) != apperr.Unavailable || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("waiting past the deadline: %v, want Unavailable wrapping the deadline", err)
	}
}

// A heavy split whose request ends while every slot is taken is answered 503, as the spec says.
func TestTeamsAnswer503WhenTheRequestEndsWaitingForTheGate(t *testing.T) {
	t.Parallel()
	gate := newWorkGate(1)
	leave, _ := gate.enter(context.Background(), true)
	defer leave()
	split := handleTeams(slog.New(slog.DiscardHandler), DefaultLimits(), ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()),
		newDomainMetrics(prometheus.NewRegistry()), gate)
	cancelled := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		cancel()
		split.ServeHTTP(w, r.WithContext(ctx))
	})
	h := withRequestID(newRequestIDs(), cancelled)
	w := make([]float64, 30)
	for i := range w {
		w[i] = float64(i)
	}
	resp := postTeams(t, h, "/v1/teams", `{"players":`+teamsPlayersJSON(w...)+`}`)
	if p := readProblem(t, resp); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(p.Detail, "waiting") {
		t.Fatalf("status %d %+v, want 503", resp.StatusCode, p)
	}
	// A light split does not wait for the gate at all.
	resp = postTeams(t, h, "/v1/teams", `{"players":`+teamsPlayersJSON(w[:20]...)+`}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a light split behind a full gate: %d", resp.StatusCode)
	}
}

// FuzzTeams feeds POST /v1/teams arbitrary bodies: whatever arrives, the answer is a 200 or
// a 4xx problem that validates against the spec, never a 5xx or a panic.
func FuzzTeams(f *testing.F) {
	f.Add(seedTeamsBody())
	f.Add(`{"players":[{"id":"a","weight":1},{"id":"b","weight":2},{"id":"c"}],"teams":3,"selection":"weighted","seed":7,"candidates":20}`)
	f.Add(`{"players":[{"id":"a","weight":0},{"id":"b","weight":0}],"bots":{"mean_weight":0,"target_players":1024,"recommended":{"min":0,"max":1024}},"objective":"ratio"}`)
	f.Add(`{"players":[{"id":"a","weight":1e9},{"id":"b","weight":5e-324}],"teams":4,"max_humans_per_team":1,"objective":"difference"}`)
	f.Add(`{"players":[{"id":"a"},{"id":"a"}],"context":{"game_type":"ctf","mutators":["instagib"]},"bots":{"target_players":3}}`)
	f.Add(`{"players":[{"id":""}],"seed":9007199254740991,"teams":-1}`)
	f.Add(`[{"players":[]}]`)
	f.Add(`{"players":[{"id":"a","weight":1}]}{`)
	w := make([]float64, 41)
	for i := range w {
		w[i] = float64((i * 53) % 97)
	}
	f.Add(`{"players":` + teamsPlayersJSON(w...) + `,"bots":{"mean_weight":50,"target_players":48}}`)
	h, _ := openServer(f)
	f.Fuzz(func(t *testing.T, body string) {
		resp := postTeams(t, h, "/v1/teams", body)
		if resp.StatusCode >= 500 {
			t.Fatalf("status %d for %q", resp.StatusCode, body)
		}
	})
}

// FuzzTeamsRosters does the same for the endpoints that take teams already playing: the
// first byte of the input picks assign, rebalance or advantage.
func FuzzTeamsRosters(f *testing.F) {
	roster := `[{"players":[{"id":"a","weight":90},{"id":"b"}],"bots":[{"name":"Jakob","weight":30}]},{"players":[{"id":"c","weight":40}]}]`
	f.Add(uint8(0), `{"teams":`+roster+`,"joiner":{"id":"j","weight":55},"bots":{"mean_weight":20,"target_players":6},"objective":"ratio"}`)
	f.Add(uint8(0), `{"teams":[{},{},{}],"joiner":{"id":"j"},"bots":{"target_players":0,"recommended":{"max":0}},"max_humans_per_team":1}`)
	f.Add(uint8(1), `{"teams":`+roster+`,"unplaced":[{"id":"u","weight":50},{"id":"v"}],"max_swaps":2}`)
	f.Add(uint8(1), `{"teams":[{"players":[{"id":"a","weight":0}]},{},{},{}],"unplaced":[{"id":"u","weight":1e9}],"max_swaps":0}`)
	f.Add(uint8(2), `{"teams":`+roster+`,"context":{"game_type":"ctf"}}`)
	f.Add(uint8(2), `{"teams":[{"players":[{"id":"a","weight":0}]},{"bots":[{"name":"x","weight":0}]}]}`)
	paths := []string{"/v1/teams/assign", "/v1/teams/rebalance", "/v1/teams/advantage"}
	h, _ := openServer(f)
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		resp := postTeams(t, h, paths[int(which)%len(paths)], body)
		if resp.StatusCode >= 500 {
			t.Fatalf("status %d for %q", resp.StatusCode, body)
		}
	})
}
