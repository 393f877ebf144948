package queuedb_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/pgfault"
	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// TestFaultQueueStoreFollowsAFailover: the store on a URL listing a primary and its
// synchronous standby; the primary is killed and the standby promoted. Without a new store,
// every session is back on the new primary within a few seconds of the promotion: the queue
// led again under a new epoch (its leadership connection there), the listening connection
// there, ticket creations committing through the pools' new connections; and the ticket
// created before the kill is there.
func TestFaultQueueStoreFollowsAFailover(t *testing.T) {
	t.Parallel()
	r := pgfault.StartReplicated(t)
	ctx := testCtx(t)
	if err := db.Migrate(ctx, r.URL()); err != nil {
		t.Fatal(err)
	}
	d, err := db.Open(ctx, r.URL(), db.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	qs, err := queuedb.NewWith(ctx, d.Pool(), queuedb.Options{LeaderLease: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(qs.Close)
	mustPut(t, qs, queuetest.Queue("q"))
	mustCreate(t, qs, queuetest.Ticket("q", "before", 1, "alice"))
	if led, err := qs.Lead(ctx, "q"); !led || err != nil {
		t.Fatalf("Lead before the kill: %v, %v", led, err)
	}
	epoch, _ := qs.Epoch("q")

	r.Primary.Kill()
	// Past the lease, with no primary: no longer leading (a Lead within the lease's first
	// quarter takes no round trip, and its writes are fenced by the epoch all the same).
	time.Sleep(2 * time.Second)
	if led, err := qs.Lead(ctx, "q"); led || err == nil {
		t.Errorf("Lead a lease after the primary was killed: %v, %v; want false and an error", led, err)
	}
	time.Sleep(2 * time.Second) // the reconnections' backoff at its bound
	r.Promote()
	promoted := time.Now()

	const within = 5 * time.Second
	newPrimary, err := pgx.Connect(ctx, r.Standby.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer newPrimary.Close(ctx)
	// sessionThere reports whether pid is a backend of the new primary.
	sessionThere := func(pid uint32) bool {
		var n int
		err := newPrimary.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&n)
		return err == nil && n == 1
	}
	waitFor(t, within, "leading again after the promotion", func() bool {
		led, _ := qs.Lead(ctx, "q")
		return led
	})
	led := time.Since(promoted)
	if e, _ := qs.Epoch("q"); e <= epoch || !sessionThere(qs.LeaderPID()) {
		t.Errorf("led again under epoch %d (before: %d), leadership session %d on the new primary: %v", e, epoch, qs.LeaderPID(), sessionThere(qs.LeaderPID()))
	}
	waitFor(t, within, "listening on the new primary", func() bool { return qs.Listening() && sessionThere(qs.ListenerPID()) })
	listening := time.Since(promoted)
	waitFor(t, within, "a ticket created after the promotion", func() bool {
		cctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, _, err := qs.CreateTicket(cctx, queuetest.Ticket("q", "after", 2, "bob"))
		return err == nil
	})
	created := time.Since(promoted)
	if _, err := qs.GetTicket(ctx, "before"); err != nil {
		t.Errorf("the ticket acknowledged before the kill, on the new primary: %v", err)
	}
	t.Logf("after the promotion: leading again in %v, listening in %v, creating in %v",
		led.Round(time.Millisecond), listening.Round(time.Millisecond), created.Round(time.Millisecond))
}
