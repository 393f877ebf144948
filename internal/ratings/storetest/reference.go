package storetest

import (
	"context"
	"encoding/json"
	"iter"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// ref is what the store should hold: the model applied one result at a time.
type ref struct {
	policy  *ratings.MutatorPolicy
	states  map[string]*ratings.State
	history []ratings.Result
	seen    map[ratings.Participant]bool
	epochs  map[string]int64 // the latest season reset of each context
	model   ratings.Model    // what learns the results (recordBoth gives the store its Apply)
}

func newRef() *ref { return newRefOf(ratings.DefaultModel()) }

// newRefOf is a reference whose results m learns.
func newRefOf(m ratings.Model) *ref {
	return &ref{policy: &ratings.MutatorPolicy{}, states: map[string]*ratings.State{}, seen: map[ratings.Participant]bool{},
		epochs: map[string]int64{}, model: m}
}

// reset applies a season's reset to its context's ratings, as the store should have.
func (f *ref) reset(t *testing.T, se ratings.Season) {
	t.Helper()
	if s := f.states[se.Context.Key()]; s != nil {
		for p, r := range s.Ratings {
			s.Ratings[p] = ratings.CatchUp(r, []ratings.Season{se})
		}
	}
	f.epochs[se.Context.Key()] = se.Epoch
}

// mean is the mean skill of c's players, as a reset takes it.
func (f *ref) mean(c ratings.Context) float64 { return ratings.MeanSkill(f.rated(c)) }

// altMean is the mean second belief of c's players, as a reset takes it.
func (f *ref) altMean(c ratings.Context) float64 { return ratings.MeanAltSkill(f.rated(c)) }

// rated are c's ratings in participant order.
func (f *ref) rated(c ratings.Context) []ratings.RatedParticipant {
	s := f.states[c.Key()]
	var rs []ratings.RatedParticipant
	for _, p := range s.Participants() {
		rs = append(rs, ratings.RatedParticipant{Participant: p, Rating: s.Ratings[p]})
	}
	return rs
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
	o, err := f.model.Apply(prior, s.Bias, r)
	if err != nil {
		t.Fatalf("reference: %v", err)
	}
	s.Record(o)
	for _, u := range o.Updates { // a newcomer starts in the season under way
		if rt := s.Ratings[u.Participant]; rt.Season < f.epochs[c.Key()] {
			rt.Season = f.epochs[c.Key()]
			s.Ratings[u.Participant] = rt
		}
	}
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
	states, _, err := ratings.ReplayByContext(f.model, f.policy, h)
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
	got, err := st.RecordResult(context.Background(), request(r), applyWith(f.model, r))
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
		near(a.OffsetSigma, b.OffsetSigma) && near(a.CommanderSigma, b.CommanderSigma) && a.Games == b.Games &&
		a.LastPlayed == b.LastPlayed && a.Season == b.Season && a.SeasonGames == b.SeasonGames && near(a.Surprise, b.Surprise) &&
		near(a.AltSkill, b.AltSkill) && near(a.AltSigma, b.AltSigma)
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
		math.Float64bits(a.Surprise) == math.Float64bits(b.Surprise) &&
		math.Float64bits(a.AltSkill) == math.Float64bits(b.AltSkill) &&
		math.Float64bits(a.AltSigma) == math.Float64bits(b.AltSigma) &&
		a.Games == b.Games && a.LastPlayed == b.LastPlayed && a.Season == b.Season && a.SeasonGames == b.SeasonGames
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
