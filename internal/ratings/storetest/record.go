package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func testName(t *testing.T, st ratings.Store) {
	if n := st.Name(); n != "memory" && n != "postgres" {
		t.Fatalf("Name() = %q, want memory or postgres", n)
	}
}

func testPing(t *testing.T, st ratings.Store) {
	if err := st.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func fiveVFive(id string, offset int) match {
	var m match
	m.id = id
	for i := range 5 {
		m.teams[0] = append(m.teams[0], fmt.Sprintf("p%02d", offset+i))
		m.teams[1] = append(m.teams[1], fmt.Sprintf("p%02d", offset+5+i))
	}
	return m
}

func testRecordAndRead(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	m := fiveVFive("m1", 0)
	m.teams[1][4] = "bot:Jakob"
	rec := recordBoth(t, st, f, m.result())
	if rec.Context.Key() != "tdm" {
		t.Fatalf("context %q, want tdm", rec.Context)
	}
	assertRef(t, st, f)
	c := mustContext(t, "tdm")
	got, err := st.Ratings(ctx, c, []ratings.Participant{{ID: "p00"}, {ID: "Jakob", Bot: true}})
	if err != nil {
		t.Fatal(err)
	}
	if got[ratings.Participant{ID: "p00"}].Games != 1 || got[ratings.Participant{ID: "Jakob", Bot: true}].Games != 1 {
		t.Fatalf("after one result: %+v", got)
	}
	if got[ratings.Participant{ID: "p00"}].Skill <= 0 {
		t.Fatalf("the winner's skill did not rise: %+v", got)
	}
	// A second result over some of the same players builds on the first.
	m2 := fiveVFive("m2", 3)
	m2.winner = 1
	recordBoth(t, st, f, m2.result())
	assertRef(t, st, f)
}

// testEveryField checks that a store keeps every field of a rating and of a bias cell, bit for
// bit, whether or not the default model uses it: crafted values go in through a rebuild, come
// out of every read, and are what apply is given.
func testEveryField(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	g := newCrafted(7, 11)
	m := fiveVFive("every-1", 0)
	m.teams[1][4] = "bot:Jakob"
	r := m.result()
	state, key := g.state(t, r)
	seed(t, st, "tdm", map[string]*ratings.State{"tdm": state})

	c := mustContext(t, "tdm")
	ps := ratings.ResultParticipants(r)
	checkReadsBitForBit(t, st, c, ps, state)

	// apply sees the same ratings, cell and side pair total; what it returns is kept whole.
	want := g.rating()
	update := ratings.BiasCell{Wins: 1, Games: 1, Terms: g.terms()}
	_, err := st.RecordResult(ctx, request(r), func(_ ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
		for _, p := range ps {
			if !sameBits(prior[p], state.Ratings[p]) {
				return ratings.Outcome{}, nil, fmt.Errorf("apply was given %v %+v, stored %+v", p, prior[p], state.Ratings[p])
			}
		}
		if g, w := bias.Cell(key), state.Bias.Cell(key); g != w {
			return ratings.Outcome{}, nil, fmt.Errorf("apply was given the cell %+v, stored %+v", g, w)
		}
		if g, w := bias.Total(key), state.Bias.Total(key); g != w {
			return ratings.Outcome{}, nil, fmt.Errorf("apply was given the total %+v, stored %+v", g, w)
		}
		o := ratings.Outcome{WinProbability: [2]float64{0.5, 0.5}, BiasUpdate: ratings.BiasEntry{Key: key, BiasCell: update}}
		for _, p := range ps {
			o.Updates = append(o.Updates, ratings.Update{Participant: p, Before: prior[p], After: want})
		}
		return o, []byte("ok"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := st.Ratings(ctx, c, ps)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if !sameBits(got[p], want) {
			t.Fatalf("after a result: %v is %+v, apply returned %+v", p, got[p], want)
		}
	}
	// The next result sees the bias update added to the cell and to the side pair's total.
	state.Bias.Record(ratings.BiasEntry{Key: key, BiasCell: update})
	m.id = "every-2"
	checkBiasAfterUpdate(t, st, m.result(), key, state.Bias)
}

// crafted draws the values testEveryField stores: numbers of both signs over seven orders of
// magnitude.
type crafted struct{ rng *rand.Rand }

func newCrafted(a, b uint64) crafted { return crafted{rand.New(rand.NewPCG(a, b))} }

func (g crafted) num() float64 {
	return (g.rng.Float64() - 0.5) * math.Pow(10, float64(g.rng.IntN(7)-3))
}
func (g crafted) pos() float64 { return math.Abs(g.num()) }

func (g crafted) rating() ratings.Rating {
	return ratings.Rating{Skill: g.num(), Offset: g.num(), Commander: g.num(), SkillG: g.pos(), CommanderG: g.pos(), Games: 1 + g.rng.IntN(1000),
		Sigma: g.pos(), OffsetSigma: g.pos(), CommanderSigma: g.pos(), AltSkill: g.num(), AltSigma: g.pos()}
}

func (g crafted) terms() ratings.Terms {
	return ratings.Terms{Presence: g.num(), PresenceWeight: g.pos(), Newcomer: g.num(), NewcomerWeight: g.pos(), Scale: g.num(), ScaleWeight: g.pos(),
		AltScale: g.num(), AltScaleWeight: g.pos(), Evidence: g.num()}
}

// state is a crafted rating for every participant of r (and zeros of both signs, which a store
// may keep in its own way, for p01), r's bias cell and another cell of its side pair.
func (g crafted) state(t *testing.T, r ratings.Result) (*ratings.State, ratings.BiasKey) {
	t.Helper()
	state := &ratings.State{Ratings: map[ratings.Participant]ratings.Rating{}}
	for _, p := range ratings.ResultParticipants(r) {
		state.Ratings[p] = g.rating()
	}
	negZero := math.Copysign(0, -1)
	state.Ratings[ratings.Participant{ID: "p01"}] = ratings.Rating{Skill: negZero, Offset: negZero, Commander: 0, SkillG: 0, Games: 1, Sigma: negZero}
	key := ratings.ResultBiasKey(r)
	cell := ratings.BiasCell{Wins: 12.5, Games: 31, Terms: g.terms()}
	other := key
	other.Map = "elsewhere"
	for _, e := range []ratings.BiasEntry{{Key: key, BiasCell: cell}, {Key: other, BiasCell: ratings.BiasCell{Wins: 3, Games: 4, Terms: g.terms()}}} {
		if err := state.Bias.Set(e); err != nil {
			t.Fatal(err)
		}
	}
	return state, key
}

// checkReadsBitForBit: Ratings, PlayerRatings and Leaderboard return what was stored, bit for
// bit (p00 is a player of the nine in c).
func checkReadsBitForBit(t *testing.T, st ratings.Store, c ratings.Context, ps []ratings.Participant, state *ratings.State) {
	t.Helper()
	ctx := context.Background()
	got, err := st.Ratings(ctx, c, ps)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if !sameBits(got[p], state.Ratings[p]) {
			t.Fatalf("Ratings: %v is %+v, stored %+v", p, got[p], state.Ratings[p])
		}
	}
	pr, err := st.PlayerRatings(ctx, "p00")
	if err != nil || len(pr) != 1 || !sameBits(pr[0].Rating, state.Ratings[ratings.Participant{ID: "p00"}]) {
		t.Fatalf("PlayerRatings: %+v (%v), stored %+v", pr, err, state.Ratings[ratings.Participant{ID: "p00"}])
	}
	lb, err := st.Leaderboard(ctx, c, 100, ratings.Ranking{})
	if err != nil || len(lb) != 9 {
		t.Fatalf("Leaderboard: %d entries (%v), want 9", len(lb), err)
	}
	for _, e := range lb {
		if !sameBits(e.Rating, state.Ratings[e.Participant]) {
			t.Fatalf("Leaderboard: %v is %+v, stored %+v", e.Participant, e.Rating, state.Ratings[e.Participant])
		}
	}
}

// checkBiasAfterUpdate records r and checks that apply is given the cell of key as want has
// it, bit for bit, and its side pair's total to rounding (a sum whose order a store may
// choose).
func checkBiasAfterUpdate(t *testing.T, st ratings.Store, r ratings.Result, key ratings.BiasKey, want ratings.BiasTable) {
	t.Helper()
	_, err := st.RecordResult(context.Background(), request(r), func(_ ratings.Context, _ map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
		if g, w := bias.Cell(key), want.Cell(key); g != w {
			return ratings.Outcome{}, nil, fmt.Errorf("after a bias update, apply was given the cell %+v, want %+v", g, w)
		}
		g, w := bias.Total(key), want.Total(key)
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }
		if g.Wins != w.Wins || g.Games != w.Games || !near(g.Terms.Presence, w.Terms.Presence) || !near(g.Terms.PresenceWeight, w.Terms.PresenceWeight) ||
			!near(g.Terms.Newcomer, w.Terms.Newcomer) || !near(g.Terms.NewcomerWeight, w.Terms.NewcomerWeight) ||
			!near(g.Terms.Scale, w.Terms.Scale) || !near(g.Terms.ScaleWeight, w.Terms.ScaleWeight) ||
			!near(g.Terms.AltScale, w.Terms.AltScale) || !near(g.Terms.AltScaleWeight, w.Terms.AltScaleWeight) || !near(g.Terms.Evidence, w.Terms.Evidence) {
			return ratings.Outcome{}, nil, fmt.Errorf("after a bias update, apply was given the total %+v, want %+v", g, w)
		}
		return ratings.Outcome{WinProbability: [2]float64{0.5, 0.5}}, []byte("ok"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func testReplaySameBody(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	m := fiveVFive("replay-1", 0)
	m.mutators = []string{"SomeMutator"}
	r := m.result()
	first := recordBoth(t, st, f, r)

	calls := 0
	again := func(c ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
		calls++
		o, b, err := applyModel(r)(c, prior, bias)
		return o, append(b, " but different"...), err
	}
	for range 3 {
		got, err := st.RecordResult(ctx, request(r), again)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Replayed {
			t.Fatal("a replay was not reported as Replayed")
		}
		if string(got.Response) != string(first.Response) {
			t.Fatalf("replay answered\n %s\nnot the first response\n %s", got.Response, first.Response)
		}
		if !got.Context.Equal(first.Context) {
			t.Fatalf("replay context %q, first %q", got.Context, first.Context)
		}
		// The caller may scribble on what it got without changing what is stored.
		for i := range got.Response {
			got.Response[i] = 'x'
		}
	}
	if calls != 0 {
		t.Fatalf("apply was called %d times for replays", calls)
	}
	assertRef(t, st, f)
	rep, err := st.Rebuild(ctx, "tdm", replayModel, nil)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Results != 1 {
		t.Fatalf("history holds %d results after replays, want 1", rep.Results)
	}
	assertRef(t, st, f)
}

func testConflictOtherBody(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	r := fiveVFive("dup", 0).result()
	recordBoth(t, st, f, r)

	other := fiveVFive("dup", 0)
	other.winner = 1
	other.teams[0][0] = "newcomer"
	called := false
	_, err := st.RecordResult(ctx, request(other.result()), func(c ratings.Context, p map[ratings.Participant]ratings.Rating, b ratings.BiasTable) (ratings.Outcome, []byte, error) {
		called = true
		return applyModel(other.result())(c, p, b)
	})
	wantCode(t, err, apperr.Conflict)
	if called {
		t.Fatal("apply was called for a conflicting result")
	}
	assertRef(t, st, f)
	got, err := st.Ratings(ctx, mustContext(t, "tdm"), []ratings.Participant{{ID: "newcomer"}})
	if err != nil || len(got) != 0 {
		t.Fatalf("the conflicting result left a rating: %v %v", got, err)
	}
	// Same hash again is still a replay of the first.
	got2, err := st.RecordResult(ctx, request(r), applyModel(r))
	if err != nil || !got2.Replayed {
		t.Fatalf("replay after a conflict: %+v %v", got2, err)
	}
	rep, err := st.Rebuild(ctx, "tdm", replayModel, nil)
	if err != nil || rep.Results != 1 {
		t.Fatalf("rebuild after a conflict: %+v %v", rep, err)
	}
	assertRef(t, st, f)
}

func testEmptyResponse(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	r := fiveVFive("empty", 0).result()
	for i := range 2 {
		rec, err := st.RecordResult(ctx, request(r), func(c ratings.Context, p map[ratings.Participant]ratings.Rating, b ratings.BiasTable) (ratings.Outcome, []byte, error) {
			o, _, err := applyModel(r)(c, p, b)
			return o, nil, err
		})
		if err != nil || rec.Replayed != (i == 1) || len(rec.Response) != 0 {
			t.Fatalf("call %d with an empty response: %+v %v", i, rec, err)
		}
	}
}

var errBoom = errors.New("storetest: apply failed on purpose")

func testApplyErrorStoresNothing(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	m := fiveVFive("fails-once", 0)
	m.mutators = []string{"BrandNewMutator"}
	m.teams[1][0] = "bot:Gorge"
	r := m.result()
	// apply computes a full outcome and then fails: the store must drop all of it.
	_, err := st.RecordResult(ctx, request(r), func(c ratings.Context, p map[ratings.Participant]ratings.Rating, b ratings.BiasTable) (ratings.Outcome, []byte, error) {
		o, body, err := applyModel(r)(c, p, b)
		if err != nil {
			t.Error(err)
		}
		return o, body, fmt.Errorf("wrapped: %w", errBoom)
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("RecordResult returned %v, want apply's error", err)
	}
	empty := newRef()
	assertRef(t, st, empty)
	c := mustContext(t, "tdm")
	got, err := st.Ratings(ctx, c, []ratings.Participant{{ID: "p00"}, {ID: "Gorge", Bot: true}})
	if err != nil || len(got) != 0 {
		t.Fatalf("a failed apply left ratings: %v %v", got, err)
	}
	if prs, err := st.PlayerRatings(ctx, "p00"); err != nil || len(prs) != 0 {
		t.Fatalf("a failed apply left ratings: %v %v", prs, err)
	}
	pol, err := st.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Mutators()) != 0 {
		t.Fatalf("a failed apply recorded mutators: %v", pol.Mutators())
	}
	if mean, n, err := st.BotMean(ctx, c); err != nil || n != 0 || mean != 50 {
		t.Fatalf("a failed apply left a bot: %v %v %v", mean, n, err)
	}
	rep, err := st.Rebuild(ctx, "tdm", replayModel, nil)
	if err != nil || rep.Results != 0 || rep.Contexts != 0 {
		t.Fatalf("a failed apply left history: %+v %v", rep, err)
	}

	// The match id was not taken: a retry with a working apply is recorded normally, and
	// sees the table as empty as the first try did.
	f := newRef()
	recordBoth(t, st, f, r)
	assertRef(t, st, f)
	pol, err = st.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.Status("brandnewmutator"); got != ratings.MutatorUnknown || len(pol.Mutators()) != 1 {
		t.Fatalf("policy after the retry: %v", pol.Mutators())
	}
}

func testBadOutcomeStoresNothing(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	r := fiveVFive("bad-outcome", 0).result()
	bad := []func(o *ratings.Outcome){
		func(o *ratings.Outcome) { o.Updates[0].Participant = ratings.Participant{ID: "stranger"} },
		func(o *ratings.Outcome) { o.Updates = append(o.Updates, o.Updates[0]) },
		func(o *ratings.Outcome) { o.Updates[3].After.Skill = math.NaN() },
		func(o *ratings.Outcome) { o.BiasUpdate.Key.SideA = "aliens" },
		func(o *ratings.Outcome) { o.BiasUpdate.Wins = 2 },
	}
	for i, spoil := range bad {
		_, err := st.RecordResult(ctx, request(r), func(c ratings.Context, p map[ratings.Participant]ratings.Rating, b ratings.BiasTable) (ratings.Outcome, []byte, error) {
			o, body, err := applyModel(r)(c, p, b)
			spoil(&o)
			return o, body, err
		})
		if err == nil {
			t.Fatalf("outcome %d: a malformed outcome was stored", i)
		}
	}
	assertRef(t, st, newRef())
	f := newRef()
	recordBoth(t, st, f, r)
	assertRef(t, st, f)
}

func testInvalidResult(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	never := func(ratings.Context, map[ratings.Participant]ratings.Rating, ratings.BiasTable) (ratings.Outcome, []byte, error) {
		t.Error("apply was called for an invalid result")
		return ratings.Outcome{}, nil, errBoom
	}
	for name, spoil := range map[string]func(*ratings.Result){
		"game type": func(r *ratings.Result) { r.GameType = "not a name" },
		"mutator":   func(r *ratings.Result) { r.Mutators = []string{"ok", "bad,name"} },
		"teams":     func(r *ratings.Result) { r.Teams = r.Teams[:1] },
		"duplicate": func(r *ratings.Result) { r.Teams[1].Players[0].ID = r.Teams[0].Players[0].ID },
		"match id":  func(r *ratings.Result) { r.MatchID = "" },
	} {
		r := fiveVFive("invalid", 0).result()
		spoil(&r)
		_, err := st.RecordResult(ctx, request(r), never)
		if apperr.CodeOf(err) != apperr.Invalid {
			t.Fatalf("%s: got %v, want an Invalid error", name, err)
		}
	}
	assertRef(t, st, newRef())
	pol, err := st.Policy(ctx)
	if err != nil || len(pol.Mutators()) != 0 {
		t.Fatalf("an invalid result recorded mutators: %v %v", pol.Mutators(), err)
	}
}
