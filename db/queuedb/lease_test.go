package queuedb_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	neturl "net/url"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/dbtest"
	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// leaseClock is a replica's local clock, which times its own lease; the database's clock
// times every other replica's view of it.
type leaseClock struct {
	mu sync.Mutex
	t  time.Time
}

func newLeaseClock() *leaseClock { return &leaseClock{t: time.Now()} }

func (c *leaseClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *leaseClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// testLease is short, so that a hung leader's lease runs out within a test, and long enough
// for a renewal's round trip to fit a quarter of it under -race on a busy machine.
const testLease = 1500 * time.Millisecond

// A leader that hangs with its session alive (it stops calling Lead; its socket stays open)
// used to keep its queue for ever. Another replica takes it once the lease has run out, not
// before; the hung leader's writes are then refused, and it does not lead again when it
// wakes up.
func TestQueueHungLeaderIsReplaced(t *testing.T) {
	t.Parallel()
	clocks := []*leaseClock{newLeaseClock(), newLeaseClock()}
	stores, pool := openReplicasWith(t, 2, func(i int) queuedb.Options {
		return queuedb.Options{LeaderLease: testLease, Now: clocks[i].now}
	})
	a, b := stores[0], stores[1]
	ctx := testCtx(t)
	mustPut(t, a, queuetest.Queue("q"))
	x := mustCreate(t, a, queuetest.Ticket("q", "x", 1, "x1", "x2"))
	y := mustCreate(t, a, queuetest.Ticket("q", "y", 2, "y1", "y2"))
	renewedBefore := time.Now()
	if ok, err := a.Lead(ctx, "q"); !ok || err != nil {
		t.Fatalf("a leads: %v %v", ok, err)
	}
	if _, err := a.WebhookCursor(ctx, "q"); err != nil {
		t.Fatalf("a claims the outbox: %v", err)
	}
	hungPID := a.LeaderPID()
	// a hangs: it calls Lead no more. While its lease holds, b does not lead.
	if ok, err := b.Lead(ctx, "q"); ok || err != nil {
		t.Fatalf("b leads over a live lease: %v %v", ok, err)
	}
	waitFor(t, 10*testLease, "b takes the queue from the hung leader", func() bool { ok, _ := b.Lead(ctx, "q"); return ok })
	if took := time.Since(renewedBefore); took < testLease {
		t.Fatalf("b took the queue %v after a's last renewal, before the lease (%v) ran out", took, testLease)
	}
	if alive := sessionAlive(t, pool, hungPID); alive {
		t.Fatalf("the hung leader's session %d is still there", hungPID)
	}

	// a wakes up, in the middle of a tick: its clock has moved on as much as the world's.
	clocks[0].advance(time.Since(renewedBefore))
	if left := a.LeaseLeft("q"); left != 0 {
		t.Fatalf("a's lease after the hang: %v left, want none", left)
	}
	w := queue.TickWrite{At: queuetest.T0, Matches: []queue.Match{queuetest.Match2v2("m-a", x, y)}}
	if _, err := queue.CommitTick(ctx, a, "q", w); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the hung leader's commit: %v, want Conflict", err)
	}
	if err := a.PublishStats(ctx, "q", queue.Stats{At: queuetest.T0}); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the hung leader's stats: %v, want Conflict", err)
	}
	if ok, err := a.Lead(ctx, "q"); ok {
		t.Fatalf("the hung leader leads again on waking: %v", err)
	}
	if ok, err := a.Lead(ctx, "q"); ok || err != nil {
		t.Fatalf("the old leader, reconnected: %v %v; want false (b leads)", ok, err)
	}
	// b's outbox is its own once a's lease ran out (it has); a's cursor is refused then.
	if _, err := b.WebhookCursor(ctx, "q"); err != nil {
		t.Fatalf("b claims the outbox: %v", err)
	}
	if err := a.SetWebhookCursor(ctx, "q", 1); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the hung leader's webhook cursor: %v, want Conflict", err)
	}
	w.Matches[0].ID = "m-b"
	if done, err := queue.CommitTick(ctx, b, "q", w); err != nil || len(done.Matches) != 1 {
		t.Fatalf("the new leader's commit: %+v %v", done, err)
	}
}

// A leader that renews in time is never broken, however often others try: b tries at every
// one of a's calls for two leases. The lease is longer than testLease: a renewal that
// takes longer than the lease's valid part (a stalled host in a loaded CI run) rightly ends
// a's own claim, which is not what this test is about.
func TestQueueLiveLeaderIsNotBroken(t *testing.T) {
	t.Parallel()
	const lease = 5 * time.Second
	stores, pool := openReplicasWith(t, 2, func(int) queuedb.Options { return queuedb.Options{LeaderLease: lease} })
	a, b := stores[0], stores[1]
	ctx := testCtx(t)
	mustPut(t, a, queuetest.Queue("q"))
	if ok, err := a.Lead(ctx, "q"); !ok || err != nil {
		t.Fatalf("a leads: %v %v", ok, err)
	}
	pid := a.LeaderPID()
	for end := time.Now().Add(2 * lease); time.Now().Before(end); {
		if ok, err := a.Lead(ctx, "q"); !ok || err != nil {
			t.Fatalf("a lost its lead: %v %v", ok, err)
		}
		if ok, err := b.Lead(ctx, "q"); ok || err != nil {
			t.Fatalf("b took a live leader's queue: %v %v", ok, err)
		}
		time.Sleep(lease / 30) // a tick
	}
	if a.LeaderPID() != pid || !sessionAlive(t, pool, pid) {
		t.Fatalf("a's session %d was ended", pid)
	}
}

// The bound is the lease on the database's clock: a lease renewed just short of it holds, one
// renewed past it is broken. (The renewal time is set back by hand: the hang, without the
// wait.)
func TestQueueLeaseBound(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicasWith(t, 2, func(int) queuedb.Options { return queuedb.Options{LeaderLease: time.Hour} })
	a, b := stores[0], stores[1]
	ctx := testCtx(t)
	mustPut(t, a, queuetest.Queue("q"))
	if ok, err := a.Lead(ctx, "q"); !ok || err != nil {
		t.Fatalf("a leads: %v %v", ok, err)
	}
	age := func(d time.Duration) {
		t.Helper()
		if _, err := pool.Exec(ctx, `UPDATE queues SET leader_renewed_at = now() - $1 * interval '1 millisecond'`, d.Milliseconds()); err != nil {
			t.Fatal(err)
		}
	}
	age(time.Hour - time.Minute)
	if ok, err := b.Lead(ctx, "q"); ok || err != nil {
		t.Fatalf("b broke a lease a minute short of its bound: %v %v", ok, err)
	}
	age(time.Hour + time.Second)
	if ok, err := b.Lead(ctx, "q"); !ok || err != nil {
		t.Fatalf("b did not break a lease past its bound: %v %v", ok, err)
	}
	// A lease that ended with its leader's resignation is nobody's to break.
	if err := b.Resign(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	var renewed *time.Time
	if err := pool.QueryRow(ctx, `SELECT leader_renewed_at FROM queues WHERE name = 'q'`).Scan(&renewed); err != nil || renewed != nil {
		t.Fatalf("the lease after a resignation: %v %v, want none", renewed, err)
	}
}

// A leader stops acting on its lease three quarters of it after its last renewal, on its own
// clock, whether or not it can reach the database: before another replica may break it.
func TestQueueLeaderStopsOnItsOwnLease(t *testing.T) {
	t.Parallel()
	clock := newLeaseClock()
	stores, _ := openReplicasWith(t, 1, func(int) queuedb.Options { return queuedb.Options{LeaderLease: time.Minute, Now: clock.now} })
	a := stores[0]
	ctx := testCtx(t)
	mustPut(t, a, queuetest.Queue("q"))
	if ok, err := a.Lead(ctx, "q"); !ok || err != nil {
		t.Fatalf("a leads: %v %v", ok, err)
	}
	if left := a.LeaseLeft("q"); left != 45*time.Second {
		t.Fatalf("lease left at once: %v, want 45s", left)
	}
	clock.advance(45*time.Second - time.Millisecond)
	if left := a.LeaseLeft("q"); left != time.Millisecond {
		t.Fatalf("lease left: %v, want 1ms", left)
	}
	clock.advance(time.Millisecond)
	if left := a.LeaseLeft("q"); left != 0 {
		t.Fatalf("lease left at three quarters: %v, want none", left)
	}
	// Lead renews it (the database answers), and the lease starts again.
	if ok, err := a.Lead(ctx, "q"); !ok || err != nil {
		t.Fatalf("a renews: %v %v", ok, err)
	}
	if left := a.LeaseLeft("q"); left != 45*time.Second {
		t.Fatalf("lease left after the renewal: %v, want 45s", left)
	}
}

// A replica that cannot end the hung leader's session (its role may not) does not lead, says
// why (an error wrapping queue.ErrTakeoverRefused, which the tick loop counts), and tries
// again at its next Lead.
func TestQueueTakeoverRefused(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	url := dbtest.URL(t)
	if err := db.Migrate(ctx, url); err != nil {
		t.Fatal(err)
	}
	admin, err := db.Open(ctx, url, db.Options{MaxConns: testMaxConns})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(admin.Close)
	pool := admin.Pool()
	// The replica's role owns nothing and may signal no one: not pg_signal_backend.
	role := fmt.Sprintf("mm_lease_%d", time.Now().UnixNano())
	for _, stmt := range []string{
		`CREATE ROLE ` + role + ` LOGIN`,
		`GRANT USAGE ON SCHEMA public TO ` + role,
		`GRANT ALL ON ALL TABLES IN SCHEMA public TO ` + role,
		`GRANT ALL ON ALL SEQUENCES IN SCHEMA public TO ` + role,
	} {
		if _, err := pool.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_, _ = pool.Exec(context.Background(), `DROP OWNED BY `+role)
		_, _ = pool.Exec(context.Background(), `DROP ROLE `+role)
	})
	u, err := neturl.Parse(url)
	if err != nil || u.Scheme == "" {
		t.Skipf("TEST_DATABASE_URL is not a URL (%v): cannot log in as another role", err)
	}
	u.User = neturl.User(role)
	replica, err := db.Open(ctx, u.String(), db.Options{MaxConns: testMaxConns})
	if err != nil {
		t.Skipf("the server does not let %s log in without a password: %v", role, err)
	}
	t.Cleanup(replica.Close)
	b, err := queuedb.NewWith(ctx, replica.Pool(), queuedb.Options{LeaderLease: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	mustPut(t, b, queuetest.Queue("q"))

	// The lock is held, on a lease two hours old, by a superuser's session.
	holder, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	h := fnv.New32a()
	h.Write([]byte("q"))
	if _, err := holder.Exec(ctx, `SELECT pg_advisory_lock(3, $1)`, int32(h.Sum32())); err != nil {
		t.Fatal(err)
	}
	defer holder.Exec(context.Background(), `SELECT pg_advisory_unlock_all()`) //nolint:errcheck
	if _, err := pool.Exec(ctx, `UPDATE queues SET leader_renewed_at = now() - interval '2 hours'`); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if ok, err := b.Lead(ctx, "q"); ok || !errors.Is(err, queue.ErrTakeoverRefused) {
			t.Fatalf("Lead without the right to end the holder's session: %v %v, want false and ErrTakeoverRefused", ok, err)
		}
	}
	if !sessionAlive(t, pool, uint32(holder.Conn().PgConn().PID())) {
		t.Fatal("the holder's session was ended")
	}
}

// sessionAlive reports whether the backend pid is still there.
func sessionAlive(t *testing.T, pool *pgxpool.Pool, pid uint32) bool {
	t.Helper()
	var alive bool
	if err := pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE pid = $1)`, int64(pid)).Scan(&alive); err != nil {
		t.Fatal(err)
	}
	return alive
}

// The queues one process leads are renewed together, one statement a quarter-lease, where
// every queue's Lead used to ping the database at every tick behind one mutex; and only the
// queues whose Lead was called since the last renewal are renewed, so that a queue whose tick
// loop is stuck loses its lease while the process's other queues keep theirs.
func TestQueueLeasesRenewTogether(t *testing.T) {
	t.Parallel()
	clock := newLeaseClock()
	stores, pool := openReplicasWith(t, 1, func(int) queuedb.Options { return queuedb.Options{LeaderLease: time.Minute, Now: clock.now} })
	a := stores[0]
	ctx := testCtx(t)
	names := []string{"q1", "q2", "q3"}
	for _, n := range names {
		mustPut(t, a, queuetest.Queue(n))
		if ok, err := a.Lead(ctx, n); !ok || err != nil {
			t.Fatalf("a leads %s: %v %v", n, ok, err)
		}
	}
	renewedAt := func() map[string]time.Time {
		t.Helper()
		rows, err := pool.Query(ctx, `SELECT name, leader_renewed_at FROM queues`)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]time.Time{}
		var name string
		var at time.Time
		if _, err := pgx.ForEachRow(rows, []any{&name, &at}, func() error { out[name] = at; return nil }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	before := renewedAt()
	// Within the first quarter of the lease, Lead asks the database nothing.
	for range 10 {
		for _, n := range names[:2] {
			if ok, err := a.Lead(ctx, n); !ok || err != nil {
				t.Fatalf("lead %s: %v %v", n, ok, err)
			}
		}
	}
	if got := renewedAt(); !maps.Equal(got, before) {
		t.Fatalf("renewed within the first quarter: %v, was %v", got, before)
	}
	// Then one Lead renews q1 and q2 (both called since) in one statement; q3, whose loop
	// called nothing, keeps its old renewal.
	clock.advance(15 * time.Second)
	if ok, err := a.Lead(ctx, "q1"); !ok || err != nil {
		t.Fatalf("lead q1: %v %v", ok, err)
	}
	after := renewedAt()
	if !after["q1"].After(before["q1"]) || !after["q2"].Equal(after["q1"]) || !after["q3"].Equal(before["q3"]) {
		t.Fatalf("renewals %v, were %v: want q1 and q2 renewed by one statement, q3 not", after, before)
	}
	if left := a.LeaseLeft("q2"); left != 45*time.Second {
		t.Fatalf("q2's lease after the shared renewal: %v, want 45s", left)
	}
	if left := a.LeaseLeft("q3"); left != 30*time.Second {
		t.Fatalf("q3's lease: %v, want 30s", left)
	}
}
