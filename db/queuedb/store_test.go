package queuedb_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// testMaxConns is the pool size of the tests' stores (see dbtest.MaxConns).
const testMaxConns = dbtest.MaxConns

// openDB returns a pool on a fresh, migrated database of the test's own.
func openDB(tb testing.TB) *db.DB {
	tb.Helper()
	url := dbtest.URL(tb)
	ctx := context.Background()
	if err := db.Migrate(ctx, url); err != nil {
		tb.Fatalf("Migrate: %v", err)
	}
	d, err := db.Open(ctx, url, db.Options{MaxConns: testMaxConns})
	if err != nil {
		tb.Fatalf("Open: %v", err)
	}
	tb.Cleanup(d.Close)
	return d
}

// openQueueStore opens a queue store on a fresh, migrated database, and returns it with the
// pool it uses.
func openQueueStore(tb testing.TB) (*queuedb.Store, *db.DB) {
	tb.Helper()
	s := openDB(tb)
	qs, err := queuedb.New(context.Background(), s.Pool())
	if err != nil {
		tb.Fatalf("NewQueueStore: %v", err)
	}
	tb.Cleanup(qs.Close) // before the pool's Close, registered earlier
	return qs, s
}

// eventsOf is the events of a read of them.
func eventsOf(page queue.EventPage, err error) ([]queue.Event, error) { return page.Events, err }

// openReplicas opens n queue stores on one fresh database, each with a pool of its own, as n
// replicas of the service have.
func openReplicas(tb testing.TB, n int) ([]*queuedb.Store, *pgxpool.Pool) {
	tb.Helper()
	return openReplicasWith(tb, n, func(int) queuedb.Options { return queuedb.Options{} })
}

// openReplicasWith is openReplicas with each replica's queue store options.
func openReplicasWith(tb testing.TB, n int, opts func(i int) queuedb.Options) ([]*queuedb.Store, *pgxpool.Pool) {
	tb.Helper()
	ctx := context.Background()
	url := dbtest.URL(tb)
	if err := db.Migrate(ctx, url); err != nil {
		tb.Fatal(err)
	}
	var out []*queuedb.Store
	var pool *pgxpool.Pool
	for i := range n {
		s, err := db.Open(ctx, url, db.Options{MaxConns: testMaxConns})
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(s.Close)
		qs, err := queuedb.NewWith(ctx, s.Pool(), opts(i))
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(qs.Close)
		out, pool = append(out, qs), s.Pool()
	}
	return out, pool
}

// The contract's subtests share one database, emptied before each: a database of its own
// for each (created and migrated) took most of the suite's time.
func TestPostgresQueueStoreContract(t *testing.T) {
	t.Parallel()
	s := openDB(t)
	queuetest.Run(t, func(t *testing.T) queue.Store {
		_, err := s.Pool().Exec(context.Background(),
			`TRUNCATE queues, queue_tickets, queue_searching, queue_matches, queue_events, queue_proposals, queue_partitions, player_standing, queue_claims`)
		if err != nil {
			t.Fatal(err)
		}
		qs, err := queuedb.New(context.Background(), s.Pool())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(qs.Close)
		return qs
	})
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func mustPut(t *testing.T, st queue.Store, q queue.Queue) {
	t.Helper()
	if _, _, err := st.PutQueue(testCtx(t), q); err != nil {
		t.Fatal(err)
	}
}

func mustCreate(t *testing.T, st queue.Store, tk queue.Ticket) queue.Ticket {
	t.Helper()
	got, _, err := st.CreateTicket(testCtx(t), tk)
	if err != nil {
		t.Fatalf("create %s: %v", tk.ID, err)
	}
	return got
}

// checkSearching checks queue_searching against the tickets: a row for each player of each
// searching ticket, and no other.
func checkSearching(t *testing.T, pool *pgxpool.Pool) {
	t.Helper()
	var stray, missing int
	err := pool.QueryRow(context.Background(), `
SELECT
  (SELECT count(*) FROM queue_searching AS s LEFT JOIN queue_tickets AS t ON t.id = s.ticket_id
   WHERE t.id IS NULL OR t.status <> 'searching' OR t.queue <> s.queue
      OR NOT t.players @> jsonb_build_array(jsonb_build_object('id', s.player_id))),
  (SELECT count(*) FROM queue_tickets AS t, jsonb_array_elements(t.players) AS p
   WHERE t.status = 'searching' AND NOT EXISTS (
       SELECT 1 FROM queue_searching AS s
       WHERE s.queue = t.queue AND s.player_id = p->>'id' AND s.ticket_id = t.id))`).Scan(&stray, &missing)
	if err != nil {
		t.Fatal(err)
	}
	if stray != 0 || missing != 0 {
		t.Fatalf("queue_searching: %d rows without their searching ticket, %d searching players without a row", stray, missing)
	}
}

// waitFor polls cond until it holds, or fails the test after d.
func waitFor(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(d); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%s: not after %v", what, d)
		}
	}
}

// lockWaiters counts the sessions of the database waiting for a lock.
func lockWaiters(t *testing.T, pool *pgxpool.Pool) int {
	var n int
	err := pool.QueryRow(context.Background(), `
SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// holdQueue locks a queue's row as a deletion does, which makes the next create batch wait;
// the returned function lets it go.
func holdQueue(t *testing.T, pool *pgxpool.Pool, name string) func() {
	t.Helper()
	ctx := testCtx(t)
	tx, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, `SELECT 1 FROM queues WHERE name = $1 FOR UPDATE`, name); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { _ = tx.Rollback(context.Background()) }) }
	t.Cleanup(release)
	return release
}

// Group commit: calls that arrive while a batch commits share the next commit, and each gets
// its own answer; one bad ticket does not fail the others.
func TestQueueGroupCommitAnswersEachTicket(t *testing.T) {
	t.Parallel()
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	pool := s.Pool()
	mustPut(t, qs, queuetest.Queue("q"))
	mustCreate(t, qs, queuetest.Ticket("q", "held", 1, "alice"))
	keyed := queuetest.Ticket("q", "keyed", 1, "bob")
	keyed.IdempotencyKey, keyed.BodyHash = "k1", [32]byte{1}
	mustCreate(t, qs, keyed)

	// The first batch waits for the queue's row; meanwhile the others queue up.
	release := holdQueue(t, pool, "q")
	commits0, tickets0 := qs.CreateStats()
	type call struct {
		tk   queue.Ticket
		ctx  context.Context
		got  queue.Ticket
		rep  bool
		err  error
		done chan struct{}
	}
	start := func(tk queue.Ticket, c context.Context) *call {
		cl := &call{tk: tk, ctx: c, done: make(chan struct{})}
		go func() {
			defer close(cl.done)
			cl.got, cl.rep, cl.err = qs.CreateTicket(cl.ctx, cl.tk)
		}()
		return cl
	}
	first := start(queuetest.Ticket("q", "first", 2, "p-first"), ctx)
	waitFor(t, 10*time.Second, "the first batch waits for the queue's lock", func() bool { return lockWaiters(t, pool) == 1 })

	retry := keyed
	retry.ID = "keyed-retry"
	otherBody := retry
	otherBody.ID, otherBody.BodyHash = "keyed-other", [32]byte{2}
	givesUp, giveUp := context.WithCancel(ctx)
	calls := map[string]*call{}
	for _, c := range []struct {
		tk  queue.Ticket
		ctx context.Context
	}{
		{queuetest.Ticket("q", "ok1", 2, "carol"), ctx},
		{queuetest.Ticket("q", "ok2", 2, "dave", "erin"), ctx},
		{queuetest.Ticket("nowhere", "lost", 2, "fred"), ctx},
		{queuetest.Ticket("q", "dup-alice", 2, "gina", "alice"), ctx},
		{retry, ctx},
		{otherBody, ctx},
		{queuetest.Ticket("q", "held", 2, "hugo"), ctx}, // an id in use
		{queuetest.Ticket("q", "twin-a", 2, "ivan"), ctx},
		{queuetest.Ticket("q", "twin-b", 2, "ivan"), ctx},
		{queuetest.Ticket("q", "gives-up", 2, "kim"), givesUp},
	} {
		key := c.tk.ID
		if c.tk.ID == "held" {
			key = "held-again"
		}
		calls[key] = start(c.tk, c.ctx)
	}
	waitFor(t, 10*time.Second, "the calls queue up", func() bool { return qs.QueuedCreates() == len(calls) })
	giveUp()
	<-calls["gives-up"].done
	release()
	for _, c := range calls {
		<-c.done
	}
	<-first.done

	if first.err != nil {
		t.Fatalf("first: %v", first.err)
	}
	for _, id := range []string{"ok1", "ok2"} {
		if c := calls[id]; c.err != nil || c.rep || c.got.ID != id || c.got.Status != queue.Searching {
			t.Fatalf("%s: %+v replayed %v, %v", id, c.got, c.rep, c.err)
		}
	}
	if err := calls["lost"].err; apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a ticket of no queue: %v, want NotFound", err)
	}
	var se *queue.SearchingError
	if err := calls["dup-alice"].err; !errors.As(err, &se) || se.PlayerID != "alice" || se.TicketID != "held" {
		t.Fatalf("a ticket with a searching player: %v, want alice's ticket held named", err)
	}
	if c := calls["keyed-retry"]; c.err != nil || !c.rep || c.got.ID != "keyed" {
		t.Fatalf("a retry with the same key and body: %+v replayed %v, %v; want keyed replayed", c.got, c.rep, c.err)
	}
	if err := calls["keyed-other"].err; apperr.CodeOf(err) != apperr.Conflict || errors.As(err, &se) {
		t.Fatalf("the key with another body: %v, want a Conflict", err)
	}
	if err := calls["held-again"].err; apperr.CodeOf(err) != apperr.Conflict || errors.As(err, &se) {
		t.Fatalf("an id in use: %v, want a Conflict", err)
	}
	a, b := calls["twin-a"], calls["twin-b"]
	if (a.err == nil) == (b.err == nil) {
		t.Fatalf("two tickets of ivan in one batch: %v and %v, want exactly one created", a.err, b.err)
	}
	winner, loser := a, b
	if a.err != nil {
		winner, loser = b, a
	}
	if !errors.As(loser.err, &se) || se.PlayerID != "ivan" || se.TicketID != winner.tk.ID {
		t.Fatalf("the twin refused: %v, want ivan's ticket %s named", loser.err, winner.tk.ID)
	}
	if err := calls["gives-up"].err; !errors.Is(err, context.Canceled) {
		t.Fatalf("a caller that gave up: %v, want its context's error", err)
	}
	// gina, of the refused dup-alice, and kim, whose caller gave up before the batch, are free.
	mustCreate(t, qs, queuetest.Ticket("q", "gina", 3, "gina"))
	mustCreate(t, qs, queuetest.Ticket("q", "kim", 3, "kim"))

	// first's batch, everyone else's, and the twin deferred to the next: three commits for
	// five tickets.
	commits, tickets := qs.CreateStats()
	if commits-commits0 != 3+2 || tickets-tickets0 != 4+2 {
		t.Fatalf("%d commits for %d tickets, want 3 for 4 (and 2 for gina's and kim's)", commits-commits0, tickets-tickets0)
	}
	checkSearching(t, pool)
}

// Several replicas create tickets at once, naming the same players: exactly one ticket per
// player gets in, and the others are told which ticket holds the player.
func TestQueueReplicasCreateConcurrently(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicas(t, 3)
	ctx := testCtx(t)
	mustPut(t, stores[0], queuetest.Queue("q"))
	const shared = 100
	type result struct {
		t   queue.Ticket
		err error
	}
	results := make([][]result, len(stores))
	var wg sync.WaitGroup
	for r, st := range stores {
		results[r] = make([]result, shared)
		for i := range shared {
			wg.Go(func() {
				tk := queuetest.Ticket("q", fmt.Sprintf("r%d-%03d", r, i), 1, fmt.Sprintf("own-%d-%03d", r, i), fmt.Sprintf("shared-%03d", i))
				_, _, err := st.CreateTicket(ctx, tk)
				results[r][i] = result{tk, err}
			})
		}
	}
	wg.Wait()
	for i := range shared {
		var winners []string
		for r := range stores {
			if results[r][i].err == nil {
				winners = append(winners, results[r][i].t.ID)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("shared-%03d: created by %v, want exactly one", i, winners)
		}
		for r := range stores {
			var se *queue.SearchingError
			if err := results[r][i].err; err != nil && (!errors.As(err, &se) || se.TicketID != winners[0]) {
				t.Fatalf("ticket %s: %v, want the winner %s named", results[r][i].t.ID, err, winners[0])
			}
		}
	}
	all, _, err := stores[1].Changes(ctx, queue.Queue{Name: "q"}, "", 0)
	if err != nil || len(all) != shared {
		t.Fatalf("%d searching tickets, want %d: %v", len(all), shared, err)
	}
	for r, st := range stores {
		commits, tickets := st.CreateStats()
		t.Logf("replica %d: %d tickets in %d commits", r, tickets, commits)
	}
	checkSearching(t, pool)
}

// One replica leads a queue at a time; when the leader's connections die, another takes the
// lead at its next Lead, and the old leader knows it no longer leads at its next renewal.
func TestQueueReplicasLead(t *testing.T) {
	t.Parallel()
	clocks := []*leaseClock{newLeaseClock(), newLeaseClock(), newLeaseClock()}
	stores, pool := openReplicasWith(t, 3, func(i int) queuedb.Options { return queuedb.Options{Now: clocks[i].now} })
	ctx := testCtx(t)
	mustPut(t, stores[0], queuetest.Queue("q"))
	leaders := func(among []int) []int {
		var out []int
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, i := range among {
			wg.Go(func() {
				ok, err := stores[i].Lead(ctx, "q")
				if err != nil {
					t.Errorf("replica %d: Lead: %v", i, err)
				}
				if ok {
					mu.Lock()
					out = append(out, i)
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		slices.Sort(out)
		return out
	}
	first := leaders([]int{0, 1, 2})
	if len(first) != 1 {
		t.Fatalf("leaders %v, want exactly one", first)
	}
	if again := leaders([]int{0, 1, 2}); !slices.Equal(again, first) {
		t.Fatalf("leaders at the next tick %v, want %v still", again, first)
	}

	// The leader's session is killed, as it is when its process dies.
	dead := first[0]
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, stores[dead].LeaderPID()); err != nil {
		t.Fatal(err)
	}
	rest := slices.DeleteFunc([]int{0, 1, 2}, func(i int) bool { return i == dead })
	var second []int
	waitFor(t, 5*time.Second, "another replica leads", func() bool {
		second = leaders(rest)
		if len(second) > 1 {
			t.Fatalf("leaders %v at once", second)
		}
		return len(second) == 1
	})
	// Its renewal is due (a quarter of the lease on its clock): the renewal finds the session
	// gone.
	clocks[dead].advance(queuedb.DefaultLeaderLease / 4)
	if ok, err := stores[dead].Lead(ctx, "q"); ok {
		t.Fatalf("the replica whose session died still leads (%v)", err)
	}
	if ok, err := stores[dead].Lead(ctx, "q"); ok || err != nil {
		t.Fatalf("the old leader, reconnected: lead %v, %v; want false (another leads)", ok, err)
	}

	// The new leader's store is closed, as at a shutdown: the last replica takes over.
	stores[second[0]].Close()
	last := slices.DeleteFunc(rest, func(i int) bool { return i == second[0] })
	waitFor(t, 5*time.Second, "the last replica leads", func() bool {
		got := leaders(append(slices.Clone(last), dead))
		if len(got) > 1 {
			t.Fatalf("leaders %v at once", got)
		}
		return len(got) == 1
	})
	if _, err := stores[second[0]].Lead(ctx, "q"); apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("Lead on a closed store: %v, want Unavailable", err)
	}
}

// Leadership of several queues: each queue is led by one replica; Resign hands one over
// without touching the others.
func TestQueueResignHandsOver(t *testing.T) {
	t.Parallel()
	stores, _ := openReplicas(t, 2)
	ctx := testCtx(t)
	a, b := stores[0], stores[1]
	for _, name := range []string{"q1", "q2"} {
		mustPut(t, a, queuetest.Queue(name))
		if ok, err := a.Lead(ctx, name); !ok || err != nil {
			t.Fatalf("a leads %s: %v, %v", name, ok, err)
		}
		if ok, err := b.Lead(ctx, name); ok || err != nil {
			t.Fatalf("b leads %s too: %v, %v", name, ok, err)
		}
	}
	if err := a.Resign(ctx, "q1"); err != nil {
		t.Fatal(err)
	}
	if ok, _ := b.Lead(ctx, "q1"); !ok {
		t.Fatal("b does not lead q1 after a resigned it")
	}
	if ok, _ := a.Lead(ctx, "q2"); !ok {
		t.Fatal("a lost q2 when it resigned q1")
	}
	if ok, _ := b.Lead(ctx, "q2"); ok {
		t.Fatal("b leads q2, which a still leads")
	}
}

// mustWake fails the test unless the wait that reports to woke ends without an error within
// 5 s; notWoken says what did not wake.
func mustWake(t *testing.T, woke <-chan error, notWoken string) {
	t.Helper()
	select {
	case err := <-woke:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal(notWoken)
	}
}

// A waiter on one replica wakes when another replica writes an event.
func TestQueueWaitEventsAcrossReplicas(t *testing.T) {
	t.Parallel()
	stores, _ := openReplicas(t, 2)
	ctx := testCtx(t)
	a, b := stores[0], stores[1]
	mustPut(t, a, queuetest.Queue("q"))
	mustCreate(t, a, queuetest.Ticket("q", "t1", 1, "alice"))
	woke := make(chan error, 1)
	go func() { woke <- b.WaitEvents(ctx, "q", 0) }()
	select {
	case err := <-woke:
		t.Fatalf("woke before any event: %v", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, err := queue.CancelTicket(ctx, a, "t1", queuetest.T0); err != nil {
		t.Fatal(err)
	}
	mustWake(t, woke, "the other replica's waiter did not wake")
}

// appendSilentEvent appends an event to a queue the way the store does, but without its
// notification.
func appendSilentEvent(t *testing.T, pool *pgxpool.Pool, queueName string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
WITH seq AS (UPDATE queues SET event_seq = event_seq + 1 WHERE name = $1 RETURNING event_seq)
INSERT INTO queue_events (queue, seq, type, ticket_id, reason, at)
SELECT $1, seq.event_seq, 'cancelled', 'silent', 'test', now() FROM seq`, queueName)
	if err != nil {
		t.Fatal(err)
	}
}

// While notifications do not come, waiters poll: an event still wakes them.
func TestQueueWaitEventsPollsWhileNotListening(t *testing.T) {
	t.Parallel()
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))

	// Listening: an event that notifies no one wakes no one.
	short, cancel := context.WithTimeout(ctx, 600*time.Millisecond)
	defer cancel()
	woke := make(chan error, 1)
	go func() { woke <- qs.WaitEvents(short, "q", 0) }()
	time.Sleep(50 * time.Millisecond)
	appendSilentEvent(t, s.Pool(), "q")
	if err := <-woke; !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a silent event while listening: %v, want the wait to last until its deadline", err)
	}

	qs.SetListening(false)
	go func() { woke <- qs.WaitEvents(ctx, "q", 1) }()
	time.Sleep(50 * time.Millisecond)
	appendSilentEvent(t, s.Pool(), "q")
	mustWake(t, woke, "a waiter that is not notified did not poll")
}

// The listening connection dies: the store connects again and its waiters wake again at the
// events of other replicas.
func TestQueueListenerReconnects(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicas(t, 2)
	ctx := testCtx(t)
	a, b := stores[0], stores[1]
	mustPut(t, a, queuetest.Queue("q"))
	mustCreate(t, b, queuetest.Ticket("q", "t1", 1, "alice"))
	old := a.ListenerPID()
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, old); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a new listening session", func() bool { return a.ListenerPID() != old })
	woke := make(chan error, 1)
	go func() { woke <- a.WaitEvents(ctx, "q", 0) }()
	time.Sleep(50 * time.Millisecond)
	if _, err := queue.CancelTicket(ctx, b, "t1", queuetest.T0); err != nil {
		t.Fatal(err)
	}
	mustWake(t, woke, "the waiter did not wake after the listener reconnected")
}

// Changes must not miss a transaction that took its id before a read and committed after it,
// as a cursor of the highest id read would.
func TestQueueChangesSeeALateCommit(t *testing.T) {
	t.Parallel()
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	mustCreate(t, qs, queuetest.Ticket("q", "t1", 1, "alice"))
	_, cur0, err := qs.Changes(ctx, queue.Queue{Name: "q"}, "", 0)
	if err != nil {
		t.Fatal(err)
	}

	// A slow writer changes t1 and stays open while another ticket is created and read.
	slow, err := s.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback(ctx)
	if _, err := slow.Exec(ctx, `
UPDATE queue_tickets SET reason = 'slow', changed_xid = pg_current_xact_id() WHERE id = 't1'`); err != nil {
		t.Fatal(err)
	}
	mustCreate(t, qs, queuetest.Ticket("q", "t2", 2, "bob"))
	got, cur1, err := qs.Changes(ctx, queue.Queue{Name: "q"}, "", cur0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(got, func(t queue.Ticket) bool { return t.ID == "t2" }) {
		t.Fatalf("changes %v, want t2", ticketIDs(got))
	}
	if err := slow.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, _, err = qs.Changes(ctx, queue.Queue{Name: "q"}, "", cur1)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(got, func(t queue.Ticket) bool { return t.ID == "t1" })
	if i < 0 || got[i].Reason != "slow" {
		t.Fatalf("changes after the slow writer committed: %v, want t1 with its change", ticketIDs(got))
	}
}

func ticketIDs(ts []queue.Ticket) []string {
	var ids []string
	for _, t := range ts {
		ids = append(ids, t.ID+":"+string(t.Status))
	}
	return ids
}

// Every way a ticket ends shows in Changes: matched, expired, cancelled, its queue deleted.
func TestQueueChangesSeeEveryEnd(t *testing.T) {
	t.Parallel()
	qs, _ := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	a := mustCreate(t, qs, queuetest.Ticket("q", "a", 1, "a1", "a2"))
	b := mustCreate(t, qs, queuetest.Ticket("q", "b", 1, "b1", "b2"))
	mustCreate(t, qs, queuetest.Ticket("q", "old", 1, "c1"))
	mustCreate(t, qs, queuetest.Ticket("q", "gone", 1, "d1"))
	mustCreate(t, qs, queuetest.Ticket("q", "left", 1, "e1"))
	_, cur, err := qs.Changes(ctx, queue.Queue{Name: "q"}, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	done, err := queue.CommitTick(ctx, qs, "q", queue.TickWrite{At: queuetest.T0.Add(time.Minute),
		Matches: []queue.Match{queuetest.Match2v2("m", a, b)}, Expired: []queue.Expiry{{TicketID: "old", Reason: "ttl"}}})
	if err != nil || len(done.Matches) != 1 || len(done.Expired) != 1 {
		t.Fatalf("tick: %+v, %v", done, err)
	}
	if _, err := queue.CancelTicket(ctx, qs, "gone", queuetest.T0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := queue.DeleteQueue(ctx, qs, "q", queuetest.T0.Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, _, err := qs.Changes(ctx, queue.Queue{Name: "q"}, "", cur)
	if err != nil {
		t.Fatal(err)
	}
	latest := map[string]string{}
	for _, tk := range got {
		latest[tk.ID] = string(tk.Status) + "/" + tk.Reason
	}
	want := map[string]string{"a": "matched/", "b": "matched/", "old": "expired/ttl", "gone": "cancelled/cancelled", "left": "cancelled/queue deleted"}
	for id, w := range want {
		if latest[id] != w {
			t.Fatalf("changes %v, want %v", latest, want)
		}
	}
}

// Changes since a cursor sends a searching ticket whole and an ended one without its JSON
// (players, assignment), which the leader does not read.
func TestQueueChangesSendEndedTicketsBare(t *testing.T) {
	t.Parallel()
	qs, _ := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	a := mustCreate(t, qs, queuetest.Ticket("q", "a", 1, "a1", "a2"))
	b := mustCreate(t, qs, queuetest.Ticket("q", "b", 1, "b1", "b2"))
	_, cur, err := qs.Changes(ctx, queue.Queue{Name: "q"}, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := queue.CommitTick(ctx, qs, "q", queue.TickWrite{At: queuetest.T0.Add(time.Minute),
		Matches: []queue.Match{queuetest.Match2v2("m", a, b)}}); err != nil {
		t.Fatal(err)
	}
	c := mustCreate(t, qs, queuetest.Ticket("q", "c", 2, "c1", "c2"))
	got, _, err := qs.Changes(ctx, queue.Queue{Name: "q"}, "", cur)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]queue.Ticket{}
	for _, tk := range got {
		seen[tk.ID] = tk
	}
	if g := seen["c"]; g.Status != queue.Searching || !reflect.DeepEqual(g.Players, c.Players) {
		t.Fatalf("the searching ticket: %+v, want its players %+v", g, c.Players)
	}
	for _, id := range []string{"a", "b"} {
		if g, ok := seen[id]; !ok || g.Status != queue.Matched || len(g.Players) != 0 || g.Assignment != nil || g.Queue != "q" {
			t.Fatalf("the matched ticket %s: %+v (seen %v), want its id, queue and status only", id, g, ok)
		}
	}
}

// Two replicas that both believe they lead commit overlapping ticks at once: no ticket is
// matched twice, each gets one event, and the event numbers count up without gaps.
func TestQueueConcurrentTicksMatchEachTicketOnce(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicas(t, 2)
	ctx := testCtx(t)
	mustPut(t, stores[0], queuetest.Queue("q"))
	const n = 60
	var tickets []queue.Ticket
	for i := range n {
		tickets = append(tickets, mustCreate(t, stores[i%2], queuetest.Ticket("q", fmt.Sprintf("t%02d", i), i, fmt.Sprintf("p%02d", i))))
	}
	// Replica 0 pairs (0,1), (2,3)...; replica 1 pairs (1,2), (3,4)...: every ticket is wanted by both.
	var w0, w1 queue.TickWrite
	for i := 0; i+1 < n; i += 2 {
		w0.Matches = append(w0.Matches, queuetest.Match2v2(fmt.Sprintf("x%02d", i), tickets[i], tickets[i+1]))
	}
	for i := 1; i+1 < n; i += 2 {
		w1.Matches = append(w1.Matches, queuetest.Match2v2(fmt.Sprintf("y%02d", i), tickets[i], tickets[i+1]))
	}
	w1.Expired = []queue.Expiry{{TicketID: tickets[0].ID, Reason: "ttl"}}
	var wg sync.WaitGroup
	var d0, d1 queue.TickCommitted
	var e0, e1 error
	wg.Go(func() { d0, e0 = queue.CommitTick(ctx, stores[0], "q", w0) })
	wg.Go(func() { d1, e1 = queue.CommitTick(ctx, stores[1], "q", w1) })
	wg.Wait()
	if e0 != nil || e1 != nil {
		t.Fatal(e0, e1)
	}
	matchedBy := map[string]string{}
	for _, m := range append(slices.Clone(w0.Matches), w1.Matches...) {
		if !slices.Contains(d0.Matches, m.ID) && !slices.Contains(d1.Matches, m.ID) {
			continue
		}
		for _, id := range m.Tickets() {
			if other, ok := matchedBy[id]; ok {
				t.Fatalf("ticket %s in stored matches %s and %s", id, other, m.ID)
			}
			matchedBy[id] = m.ID
		}
	}
	evs, err := eventsOf(stores[0].Events(ctx, "q", 0, 1000, false))
	if err != nil {
		t.Fatal(err)
	}
	perTicket := map[string]int{}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d", i, e.Seq)
		}
		perTicket[e.TicketID]++
	}
	for id, k := range perTicket {
		if k != 1 {
			t.Fatalf("ticket %s has %d events", id, k)
		}
	}
	if len(perTicket) != len(matchedBy)+len(d1.Expired) {
		t.Fatalf("%d tickets with events, want %d matched and %d expired", len(perTicket), len(matchedBy), len(d1.Expired))
	}
	checkSearching(t, pool)
}

// A queue made again after its deletion is created anew, and its events go on numbering
// where they stopped.
func TestQueueRecreatedKeepsItsEventNumbers(t *testing.T) {
	t.Parallel()
	qs, _ := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	mustCreate(t, qs, queuetest.Ticket("q", "t1", 1, "alice"))
	if err := queue.DeleteQueue(ctx, qs, "q", queuetest.T0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := qs.CreateTicket(ctx, queuetest.Ticket("q", "t2", 2, "bob")); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("a ticket in a deleted queue: %v, want NotFound", err)
	}
	again := queuetest.Queue("q")
	again.CreatedAt, again.UpdatedAt = queuetest.T0.Add(time.Hour), queuetest.T0.Add(time.Hour)
	stored, created, err := qs.PutQueue(ctx, again)
	if err != nil || !created || !stored.CreatedAt.Equal(again.CreatedAt) {
		t.Fatalf("made again: %+v created %v, %v", stored, created, err)
	}
	mustCreate(t, qs, queuetest.Ticket("q", "t3", 3, "alice"))
	if _, err := queue.CancelTicket(ctx, qs, "t3", queuetest.T0.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	evs, err := eventsOf(qs.Events(ctx, "q", 0, 10, false))
	if err != nil || len(evs) != 2 || evs[1].Seq != 2 || evs[1].TicketID != "t3" {
		t.Fatalf("events: %+v, %v", evs, err)
	}
}

// Purge keeps a webhook's outbox: events the webhook has not acknowledged stay, however old.
func TestQueuePurgeKeepsTheWebhookOutbox(t *testing.T) {
	t.Parallel()
	qs, _ := openQueueStore(t)
	ctx := testCtx(t)
	q := queuetest.Queue("q")
	q.Webhook = &queue.Webhook{URL: "https://example.com/hook", Secret: "0123456789abcdef"}
	mustPut(t, qs, q)
	for i := range 4 {
		id := fmt.Sprintf("t%d", i)
		mustCreate(t, qs, queuetest.Ticket("q", id, i, "p"+id))
		if _, err := queue.CancelTicket(ctx, qs, id, queuetest.T0.Add(time.Duration(i)*time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	if err := qs.SetWebhookCursor(ctx, "q", 2); err != nil {
		t.Fatal(err)
	}
	r, err := qs.Purge(ctx, queuetest.T0.Add(time.Hour))
	if err != nil || r.Events != 2 || r.Tickets != 4 {
		t.Fatalf("purge: %+v, %v; want the 2 acknowledged events and the 4 tickets", r, err)
	}
	evs, err := eventsOf(qs.Events(ctx, "q", 0, 10, false))
	if err != nil || len(evs) != 2 || evs[0].Seq != 3 {
		t.Fatalf("the outbox after the purge: %+v, %v", evs, err)
	}
}

// Close commits the batch under way and fails the calls still waiting; the store then
// refuses calls.
func TestQueueCloseFailsTheCreatesItWillNotCommit(t *testing.T) {
	t.Parallel()
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	release := holdQueue(t, s.Pool(), "q")
	errs := make(chan error, 2)
	go func() { _, _, err := qs.CreateTicket(ctx, queuetest.Ticket("q", "first", 1, "alice")); errs <- err }()
	waitFor(t, 10*time.Second, "the first batch waits", func() bool { return lockWaiters(t, s.Pool()) == 1 })
	go func() { _, _, err := qs.CreateTicket(ctx, queuetest.Ticket("q", "second", 1, "bob")); errs <- err }()
	waitFor(t, 10*time.Second, "the second call queues", func() bool { return qs.QueuedCreates() == 1 })
	closed := make(chan struct{})
	go func() { qs.Close(); close(closed) }()
	time.Sleep(50 * time.Millisecond)
	release()
	<-closed
	got := []error{<-errs, <-errs}
	if (got[0] == nil) == (got[1] == nil) || apperr.CodeOf(cmpOrErr(got...)) != apperr.Unavailable {
		t.Fatalf("after Close: %v, want the first committed and the second Unavailable", got)
	}
	var status string
	if err := s.Pool().QueryRow(ctx, `SELECT string_agg(id, ',' ORDER BY id) FROM queue_tickets`).Scan(&status); err != nil || status != "first" {
		t.Fatalf("stored tickets %q, %v; want first only", status, err)
	}
	if _, _, err := qs.CreateTicket(ctx, queuetest.Ticket("q", "third", 1, "carol")); apperr.CodeOf(err) != apperr.Unavailable {
		t.Fatalf("create on a closed store: %v", err)
	}
}

func cmpOrErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// What the store refuses before it reaches the database.
func TestQueueCreateRefusesMalformedTickets(t *testing.T) {
	t.Parallel()
	qs, _ := openQueueStore(t)
	mustPut(t, qs, queuetest.Queue("q"))
	for name, tk := range map[string]queue.Ticket{
		"no players":        {ID: "t1", Queue: "q"},
		"a player twice":    queuetest.Ticket("q", "t2", 1, "alice", "alice"),
		"a rating not JSON": {ID: "t3", Queue: "q", Players: []queue.Player{{ID: "bob", Rating: inf()}}},
	} {
		if _, _, err := qs.CreateTicket(testCtx(t), tk); apperr.CodeOf(err) != apperr.Invalid {
			t.Errorf("%s: %v, want Invalid", name, err)
		}
	}
}

func inf() float64 { return math.Inf(1) }

// A tick of an unknown queue is NotFound, with or without anything to write; a quiet tick of
// a queue writes nothing.
func TestQueueCommitTickOfNoQueue(t *testing.T) {
	t.Parallel()
	qs, _ := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	if done, err := queue.CommitTick(ctx, qs, "q", queue.TickWrite{At: queuetest.T0}); err != nil || len(done.Matches)+len(done.Dropped)+len(done.Expired) != 0 {
		t.Fatalf("a quiet tick: %+v, %v", done, err)
	}
	for name, w := range map[string]queue.TickWrite{
		"quiet":     {At: queuetest.T0},
		"an expiry": {At: queuetest.T0, Expired: []queue.Expiry{{TicketID: "t1", Reason: "ttl"}}},
	} {
		if _, err := queue.CommitTick(ctx, qs, "nowhere", w); apperr.CodeOf(err) != apperr.NotFound {
			t.Errorf("%s tick of no queue: %v, want NotFound", name, err)
		}
	}
	if evs, err := eventsOf(qs.Events(ctx, "q", 0, 10, false)); err != nil || len(evs) != 0 {
		t.Fatalf("events after quiet ticks: %+v, %v", evs, err)
	}
}

// Replicas that create the same queue at once: one creates it, the others replace it.
func TestQueuePutQueueConcurrently(t *testing.T) {
	t.Parallel()
	stores, _ := openReplicas(t, 2)
	ctx := testCtx(t)
	const n = 8
	created := make([]bool, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { _, created[i], errs[i] = stores[i%2].PutQueue(ctx, queuetest.Queue("q")) })
	}
	wg.Wait()
	if err := cmpOrErr(errs...); err != nil {
		t.Fatal(err)
	}
	if k := len(slices.DeleteFunc(created, func(c bool) bool { return !c })); k != 1 {
		t.Fatalf("%d calls created the queue, want 1", k)
	}
}
