package db_test

import (
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// A leader deposed mid-tick (its lock's session is ended and another replica leads) has its
// writes refused, where its commit used to store its matches beside the new leader's, and both
// moved the webhook cursor and overwrote the stats. The new leader's writes go through.
func TestQueueDeposedLeaderWritesNothing(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicas(t, 2)
	a, b := stores[0], stores[1]
	ctx := testCtx(t)
	mustPut(t, a, queuetest.Queue("q"))
	x := mustCreate(t, a, queuetest.Ticket("q", "x", 1, "x1", "x2"))
	y := mustCreate(t, a, queuetest.Ticket("q", "y", 2, "y1", "y2"))
	if ok, err := a.Lead(ctx, "q"); !ok || err != nil {
		t.Fatalf("a leads: %v %v", ok, err)
	}
	// a has run its pass; before its commit, its lock's session ends and b takes the queue.
	w := queue.TickWrite{At: queuetest.T0, Matches: []queue.Match{queuetest.Match2v2("m-a", x, y)}}
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, a.LeaderPID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "b takes the lead", func() bool { ok, _ := b.Lead(ctx, "q"); return ok })

	if _, err := a.CommitTick(ctx, "q", w); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the deposed leader's commit: %v, want Conflict", err)
	}
	if err := a.SetWebhookCursor(ctx, "q", 5); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the deposed leader's webhook cursor: %v, want Conflict", err)
	}
	if err := a.PublishStats(ctx, "q", queue.Stats{At: queuetest.T0}); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the deposed leader's stats: %v, want Conflict", err)
	}
	if tk, err := b.GetTicket(ctx, "x"); err != nil || tk.Status != queue.Searching {
		t.Fatalf("ticket x after the refused commit: %+v %v", tk, err)
	}
	if cur, err := b.WebhookCursor(ctx, "q"); err != nil || cur != 0 {
		t.Fatalf("cursor after the refused write: %d %v", cur, err)
	}

	w.Matches[0].ID = "m-b"
	done, err := b.CommitTick(ctx, "q", w)
	if err != nil || len(done.Matches) != 1 {
		t.Fatalf("the new leader's commit: %+v %v", done, err)
	}
	if err := b.SetWebhookCursor(ctx, "q", 1); err != nil {
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
