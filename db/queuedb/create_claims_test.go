package queuedb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// TestExclusiveCreationsRaceClaimingCommits: a player's ticket created on one replica while
// another replica's tick commits his match in another queue ends cancelled matched_elsewhere
// whichever commits first: the tick sees the ticket, or the creation sees the claim. Each
// round starts one creation and the tick that claims its player at once; after both, no
// ticket of a claimed player searches. Before the creations took the claims lock and read
// the claims, a creation committed between the tick's read of the players' tickets and its
// COMMIT was left searching (and the soak's -queues 2 counted players matched with their other
// ticket not cancelled).
func TestExclusiveCreationsRaceClaimingCommits(t *testing.T) {
	t.Parallel()
	const rounds = 120
	stores, pool := openReplicas(t, 2)
	ctx := testCtx(t)
	mustPut(t, stores[0], queuetest.Queue("ranked"))
	mustPut(t, stores[0], queuetest.Queue("casual"))
	for i := range rounds {
		player := fmt.Sprintf("p%03d", i)
		ranked := mustCreate(t, stores[0], exclusiveTicket("ranked", "r-"+player, 1, player))
		opponent := mustCreate(t, stores[0], exclusiveTicket("ranked", "o-"+player, 1, "o"+player))
		var wg sync.WaitGroup
		wg.Go(func() {
			w := queue.TickWrite{At: queuetest.T0.Add(10 * time.Second), Matches: []queue.Match{queuetest.Match2v2("m-"+player, ranked, opponent)}}
			if done, err := queue.CommitTick(ctx, stores[0], "ranked", w); err != nil || len(done.Matches) != 1 {
				t.Errorf("round %d, the tick: %+v, %v", i, done, err)
			}
		})
		wg.Go(func() {
			if _, _, err := stores[1].CreateTicket(ctx, exclusiveTicket("casual", "c-"+player, 11, player)); err != nil {
				t.Errorf("round %d, the creation: %v", i, err)
			}
		})
		wg.Wait()
	}
	var searching, byTick, byCreation int
	err := pool.QueryRow(ctx, `
SELECT count(*) FILTER (WHERE status = 'searching'),
       count(*) FILTER (WHERE status = 'cancelled' AND reason = $1 AND updated_at <> created_at),
       count(*) FILTER (WHERE status = 'cancelled' AND reason = $1 AND updated_at = created_at)
FROM queue_tickets WHERE queue = 'casual'`, queue.ReasonMatchedElsewhere).Scan(&searching, &byTick, &byCreation)
	if err != nil {
		t.Fatal(err)
	}
	report := fmt.Sprintf("%d rounds: %d casual tickets cancelled by the tick, %d as created, %d searching", rounds, byTick, byCreation, searching)
	if searching > 0 || byTick+byCreation != rounds {
		t.Fatalf("a claimed player's ticket searches: %s", report)
	}
	t.Log(report)
}

func exclusiveTicket(q, id string, s int, player string) queue.Ticket {
	tk := queuetest.Ticket(q, id, s, player)
	tk.Exclusive = true
	return tk
}

// TestATickDoesNotWaitForACreationsInsert: a creation batch takes the claims lock after its
// insert, so a tick that claims players commits while a batch's insert waits (here for
// another transaction's uncommitted row of its player, as it waits for a busy server's
// rows); the batch then reads the tick's claims. Before the change the batch took the lock
// first, and the tick waited at the lock for the whole insert (here until its deadline).
func TestATickDoesNotWaitForACreationsInsert(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicas(t, 1)
	st := stores[0]
	ctx := testCtx(t)
	mustPut(t, st, queuetest.Queue("ranked"))
	mustPut(t, st, queuetest.Queue("casual"))
	a := mustCreate(t, st, exclusiveTicket("ranked", "a", 1, "pa"))
	b := mustCreate(t, st, exclusiveTicket("ranked", "b", 1, "pb"))

	held, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Rollback(context.Background()) }()
	if _, err := held.Exec(ctx, `INSERT INTO queue_searching (queue, player_id, ticket_id) VALUES ('casual', 'pa', 'held')`); err != nil {
		t.Fatal(err)
	}
	created := make(chan queue.Ticket, 1)
	go func() {
		tk, _, err := st.CreateTicket(ctx, exclusiveTicket("casual", "c", 11, "pa"))
		if err != nil {
			t.Errorf("the creation: %v", err)
		}
		created <- tk
	}()
	waitFor(t, 10*time.Second, "the creation's insert waits for the held row", func() bool { return lockWaiters(t, pool) == 1 })

	tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	w := queue.TickWrite{At: queuetest.T0.Add(10 * time.Second), ClaimFor: time.Hour, Matches: []queue.Match{queuetest.Match2v2("m", a, b)}}
	done, err := queue.CommitTick(tctx, st, "ranked", w)
	cancel()
	if err != nil || len(done.Matches) != 1 {
		t.Fatalf("the tick while a creation's insert waits: %+v, %v", done, err)
	}
	if err := held.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	c := <-created
	if c.Status != queue.Cancelled || c.Reason != queue.ReasonMatchedElsewhere {
		t.Fatalf("the creation after the tick claimed its player: %s %q, want cancelled %q", c.Status, c.Reason, queue.ReasonMatchedElsewhere)
	}
	checkSearching(t, pool)
}
