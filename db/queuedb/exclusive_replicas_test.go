package queuedb_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// leadsOnly is a replica's store that leads one queue only, so that two queues have their
// leaders on two replicas.
type leadsOnly struct {
	*queuedb.Store
	queue string
}

func (s leadsOnly) Lead(ctx context.Context, q string) (bool, error) {
	if q != s.queue {
		return false, nil
	}
	return s.Store.Lead(ctx, q)
}

// Two replicas on one database, "ranked" led by one and "casual" by the other; every
// player searches both, his tickets made before either leader ticks, so that both leaders
// match him at once. No player is in two matches; each ticket that is not matched is
// cancelled matched_elsewhere, its player matched in the other queue, or still searching,
// its player in no match; none is lost. Without the claims (the tickets not exclusive), the
// same run puts players in two matches: the check can fail.
func TestExclusivePlayersAcrossReplicas(t *testing.T) {
	t.Parallel()
	for _, exclusive := range []bool{true, false} {
		t.Run(fmt.Sprintf("exclusive=%v", exclusive), func(t *testing.T) {
			t.Parallel()
			twice, report := exclusiveRun(t, exclusive)
			switch {
			case exclusive && twice > 0:
				t.Fatalf("%d players in two matches; %s", twice, report)
			case !exclusive && twice == 0:
				t.Fatalf("without claims, no player was matched twice: the run does not race the leaders; %s", report)
			}
			t.Log(report)
		})
	}
}

// exclusiveRun runs the two replicas over 60 players and checks what it can whatever the
// claims: it returns how many players are in two matches, and the run's figures.
func exclusiveRun(t *testing.T, exclusive bool) (twice int, report string) {
	const players = 60
	stores, pool := openReplicas(t, 2)
	names := []string{"ranked", "casual"}
	svcs := make([]*queuesvc.Service, 2)
	for i, st := range stores {
		svcs[i] = queuesvc.New(queuesvc.Deps{Store: leadsOnly{st, names[i]}, Matcher: queue.TickPass{},
			Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()),
			Logger:  slog.New(slog.NewTextHandler(io.Discard, nil)).With("replica", i),
			Config:  queuesvc.Config{QueueRefresh: 20 * time.Millisecond}})
	}
	ctx := testCtx(t)
	for _, name := range names {
		q := queue.DefaultQueue(name)
		q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
		q.Expansions.Interval = []queue.Step{{Value: 1e6}}
		if _, _, err := svcs[0].PutQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	for p := range players {
		for i, name := range names {
			nt := queue.NewTicket{Queue: name, Players: []queue.NewPlayer{{ID: fmt.Sprintf("p%02d", p), Rating: new(1000.0)}},
				Exclusive: &exclusive}
			if _, _, err := svcs[i].CreateTicket(ctx, nt); err != nil {
				t.Fatal(err)
			}
		}
	}
	var wg sync.WaitGroup
	rctx, cancel := context.WithCancel(context.Background())
	for _, svc := range svcs {
		wg.Go(func() { _ = svc.Run(rctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	// Each queue's leader matches until at most one ticket of it searches.
	waitFor(t, 30*time.Second, "the queues settle", func() bool {
		var n int
		err := pool.QueryRow(ctx, `SELECT count(*) FROM queue_tickets WHERE status = 'searching'`).Scan(&n)
		return err == nil && n <= 2
	})
	cancel()
	wg.Wait()
	return checkExclusive(t, pool, players, exclusive)
}

// checkExclusive reads every ticket and checks the invariants.
func checkExclusive(t *testing.T, pool *pgxpool.Pool, players int, exclusive bool) (twice int, report string) {
	rows, err := pool.Query(context.Background(), `SELECT players->0->>'id', queue, status, reason FROM queue_tickets`)
	if err != nil {
		t.Fatal(err)
	}
	type ticket struct{ queue, status, reason string }
	byPlayer := map[string][]ticket{}
	var tk ticket
	var player string
	if _, err := pgx.ForEachRow(rows, []any{&player, &tk.queue, &tk.status, &tk.reason}, func() error {
		byPlayer[player] = append(byPlayer[player], tk)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(byPlayer) != players {
		t.Fatalf("%d players' tickets stored, want %d", len(byPlayer), players)
	}
	var matched, elsewhere, searching int
	for p, ts := range byPlayer {
		if len(ts) != 2 {
			t.Fatalf("player %s has %d tickets: %+v", p, len(ts), ts)
		}
		n := 0
		for _, x := range ts {
			switch {
			case x.status == "matched":
				n++
				matched++
			case x.status == "cancelled" && x.reason == queue.ReasonMatchedElsewhere:
				elsewhere++
			case x.status == "searching":
				searching++
			default:
				t.Errorf("player %s's ticket in %s is %s (%q)", p, x.queue, x.status, x.reason)
			}
		}
		if n == 2 {
			twice++
		}
		if exclusive && n == 0 && (ts[0].status != "searching" || ts[1].status != "searching") {
			t.Errorf("player %s is in no match but a ticket of his was cancelled: %+v", p, ts)
		}
	}
	return twice, fmt.Sprintf("%d players: %d tickets matched, %d cancelled matched_elsewhere, %d searching, %d players in two matches",
		players, matched, elsewhere, searching, twice)
}
