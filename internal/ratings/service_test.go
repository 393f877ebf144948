package ratings_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

func newService(t *testing.T) (*ratings.Service, ratings.Store) {
	t.Helper()
	store := ratings.NewMemoryStore(nil)
	return ratings.NewService(store, ratings.DefaultModel()), store
}

func ctfResult(matchID string, winner int) ratings.Result {
	return ratings.Result{MatchID: matchID, GameType: "ctf", Map: "face", DurationS: 1200, Winner: &winner,
		Teams: []ratings.Team{storetest.Team("red", "alice", "bob"), storetest.Team("blue", "carol", "bot:Jakob")}}
}

// Recording a result moves the winners up; the same result again (by meaning) replays the
// first receipt and changes nothing; another result under the same match id is a conflict.
func TestServiceRecordIsIdempotentByMeaning(t *testing.T) {
	svc, _ := newService(t)
	ctx := context.Background()
	first, err := svc.Record(ctx, ctfResult("m1", 0))
	if err != nil {
		t.Fatal(err)
	}
	if first.Replayed || first.Context.Key() != "ctf" || len(first.Outcome.Updates) != 4 {
		t.Fatalf("first receipt: %+v", first)
	}
	if up := first.Outcome.Updates[0]; up.Participant.ID != "alice" || up.After.Skill <= up.Before.Skill {
		t.Fatalf("the winner alice did not move up: %+v", up)
	}

	// The same match reported differently but meaning the same: players in another order,
	// names in another case, an empty mutator list, a bot listed first.
	same := ctfResult("m1", 0)
	same.GameType, same.Map, same.Mutators = "CTF", "Face", []string{}
	same.Teams[0].Players[0], same.Teams[0].Players[1] = same.Teams[0].Players[1], same.Teams[0].Players[0]
	same.Teams[1].Players[0], same.Teams[1].Players[1] = same.Teams[1].Players[1], same.Teams[1].Players[0]
	same.Teams[1].Side = "BLUE"
	again, err := svc.Record(ctx, same)
	if err != nil {
		t.Fatalf("a retry that means the same: %v", err)
	}
	if !again.Replayed || again.Outcome.WinProbability != first.Outcome.WinProbability ||
		len(again.Outcome.Updates) != 4 || again.Outcome.Updates[0].After.Skill != first.Outcome.Updates[0].After.Skill ||
		again.Outcome.Updates[0].After.Games != 1 {
		t.Fatalf("replay %+v, want the first receipt", again)
	}

	for name, other := range map[string]ratings.Result{
		"another winner": ctfResult("m1", 1),
		"swapped teams": func() ratings.Result {
			r := ctfResult("m1", 0)
			r.Teams[0], r.Teams[1] = r.Teams[1], r.Teams[0]
			return r
		}(),
		"another mutator":  func() ratings.Result { r := ctfResult("m1", 0); r.Mutators = []string{"instagib"}; return r }(),
		"a later joiner":   func() ratings.Result { r := ctfResult("m1", 0); r.Teams[0].Players[1].JoinedS = 60; return r }(),
		"another duration": func() ratings.Result { r := ctfResult("m1", 0); r.DurationS = 1300; return r }(),
	} {
		if _, err := svc.Record(ctx, other); apperr.CodeOf(err) != apperr.Conflict {
			t.Errorf("%s under the same match id: %v, want a conflict", name, err)
		}
	}
}

func TestFingerprintIgnoresWhatCarriesNoMeaning(t *testing.T) {
	base := ctfResult("m1", 0)
	b := base.Fingerprint()
	dupMutators := ctfResult("m1", 0)
	dupMutators.Mutators = []string{"LowGrav", "instagib", "lowgrav"}
	sorted := ctfResult("m1", 0)
	sorted.Mutators = []string{"instagib", "lowgrav"}
	if dupMutators.Fingerprint() != sorted.Fingerprint() {
		t.Error("mutators are a set without case")
	}
	if sorted.Fingerprint() == b {
		t.Error("mutators that are given must count")
	}
	draw := ctfResult("m1", 0)
	draw.Winner = nil
	if draw.Fingerprint() == b {
		t.Error("a draw and a win must differ")
	}
	moved := ctfResult("m1", 0)
	moved.Teams[0].Players = append(moved.Teams[0].Players[1:], ratings.Player{Bot: "alice", LeftS: 1200})
	if moved.Fingerprint() == b {
		t.Error("a bot named alice is not the player alice")
	}
}

// The one rule for weights: a rated participant weighs its rating's weight; an unrated player
// weighs 50; an unrated bot weighs the context's mean rated bot (50 while there is none).
func TestServiceWeightsFollowOneRuleForUnratedParticipants(t *testing.T) {
	svc, _ := newService(t)
	ctx := context.Background()
	c, err := svc.Context(ctx, "ctf", nil)
	if err != nil {
		t.Fatal(err)
	}
	ask := []ratings.Participant{{ID: "alice"}, {ID: "zed"}, {ID: "Jakob", Bot: true}, {ID: "Unrated", Bot: true}}
	before, err := svc.Weights(ctx, c, ask)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range before {
		if w.Rated || w.Value != ratings.UnknownWeight {
			t.Errorf("%v before any result: %+v, want unrated 50", ask[i], w)
		}
	}
	if _, err := svc.Record(ctx, ctfResult("m1", 0)); err != nil {
		t.Fatal(err)
	}
	after, err := svc.Weights(ctx, c, ask)
	if err != nil {
		t.Fatal(err)
	}
	mean, n, err := svc.BotMean(ctx, c)
	if err != nil || n != 1 {
		t.Fatalf("bot mean %g of %d: %v", mean, n, err)
	}
	alice, zed, jakob, unrated := after[0], after[1], after[2], after[3]
	switch {
	case !alice.Rated || alice.Value <= 50 || alice.Value != alice.Rating.Weight():
		t.Errorf("alice won: %+v", alice)
	case zed.Rated || zed.Value != 50:
		t.Errorf("zed never played: %+v", zed)
	case !jakob.Rated || jakob.Value >= 50:
		t.Errorf("Jakob lost: %+v", jakob)
	case unrated.Rated || unrated.Value != mean || mean != jakob.Value:
		t.Errorf("an unrated bot weighs the mean rated bot %g: %+v", mean, unrated)
	}
}

// Ids are checked by the one rule before any store call.
func TestServiceChecksIDsBeforeTheStore(t *testing.T) {
	svc := ratings.NewService(failingStore{}, ratings.DefaultModel())
	ctx := context.Background()
	c, _ := ratings.NewContext("ctf", nil)
	if _, err := svc.Weights(ctx, c, []ratings.Participant{{ID: "a\x00b"}}); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("a NUL in an id: %v, want Invalid", err)
	}
	if _, err := svc.PlayerRatings(ctx, "a\xffb"); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("invalid UTF-8 in an id: %v, want Invalid", err)
	}
	if _, _, err := svc.Leaderboard(ctx, c, 0, ratings.LeaderboardBySkill); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("a leaderboard of 0: %v, want Invalid", err)
	}
	if _, err := svc.SetMutator(ctx, "no spaces", true); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("a bad mutator name: %v, want Invalid", err)
	}
	if _, err := svc.Record(ctx, ratings.Result{MatchID: "m\x01"}); apperr.CodeOf(err) != apperr.Invalid {
		t.Errorf("a bad result: %v, want Invalid", err)
	}
	// A good request does reach the store, which fails.
	if _, err := svc.PlayerRatings(ctx, "alice"); apperr.CodeOf(err) != apperr.Unavailable {
		t.Errorf("a good id: %v, want the store's Unavailable", err)
	}
}

// failingStore fails every call as an unreachable database would.
type failingStore struct{ ratings.Store }

var errDown = apperr.Wrap(apperr.Unavailable, errors.New("connection refused"), "the database is unreachable")

func (failingStore) PlayerRatings(context.Context, string) ([]ratings.ContextRating, error) {
	return nil, errDown
}

func (failingStore) Ratings(context.Context, ratings.Context, []ratings.Participant) (map[ratings.Participant]ratings.Rating, error) {
	return nil, errDown
}

// Metered tells its observer of every call with the operation and its error.
func TestMeteredStoreReportsEveryCall(t *testing.T) {
	type call struct {
		op  string
		err error
	}
	var calls []call
	store := ratings.Metered(failingStore{Store: ratings.NewMemoryStore(nil)}, func(op string, err error, d time.Duration) {
		if d < 0 {
			t.Errorf("%s took %v", op, d)
		}
		calls = append(calls, call{op, err})
	})
	ctx := context.Background()
	_, _ = store.PlayerRatings(ctx, "alice")
	_ = store.Ping(ctx)
	if len(calls) != 2 || calls[0].op != "player_ratings" || !errors.Is(calls[0].err, errDown) ||
		calls[1].op != "ping" || calls[1].err != nil {
		t.Fatalf("observed %+v", calls)
	}
}

// A result recorded by round 1 kept its HTTP response of the time; its replay still reads.
func TestServiceReplaysResultsRecordedBeforeTheService(t *testing.T) {
	svc, store := newService(t)
	r := ctfResult("m1", 0)
	round1 := `{"match_id":"m1","context":{"game_type":"ctf","mutators":[],"key":"ctf"},"win_probability":[0.5,0.5],
		"updates":[{"id":"alice","team":0,"before":0,"after":0.21,"weight":52.6,"games":1},
		           {"bot":"Jakob","team":1,"before":0,"after":-0.21,"weight":47.4,"games":1}]}`
	_, err := store.RecordResult(context.Background(), ratings.RecordRequest{Result: r, BodyHash: r.Fingerprint()},
		func(c ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
			o, err := ratings.DefaultModel().Apply(prior, bias, r)
			return o, []byte(round1), err
		})
	if err != nil {
		t.Fatal(err)
	}
	got, err := svc.Record(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	ups := got.Outcome.Updates
	if !got.Replayed || got.MatchID != "m1" || got.Context.Key() != "ctf" || len(ups) != 2 ||
		ups[0].Participant != (ratings.Participant{ID: "alice"}) || ups[0].After.Skill != 0.21 || ups[0].After.Games != 1 ||
		ups[1].Participant != (ratings.Participant{ID: "Jakob", Bot: true}) || ups[1].Team != 1 {
		t.Fatalf("replay of a round-1 result: %+v", got)
	}
}

// Each context learns with the model the set gives it, when a result is recorded and when its
// game type is rebuilt: the stored ratings are those of each context's own model, replayed.
func TestServiceLearnsEachContextWithItsModel(t *testing.T) {
	models, err := ratings.ParseModelSet("default=ns2,tdm=ns2-kalman,tdm+instagib=openskill-pl")
	if err != nil {
		t.Fatal(err)
	}
	store := ratings.NewMemoryStore(nil)
	svc := ratings.NewServiceWithModels(store, models)
	ctx := context.Background()
	if _, err := svc.SetMutator(ctx, "instagib", true); err != nil {
		t.Fatal(err)
	}
	ref := map[string]*ratings.State{}
	want := map[string]string{"ctf": "ns2", "tdm": "ns2-kalman", "tdm+instagib": "openskill-pl"}
	for i := range 30 {
		r := ctfResult(fmt.Sprintf("m%d", i), i%2)
		r.GameType = []string{"ctf", "tdm", "tdm"}[i%3]
		if i%3 == 2 {
			r.Mutators = []string{"instagib"}
		}
		r.EndedAt = time.Date(2026, 3, 1, 12, i, 0, 0, time.UTC) // as the reference applies it
		rc, err := svc.Record(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		key := rc.Context.Key()
		if svc.Model(rc.Context).Name() != want[key] {
			t.Fatalf("context %s learns with %s, want %s", key, svc.Model(rc.Context).Name(), want[key])
		}
		m, _ := ratings.ModelByName(want[key])
		if ref[key] == nil {
			ref[key] = &ratings.State{}
		}
		o, err := ref[key].Apply(m, r)
		if err != nil {
			t.Fatal(err)
		}
		if o.WinProbability != rc.Outcome.WinProbability || !reflect.DeepEqual(o.Updates, rc.Outcome.Updates) {
			t.Fatalf("%s in %s: receipt %+v, want %s's %+v", r.MatchID, key, rc.Outcome, want[key], o)
		}
	}
	check := func(when string) {
		t.Helper()
		for key, s := range ref {
			c, _ := ratings.ParseContextKey(key)
			got, err := store.Ratings(ctx, c, s.Participants())
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, s.Ratings) {
				t.Fatalf("%s: %s holds %+v, want %+v", when, key, got, s.Ratings)
			}
		}
	}
	check("recorded")
	for _, g := range []string{"tdm", "ctf"} {
		if _, err := svc.Rebuild(ctx, g, nil); err != nil {
			t.Fatal(err)
		}
	}
	check("rebuilt")
}
