package ratingsdb_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// seasonDuel is a 1v1 of the "ladder" game type between two of n players.
func seasonDuel(id string, rng *rand.Rand, n int) ratings.Result {
	a, b := rng.IntN(n), rng.IntN(n-1)
	if b >= a {
		b++
	}
	w := rng.IntN(2)
	return ratings.Result{MatchID: id, GameType: "ladder", Map: "arena", DurationS: 600, Winner: &w, Teams: []ratings.Team{
		{Side: "red", Players: []ratings.Player{{ID: fmt.Sprintf("p%04d", a), LeftS: 600}}},
		{Side: "blue", Players: []ratings.Player{{ID: fmt.Sprintf("p%04d", b), LeftS: 600}}},
	}}
}

// TestSeasonResetWhileResultsFlow: two replicas (two stores on one database, each with its
// service) post results as fast as they are answered while one of them resets a season. No
// result fails; every one is applied exactly once (each player's games are the results that
// list him), before or after the reset by its commit (his season games are the results that
// learnt from his reset rating); every rating of the context is reset once, and a player who
// played nothing meanwhile holds exactly his rating reset.
func TestSeasonResetWhileResultsFlow(t *testing.T) {
	ctx := context.Background()
	st1, url := openStore(t)
	st2, err := ratingsdb.Open(ctx, url, db.Options{MaxConns: testMaxConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st2.Close)
	svcs := []*ratings.Service{ratings.NewService(st1, ratings.DefaultModel()), ratings.NewService(st2, ratings.DefaultModel())}
	const players, seeded = 300, 600
	rng := rand.New(rand.NewPCG(5, 35))
	games := map[string]int{}
	count := func(r ratings.Result) {
		for _, tm := range r.Teams {
			games[tm.Players[0].ID]++
		}
	}
	for i := range seeded { // the first round gives every player a rating: none is a newcomer during the reset
		r := seasonDuel(fmt.Sprintf("seed-%d", i), rng, players)
		if i < players {
			w := 0
			r.Winner = &w
			r.Teams[0].Players[0].ID, r.Teams[1].Players[0].ID = fmt.Sprintf("p%04d", i), fmt.Sprintf("p%04d", (i+1)%players)
		}
		if _, err := svcs[i%2].Record(ctx, r); err != nil {
			t.Fatal(err)
		}
		count(r)
	}
	c, _ := ratings.NewContext("ladder", nil)
	start := time.Now().UTC().Add(-time.Second)
	if _, err := svcs[0].PutSeason(ctx, "ladder", "s1", ratings.SeasonDefinition{StartsAt: start, EndsAt: start.AddDate(0, 1, 0)}); err != nil {
		t.Fatal(err)
	}
	all := make([]ratings.Participant, players)
	for i := range all {
		all[i] = ratings.Participant{ID: fmt.Sprintf("p%04d", i)}
	}
	before, err := st1.Ratings(ctx, c, all)
	if err != nil {
		t.Fatal(err)
	}
	flowing, receipts := flowResults(t, svcs, players, 400)
	time.Sleep(300 * time.Millisecond) // results under way on both replicas
	if err := svcs[0].SeasonTick(ctx); err != nil {
		t.Fatal(err)
	}
	flowing.Wait()
	checkResetExactlyOnce(t, st1, c, all, before, receipts, games)
}

// flowResults posts n results from each of the services at once, one after another, and
// returns when it has started; the group's Wait returns when all are answered.
func flowResults(t *testing.T, svcs []*ratings.Service, players, n int) (*sync.WaitGroup, *[]ratings.Receipt) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	receipts := []ratings.Receipt{}
	var failed atomic.Int64
	var lat []time.Duration
	for k, svc := range svcs {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(k), 99))
			for i := range n {
				t0 := time.Now()
				rc, err := svc.Record(context.Background(), seasonDuel(fmt.Sprintf("flow-%d-%d", k, i), rng, players))
				mu.Lock()
				lat = append(lat, time.Since(t0))
				mu.Unlock()
				if err != nil {
					failed.Add(1)
					t.Errorf("replica %d, result %d: %v", k, i, err)
					continue
				}
				mu.Lock()
				receipts = append(receipts, rc)
				mu.Unlock()
			}
		})
	}
	t.Cleanup(func() {
		slices.Sort(lat)
		if len(lat) > 0 {
			t.Logf("results' latency: p50 %v, p99 %v, max %v", lat[len(lat)/2], lat[len(lat)*99/100], lat[len(lat)-1])
		}
	})
	return &wg, &receipts
}

func checkResetExactlyOnce(t *testing.T, st ratings.Store, c ratings.Context, all []ratings.Participant, before map[ratings.Participant]ratings.Rating,
	receipts *[]ratings.Receipt, games map[string]int) {
	t.Helper()
	ctx := context.Background()
	seasons, err := st.Seasons(ctx, "ladder")
	if err != nil || len(seasons) != 1 || seasons[0].Epoch != 1 {
		t.Fatalf("seasons: %+v %v", seasons, err)
	}
	se := seasons[0]
	seasonGames := map[string]int{}
	played := map[string]bool{}
	after := 0
	for _, rc := range *receipts {
		for _, u := range rc.Outcome.Updates {
			games[u.Participant.ID]++
			played[u.Participant.ID] = true
			if u.Before.Season == se.Epoch {
				seasonGames[u.Participant.ID]++
			}
		}
		if rc.Outcome.Updates[0].Before.Season == se.Epoch {
			after++
		}
	}
	got, err := st.Ratings(ctx, c, all)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range all {
		r := got[p]
		if r.Games != games[p.ID] || r.Season != se.Epoch || r.SeasonGames != seasonGames[p.ID] {
			t.Fatalf("%s: %d games, season %d with %d games; want %d, %d with %d", p.ID, r.Games, r.Season, r.SeasonGames, games[p.ID], se.Epoch, seasonGames[p.ID])
		}
		if !played[p.ID] {
			if want := ratings.CatchUp(before[p], seasons); r != want {
				t.Fatalf("%s played nothing during the reset: %+v, want his rating reset once %+v", p.ID, r, want)
			}
		}
	}
	t.Logf("%d results during the reset, %d of them after it", len(*receipts), after)
	if after == 0 || after == len(*receipts) {
		t.Fatalf("%d of %d results after the reset: the reset did not happen while results flowed", after, len(*receipts))
	}
}

// BenchmarkSeasonReset measures a season's reset of a context of 100,000 ratings (written
// straight into the table), its passes included: one reset per iteration, each on a context
// of its own; ns2-kalman's ratings (no second belief), and ns2-mix's, whose second belief is
// reset too.
//
//	go test -run '^$' -bench SeasonReset -benchtime 3x ./db/ratingsdb/
func BenchmarkSeasonReset(b *testing.B) {
	for _, mix := range []bool{false, true} {
		b.Run(map[bool]string{false: "ns2-kalman", true: "ns2-mix"}[mix], func(b *testing.B) { benchSeasonReset(b, mix) })
	}
}

func benchSeasonReset(b *testing.B, mix bool) {
	ctx := context.Background()
	st, _ := openStore(b)
	const n = 100_000
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		game := fmt.Sprintf("bench%d", i)
		rows := make([][]any, n)
		for j := range rows {
			altSkill, altSigma := pgtype.Float8{}, pgtype.Float8{}
			if mix {
				altSkill, altSigma = pgtype.Float8{Float64: float64(j%500)/50 - 5, Valid: true}, pgtype.Float8{Float64: 4, Valid: true}
			}
			rows[j] = []any{game, false, fmt.Sprintf("p%06d", j), game, float64(j%400)/100 - 2, 40, 1.2, int64(1_700_000_000), altSkill, altSigma}
		}
		if _, err := st.Pool().CopyFrom(ctx, pgx.Identifier{"ratings"},
			[]string{"context_key", "is_bot", "participant_id", "game_type", "skill", "games", "sigma", "last_played", "alt_skill", "alt_sigma"},
			pgx.CopyFromRows(rows)); err != nil {
			b.Fatal(err)
		}
		c, _ := ratings.NewContext(game, nil)
		start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		se := ratings.Season{Context: c, Name: "s1", StartsAt: start, EndsAt: start.AddDate(0, 3, 0),
			Reset: ratings.SeasonReset{Keep: 0.8, AddSD: 0.5}, PlacementGames: 5, Tiers: ratings.DefaultTiers()}
		if _, err := st.PutSeason(ctx, se); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := st.ResetSeason(ctx, c, "s1", start, 2); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		var behind, altKept int
		if err := st.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE coalesce(season, 0) < 1), count(*) FILTER (WHERE alt_sigma = 4)
FROM ratings WHERE context_key = $1`, game).Scan(&behind, &altKept); err != nil || behind != 0 || altKept != 0 {
			b.Fatalf("%d ratings not reset, %d second beliefs not (%v)", behind, altKept, err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/reset")
}
