package storetest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The seasons' contract: definitions checked against each other, a reset applied once to
// every rating of its context and to none of another, results after it learning from reset
// ratings, a rebuild applying it where it happened, and final standings kept once.

// seasonStore is st as the SeasonStore it is.
func seasonStore(t *testing.T, st ratings.Store) ratings.SeasonStore {
	t.Helper()
	return st
}

var seasonStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// season is a season of c from seasonStart plus the given months, lasting months.
func season(c ratings.Context, name string, from, months int) ratings.Season {
	return ratings.Season{Context: c, Name: name, StartsAt: seasonStart.AddDate(0, from, 0), EndsAt: seasonStart.AddDate(0, from+months, 0),
		Reset: ratings.SeasonReset{Keep: 0.5, AddSD: 1}, PlacementGames: 3, Tiers: ratings.DefaultTiers()}
}

func testSeasonDefinitions(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	ss := seasonStore(t, st)
	tdm, ctf := mustContext(t, "tdm"), mustContext(t, "ctf")
	for _, se := range []ratings.Season{season(tdm, "s1", 0, 3), season(tdm, "s2", 3, 3), season(ctf, "s1", 1, 3)} {
		if _, err := ss.PutSeason(ctx, se); err != nil {
			t.Fatalf("PutSeason %s %s: %v", se.Context, se.Name, err)
		}
	}
	// Overlapping another season of the context: a 400 naming starts_at, nothing stored.
	_, err := ss.PutSeason(ctx, season(tdm, "s3", 2, 3))
	wantField(t, err, "starts_at")
	bad := season(tdm, "s4", 9, 1)
	bad.Reset.Keep = 1.5
	_, err = ss.PutSeason(ctx, bad)
	wantField(t, err, "reset.keep")
	list, err := ss.Seasons(ctx, "tdm")
	if err != nil || len(list) != 2 || list[0].Name != "s1" || list[1].Name != "s2" || list[0].Epoch != 0 {
		t.Fatalf("Seasons(tdm): %+v %v, want s1 and s2, not reset", list, err)
	}
	if all, err := ss.Seasons(ctx, ""); err != nil || len(all) != 3 {
		t.Fatalf("Seasons(every game type): %d %v, want 3", len(all), err)
	}
	// A redefinition keeps the season's name and changes what it says.
	moved := season(tdm, "s2", 4, 2)
	moved.PlacementGames = 7
	if got, err := ss.PutSeason(ctx, moved); err != nil || got.PlacementGames != 7 || !got.StartsAt.Equal(moved.StartsAt) {
		t.Fatalf("redefined: %+v %v", got, err)
	}
	// Once reset, its start is fixed; a season may not start before one under way.
	if _, err := ss.ResetSeason(ctx, tdm, "s1", seasonStart, 2); err != nil {
		t.Fatal(err)
	}
	again := season(tdm, "s1", 0, 3)
	again.StartsAt = again.StartsAt.Add(time.Hour)
	_, err = ss.PutSeason(ctx, again)
	wantCode(t, err, apperr.Conflict)
	_, err = ss.ResetSeason(ctx, tdm, "nope", seasonStart, 2)
	wantCode(t, err, apperr.NotFound)
	_, err = ss.ResetSeason(ctx, tdm, "s2", seasonStart, 2)
	wantCode(t, err, apperr.Conflict) // it has not started
}

func wantField(t *testing.T, err error, field string) {
	t.Helper()
	wantCode(t, err, apperr.Invalid)
	var e *apperr.Error
	if !errors.As(err, &e) {
		t.Fatalf("%v: not an apperr.Error", err)
	}
	for _, f := range e.Fields {
		if f.Field == field {
			return
		}
	}
	t.Fatalf("%v: no fault named %s", err, field)
}

// testSeasonReset: results before a season's reset, the reset, results after it. Every
// rating of the context is reset once, by the mean of its players, another context's not at
// all; the results after it learn from reset ratings; a rebuild applies it again where it was.
func testSeasonReset(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	ss, tdm, before, after := seasonOfTDM(t, st)
	f := newRef()
	other := league(5, 33, "ctf")
	for _, r := range append(before, other...) {
		recordBoth(t, st, f, r)
	}
	se, err := ss.ResetSeason(ctx, tdm, "s1", seasonStart, ratings.DefaultModel().PriorSigma())
	if err != nil {
		t.Fatal(err)
	}
	if se.Epoch != 1 || !se.ResetAt.Equal(seasonStart) {
		t.Fatalf("reset season: %+v", se)
	}
	if again, err := ss.ResetSeason(ctx, tdm, "s1", seasonStart.Add(time.Hour), 2); err != nil || again.Epoch != 1 || !again.ResetAt.Equal(seasonStart) || again.ResetMean != se.ResetMean {
		t.Fatalf("a second reset: %+v %v, want the first one's", again, err)
	}
	if want := f.mean(tdm); se.ResetMean != want {
		t.Fatalf("reset mean %v, want the players' mean %v", se.ResetMean, want)
	}
	f.reset(t, se)
	assertRef(t, st, f)
	for _, r := range after {
		recordBoth(t, st, f, r)
	}
	assertRef(t, st, f)
	checkSeasonGames(t, st, f, tdm, se.Epoch)
	if _, err := st.Rebuild(ctx, "tdm", replayModel, nil); err != nil {
		t.Fatal(err)
	}
	assertRef(t, st, f)
}

// seasonOfTDM defines season s1 of tdm in st and returns the results the reset tests record
// before its reset and after it.
func seasonOfTDM(t *testing.T, st ratings.Store) (ss ratings.SeasonStore, tdm ratings.Context, before, after []ratings.Result) {
	t.Helper()
	ss, tdm = seasonStore(t, st), mustContext(t, "tdm")
	if _, err := ss.PutSeason(context.Background(), season(tdm, "s1", 0, 3)); err != nil {
		t.Fatal(err)
	}
	before, after = league(20, 31, "tdm"), league(20, 32, "tdm")
	for i := range after {
		after[i].MatchID = fmt.Sprintf("after-%d", i)
	}
	return ss, tdm, before, after
}

// testSeasonResetMixture: testSeasonReset in a context that learns with ns2-mix. The reset
// moves both beliefs of every rating, the second (openskill-pl's) towards its own players'
// mean by the same keep rule and its uncertainty grown, as CatchUp says; results after it
// learn from both reset; a rebuild applies it again where it was.
func testSeasonResetMixture(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	ss, tdm, before, after := seasonOfTDM(t, st)
	mix := ratings.DefaultMixture()
	f := newRefOf(mix)
	for _, r := range before {
		recordBoth(t, st, f, r)
	}
	old := maps.Clone(f.states[tdm.Key()].Ratings)
	se, err := ss.ResetSeason(ctx, tdm, "s1", seasonStart, mix.PriorSigma())
	if err != nil {
		t.Fatal(err)
	}
	if want := f.altMean(tdm); se.ResetAltMean != want || want == 0 {
		t.Fatalf("reset's second mean %v, want the players' %v (not 0)", se.ResetAltMean, want)
	}
	f.reset(t, se)
	for p, r := range f.states[tdm.Key()].Ratings {
		o := old[p]
		if want := se.ResetAltMean + se.Reset.Keep*(o.AltSkill-se.ResetAltMean); o.AltSigma <= 0 || !near(r.AltSkill, want) || r.AltSigma <= o.AltSigma {
			t.Fatalf("%v: second belief %v ± %v after the reset, was %v ± %v: want %v, wider", p, r.AltSkill, r.AltSigma, o.AltSkill, o.AltSigma, want)
		}
	}
	assertRef(t, st, f)
	for _, r := range after {
		recordBoth(t, st, f, r)
	}
	assertRef(t, st, f)
	if _, err := st.Rebuild(ctx, "tdm", ratings.Replayer(mix), nil); err != nil {
		t.Fatal(err)
	}
	assertRef(t, st, f)
}

// checkSeasonGames: every rating of c carries the season's epoch and the games since.
func checkSeasonGames(t *testing.T, st ratings.Store, f *ref, c ratings.Context, epoch int64) {
	t.Helper()
	s := f.states[c.Key()]
	got, err := st.Ratings(context.Background(), c, s.Participants())
	if err != nil {
		t.Fatal(err)
	}
	for p, r := range got {
		if r.Season != epoch || r.SeasonGames != s.Ratings[p].SeasonGames {
			t.Fatalf("%v: season %d with %d games, want %d with %d", p, r.Season, r.SeasonGames, epoch, s.Ratings[p].SeasonGames)
		}
	}
}

// testSeasonStandings: at its end a season keeps its ranked players' standings once, best
// first, with what standings made of them; a player reads his.
func testSeasonStandings(t *testing.T, st ratings.Store) {
	ctx := context.Background()
	ss := seasonStore(t, st)
	tdm := mustContext(t, "tdm")
	se := season(tdm, "s1", 0, 3)
	if _, err := ss.PutSeason(ctx, se); err != nil {
		t.Fatal(err)
	}
	by := ratings.Ranking{K: 3, PriorSigma: 2, Season: 1, Placed: se.PlacementGames}
	finalize := func() (ratings.Season, error) {
		return ss.FinalizeSeason(ctx, tdm, "s1", se.EndsAt, by, func(ranked []ratings.RatedParticipant) []ratings.Standing {
			out := make([]ratings.Standing, len(ranked))
			for i, rp := range ranked {
				out[i] = ratings.Standing{Player: rp.Participant.ID, Position: i + 1, Of: len(ranked), Tier: fmt.Sprint("T", i%3), Rating: rp.Rating, Score: by.Score(rp.Rating)}
			}
			return out
		})
	}
	_, err := finalize()
	wantCode(t, err, apperr.Conflict) // not reset: no standings
	reset, err := ss.ResetSeason(ctx, tdm, "s1", se.StartsAt, 2)
	if err != nil {
		t.Fatal(err)
	}
	f := newRef()
	f.reset(t, reset) // of nobody yet: the players start in the season
	for _, r := range league(40, 41, "tdm") {
		recordBoth(t, st, f, r)
	}
	final, err := finalize()
	if err != nil || !final.FinalAt.Equal(se.EndsAt) {
		t.Fatalf("finalize: %+v %v", final, err)
	}
	want, err := st.Leaderboard(ctx, tdm, 1000, by)
	if err != nil || len(want) == 0 {
		t.Fatalf("the season's leaderboard: %d players %v", len(want), err)
	}
	rows, err := ss.Standings(ctx, tdm, "s1", 0, 1000)
	if err != nil || len(rows) != len(want) {
		t.Fatalf("Standings: %d rows %v, want %d", len(rows), err, len(want))
	}
	for i, row := range rows {
		if row.Player != want[i].Participant.ID || row.Position != i+1 || row.Of != len(want) || row.Season != "s1" || !row.Context.Equal(tdm) ||
			row.Tier != fmt.Sprint("T", i%3) || !sameBits(row.Rating, want[i].Rating) || !row.StartsAt.Equal(se.StartsAt) {
			t.Fatalf("standing %d: %+v, want %s at %d of %d", i, row, want[i].Participant.ID, i+1, len(want))
		}
	}
	if page, err := ss.Standings(ctx, tdm, "s1", 1, 2); err != nil || len(page) != min(2, len(rows)-1) || page[0].Position != 2 {
		t.Fatalf("a page of the standings: %+v %v", page, err)
	}
	mine, err := ss.PlayerStandings(ctx, rows[0].Player)
	if err != nil || len(mine) != 1 || mine[0].Position != 1 {
		t.Fatalf("PlayerStandings(%s): %+v %v", rows[0].Player, mine, err)
	}
	if again, err := finalize(); err != nil || !again.FinalAt.Equal(se.EndsAt) {
		t.Fatalf("finalized twice: %+v %v", again, err)
	}
	_, err = ss.Standings(ctx, tdm, "nope", 0, 10)
	wantCode(t, err, apperr.NotFound)
	scores, err := ss.Scores(ctx, tdm, by)
	if err != nil || len(scores) != len(want) || scores[0] != by.Score(want[len(want)-1].Rating) {
		t.Fatalf("Scores: %v %v", scores, err)
	}
}
