// Package storetest is the contract suite every ratings.Store passes: the in-memory store in
// package ratings and the Postgres store in package db/ratingsdb run it from their tests. It
// checks the store against a reference kept in the test (ratings.State per context, applied
// one result at a time with ratings.DefaultModel): what the store stores and returns bit for
// bit, and what the model computes from it to rounding (see sameRating).
package storetest

import (
	"cmp"
	"crypto/sha256"
	"encoding/json"
	"slices"
	"strings"
	"testing"

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
		{"SeasonDefinitions", testSeasonDefinitions},
		{"SeasonReset", testSeasonReset},
		{"SeasonResetMixture", testSeasonResetMixture},
		{"SeasonStandings", testSeasonStandings},
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
func applyModel(r ratings.Result) ratings.ApplyFunc { return applyWith(ratings.DefaultModel(), r) }

// applyWith is applyModel with the model m.
func applyWith(m ratings.Model, r ratings.Result) ratings.ApplyFunc {
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
