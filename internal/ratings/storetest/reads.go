package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func testLeaderboard(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	rt := func(skill float64) ratings.Rating { return ratings.Rating{Skill: skill, Games: 3} }
	seed(t, st, "tdm", map[string]*ratings.State{
		"tdm": {Ratings: map[ratings.Participant]ratings.Rating{
			{ID: "alf"}: rt(3), {ID: "Zed"}: rt(3), {ID: "c"}: rt(2), {ID: "d"}: rt(1.5),
			{ID: "e"}: rt(-1), {ID: "top", Bot: true}: rt(10),
		}},
		"tdm+instagib": {Ratings: map[ratings.Participant]ratings.Rating{{ID: "other"}: rt(9)}},
	})
	c := mustContext(t, "tdm")
	ids := func(lb []ratings.RatedParticipant) []string {
		var out []string
		for _, rp := range lb {
			if rp.Participant.Bot {
				t.Fatalf("a bot on the leaderboard: %v", rp)
			}
			out = append(out, rp.Participant.ID)
		}
		return out
	}
	for _, tc := range []struct {
		limit int
		want  []string
	}{
		{3, []string{"Zed", "alf", "c"}}, // ties by id, byte order
		{10, []string{"Zed", "alf", "c", "d", "e"}},
		{1, []string{"Zed"}},
	} {
		lb, err := st.Leaderboard(ctx, c, tc.limit, ratings.Ranking{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(lb); !slices.Equal(got, tc.want) {
			t.Fatalf("Leaderboard(limit %d) = %q, want %q", tc.limit, got, tc.want)
		}
		if len(lb) > 0 && !sameBits(lb[0].Rating, rt(3)) {
			t.Fatalf("leader's rating %+v", lb[0].Rating)
		}
	}
	lb, err := st.Leaderboard(ctx, mustContext(t, "ctf"), 10, ratings.Ranking{})
	if err != nil || len(lb) != 0 {
		t.Fatalf("Leaderboard of an empty context: %v %v", lb, err)
	}
}

// testLeaderboardConservative: ordered by skill less K sigma, a rating without a sigma
// taking the prior's, ties by id; K = 0 is the skill alone.
func testLeaderboardConservative(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	rt := func(skill, sigma float64) ratings.Rating { return ratings.Rating{Skill: skill, Sigma: sigma, Games: 3} }
	seed(t, st, "tdm", map[string]*ratings.State{"tdm": {Ratings: map[ratings.Participant]ratings.Rating{
		{ID: "lucky"}:          rt(4, 1.75),      // 4 - 3 x 1.75 = -1.25 (dyadic numbers: exact scores)
		{ID: "vet"}:            rt(2, 0.25),      // 1.25
		{ID: "steady"}:         rt(1.5, 0.125),   // 1.125
		{ID: "old"}:            rt(3, 0),         // no sigma: the prior's 2, 3 - 6 = -3
		{ID: "tie-b"}:          rt(1.625, 0.125), // 1.25, tied with vet: by id
		{ID: "Bot", Bot: true}: rt(9, 0.01),
	}}})
	c := mustContext(t, "tdm")
	for _, tc := range []struct {
		by   ratings.Ranking
		want []string
	}{
		{ratings.Ranking{}, []string{"lucky", "old", "vet", "tie-b", "steady"}},
		{ratings.Ranking{PriorSigma: 2}, []string{"lucky", "old", "vet", "tie-b", "steady"}},
		{ratings.Ranking{K: 3, PriorSigma: 2}, []string{"tie-b", "vet", "steady", "lucky", "old"}},
		{ratings.Ranking{K: 1, PriorSigma: 0.5}, []string{"old", "lucky", "vet", "tie-b", "steady"}},
	} {
		lb, err := st.Leaderboard(ctx, c, 10, tc.by)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range lb {
			got = append(got, e.Participant.ID)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("Leaderboard(%+v) = %q, want %q", tc.by, got, tc.want)
		}
		for i := 1; i < len(lb); i++ {
			if tc.by.Score(lb[i].Rating) > tc.by.Score(lb[i-1].Rating) {
				t.Errorf("Leaderboard(%+v): %v above %v", tc.by, lb[i-1], lb[i])
			}
		}
	}
	if lb, err := st.Leaderboard(ctx, c, 2, ratings.Ranking{K: 3, PriorSigma: 2}); err != nil || len(lb) != 2 || lb[1].Participant.ID != "vet" {
		t.Errorf("the top 2: %v, %v", lb, err)
	}
}

// testBias: Bias returns the cell and the side pair's total that apply is given.
func testBias(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	c := mustContext(t, "tdm")
	for i, mapName := range []string{"a", "b", "a", "a"} {
		m := fiveVFive(fmt.Sprintf("bias-%d", i), 0)
		m.mapName, m.winner = mapName, i%2
		recordBoth(t, st, f, m.result())
	}
	r := fiveVFive("bias-next", 0)
	r.mapName = "a"
	key := ratings.ResultBiasKey(r.result())
	var given ratings.BiasTable
	_, err := st.RecordResult(ctx, request(r.result()), func(_ ratings.Context, _ map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
		given = bias
		return ratings.Outcome{}, nil, errors.New("only looking")
	})
	if err == nil {
		t.Fatal("apply's error was not returned")
	}
	got, err := st.Bias(ctx, c, key)
	if err != nil {
		t.Fatal(err)
	}
	if got.Cell(key) != given.Cell(key) || got.Total(key) != given.Total(key) || got.Cell(key).Games != 3 || got.Total(key).Games != 4 {
		t.Fatalf("Bias: cell %+v total %+v; apply was given %+v and %+v", got.Cell(key), got.Total(key), given.Cell(key), given.Total(key))
	}
	other := key
	other.Map = "never"
	if got, err := st.Bias(ctx, c, other); err != nil || got.Cell(other).Games != 0 || got.Total(other).Games != 4 {
		t.Fatalf("Bias of a map never played: %+v %+v (%v)", got.Cell(other), got.Total(other), err)
	}
	if got, err := st.Bias(ctx, mustContext(t, "ctf"), key); err != nil || got.Len() != 0 || got.Total(key).Games != 0 {
		t.Fatalf("Bias of an empty context: %+v (%v)", got, err)
	}
}

func testBotMean(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	c := mustContext(t, "tdm")
	mean, n, err := st.BotMean(ctx, c)
	if err != nil || mean != 50 || n != 0 {
		t.Fatalf("BotMean with no bots = %v, %d, %v; want 50, 0", mean, n, err)
	}
	skills := map[string]float64{"Alpha": 1.5, "Beta": -0.25, "Gamma": 3}
	st8 := &ratings.State{Ratings: map[ratings.Participant]ratings.Rating{{ID: "Alpha"}: {Skill: 9, Games: 1}}}
	for name, s := range skills {
		st8.Ratings[ratings.Participant{ID: name, Bot: true}] = ratings.Rating{Skill: s, Games: 2}
	}
	seed(t, st, "tdm", map[string]*ratings.State{"tdm": st8})
	mean, n, err = st.BotMean(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	want := (ratings.Rating{Skill: 1.5}.Weight() + ratings.Rating{Skill: -0.25}.Weight() + ratings.Rating{Skill: 3}.Weight()) / 3
	if n != 3 || math.Abs(mean-want) > 1e-9 {
		t.Fatalf("BotMean = %v, %d; want %v, 3 (the player Alpha is not a bot)", mean, n, want)
	}
	if mean, n, err := st.BotMean(ctx, mustContext(t, "tdm", "instagib")); err != nil || mean != 50 || n != 0 {
		t.Fatalf("BotMean of another context = %v, %d, %v", mean, n, err)
	}
}

func testPlayerRatings(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	if prs, err := st.PlayerRatings(ctx, "nobody"); err != nil || len(prs) != 0 {
		t.Fatalf("PlayerRatings of an unknown player: %v %v", prs, err)
	}
	a := ratings.Rating{Skill: 1.0 / 3, Offset: -0.1, Commander: 1e-300, SkillG: 2.5e10, CommanderG: 0.7, Games: 1 << 40}
	b := ratings.Rating{Skill: -2, Games: 1}
	seed(t, st, "tdm", map[string]*ratings.State{
		"tdm":                  {Ratings: map[ratings.Participant]ratings.Rating{{ID: "Neo"}: a, {ID: "neo"}: b}},
		"tdm+instagib,lowgrav": {Ratings: map[ratings.Participant]ratings.Rating{{ID: "Neo"}: b, {ID: "Neo", Bot: true}: a}},
	})
	seed(t, st, "ctf", map[string]*ratings.State{"ctf": {Ratings: map[ratings.Participant]ratings.Rating{{ID: "Neo"}: b}}})
	prs, err := st.PlayerRatings(ctx, "Neo")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, cr := range prs {
		keys = append(keys, cr.Context.Key())
	}
	if want := []string{"ctf", "tdm", "tdm+instagib,lowgrav"}; !slices.Equal(keys, want) {
		t.Fatalf("contexts %q, want %q (ids are case-sensitive, bots are not players)", keys, want)
	}
	if !sameBits(prs[1].Rating, a) || !sameBits(prs[0].Rating, b) {
		t.Fatalf("ratings %+v, want %+v and %+v exactly", prs, b, a)
	}
	if want := mustContext(t, "tdm", "lowgrav", "instagib"); !prs[2].Context.Equal(want) {
		t.Fatalf("context %#v, want %#v", prs[2].Context, want)
	}
}

func testRatingsBatch(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	m := fiveVFive("batch", 0)
	m.teams[1][0] = "bot:p00" // a bot named like a player: a participant of its own
	recordBoth(t, st, f, m.result())
	c := mustContext(t, "tdm")
	ask := []ratings.Participant{{ID: "p00"}, {ID: "p00", Bot: true}, {ID: "ghost"}, {ID: "p09"}, {ID: "p05", Bot: true}}
	got, err := st.Ratings(ctx, c, ask)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("Ratings returned %d entries, want 3 (p00, bot p00, p09): %v", len(got), got)
	}
	for _, p := range []ratings.Participant{{ID: "p00"}, {ID: "p00", Bot: true}, {ID: "p09"}} {
		if !sameBits(got[p], f.states["tdm"].Ratings[p]) {
			t.Fatalf("%v: %+v", p, got[p])
		}
	}
	if got[ratings.Participant{ID: "p00"}] == got[ratings.Participant{ID: "p00", Bot: true}] {
		t.Fatal("the bot and the player share a rating")
	}
	for _, c := range []ratings.Context{mustContext(t, "ctf"), mustContext(t, "tdm", "instagib")} {
		got, err := st.Ratings(ctx, c, ask)
		if err != nil || len(got) != 0 {
			t.Fatalf("Ratings in %s: %v %v", c, got, err)
		}
	}
	if got, err := st.Ratings(ctx, c, nil); err != nil || len(got) != 0 {
		t.Fatalf("Ratings of nobody: %v %v", got, err)
	}
}
