package storetest

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

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
