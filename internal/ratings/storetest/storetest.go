// Package storetest is the contract suite every ratings.Store passes: the in-memory store in
// package ratings and the Postgres store in package db run it from their tests. It checks the
// store against a reference kept in the test (ratings.State per context, applied one result
// at a time with ratings.DefaultModel): what the store stores and returns bit for bit, and what
// the model computes from it to rounding (see sameRating).
package storetest

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Run runs the contract suite. open is called once per subtest and must return an empty store
// of its own (a fresh database for a database store), closed by open's own t.Cleanup. Subtests
// run in parallel.
func Run(t *testing.T, open func(t *testing.T) ratings.Store) {
	tests := []struct {
		name string
		fn   func(*testing.T, ratings.Store)
	}{
		{"Name", testName},
		{"Ping", testPing},
		{"RecordAndRead", testRecordAndRead},
		{"EveryField", testEveryField},
		{"ReplaySameBody", testReplaySameBody},
		{"ConflictOtherBody", testConflictOtherBody},
		{"EmptyResponse", testEmptyResponse},
		{"ApplyErrorStoresNothing", testApplyErrorStoresNothing},
		{"BadOutcomeStoresNothing", testBadOutcomeStoresNothing},
		{"InvalidResult", testInvalidResult},
		{"ContextsByMutators", testContextsByMutators},
		{"SetMutatorAndPolicy", testSetMutatorAndPolicy},
		{"RebuildResplitsHistory", testRebuildResplits},
		{"RebuildEqualsIncremental", testRebuildEqualsIncremental},
		{"RebuildReplacesContexts", testRebuildReplacesContexts},
		{"RebuildFailureChangesNothing", testRebuildFailure},
		{"Leaderboard", testLeaderboard},
		{"LeaderboardConservative", testLeaderboardConservative},
		{"Bias", testBias},
		{"BotMean", testBotMean},
		{"PlayerRatings", testPlayerRatings},
		{"RatingsBatch", testRatingsBatch},
		{"ConcurrentResults", testConcurrentResults},
		{"ConcurrentReplays", testConcurrentReplays},
		{"ConcurrentConflicts", testConcurrentConflicts},
		{"ConcurrentRebuild", testConcurrentRebuild},
		{"DeleteResult", testDeleteResult},
		{"ConcurrentDelete", testConcurrentDelete},
		{"History", testHistory},
		{"Tunings", testTunings},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.fn(t, open(t))
		})
	}
}

// --- building results ---------------------------------------------------------------------

// match describes a result briefly: participants are "id" for players and "bot:Name" for bots.
type match struct {
	id       string
	gameType string
	mutators []string
	mapName  string
	sides    [2]string
	teams    [2][]string
	winner   int // 0 or 1, or -1 for a draw
}

func (m match) result() ratings.Result {
	r := ratings.Result{
		MatchID:   m.id,
		GameType:  cmp.Or(m.gameType, "tdm"),
		Mutators:  slices.Clone(m.mutators),
		Map:       cmp.Or(m.mapName, "Deck17"),
		DurationS: 1200,
	}
	for ti, names := range m.teams {
		r.Teams = append(r.Teams, Team(cmp.Or(m.sides[ti], [2]string{"red", "blue"}[ti]), names...))
	}
	if m.winner >= 0 {
		w := m.winner
		r.Winner = &w
	}
	return r
}

// Team is a side of a 1200-second match in which everyone played throughout. A name is a
// player id, or "bot:Name" for a bot. Other packages' tests build results with it too.
func Team(side string, names ...string) ratings.Team {
	team := ratings.Team{Side: side}
	for _, n := range names {
		p := ratings.Player{JoinedS: 0, LeftS: 1200}
		if b, ok := strings.CutPrefix(n, "bot:"); ok {
			p.Bot = b
		} else {
			p.ID = n
		}
		team.Players = append(team.Players, p)
	}
	return team
}

// hashOf is the request's body hash: any function of the content will do.
func hashOf(r ratings.Result) [sha256.Size]byte {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	return sha256.Sum256(b)
}

func request(r ratings.Result) ratings.RecordRequest {
	return ratings.RecordRequest{Result: r, BodyHash: hashOf(r)}
}

// render is the response a test's apply stores: the context, the prediction and every update,
// with exact floats, so comparing two responses compares what apply saw.
func render(c ratings.Context, o ratings.Outcome) []byte {
	type upd struct {
		Participant string
		Team        int
		Before      ratings.Rating
		After       ratings.Rating
	}
	v := struct {
		Context        string
		WinProbability [2]float64
		Bias           float64
		BiasUpdate     ratings.BiasEntry
		Updates        []upd
	}{Context: c.Key(), WinProbability: o.WinProbability, Bias: o.Bias, BiasUpdate: o.BiasUpdate}
	for _, u := range o.Updates {
		v.Updates = append(v.Updates, upd{u.Participant.String(), u.Team, u.Before, u.After})
	}
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// applyModel is the ApplyFunc the service uses, with the default model.
func applyModel(r ratings.Result) ratings.ApplyFunc {
	m := ratings.DefaultModel()
	return func(c ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
		o, err := m.Apply(prior, bias, r)
		if err != nil {
			return ratings.Outcome{}, nil, err
		}
		return o, render(c, o), nil
	}
}

// replayModel is the ReplayFunc the service uses, with the default model.
var replayModel = ratings.Replayer(ratings.DefaultModel())

// --- the reference ------------------------------------------------------------------------

// ref is what the store should hold: the model applied one result at a time.
type ref struct {
	policy  *ratings.MutatorPolicy
	states  map[string]*ratings.State
	history []ratings.Result
	seen    map[ratings.Participant]bool
}

func newRef() *ref {
	return &ref{policy: &ratings.MutatorPolicy{}, states: map[string]*ratings.State{}, seen: map[ratings.Participant]bool{}}
}

// record applies r and returns the context and the response the store should give.
func (f *ref) record(t *testing.T, r ratings.Result) (ratings.Context, []byte) {
	t.Helper()
	c, unknown, err := f.policy.Context(r.GameType, r.Mutators)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	for _, m := range unknown {
		f.policy.Observe(m)
	}
	s := f.states[c.Key()]
	if s == nil {
		s = &ratings.State{}
		f.states[c.Key()] = s
	}
	prior := make(map[ratings.Participant]ratings.Rating)
	for p, rt := range s.Ratings {
		prior[p] = rt
	}
	o, err := ratings.DefaultModel().Apply(prior, s.Bias, r)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	s.Record(o)
	f.history = append(f.history, r)
	for _, u := range o.Updates {
		f.seen[u.Participant] = true
	}
	return c, render(c, o)
}

// rebuild replays the game type's history under the current policy.
func (f *ref) rebuild(t *testing.T, gameType string) {
	t.Helper()
	var h []ratings.Result
	for _, r := range f.history {
		if strings.EqualFold(r.GameType, gameType) {
			h = append(h, r)
		}
	}
	states, _, err := ratings.ReplayByContext(ratings.DefaultModel(), f.policy, h)
	if err != nil {
		t.Fatalf("reference rebuild: %v", err)
	}
	for k := range f.states {
		if c, _ := ratings.ParseContextKey(k); c.GameType == strings.ToLower(gameType) {
			delete(f.states, k)
		}
	}
	for k, s := range states {
		f.states[k] = s
	}
}

// recordBoth records r in the store and the reference and checks the store's answer.
func recordBoth(t *testing.T, st ratings.Store, f *ref, r ratings.Result) ratings.Recorded {
	t.Helper()
	wantCtx, want := f.record(t, r)
	got, err := st.RecordResult(context.Background(), request(r), applyModel(r))
	if err != nil {
		t.Fatalf("RecordResult(%s): %v", r.MatchID, err)
	}
	if got.Replayed {
		t.Fatalf("RecordResult(%s): Replayed on the first call", r.MatchID)
	}
	if !got.Context.Equal(wantCtx) {
		t.Fatalf("RecordResult(%s): context %q, want %q", r.MatchID, got.Context, wantCtx)
	}
	if !sameResponse(got.Response, want) {
		t.Fatalf("RecordResult(%s): apply saw other ratings or another bias table than the reference:\n got %s\nwant %s", r.MatchID, got.Response, want)
	}
	return got
}

// Rounding. The models that learn context-wide terms (ratings.Terms) read sums over the bias
// table's cells, and a store may add them up in another order than the reference (the
// Postgres store sums a cell's shards, a rebuild adds each cell's updates together): the
// sums, and so what is learnt from them, can differ in the last bits. The suite compares
// what a model computed to 1e-9, relative; what a store was given to keep, bit for bit.
const tolerance = 1e-9

func near(a, b float64) bool {
	return a == b || math.Abs(a-b) <= tolerance*max(1, math.Abs(a), math.Abs(b))
}

// sameRating reports whether two ratings are equal to rounding, with the same games.
func sameRating(a, b ratings.Rating) bool {
	return near(a.Skill, b.Skill) && near(a.Offset, b.Offset) && near(a.Commander, b.Commander) &&
		near(a.SkillG, b.SkillG) && near(a.CommanderG, b.CommanderG) && near(a.Sigma, b.Sigma) &&
		near(a.OffsetSigma, b.OffsetSigma) && near(a.CommanderSigma, b.CommanderSigma) && a.Games == b.Games
}

// sameResponse reports whether two of render's responses are equal to rounding: the same JSON
// but for numbers within the tolerance.
func sameResponse(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	return sameJSON(x, y)
}

func sameJSON(x, y any) bool {
	switch x := x.(type) {
	case float64:
		y, ok := y.(float64)
		return ok && near(x, y)
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameJSON(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			if !sameJSON(v, y[k]) {
				return false
			}
		}
		return true
	}
	return x == y
}

// sameBits reports whether two ratings are identical bit for bit.
func sameBits(a, b ratings.Rating) bool {
	return math.Float64bits(a.Skill) == math.Float64bits(b.Skill) &&
		math.Float64bits(a.Offset) == math.Float64bits(b.Offset) &&
		math.Float64bits(a.Commander) == math.Float64bits(b.Commander) &&
		math.Float64bits(a.SkillG) == math.Float64bits(b.SkillG) &&
		math.Float64bits(a.CommanderG) == math.Float64bits(b.CommanderG) &&
		math.Float64bits(a.Sigma) == math.Float64bits(b.Sigma) &&
		math.Float64bits(a.OffsetSigma) == math.Float64bits(b.OffsetSigma) &&
		math.Float64bits(a.CommanderSigma) == math.Float64bits(b.CommanderSigma) &&
		a.Games == b.Games
}

// assertRef checks that the store holds exactly the reference's ratings: every participant's
// rating in every context, to rounding, and no context or participant more.
func assertRef(t *testing.T, st ratings.Store, f *ref) {
	t.Helper()
	ctx := context.Background()
	playerContexts := map[string][]string{}
	for key, s := range f.states {
		c, err := ratings.ParseContextKey(key)
		if err != nil {
			t.Fatal(err)
		}
		ps := s.Participants()
		got, err := st.Ratings(ctx, c, ps)
		if err != nil {
			t.Fatalf("Ratings(%s): %v", key, err)
		}
		if len(got) != len(ps) {
			t.Fatalf("Ratings(%s): %d of %d participants", key, len(got), len(ps))
		}
		players, bots := 0, 0
		for _, p := range ps {
			if !sameRating(got[p], s.Ratings[p]) {
				t.Fatalf("%s %v: store %+v, reference %+v", key, p, got[p], s.Ratings[p])
			}
			if p.Bot {
				bots++
			} else {
				players++
				playerContexts[p.ID] = append(playerContexts[p.ID], key)
			}
		}
		lb, err := st.Leaderboard(ctx, c, players+10, ratings.Ranking{})
		if err != nil {
			t.Fatalf("Leaderboard(%s): %v", key, err)
		}
		if len(lb) != players {
			t.Fatalf("Leaderboard(%s): %d players, reference has %d", key, len(lb), players)
		}
		if _, n, err := st.BotMean(ctx, c); err != nil || n != bots {
			t.Fatalf("BotMean(%s): %d bots (err %v), reference has %d", key, n, err, bots)
		}
	}
	for p := range f.seen {
		if p.Bot {
			continue
		}
		got, err := st.PlayerRatings(ctx, p.ID)
		if err != nil {
			t.Fatalf("PlayerRatings(%s): %v", p.ID, err)
		}
		var keys []string
		for _, cr := range got {
			keys = append(keys, cr.Context.Key())
			if !sameRating(cr.Rating, f.states[cr.Context.Key()].Ratings[p]) {
				t.Fatalf("PlayerRatings(%s) in %s: %+v, reference %+v", p.ID, cr.Context, cr.Rating, f.states[cr.Context.Key()].Ratings[p])
			}
		}
		want := playerContexts[p.ID]
		slices.Sort(want)
		if !slices.Equal(keys, want) {
			t.Fatalf("PlayerRatings(%s): contexts %q, reference %q", p.ID, keys, want)
		}
	}
}

func mustContext(t *testing.T, gameType string, mutators ...string) ratings.Context {
	t.Helper()
	c, err := ratings.NewContext(gameType, mutators)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func wantCode(t *testing.T, err error, code apperr.Code) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want %s", code)
	}
	if got := apperr.CodeOf(err); got != code {
		t.Fatalf("got %s (%v), want %s", got, err, code)
	}
}

// seed writes crafted states into the store through a rebuild of gameType, whose history
// must be empty: the way to give participants exact ratings.
func seed(t *testing.T, st ratings.Store, gameType string, states map[string]*ratings.State) {
	t.Helper()
	rep, err := st.Rebuild(context.Background(), gameType, func(*ratings.MutatorPolicy, map[string]*ratings.State, iter.Seq[ratings.Result]) (map[string]*ratings.State, error) {
		return states, nil
	}, nil)
	if err != nil {
		t.Fatalf("seeding through Rebuild: %v", err)
	}
	if rep.Results != 0 || rep.Contexts != len(states) {
		t.Fatalf("seeding through Rebuild: report %+v", rep)
	}
}

// --- the tests ----------------------------------------------------------------------------

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
	rng := rand.New(rand.NewPCG(7, 11))
	num := func() float64 { return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(7)-3)) }
	pos := func() float64 { return math.Abs(num()) }
	rating := func() ratings.Rating {
		return ratings.Rating{Skill: num(), Offset: num(), Commander: num(), SkillG: pos(), CommanderG: pos(), Games: 1 + rng.IntN(1000),
			Sigma: pos(), OffsetSigma: pos(), CommanderSigma: pos()}
	}
	m := fiveVFive("every-1", 0)
	m.teams[1][4] = "bot:Jakob"
	r := m.result()
	state := &ratings.State{Ratings: map[ratings.Participant]ratings.Rating{}}
	for _, p := range ratings.ResultParticipants(r) {
		state.Ratings[p] = rating()
	}
	// Zeros of both signs, which a store may keep in its own way, read back with their bits.
	negZero := math.Copysign(0, -1)
	state.Ratings[ratings.Participant{ID: "p01"}] = ratings.Rating{Skill: negZero, Offset: negZero, Commander: 0, SkillG: 0, Games: 1, Sigma: negZero}
	key := ratings.ResultBiasKey(r)
	terms := func() ratings.Terms {
		return ratings.Terms{Presence: num(), PresenceWeight: pos(), Newcomer: num(), NewcomerWeight: pos(), Scale: num(), ScaleWeight: pos()}
	}
	cell := ratings.BiasCell{Wins: 12.5, Games: 31, Terms: terms()}
	other := key
	other.Map = "elsewhere"
	for _, e := range []ratings.BiasEntry{{Key: key, BiasCell: cell}, {Key: other, BiasCell: ratings.BiasCell{Wins: 3, Games: 4, Terms: terms()}}} {
		if err := state.Bias.Set(e); err != nil {
			t.Fatal(err)
		}
	}
	seed(t, st, "tdm", map[string]*ratings.State{"tdm": state})

	c := mustContext(t, "tdm")
	ps := ratings.ResultParticipants(r)
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

	// apply sees the same ratings, cell and side pair total; what it returns is kept whole.
	want := rating()
	update := ratings.BiasCell{Wins: 1, Games: 1, Terms: terms()}
	_, err = st.RecordResult(ctx, request(r), func(_ ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
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
	got, err = st.Ratings(ctx, c, ps)
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
	r2 := m.result()
	_, err = st.RecordResult(ctx, request(r2), func(_ ratings.Context, _ map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
		if g, w := bias.Cell(key), state.Bias.Cell(key); g != w {
			return ratings.Outcome{}, nil, fmt.Errorf("after a bias update, apply was given the cell %+v, want %+v", g, w)
		}
		// A total is a sum whose order a store may choose: equal to rounding.
		g, w := bias.Total(key), state.Bias.Total(key)
		near := func(a, b float64) bool { return math.Abs(a-b) <= 1e-12*max(1, math.Abs(b)) }
		if g.Wins != w.Wins || g.Games != w.Games || !near(g.Terms.Presence, w.Terms.Presence) || !near(g.Terms.PresenceWeight, w.Terms.PresenceWeight) ||
			!near(g.Terms.Newcomer, w.Terms.Newcomer) || !near(g.Terms.NewcomerWeight, w.Terms.NewcomerWeight) ||
			!near(g.Terms.Scale, w.Terms.Scale) || !near(g.Terms.ScaleWeight, w.Terms.ScaleWeight) {
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

func testContextsByMutators(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	for name, gameplay := range map[string]bool{"InstaGib": true, "anticheat": false} {
		info, err := st.SetMutator(ctx, name, gameplay)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.policy.Set(name, gameplay); err != nil {
			t.Fatal(err)
		}
		if info.Name != strings.ToLower(name) {
			t.Fatalf("SetMutator(%q) stored %q", name, info.Name)
		}
	}
	cases := []struct {
		mutators []string
		gameType string
		want     string
	}{
		{[]string{"instagib", "anticheat", "NewMut"}, "tdm", "tdm+instagib"},
		{[]string{"AntiCheat"}, "tdm", "tdm"},
		{[]string{"newmut", "Other"}, "TDM", "tdm"},
		{[]string{"INSTAGIB", "instagib"}, "tdm", "tdm+instagib"},
		{nil, "ctf", "ctf"},
		{[]string{"instagib"}, "ctf", "ctf+instagib"},
	}
	for i, tc := range cases {
		m := fiveVFive(fmt.Sprintf("ctx-%d", i), i%3)
		m.gameType, m.mutators = tc.gameType, tc.mutators
		rec := recordBoth(t, st, f, m.result())
		if rec.Context.Key() != tc.want {
			t.Fatalf("mutators %q in %s: context %q, want %q", tc.mutators, tc.gameType, rec.Context, tc.want)
		}
	}
	assertRef(t, st, f)
	pol, err := st.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []ratings.MutatorInfo{
		{Name: "anticheat", Status: ratings.MutatorNeutral},
		{Name: "instagib", Status: ratings.MutatorGameplay},
		{Name: "newmut", Status: ratings.MutatorUnknown},
		{Name: "other", Status: ratings.MutatorUnknown},
	}
	if got := pol.Mutators(); !slices.Equal(got, want) {
		t.Fatalf("policy %v, want %v", got, want)
	}
	// p02 played in tdm, tdm+instagib, ctf and ctf+instagib.
	prs, err := st.PlayerRatings(ctx, "p02")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, cr := range prs {
		keys = append(keys, cr.Context.Key())
	}
	if want := []string{"ctf", "ctf+instagib", "tdm", "tdm+instagib"}; !slices.Equal(keys, want) {
		t.Fatalf("PlayerRatings(p02) contexts %q, want %q", keys, want)
	}
}

func testSetMutatorAndPolicy(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	info, err := st.SetMutator(ctx, "LowGrav", true)
	if err != nil {
		t.Fatal(err)
	}
	if info != (ratings.MutatorInfo{Name: "lowgrav", Status: ratings.MutatorGameplay}) {
		t.Fatalf("SetMutator: %+v", info)
	}
	info, err = st.SetMutator(ctx, "lowgrav", false)
	if err != nil || info.Status != ratings.MutatorNeutral {
		t.Fatalf("SetMutator again: %+v %v", info, err)
	}
	for _, bad := range []string{"", "two words", "comma,name", "plus+name", strings.Repeat("m", 65)} {
		_, err := st.SetMutator(ctx, bad, true)
		wantCode(t, err, apperr.Invalid)
	}
	pol, err := st.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := pol.Mutators(); !slices.Equal(got, []ratings.MutatorInfo{{Name: "lowgrav", Status: ratings.MutatorNeutral}}) {
		t.Fatalf("policy %v", got)
	}
	// The policy is a copy.
	if err := pol.Set("instagib", true); err != nil {
		t.Fatal(err)
	}
	pol2, err := st.Policy(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if pol2.Status("instagib") != ratings.MutatorUnknown || len(pol2.Mutators()) != 1 {
		t.Fatalf("changing the returned policy changed the store's: %v", pol2.Mutators())
	}
	// SetMutator changes no rating: results recorded before stay where they were.
	f := newRef()
	m := fiveVFive("before-set", 0)
	m.mutators = []string{"vampire"}
	recordBoth(t, st, f, m.result())
	if _, err := st.SetMutator(ctx, "vampire", true); err != nil {
		t.Fatal(err)
	}
	assertRef(t, st, f)
}

func testRebuildResplits(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	for i := range 6 {
		m := fiveVFive(fmt.Sprintf("rs-%d", i), i)
		if i%2 == 0 {
			m.mutators = []string{"LowGrav"}
		}
		m.winner = i % 2
		rec := recordBoth(t, st, f, m.result())
		if rec.Context.Key() != "tdm" {
			t.Fatalf("an unknown mutator split the context: %q", rec.Context)
		}
	}
	other := fiveVFive("ctf-1", 0)
	other.gameType, other.mutators = "ctf", []string{"lowgrav"}
	recordBoth(t, st, f, other.result())

	if _, err := st.SetMutator(ctx, "lowgrav", true); err != nil {
		t.Fatal(err)
	}
	if err := f.policy.Set("lowgrav", true); err != nil {
		t.Fatal(err)
	}
	assertRef(t, st, f) // nothing moves until the rebuild

	rep, err := st.Rebuild(ctx, "TDM", replayModel, nil)
	if err != nil {
		t.Fatal(err)
	}
	f.rebuild(t, "tdm")
	if want := (ratings.RebuildReport{Results: 6, Contexts: 2, Ratings: len(f.states["tdm"].Ratings) + len(f.states["tdm+lowgrav"].Ratings)}); rep != want {
		t.Fatalf("report %+v, want %+v", rep, want)
	}
	assertRef(t, st, f) // ctf is still the old split: it was not rebuilt
	if _, ok := f.states["ctf"]; !ok {
		t.Fatal("reference lost ctf")
	}

	// New results follow the new split and see the rebuilt ratings and bias table.
	m := fiveVFive("rs-after", 2)
	m.mutators = []string{"lowgrav"}
	if rec := recordBoth(t, st, f, m.result()); rec.Context.Key() != "tdm+lowgrav" {
		t.Fatalf("context %q after the rebuild", rec.Context)
	}
	assertRef(t, st, f)
}

// league is a varied history: bots, commanders, late joiners, swapped sides, draws, maps.
func league(n int, seed uint64, gameType string) []ratings.Result {
	rng := rand.New(rand.NewPCG(seed, 7))
	var out []ratings.Result
	for i := range n {
		names := make([]string, 14)
		for j := range 12 {
			names[j] = fmt.Sprintf("pl-%02d", j)
		}
		names[12], names[13] = "bot:Alpha", "bot:Beta"
		rng.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
		size := 3 + rng.IntN(3)
		r := ratings.Result{
			MatchID:   fmt.Sprintf("%s-%03d", gameType, i),
			GameType:  gameType,
			Map:       []string{"ns2_tram", "ns2_veil", "NS2_Summit"}[rng.IntN(3)],
			DurationS: float64(600 + rng.IntN(1800)),
		}
		sides := [2]string{"marines", "aliens"}
		if rng.IntN(2) == 0 {
			sides = [2]string{"Aliens", "Marines"}
		}
		for ti := range 2 {
			team := ratings.Team{Side: sides[ti]}
			for j := range size {
				p := ratings.Player{LeftS: r.DurationS}
				if rng.IntN(4) == 0 {
					p.JoinedS = math.Round(rng.Float64() * r.DurationS / 2)
				}
				if j == 0 && ti == 0 {
					p.CommanderS = math.Round((p.LeftS - p.JoinedS) * rng.Float64())
				}
				name := names[ti*size+j]
				if b, ok := strings.CutPrefix(name, "bot:"); ok {
					p.Bot = b
				} else {
					p.ID = name
				}
				team.Players = append(team.Players, p)
			}
			r.Teams = append(r.Teams, team)
		}
		if w := rng.IntN(5); w < 2 {
			r.Winner = &w
		}
		out = append(out, r)
	}
	return out
}

func testRebuildEqualsIncremental(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	history := league(41, 1, "ns2")
	for _, r := range history[:40] {
		recordBoth(t, st, f, r) // each response equals the reference's: same prior, same bias
	}
	assertRef(t, st, f)
	for range 2 {
		rep, err := st.Rebuild(ctx, "ns2", replayModel, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Results != 40 || rep.Contexts != 1 || rep.Ratings != 14 {
			t.Fatalf("report %+v", rep)
		}
		assertRef(t, st, f) // rebuilt ratings equal the incremental ones
	}
	// The rebuilt bias table is the incremental one: the next prediction agrees.
	recordBoth(t, st, f, history[40])
	assertRef(t, st, f)
	// Idempotency survives a rebuild.
	got, err := st.RecordResult(ctx, request(history[3]), applyModel(history[3]))
	if err != nil || !got.Replayed {
		t.Fatalf("replay after rebuild: %+v %v", got, err)
	}
	rep, err := st.Rebuild(ctx, "ns2", replayModel, nil)
	if err != nil || rep.Results != 41 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	assertRef(t, st, f)
}

func testRebuildReplacesContexts(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	if _, err := st.SetMutator(ctx, "instagib", true); err != nil {
		t.Fatal(err)
	}
	_ = f.policy.Set("instagib", true)
	for i := range 4 {
		m := fiveVFive(fmt.Sprintf("rc-%d", i), i)
		m.mutators = []string{"instagib"}
		m.teams[1][0] = "bot:Zeta"
		recordBoth(t, st, f, m.result())
	}
	c := fiveVFive("ctf", 0)
	c.gameType = "ctf"
	recordBoth(t, st, f, c.result())

	if _, err := st.SetMutator(ctx, "instagib", false); err != nil {
		t.Fatal(err)
	}
	_ = f.policy.Set("instagib", false)
	var phases []ratings.Progress
	rep, err := st.Rebuild(ctx, "tdm", replayModel, func(p ratings.Progress) { phases = append(phases, p) })
	if err != nil {
		t.Fatal(err)
	}
	f.rebuild(t, "tdm")
	if rep.Results != 4 || rep.Contexts != 1 {
		t.Fatalf("report %+v", rep)
	}
	assertRef(t, st, f)
	gone := mustContext(t, "tdm", "instagib")
	if lb, err := st.Leaderboard(ctx, gone, 100, ratings.Ranking{}); err != nil || len(lb) != 0 {
		t.Fatalf("context tdm+instagib survived its rebuild: %v %v", lb, err)
	}
	if _, n, err := st.BotMean(ctx, gone); err != nil || n != 0 {
		t.Fatalf("bots of tdm+instagib survived its rebuild: %v %v", n, err)
	}
	if len(phases) == 0 {
		t.Fatal("progress was never called")
	}
	for _, p := range phases {
		if p.Phase == "" || p.Done < 0 || p.Done > p.Total {
			t.Fatalf("progress %+v", p)
		}
	}
	// A game type nobody played: nothing to replay, nothing written.
	rep, err = st.Rebuild(ctx, "assault", replayModel, nil)
	if err != nil || rep != (ratings.RebuildReport{}) {
		t.Fatalf("rebuild of an empty game type: %+v %v", rep, err)
	}
	_, err = st.Rebuild(ctx, "not a game", replayModel, nil)
	wantCode(t, err, apperr.Invalid)
	assertRef(t, st, f)
}

func testRebuildFailure(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	for _, r := range league(10, 2, "ns2") {
		recordBoth(t, st, f, r)
	}
	_, err := st.Rebuild(ctx, "ns2", func(*ratings.MutatorPolicy, map[string]*ratings.State, iter.Seq[ratings.Result]) (map[string]*ratings.State, error) {
		return nil, errBoom
	}, nil)
	if !errors.Is(err, errBoom) {
		t.Fatalf("Rebuild returned %v, want the replay's error", err)
	}
	assertRef(t, st, f)
	for name, states := range map[string]map[string]*ratings.State{
		"other game type": {"ctf": {Ratings: map[ratings.Participant]ratings.Rating{{ID: "x"}: {Games: 1}}}},
		"malformed key":   {"ns2+b,a": {}},
		"infinite rating": {"ns2": {Ratings: map[ratings.Participant]ratings.Rating{{ID: "x"}: {Skill: math.Inf(1)}}}},
	} {
		_, err := st.Rebuild(ctx, "ns2", func(*ratings.MutatorPolicy, map[string]*ratings.State, iter.Seq[ratings.Result]) (map[string]*ratings.State, error) {
			return states, nil
		}, nil)
		if err == nil {
			t.Fatalf("%s: Rebuild accepted it", name)
		}
		assertRef(t, st, f)
	}
	// The history it read is all there, in order.
	var seen []string
	_, err = st.Rebuild(ctx, "ns2", func(p *ratings.MutatorPolicy, from map[string]*ratings.State, h iter.Seq[ratings.Result]) (map[string]*ratings.State, error) {
		return replayModel(p, from, func(yield func(ratings.Result) bool) {
			for r := range h {
				seen = append(seen, r.MatchID)
				if !yield(r) {
					return
				}
			}
		})
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, r := range f.history {
		want = append(want, r.MatchID)
	}
	if !slices.Equal(seen, want) {
		t.Fatalf("rebuild read %q, want %q", seen, want)
	}
	assertRef(t, st, f)
}

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

// concurrentLeague is 200 results over 20 players (5v5), in 8 slices for 8 goroutines.
func concurrentLeague() ([][]ratings.Result, map[string]int) {
	rng := rand.New(rand.NewPCG(42, 42))
	games := map[string]int{}
	parts := make([][]ratings.Result, 8)
	for i := range 200 {
		perm := rng.Perm(20)
		var m match
		m.id = fmt.Sprintf("conc-%03d", i)
		for j, k := range perm[:10] {
			name := fmt.Sprintf("p%02d", k)
			m.teams[j/5] = append(m.teams[j/5], name)
			games[name]++
		}
		m.winner = rng.IntN(3) - 1
		m.mapName = []string{"a", "b"}[i%2]
		parts[i%8] = append(parts[i%8], m.result())
	}
	return parts, games
}

func testConcurrentResults(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	parts, games := concurrentLeague()
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for _, part := range parts {
		wg.Go(func() {
			for _, r := range part {
				if _, err := st.RecordResult(ctx, request(r), applyModel(r)); err != nil {
					errs <- fmt.Errorf("%s: %w", r.MatchID, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err) // a deadlock or a serialization failure the store did not retry
	}
	checkGames(t, st, games, 2000)
	rep, err := st.Rebuild(ctx, "tdm", replayModel, nil)
	if err != nil || rep.Results != 200 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	checkGames(t, st, games, 2000)
}

func checkGames(t *testing.T, st ratings.Store, games map[string]int, total int) {
	t.Helper()
	var ps []ratings.Participant
	for name := range games {
		ps = append(ps, ratings.Participant{ID: name})
	}
	got, err := st.Ratings(context.Background(), mustContext(t, "tdm"), ps)
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for name, n := range games {
		g := got[ratings.Participant{ID: name}].Games
		sum += g
		if g != n {
			t.Errorf("%s: %d games, want %d (a lost update)", name, g, n)
		}
	}
	if sum != total {
		t.Fatalf("%d games in all, want %d", sum, total)
	}
}

func testConcurrentReplays(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	r := fiveVFive("same-id", 0).result()
	const n = 8
	out := make([]ratings.Recorded, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i], errs[i] = st.RecordResult(ctx, request(r), applyModel(r)) })
	}
	wg.Wait()
	first := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("call %d: %v", i, errs[i])
		}
		if !out[i].Replayed {
			first++
		}
		if string(out[i].Response) != string(out[0].Response) {
			t.Fatalf("call %d answered differently", i)
		}
	}
	if first != 1 {
		t.Fatalf("%d calls recorded the result, want exactly 1", first)
	}
	f := newRef()
	f.record(t, r)
	assertRef(t, st, f)
}

func testConcurrentConflicts(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	bodies := [2]ratings.Result{fiveVFive("contested", 0).result(), fiveVFive("contested", 5).result()}
	const n = 8
	out := make([]ratings.Recorded, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { r := bodies[i%2]; out[i], errs[i] = st.RecordResult(ctx, request(r), applyModel(r)) })
	}
	wg.Wait()
	winner := -1
	for i := range n {
		if errs[i] == nil && !out[i].Replayed {
			if winner >= 0 {
				t.Fatalf("calls %d and %d both recorded the match", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatal("no call recorded the match")
	}
	for i := range n {
		switch {
		case i%2 == winner%2:
			if errs[i] != nil {
				t.Fatalf("call %d with the winner's body: %v", i, errs[i])
			}
		default:
			wantCode(t, errs[i], apperr.Conflict)
		}
	}
	f := newRef()
	f.record(t, bodies[winner%2])
	assertRef(t, st, f)
}

func testConcurrentRebuild(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	parts, _ := concurrentLeague()
	var wg sync.WaitGroup
	errs := make(chan error, 250)
	for _, part := range parts[:4] {
		wg.Go(func() {
			for _, r := range part {
				if _, err := st.RecordResult(ctx, request(r), applyModel(r)); err != nil {
					errs <- fmt.Errorf("%s: %w", r.MatchID, err)
				}
			}
		})
	}
	wg.Go(func() {
		for range 5 {
			if _, err := st.Rebuild(ctx, "tdm", replayModel, nil); err != nil {
				errs <- fmt.Errorf("rebuild: %w", err)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want, total := map[string]int{}, 0
	for _, part := range parts[:4] {
		for _, r := range part {
			for _, team := range r.Teams {
				for _, p := range team.Players {
					want[p.ID]++
					total++
				}
			}
		}
	}
	checkGames(t, st, want, total)
	rep, err := st.Rebuild(ctx, "tdm", replayModel, nil)
	if err != nil || rep.Results != 100 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	checkGames(t, st, want, total)
}

// --- benchmark ----------------------------------------------------------------------------

// BenchRecord measures RecordResult on st: 5v5 results, each with a new match id, from 16
// goroutines (b.SetParallelism), with the default model and a JSON response as the service
// renders one. It reports results/s and the 50th and 99th percentile latency of one call.
//
// Two sub-benchmarks: "disjoint", where each goroutine draws its players from 64 of its own
// (as in real play, where a player is in one match at a time, so concurrent results share no
// rating), and "shared", where all draw from one pool of 1,000 (concurrent results often share
// players and wait for each other's row locks: a stress case).
//
// On a shared machine results/s says as much about the neighbours as about the store, so it
// also reports CPU time per result: this process's (the benchmark's own work, JSON included,
// and the store's client side) as go-cpu-us/op, and, if serverCPU is not nil, the database
// server's as db-cpu-us/op (serverCPU returns the server's CPU time so far).
func BenchRecord(b *testing.B, st ratings.Store, serverCPU func() time.Duration) {
	b.Run("disjoint", func(b *testing.B) { benchRecord(b, st, 64, false, serverCPU) })
	b.Run("shared", func(b *testing.B) { benchRecord(b, st, 1000, true, serverCPU) })
}

// processCPU is the CPU time this process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchRecord(b *testing.B, st ratings.Store, pool int, shared bool, serverCPU func() time.Duration) {
	ctx := context.Background()
	var mu sync.Mutex
	var lat []time.Duration
	var seq, workers atomic.Int64
	run := time.Now().UnixNano()
	b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
	b.ReportAllocs()
	var db0 time.Duration
	if serverCPU != nil {
		db0 = serverCPU()
	}
	b.ResetTimer()
	start, go0 := time.Now(), processCPU()
	b.RunParallel(func(pb *testing.PB) {
		w := workers.Add(1)
		rng := rand.New(rand.NewPCG(uint64(w), uint64(run)))
		prefix := fmt.Sprintf("w%d-", w)
		if shared {
			prefix = ""
		}
		var mine []time.Duration
		for pb.Next() {
			n := seq.Add(1)
			var m match
			m.id = fmt.Sprintf("bench-%d-%d", run, n)
			m.mapName = []string{"ns2_tram", "ns2_veil", "ns2_summit"}[n%3]
			m.winner = int(n % 2)
			seen := map[int]bool{}
			for len(seen) < 10 {
				k := rng.IntN(pool)
				if !seen[k] {
					seen[k] = true
					m.teams[len(seen)%2] = append(m.teams[len(seen)%2], fmt.Sprintf("%splayer-%04d", prefix, k))
				}
			}
			r := m.result()
			t0 := time.Now()
			if _, err := st.RecordResult(ctx, request(r), applyModel(r)); err != nil {
				b.Error(err)
				return
			}
			mine = append(mine, time.Since(t0))
		}
		mu.Lock()
		lat = append(lat, mine...)
		mu.Unlock()
	})
	elapsed, goCPU := time.Since(start), processCPU()-go0
	b.StopTimer()
	if len(lat) == 0 {
		return
	}
	perOp := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(len(lat)) }
	b.ReportMetric(perOp(goCPU), "go-cpu-us/op")
	if serverCPU != nil {
		b.ReportMetric(perOp(serverCPU()-db0), "db-cpu-us/op")
	}
	slices.Sort(lat)
	b.ReportMetric(float64(len(lat))/elapsed.Seconds(), "results/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

func testHistory(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	f := newRef()
	ns2, tdm := league(12, 3, "ns2"), league(5, 4, "tdm")
	for i := range 12 {
		recordBoth(t, st, f, ns2[i])
		if i < len(tdm) {
			recordBoth(t, st, f, tdm[i])
		}
	}
	var got []ratings.Result
	if err := st.History(ctx, "NS2", func(r ratings.Result) error { got = append(got, r); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(ns2) {
		t.Fatalf("history of ns2: %d results, want %d", len(got), len(ns2))
	}
	for i := range got {
		if got[i].MatchID != ns2[i].MatchID || hashOf(got[i]) != hashOf(ns2[i]) {
			t.Fatalf("history[%d] = %+v, want %+v (in the order accepted)", i, got[i], ns2[i])
		}
	}
	// The callback's error stops the read and comes back as it is.
	stop := errors.New("enough")
	n := 0
	err := st.History(ctx, "ns2", func(ratings.Result) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("History with a failing callback: %v after %d results, want %v after 3", err, n, stop)
	}
	if err := st.History(ctx, "no such game", func(ratings.Result) error { return nil }); apperr.CodeOf(err) != apperr.Invalid {
		t.Fatalf("History of an invalid game type: %v", err)
	}
}

func testTunings(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	got, err := st.Tunings(ctx, "ns2")
	if err != nil || len(got) != 0 {
		t.Fatalf("Tunings of an empty store: %v %v", got, err)
	}
	p := ratings.DefaultKalman().Tuned()
	p.SkillSD, p.NewcomerSkill, p.Noise = 1.25, -0.5, 0.75
	bare, insta := mustContext(t, "ns2"), mustContext(t, "ns2", "instagib")
	rep := ratings.TuneReport{Results: 4000, Evaluations: 31, Accepted: true, Default: ratings.DefaultKalman().Tuned(), Params: p,
		FitBefore: 0.65, FitAfter: 0.64, HeldOutBefore: 0.66, HeldOutAfter: 0.655}
	first := []ratings.Tuning{
		{Context: bare, Model: "ns2-kalman", Params: p, Report: rep},
		{Context: insta, Model: "ns2-kalman", Params: ratings.DefaultKalman().Tuned()},
	}
	if err := st.SaveTunings(ctx, "ns2", first); err != nil {
		t.Fatal(err)
	}
	other := []ratings.Tuning{{Context: mustContext(t, "tdm"), Model: "ns2-kalman", Params: p}}
	if err := st.SaveTunings(ctx, "tdm", other); err != nil {
		t.Fatal(err)
	}
	got, err = st.Tunings(ctx, "ns2")
	if err != nil || len(got) != 2 || !sameTuning(got[bare.Key()], first[0]) || !sameTuning(got[insta.Key()], first[1]) {
		t.Fatalf("Tunings(ns2) = %+v, %v; want %+v", got, err, first)
	}
	// Saving replaces the game type's set, and only its.
	if err := st.SaveTunings(ctx, "ns2", first[1:]); err != nil {
		t.Fatal(err)
	}
	got, err = st.Tunings(ctx, "ns2")
	if err != nil || len(got) != 1 || !sameTuning(got[insta.Key()], first[1]) {
		t.Fatalf("Tunings(ns2) after replacing: %+v, %v", got, err)
	}
	got, err = st.Tunings(ctx, "tdm")
	if err != nil || len(got) != 1 || !sameTuning(got["tdm"], other[0]) {
		t.Fatalf("Tunings(tdm) = %+v, %v; want %+v", got, err, other)
	}
	// What no model could use is refused, and changes nothing.
	bad := p
	bad.SkillSD = -1
	for _, ts := range [][]ratings.Tuning{
		{{Context: mustContext(t, "tdm"), Model: "ns2-kalman", Params: p}}, // another game type's context
		{{Context: bare, Model: "ns2-kalman", Params: bad}},
		{{Context: bare, Model: "ns2-kalman", Params: p}, {Context: bare, Model: "ns2-kalman", Params: p}},
	} {
		wantCode(t, st.SaveTunings(ctx, "ns2", ts), apperr.Invalid)
	}
	got, err = st.Tunings(ctx, "ns2")
	if err != nil || len(got) != 1 {
		t.Fatalf("Tunings(ns2) after refused saves: %+v, %v", got, err)
	}
	if err := st.SaveTunings(ctx, "ns2", nil); err != nil {
		t.Fatal(err)
	}
	if got, err = st.Tunings(ctx, "ns2"); err != nil || len(got) != 0 {
		t.Fatalf("Tunings(ns2) after saving none: %+v, %v", got, err)
	}
}

// sameTuning compares tunings exactly (their numbers survive a store bit for bit).
func sameTuning(a, b ratings.Tuning) bool {
	return a.Context.Equal(b.Context) && a.Model == b.Model && a.Params == b.Params && a.Report == b.Report
}
