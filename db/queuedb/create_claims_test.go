package queuedb_test

import (
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
	exclusive := func(q, id string, s int, player string) queue.Ticket {
		tk := queuetest.Ticket(q, id, s, player)
		tk.Exclusive = true
		return tk
	}
	for i := range rounds {
		player := fmt.Sprintf("p%03d", i)
		ranked := mustCreate(t, stores[0], exclusive("ranked", "r-"+player, 1, player))
		opponent := mustCreate(t, stores[0], exclusive("ranked", "o-"+player, 1, "o"+player))
		var wg sync.WaitGroup
		wg.Go(func() {
			w := queue.TickWrite{At: queuetest.T0.Add(10 * time.Second), Matches: []queue.Match{queuetest.Match2v2("m-"+player, ranked, opponent)}}
			if done, err := queue.CommitTick(ctx, stores[0], "ranked", w); err != nil || len(done.Matches) != 1 {
				t.Errorf("round %d, the tick: %+v, %v", i, done, err)
			}
		})
		wg.Go(func() {
			if _, _, err := stores[1].CreateTicket(ctx, exclusive("casual", "c-"+player, 11, player)); err != nil {
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
