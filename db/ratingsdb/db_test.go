package ratingsdb_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// fiveVFive is a valid 5v5 result over players prefix0..prefix9.
func fiveVFive(id, prefix string, mutators ...string) ratings.Result {
	r := ratings.Result{MatchID: id, GameType: "tdm", Mutators: mutators, Map: "Deck17", DurationS: 900}
	for t, side := range []string{"red", "blue"} {
		team := ratings.Team{Side: side}
		for j := range 5 {
			team.Players = append(team.Players, ratings.Player{ID: fmt.Sprintf("%s%d", prefix, t*5+j), LeftS: 900})
		}
		r.Teams = append(r.Teams, team)
	}
	w := 0
	r.Winner = &w
	return r
}

func request(r ratings.Result) ratings.RecordRequest {
	b, _ := json.Marshal(r)
	return ratings.RecordRequest{Result: r, BodyHash: sha256.Sum256(b)}
}

// apply is the model's apply with a fixed response body.
func apply(r ratings.Result, body []byte) ratings.ApplyFunc {
	return func(c ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
		o, err := ratings.DefaultModel().Apply(prior, bias, r)
		return o, body, err
	}
}

// counts returns the number of rows of every table of the store.
func counts(t *testing.T, pool *pgxpool.Pool) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, table := range []string{"matches", "ratings", "bias_cells", "mutators"} {
		var n int
		if err := pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n); err != nil {
			t.Fatal(err)
		}
		out[table] = n
	}
	return out
}

// idleInTransaction counts this database's sessions left inside a transaction, once those
// of connections the client has already dropped are gone: a cancelled call closes its
// connection, and the server sees the close, and ends that session, a moment later. It waits
// up to 5 s for the count to reach zero and returns the last count.
func idleInTransaction(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		var n int
		err := pool.QueryRow(context.Background(), `
SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND state LIKE 'idle in transaction%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 || time.Now().After(deadline) {
			return n
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestClosedStoreIsUnavailable(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	s.Close()
	c, _ := ratings.NewContext("tdm", nil)
	r := fiveVFive("closed", "p")
	errs := map[string]error{"Ping": s.Ping(ctx)}
	_, errs["RecordResult"] = s.RecordResult(ctx, request(r), apply(r, nil))
	_, errs["Ratings"] = s.Ratings(ctx, c, []ratings.Participant{{ID: "p0"}})
	_, errs["PlayerRatings"] = s.PlayerRatings(ctx, "p0")
	_, errs["Leaderboard"] = s.Leaderboard(ctx, c, 10, ratings.Ranking{})
	_, _, errs["BotMean"] = s.BotMean(ctx, c)
	_, errs["Policy"] = s.Policy(ctx)
	_, errs["SetMutator"] = s.SetMutator(ctx, "instagib", true)
	_, errs["Rebuild"] = s.Rebuild(ctx, "tdm", func(*ratings.MutatorPolicy, map[string]*ratings.State, iter.Seq[ratings.Result]) (map[string]*ratings.State, error) {
		return nil, nil
	}, nil)
	for name, err := range errs {
		if got := apperr.CodeOf(err); got != apperr.Unavailable {
			t.Errorf("%s on a closed store: %v (%s), want unavailable", name, err, got)
		}
	}
}

func TestApplyErrorLeavesNoRows(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	r := fiveVFive("fails", "p", "SomeNewMutator")
	boom := errors.New("boom")
	for range 3 { // enough to reuse the pool's connections
		_, err := s.RecordResult(ctx, request(r), func(c ratings.Context, p map[ratings.Participant]ratings.Rating, b ratings.BiasTable) (ratings.Outcome, []byte, error) {
			return ratings.Outcome{}, nil, boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("got %v, want apply's error", err)
		}
	}
	for table, n := range counts(t, s.Pool()) {
		if n != 0 {
			t.Errorf("%s has %d rows after failed results", table, n)
		}
	}
	if n := idleInTransaction(t, s.Pool()); n != 0 {
		t.Fatalf("%d sessions were left inside a transaction", n)
	}
	if _, err := s.RecordResult(ctx, request(r), apply(r, []byte("ok"))); err != nil {
		t.Fatal(err)
	}
	if got := counts(t, s.Pool()); got["matches"] != 1 || got["ratings"] != 10 || got["mutators"] != 1 || got["bias_cells"] != 2 { // the cell and its pair's total
		t.Fatalf("after the retry: %v", got)
	}
}

func TestCancelledCallStoresNothing(t *testing.T) {
	s, _ := openStore(t)
	r := fiveVFive("cancelled", "p")

	// Cancelled between the two round trips: the writes never start.
	ctx, cancel := context.WithCancel(context.Background())
	_, err := s.RecordResult(ctx, request(r), func(c ratings.Context, p map[ratings.Participant]ratings.Rating, b ratings.BiasTable) (ratings.Outcome, []byte, error) {
		cancel()
		return apply(r, []byte("x"))(c, p, b)
	})
	if got := apperr.CodeOf(err); got != apperr.Unavailable {
		t.Fatalf("cancelled call: %v (%s), want unavailable", err, got)
	}

	// A deadline that passes while the transaction waits for a lock: another session holds
	// the game type's lock exclusively, as a rebuild does.
	hold, err := s.Pool().Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hold.Exec(context.Background(), `SELECT pg_advisory_xact_lock(2, hashtext('tdm'))`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel2 := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel2()
	_, err = s.RecordResult(ctx, request(r), apply(r, []byte("x")))
	if got := apperr.CodeOf(err); got != apperr.Unavailable {
		t.Fatalf("call past its deadline: %v (%s), want unavailable", err, got)
	}
	if err := hold.Rollback(context.Background()); err != nil {
		t.Fatal(err)
	}

	for table, n := range counts(t, s.Pool()) {
		if n != 0 {
			t.Errorf("%s has %d rows after cancelled calls", table, n)
		}
	}
	rec, err := s.RecordResult(context.Background(), request(r), apply(r, []byte("x")))
	if err != nil || rec.Replayed {
		t.Fatalf("retry after the cancelled calls: %+v %v", rec, err)
	}
	if n := idleInTransaction(t, s.Pool()); n != 0 {
		t.Fatalf("%d sessions were left inside a transaction", n)
	}
}

// Two service instances share a database: one's cache of the mutator policy goes stale when
// the other reclassifies a mutator, and its next result must still land in the right context.
func TestStaleMutatorCache(t *testing.T) {
	a, url := openStore(t)
	ctx := context.Background()
	b, err := ratingsdb.Open(ctx, url, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()

	r1 := fiveVFive("first", "p", "LowGrav")
	rec, err := a.RecordResult(ctx, request(r1), apply(r1, nil))
	if err != nil || rec.Context.Key() != "tdm" {
		t.Fatalf("first result: %+v %v", rec, err)
	}
	if _, err := b.SetMutator(ctx, "lowgrav", true); err != nil {
		t.Fatal(err)
	}
	r2 := fiveVFive("second", "p", "lowgrav")
	rec, err = a.RecordResult(ctx, request(r2), apply(r2, nil))
	if err != nil || rec.Context.Key() != "tdm+lowgrav" {
		t.Fatalf("second result after the other instance's SetMutator: %+v %v", rec, err)
	}
	var stray int
	if err := a.Pool().QueryRow(ctx, `SELECT count(*) FROM ratings WHERE games = 0`).Scan(&stray); err != nil || stray != 0 {
		t.Fatalf("%d rating rows with no game (%v)", stray, err)
	}
	// And back.
	if _, err := b.SetMutator(ctx, "lowgrav", false); err != nil {
		t.Fatal(err)
	}
	r3 := fiveVFive("third", "p", "lowgrav")
	rec, err = a.RecordResult(ctx, request(r3), apply(r3, nil))
	if err != nil || rec.Context.Key() != "tdm" {
		t.Fatalf("third result: %+v %v", rec, err)
	}
}

// Concurrent results spread a bias cell over shards; reads and rebuilds see their sum.
func TestBiasShards(t *testing.T) {
	s, _ := openStore(t)
	s.SetBiasShards(4)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for w := range 8 {
		wg.Go(func() {
			for i := range 8 {
				r := fiveVFive(fmt.Sprintf("m%d-%d", w, i), fmt.Sprintf("w%d-", w))
				if _, err := s.RecordResult(ctx, request(r), apply(r, nil)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	cells := func() (rows int, wins, games float64) {
		t.Helper()
		// The cells only; every result also adds to its side pair's total (map '', size 0).
		err := s.Pool().QueryRow(ctx, `SELECT count(*), sum(wins), sum(games) FROM bias_cells WHERE map <> ''`).Scan(&rows, &wins, &games)
		if err != nil {
			t.Fatal(err)
		}
		return rows, wins, games
	}
	rows, wins, games := cells()
	// Team 0 is red and always wins; blue sorts first, so SideA (blue) won none.
	if rows < 1 || rows > 4 || wins != 0 || games != 64 {
		t.Fatalf("bias cells: %d rows, %v wins, %v games; want 1 to 4 shards, 0 wins, 64 games", rows, wins, games)
	}
	if _, err := s.Rebuild(ctx, "tdm", ratings.Replayer(ratings.DefaultModel()), nil); err != nil {
		t.Fatal(err)
	}
	if rows, wins, games := cells(); rows != 1 || wins != 0 || games != 64 {
		t.Fatalf("after a rebuild: %d rows, %v wins, %v games; want 1, 0, 64", rows, wins, games)
	}
	var totalGames float64
	if err := s.Pool().QueryRow(ctx, `SELECT sum(games) FROM bias_cells WHERE map = ''`).Scan(&totalGames); err != nil || totalGames != 64 {
		t.Fatalf("the pair's total after a rebuild: %v games (%v), want 64", totalGames, err)
	}
}

func TestStoredResultAndResponse(t *testing.T) {
	s, _ := openStore(t)
	ctx := context.Background()
	r := fiveVFive("exact", "p", "InstaGib")
	r.Teams[1].Players[2] = ratings.Player{Bot: "Gorge", JoinedS: 1.0 / 3, LeftS: 899.9999999999999, CommanderS: 1e-7}
	body := []byte{0, 1, 2, 0xff, 0xfe, '"', '\\', 'x', 0} // not UTF-8, not JSON
	if _, err := s.RecordResult(ctx, request(r), apply(r, body)); err != nil {
		t.Fatal(err)
	}
	rec, err := s.RecordResult(ctx, request(r), apply(r, []byte("other")))
	if err != nil || !rec.Replayed || !bytes.Equal(rec.Response, body) {
		t.Fatalf("replay: %q %+v %v, want the exact first bytes", rec.Response, rec, err)
	}
	// The history is readable SQL-side, with the API's field names.
	var id, bot string
	var joined float64
	err = s.Pool().QueryRow(ctx, `
SELECT result->>'match_id', result->'teams'->1->'players'->2->>'bot', (result->'teams'->1->'players'->2->>'joined_s')::float8
FROM matches`).Scan(&id, &bot, &joined)
	if err != nil || id != "exact" || bot != "Gorge" || joined != 1.0/3 {
		t.Fatalf("stored result: %q %q %v %v", id, bot, joined, err)
	}
	// And exact: a rebuild gets back the very result.
	var got []ratings.Result
	if _, err := s.Rebuild(ctx, "tdm", func(_ *ratings.MutatorPolicy, _ map[string]*ratings.State, h iter.Seq[ratings.Result]) (map[string]*ratings.State, error) {
		got = slices.Collect(h)
		return nil, nil
	}, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || fmt.Sprintf("%#v", got[0].Teams) != fmt.Sprintf("%#v", r.Teams) || *got[0].Winner != 0 || got[0].Mutators[0] != "InstaGib" {
		t.Fatalf("history %#v\nwant %#v", got, r)
	}
}

// TestMigrationKeepsNS2Ratings: migration 00004 gives every rating stored before it (all NS2's)
// the uncertainty NS2 writes from then on, and the store reads them as NS2 left them; going
// down keeps them too.
func TestMigrationKeepsNS2Ratings(t *testing.T) {
	ctx := context.Background()
	url := dbtest.URL(t)
	p, sqlDB := dbtest.Goose(t, url, db.Migrations())
	if _, err := p.UpTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := sqlDB.ExecContext(ctx, `
INSERT INTO ratings (context_key, is_bot, participant_id, game_type, skill, side_offset, commander, skill_g, commander_g, games)
VALUES ('tdm', false, 'vet', 'tdm', 1.25, 0.5, 0, 0.75, 0, 40), ('tdm', true, 'new', 'tdm', 0, 0, 0, 0, 0, 0)`); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := ratingsdb.Open(ctx, url, db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	c, _ := ratings.NewContext("tdm", nil)
	got, err := s.Ratings(ctx, c, []ratings.Participant{{ID: "vet"}, {ID: "new", Bot: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := ratings.Rating{Skill: 1.25, Offset: 0.5, SkillG: 0.75, Games: 40, Sigma: 1}
	if v := got[ratings.Participant{ID: "vet"}]; v != want {
		t.Errorf("the veteran reads %+v, want %+v (sigma 1/sqrt(1/4 + 0.75) = 1)", v, want)
	}
	if v := got[ratings.Participant{ID: "new", Bot: true}]; v != (ratings.Rating{}) {
		t.Errorf("a rating without games reads %+v, want the zero rating", v)
	}
	if _, err := p.DownTo(ctx, 2); err != nil {
		t.Fatal(err)
	}
	var offset, commander float64
	if err := sqlDB.QueryRowContext(ctx, `SELECT side_offset, commander FROM ratings WHERE participant_id = 'vet'`).Scan(&offset, &commander); err != nil || offset != 0.5 || commander != 0 {
		t.Errorf("after going down: offset %v, commander %v (%v)", offset, commander, err)
	}
}
