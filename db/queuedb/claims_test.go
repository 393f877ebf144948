package queuedb_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// A match's result ends its players' claims without waiting for a tick that holds the claims
// lock between its reads and its COMMIT: each result waiting there held a pool connection,
// and at a few hundred results a second they held all of them. The test holds the lock as
// such a tick does and ends a match's claims under a deadline far longer than the update
// takes; before the change, EndClaims waited at the lock until the deadline.
func TestQueueEndClaimsDoesNotWaitForATick(t *testing.T) {
	t.Parallel()
	qs, d := openQueueStore(t)
	ctx := testCtx(t)
	claimTwoMatches(t, qs)
	var claims int
	if err := d.Pool().QueryRow(ctx, `SELECT count(*) FROM queue_claims WHERE until > $1`, queuetest.T0).Scan(&claims); err != nil || claims != 8 {
		t.Fatalf("live claims after the tick: %d, %v; want 8", claims, err)
	}

	tick, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tick.Rollback(context.Background()) }()
	if _, err := tick.Exec(ctx, `SELECT pg_advisory_xact_lock(5, 0)`); err != nil {
		t.Fatal(err)
	}
	end := queuetest.T0.Add(time.Second)
	for _, m := range []string{"m1", "no-such-match"} {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		_, err := qs.EndClaims(c, m, end, false)
		cancel()
		if err != nil {
			t.Fatalf("EndClaims(%s) while a tick holds the claims lock: %v", m, err)
		}
	}

	rows, err := d.Pool().Query(ctx, `SELECT match_id, count(*) FILTER (WHERE until = $1) FROM queue_claims GROUP BY match_id ORDER BY match_id`, end)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for rows.Next() {
		var m string
		var n int64
		if err := rows.Scan(&m, &n); err != nil {
			t.Fatal(err)
		}
		got[m] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got["m1"] != 4 || got["m2"] != 0 || len(got) != 2 {
		t.Fatalf("claims ended at the result's time by match: %v, want m1's 4 and none of m2's", got)
	}
}

// A result's claims end without a WAL flush of their own (synchronous_commit off in their
// transaction: the result's synchronous commit after them flushes them), unless asked to be
// durable. A trigger on the claims keeps the setting each update ran under; before the
// change the update was a statement of its own under the server's setting, on.
func TestQueueEndClaimsDefersItsFlush(t *testing.T) {
	t.Parallel()
	qs, d := openQueueStore(t)
	ctx := testCtx(t)
	claimTwoMatches(t, qs)
	if _, err := d.Pool().Exec(ctx, `
CREATE TABLE claims_ended (match_id text, sync text);
CREATE FUNCTION keep_sync() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO claims_ended VALUES (NEW.match_id, current_setting('synchronous_commit')); RETURN NEW; END $$;
CREATE TRIGGER keep_sync BEFORE UPDATE ON queue_claims FOR EACH ROW EXECUTE FUNCTION keep_sync()`); err != nil {
		t.Fatal(err)
	}
	end := queuetest.T0.Add(time.Second)
	for _, c := range []struct {
		match   string
		durable bool
	}{{"m1", false}, {"m2", true}} {
		if ended, err := qs.EndClaims(ctx, c.match, end, c.durable); err != nil || !ended {
			t.Fatalf("EndClaims(%s, durable %v): ended %v, %v", c.match, c.durable, ended, err)
		}
	}
	got := map[string]string{}
	rows, err := d.Pool().Query(ctx, `SELECT match_id, string_agg(DISTINCT sync, ',') FROM claims_ended GROUP BY match_id`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var m, sync string
		if err := rows.Scan(&m, &sync); err != nil {
			t.Fatal(err)
		}
		got[m] = sync
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if got["m1"] != "off" || got["m2"] != "on" || len(got) != 2 {
		t.Fatalf("synchronous_commit of each match's end: %v, want m1 (not durable) off, m2 (durable) on", got)
	}
}

// claimTwoMatches makes matches m1 and m2 of queue q, each of 4 exclusive players: 8 claims.
func claimTwoMatches(t *testing.T, qs *queuedb.Store) {
	t.Helper()
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	var ts []queue.Ticket
	for _, id := range []string{"x", "y", "z", "w"} {
		tk := queuetest.Ticket("q", id, 1, id+"1", id+"2")
		tk.Exclusive = true
		ts = append(ts, mustCreate(t, qs, tk))
	}
	w := queue.TickWrite{At: queuetest.T0, Matches: []queue.Match{
		queuetest.Match2v2("m1", ts[0], ts[1]), queuetest.Match2v2("m2", ts[2], ts[3])}}
	if done, err := queue.CommitTick(ctx, qs, "q", w); err != nil || len(done.Matches) != 2 {
		t.Fatalf("the tick: %+v, %v", done, err)
	}
}

// The results' claims' ends that come while one transaction of them is under way share the
// next one: a match's end held at a row lock, ten others wait for it, then end in one
// transaction (their rows' xmin), each told that it ended claims. Before the change each end
// was a transaction of its own.
func TestQueueEndClaimsShareATransaction(t *testing.T) {
	t.Parallel()
	qs, d := openQueueStore(t)
	ctx := testCtx(t)
	pool := d.Pool()
	if _, err := pool.Exec(ctx, `
INSERT INTO queue_claims (player_id, ticket_id, match_id, queue, until)
SELECT 'p' || g, 'tk' || g, 'mt' || g / 2, 'q', $1 FROM generate_series(0, 21) AS g`, queuetest.T0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	hold, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hold.Rollback(context.Background()) }()
	if _, err := hold.Exec(ctx, `SELECT 1 FROM queue_claims WHERE match_id = 'mt0' FOR UPDATE`); err != nil {
		t.Fatal(err)
	}
	end := queuetest.T0.Add(time.Second)
	type answer struct {
		match string
		ended bool
		err   error
	}
	answers := make(chan answer, 11)
	endClaims := func(m string) {
		go func() {
			ended, err := qs.EndClaims(ctx, m, end, false)
			answers <- answer{m, ended, err}
		}()
	}
	endClaims("mt0")
	waitFor(t, 10*time.Second, "mt0's end waiting at the row lock", func() bool { return lockWaiters(t, pool) == 1 })
	var others []string
	for i := 1; i <= 10; i++ {
		others = append(others, fmt.Sprintf("mt%d", i))
		endClaims(others[i-1])
	}
	waitFor(t, 10*time.Second, "ten ends queued behind mt0's", func() bool { return qs.PendingEnds() == 10 })
	if err := hold.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range 11 {
		if a := <-answers; a.err != nil || !a.ended {
			t.Fatalf("EndClaims(%s): ended %v, %v; want its claims ended", a.match, a.ended, a.err)
		}
	}
	var txs, ended int
	if err := pool.QueryRow(ctx, `SELECT count(DISTINCT xmin::text), count(*) FILTER (WHERE until = $2) FROM queue_claims WHERE match_id = ANY($1)`,
		others, end).Scan(&txs, &ended); err != nil {
		t.Fatal(err)
	}
	if txs != 1 || ended != 20 {
		t.Fatalf("the ten matches' 20 claims: %d ended, in %d transactions; want 20 in 1", ended, txs)
	}
}
