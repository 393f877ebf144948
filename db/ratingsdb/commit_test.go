package ratingsdb_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/storetest"
)

// openStoreWith is openStore with the store's options.
func openStoreWith(t *testing.T, o ratingsdb.Options) *ratingsdb.Store {
	t.Helper()
	s, _ := openStoreAt(t, o)
	return s
}

// openStoreAt is openStoreWith, and the url of the store's database.
func openStoreAt(t *testing.T, o ratingsdb.Options) (*ratingsdb.Store, string) {
	t.Helper()
	url := dbtest.URL(t)
	ctx := context.Background()
	if err := db.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(ctx, url, db.Options{MaxConns: testMaxConns})
	if err != nil {
		t.Fatal(err)
	}
	s := ratingsdb.New(d, o)
	t.Cleanup(s.Close)
	return s, url
}

// holdCommitter keeps a store's only committer busy with a result whose apply waits, so that
// the results recorded meanwhile queue up and go together into the next batch. The returned
// function lets it go and waits for it.
func holdCommitter(t *testing.T, s *ratingsdb.Store) func() {
	t.Helper()
	r := fiveVFive("holder", "holder-")
	// Sides of its own: the batch after it may read the bias table before it commits (a batch
	// gives its slot back before its COMMIT), so it must not share a bias cell with the tests'.
	r.Teams[0].Side, r.Teams[1].Side = "gold", "silver"
	entered, gate, done := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	var once sync.Once
	go func() {
		_, err := s.RecordResult(context.Background(), request(r), func(c ratings.Context, prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable) (ratings.Outcome, []byte, error) {
			once.Do(func() { close(entered) })
			<-gate
			return apply(r, nil)(c, prior, bias)
		})
		done <- err
	}()
	<-entered
	return func() {
		close(gate)
		if err := <-done; err != nil {
			t.Errorf("the held result: %v", err)
		}
	}
}

// call is one RecordResult in a held batch.
type call struct {
	r     ratings.Result
	apply ratings.ApplyFunc
	rec   ratings.Recorded
	err   error
}

// recordTogether records the calls in one batch: it holds the committer, queues them all,
// and lets it go.
func recordTogether(t *testing.T, s *ratingsdb.Store, calls []*call) {
	t.Helper()
	release := holdCommitter(t, s)
	var wg sync.WaitGroup
	for _, c := range calls {
		wg.Go(func() { c.rec, c.err = s.RecordResult(context.Background(), request(c.r), c.apply) })
	}
	for deadline := time.Now().Add(10 * time.Second); s.Queued() < len(calls); {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d results queued", s.Queued(), len(calls))
		}
		time.Sleep(time.Millisecond)
	}
	release()
	wg.Wait()
}

// transactions counts the transactions that wrote the given matches.
func transactions(t *testing.T, s *ratingsdb.Store, ids []string) int {
	t.Helper()
	var n int
	if err := s.Pool().QueryRow(context.Background(),
		`SELECT count(DISTINCT xmin::text) FROM matches WHERE match_id = ANY($1)`, ids).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// snapshot is every stored rating, bit for bit.
func snapshot(t *testing.T, s *ratingsdb.Store) map[string][9]uint64 {
	t.Helper()
	rows, err := s.Pool().Query(context.Background(), `
SELECT context_key || '/' || participant_id, skill, coalesce(side_offset, 0), coalesce(commander, 0), coalesce(skill_g, 0),
    coalesce(commander_g, 0), coalesce(sigma, 0), coalesce(offset_sigma, 0), coalesce(commander_sigma, 0), games
FROM ratings`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][9]uint64{}
	for rows.Next() {
		var k string
		var f [8]float64
		var g int64
		if err := rows.Scan(&k, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6], &f[7], &g); err != nil {
			t.Fatal(err)
		}
		var v [9]uint64
		for i, x := range f {
			v[i] = math.Float64bits(x)
		}
		v[8] = uint64(g)
		out[k] = v
	}
	return out
}

// TestGroupCommitWritesQueuedResultsInOneTransaction: results that queue while the committer
// is busy are written by one transaction, those that share players included; each was
// applied to the ratings the ones before it in the batch left, in the order of the history,
// so a rebuild (which replays the history one result at a time) gives the same ratings, bit
// for bit.
func TestGroupCommitWritesQueuedResultsInOneTransaction(t *testing.T) {
	t.Parallel()
	s := openStoreWith(t, ratingsdb.Options{Committers: 1})
	rng := rand.New(rand.NewPCG(7, 7))
	var calls []*call
	var ids []string
	for i := range 16 {
		r := fiveVFive(fmt.Sprintf("g-%02d", i), "x")
		for ti := range r.Teams { // ten of a pool of 14: every result shares players with others
			for pi := range r.Teams[ti].Players {
				r.Teams[ti].Players[pi].ID = ""
			}
		}
		for k, n := range rng.Perm(14)[:10] {
			r.Teams[k/5].Players[k%5].ID = fmt.Sprintf("shared-%02d", n)
		}
		if i%3 == 0 {
			r.Map = "Summit" // two cells of the side pair, and their total
		}
		calls = append(calls, &call{r: r, apply: apply(r, nil)})
		ids = append(ids, r.MatchID)
	}
	recordTogether(t, s, calls)
	for _, c := range calls {
		if c.err != nil || c.rec.Replayed {
			t.Fatalf("%s: %+v %v", c.r.MatchID, c.rec, c.err)
		}
	}
	if n := transactions(t, s, ids); n != 1 {
		t.Errorf("16 queued results were written by %d transactions, want 1", n)
	}
	before := snapshot(t, s)
	if _, err := s.Rebuild(context.Background(), "tdm", ratings.Replayer(ratings.DefaultModel()), nil); err != nil {
		t.Fatal(err)
	}
	after := snapshot(t, s)
	if len(before) != 24 || len(after) != len(before) { // the 14 and the holder's 10
		t.Fatalf("%d ratings before the rebuild, %d after, want 24", len(before), len(after))
	}
	for k, v := range before {
		if after[k] != v {
			t.Errorf("%s: the batch left %v, a rebuild gives %v", k, v, after[k])
		}
	}
}

// TestGroupCommitIsolatesFailures: in one batch, results that fail on their own (apply
// returns an error or panics, a match id used with another body) fail alone; a replay is
// answered as one; the same new match id twice is recorded once and replayed once; the
// others are stored, and nothing of the failed ones is.
func TestGroupCommitIsolatesFailures(t *testing.T) {
	t.Parallel()
	s := openStoreWith(t, ratingsdb.Options{Committers: 1})
	ctx := context.Background()
	stored := fiveVFive("stored", "s")
	if _, err := s.RecordResult(ctx, request(stored), apply(stored, []byte(`"first"`))); err != nil {
		t.Fatal(err)
	}
	errModel := apperr.Field("teams", "the model refuses")
	good1, good2 := fiveVFive("good-1", "a"), fiveVFive("good-2", "b")
	refused, panics := fiveVFive("refused", "a"), fiveVFive("panics", "c") // refused shares good-1's players
	conflict := fiveVFive("stored", "other")
	twice := fiveVFive("twice", "d")
	calls := []*call{
		{r: good1, apply: apply(good1, nil)},
		{r: refused, apply: func(ratings.Context, map[ratings.Participant]ratings.Rating, ratings.BiasTable) (ratings.Outcome, []byte, error) {
			return ratings.Outcome{}, nil, errModel
		}},
		{r: panics, apply: func(ratings.Context, map[ratings.Participant]ratings.Rating, ratings.BiasTable) (ratings.Outcome, []byte, error) {
			panic("a bug in the model")
		}},
		{r: stored, apply: apply(stored, []byte(`"second"`))},
		{r: conflict, apply: apply(conflict, nil)},
		{r: twice, apply: apply(twice, nil)},
		{r: twice, apply: apply(twice, nil)},
		{r: good2, apply: apply(good2, nil)},
	}
	recordTogether(t, s, calls)

	for _, c := range []*call{calls[0], calls[7]} {
		if c.err != nil || c.rec.Replayed {
			t.Errorf("%s: %+v %v", c.r.MatchID, c.rec, c.err)
		}
	}
	if !errors.Is(calls[1].err, errModel) {
		t.Errorf("refused: %v, want the apply's error", calls[1].err)
	}
	if apperr.CodeOf(calls[2].err) != apperr.Internal {
		t.Errorf("panics: %v, want Internal", calls[2].err)
	}
	if calls[3].err != nil || !calls[3].rec.Replayed || string(calls[3].rec.Response) != `"first"` {
		t.Errorf("replay: %+v %v", calls[3].rec, calls[3].err)
	}
	if apperr.CodeOf(calls[4].err) != apperr.Conflict {
		t.Errorf("conflict: %v", calls[4].err)
	}
	if calls[5].err != nil || calls[6].err != nil || calls[5].rec.Replayed == calls[6].rec.Replayed {
		t.Errorf("the same new result twice: %+v %v, %+v %v", calls[5].rec, calls[5].err, calls[6].rec, calls[6].err)
	}
	got := counts(t, s.Pool())
	if got["matches"] != 5 { // the holder, stored, good-1, good-2, twice
		t.Errorf("%d matches stored, want 5", got["matches"])
	}
	var games0, panicRows int
	if err := s.Pool().QueryRow(ctx, `SELECT count(*) FILTER (WHERE games = 0), count(*) FILTER (WHERE participant_id LIKE 'c%') FROM ratings`).Scan(&games0, &panicRows); err != nil {
		t.Fatal(err)
	}
	if games0 != 0 || panicRows != 0 {
		t.Errorf("%d rating rows without a game, %d of the failed result's players", games0, panicRows)
	}
	a0, err := s.Ratings(ctx, ratings.Context{GameType: "tdm"}, []ratings.Participant{{ID: "a0"}})
	if err != nil || a0[ratings.Participant{ID: "a0"}].Games != 1 {
		t.Errorf("a0, in good-1 and the refused result: %+v %v, want 1 game", a0, err)
	}
}

// TestGroupCommitSplitsABatchTheDatabaseRejects: when the database refuses a batch's writes
// for one result's data, the batch is run again one result at a time, and only that result
// fails.
func TestGroupCommitSplitsABatchTheDatabaseRejects(t *testing.T) {
	t.Parallel()
	s := openStoreWith(t, ratingsdb.Options{Committers: 1})
	if _, err := s.Pool().Exec(context.Background(), `ALTER TABLE matches ADD CONSTRAINT no_poison CHECK (match_id <> 'poison')`); err != nil {
		t.Fatal(err)
	}
	var calls []*call
	for _, id := range []string{"fine-1", "poison", "fine-2"} {
		r := fiveVFive(id, id+"-")
		calls = append(calls, &call{r: r, apply: apply(r, nil)})
	}
	recordTogether(t, s, calls)
	if calls[0].err != nil || calls[2].err != nil {
		t.Fatalf("the sound results of the batch: %v, %v", calls[0].err, calls[2].err)
	}
	if apperr.CodeOf(calls[1].err) != apperr.Internal {
		t.Fatalf("the result the database refuses: %v, want Internal", calls[1].err)
	}
	if got := counts(t, s.Pool()); got["matches"] != 3 { // the holder and the two sound ones
		t.Fatalf("%d matches stored, want 3", got["matches"])
	}
}

// TestGroupCommitManyNewcomersAtOnce: concurrent batches meet the same players for the first
// time, over and over (16 writers, results drawn from a pool of 300 players no one has rated);
// every result is stored, none is refused, and every player has as many games as results.
func TestGroupCommitManyNewcomersAtOnce(t *testing.T) {
	t.Parallel()
	recordNewcomers(t, openStoreWith(t, ratingsdb.Options{}), 16, 20, 300, func(*rand.Rand) int { return 5 })
}

// TestGroupCommitManyNewcomersInLargeTeams: the same with teams of up to 150 (8 writers, a
// pool of 600), so that most batches claim more rows than they have locks for and share them
// out by bucket, beside batches of small teams that claim row by row.
func TestGroupCommitManyNewcomersInLargeTeams(t *testing.T) {
	t.Parallel()
	recordNewcomers(t, openStoreWith(t, ratingsdb.Options{}), 8, 6, 600, func(rng *rand.Rand) int {
		return []int{1, 2, 150}[rng.IntN(3)]
	})
}

// recordNewcomers has writers each record results, one after the other, of two teams of
// size(rng) players drawn from a pool no one has rated, and checks that every result is
// stored and every player has as many games as results.
func recordNewcomers(t *testing.T, s *ratingsdb.Store, writers, results, pool int, size func(*rand.Rand) int) {
	t.Helper()
	ctx := context.Background()
	games := make([]map[string]int, writers)
	var wg sync.WaitGroup
	errs := make(chan error, writers*results)
	for w := range writers {
		games[w] = map[string]int{}
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 1))
			for i := range results {
				n := size(rng)
				var teams [2][]string
				for k, p := range rng.Perm(pool)[:2*n] {
					id := fmt.Sprintf("newcomer-%03d", p)
					teams[k/n] = append(teams[k/n], id)
					games[w][id]++
				}
				winner := i % 2
				r := ratings.Result{MatchID: fmt.Sprintf("new-%d-%d", w, i), GameType: "tdm", Map: "Deck17", DurationS: 1200, Winner: &winner,
					Teams: []ratings.Team{storetest.Team("red", teams[0]...), storetest.Team("blue", teams[1]...)}}
				if _, err := s.RecordResult(ctx, request(r), apply(r, nil)); err != nil {
					errs <- fmt.Errorf("%s: %w", r.MatchID, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	want := map[string]int{}
	for _, g := range games {
		for id, n := range g {
			want[id] += n
		}
	}
	var ps []ratings.Participant
	for id := range want {
		ps = append(ps, ratings.Participant{ID: id})
	}
	got, err := s.Ratings(ctx, ratings.Context{GameType: "tdm"}, ps)
	if err != nil {
		t.Fatal(err)
	}
	for id, n := range want {
		if got[ratings.Participant{ID: id}].Games != n {
			t.Errorf("%s: %d games, want %d", id, got[ratings.Participant{ID: id}].Games, n)
		}
	}
}

// TestGroupCommitWritesNewcomersOnce: a newcomer's row is inserted once, with his rating,
// and not updated in the transaction that made it, however many of its batch's results he
// is in; a second result in a later batch updates it. The server's counts of the ratings
// table's inserts and updates, read once the store's sessions have ended (a session reports
// its counts when it ends).
func TestGroupCommitWritesNewcomersOnce(t *testing.T) {
	t.Parallel()
	s, url := openStoreAt(t, ratingsdb.Options{Committers: 1})
	ctx := context.Background()
	a, b, c := fiveVFive("once-a", "a"), fiveVFive("once-b", "a"), fiveVFive("once-c", "c")
	for i := range 5 {
		b.Teams[1].Players[i].ID = fmt.Sprintf("b%d", i) // a0..a4 twice in the batch
	}
	recordTogether(t, s, []*call{{r: a, apply: apply(a, nil)}, {r: b, apply: apply(b, nil)}, {r: c, apply: apply(c, nil)}})
	again := fiveVFive("once-again", "c")
	if _, err := s.RecordResult(ctx, request(again), apply(again, nil)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Ratings(ctx, ratings.Context{GameType: "tdm"}, []ratings.Participant{{ID: "a0"}, {ID: "b0"}, {ID: "c0"}})
	if err != nil {
		t.Fatal(err)
	}
	if got[ratings.Participant{ID: "a0"}].Games != 2 || got[ratings.Participant{ID: "b0"}].Games != 1 || got[ratings.Participant{ID: "c0"}].Games != 2 {
		t.Fatalf("games of a0, b0, c0: %+v, want 2, 1, 2", got)
	}
	s.Close() // its sessions report their counts as they end
	ins, upd := tableWrites(t, url, "ratings")
	// The holder's 10, a's 10, b's 5 more, c's 10; c's 10 again.
	if ins != 35 || upd != 10 {
		t.Errorf("the ratings table had %d rows inserted and %d updated, want 35 and 10 (c's players' second result)", ins, upd)
	}
}

// tableWrites is the server's count of the rows inserted into and updated in a table of the
// database at url, once no other session is connected to it.
func tableWrites(t *testing.T, url, table string) (inserted, updated int64) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		var others int
		if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).
			Scan(&others); err != nil {
			t.Fatal(err)
		}
		if others == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d sessions still connected", others)
		}
	}
	if err := conn.QueryRow(ctx, `SELECT n_tup_ins, n_tup_upd FROM pg_stat_user_tables WHERE relname = $1`, table).
		Scan(&inserted, &updated); err != nil {
		t.Fatal(err)
	}
	return inserted, updated
}

// TestPostgresStoreContractWithoutGroupCommit: with group commit off (each result in a
// transaction of its own, by its caller) the store keeps the same contract.
func TestPostgresStoreContractWithoutGroupCommit(t *testing.T) {
	storetest.Run(t, func(t *testing.T) ratings.Store {
		return openStoreWith(t, ratingsdb.Options{Committers: -1})
	})
}
