package queuedb_test

import (
	"errors"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// A leader deposed mid-tick (its lock's session is ended and another replica leads) has its
// writes refused, where its commit used to store its matches beside the new leader's, and both
// moved the webhook cursor and overwrote the stats. The new leader's writes go through. The
// webhook outbox stays the deposed leader's until its lease has run out (it may still be
// posting, unaware): its cursor writes go through until then, and the new leader claims the
// outbox only after.
func TestQueueDeposedLeaderWritesNothing(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicasWith(t, 2, func(int) queuedb.Options { return queuedb.Options{LeaderLease: testLease} })
	a, b := stores[0], stores[1]
	ctx := testCtx(t)
	mustPut(t, a, queuetest.Queue("q"))
	x := mustCreate(t, a, queuetest.Ticket("q", "x", 1, "x1", "x2"))
	y := mustCreate(t, a, queuetest.Ticket("q", "y", 2, "y1", "y2"))
	if ok, err := a.Lead(ctx, "q"); !ok || err != nil {
		t.Fatalf("a leads: %v %v", ok, err)
	}
	if _, err := a.WebhookCursor(ctx, "q"); err != nil {
		t.Fatalf("a claims the outbox: %v", err)
	}
	// a has run its pass; before its commit, its lock's session ends and b takes the queue.
	w := queue.TickWrite{At: queuetest.T0, Matches: []queue.Match{queuetest.Match2v2("m-a", x, y)}}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, a.LeaderPID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "b takes the lead", func() bool { ok, _ := b.Lead(ctx, "q"); return ok })

	if _, err := queue.CommitTick(ctx, a, "q", w); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the deposed leader's commit: %v, want Conflict", err)
	}
	if _, err := b.WebhookCursor(ctx, "q"); !errors.Is(err, queue.ErrOutboxHandover) {
		t.Fatalf("b claims the outbox within a's lease: %v, want ErrOutboxHandover", err)
	}
	if err := a.SetWebhookCursor(ctx, "q", 1); err != nil {
		t.Fatalf("the deposed leader's webhook cursor within its lease: %v", err)
	}
	waitFor(t, 10*testLease, "b claims the outbox once a's lease ran out", func() bool {
		cur, err := b.WebhookCursor(ctx, "q")
		return err == nil && cur == 1
	})
	if err := a.SetWebhookCursor(ctx, "q", 5); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the deposed leader's webhook cursor after the handover: %v, want Conflict", err)
	}
	if err := a.PublishStats(ctx, "q", queue.Stats{At: queuetest.T0}); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the deposed leader's stats: %v, want Conflict", err)
	}
	if tk, err := b.GetTicket(ctx, "x"); err != nil || tk.Status != queue.Searching {
		t.Fatalf("ticket x after the refused commit: %+v %v", tk, err)
	}
	if cur, err := b.WebhookCursor(ctx, "q"); err != nil || cur != 1 {
		t.Fatalf("cursor after the refused write: %d %v", cur, err)
	}

	w.Matches[0].ID = "m-b"
	done, err := queue.CommitTick(ctx, b, "q", w)
	if err != nil || len(done.Matches) != 1 {
		t.Fatalf("the new leader's commit: %+v %v", done, err)
	}
	if err := b.SetWebhookCursor(ctx, "q", 2); err != nil {
		t.Fatalf("the new leader's cursor: %v", err)
	}
	// a, once it leads again (b resigned), writes again.
	if err := b.Resign(ctx, "q"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "a leads again", func() bool { ok, _ := a.Lead(ctx, "q"); return ok })
	if err := a.PublishStats(ctx, "q", queue.Stats{At: queuetest.T0}); err != nil {
		t.Fatalf("a's stats once it leads again: %v", err)
	}
}
