package queuedb_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// penaltyReplicas are two services on one database, a leading (its loop runs) and b not,
// on one fake clock; stop ends a's loop.
func penaltyReplicas(t *testing.T) (a, b *queuesvc.Service, clock *queuetest.Clock) {
	t.Helper()
	stores, _ := openReplicas(t, 2)
	clock = queuetest.NewClock(queuetest.T0)
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	a = queuesvc.New(queuesvc.Deps{Store: stores[0], Ratings: rs, Matcher: queue.TickPass{}, Clock: clock})
	b = queuesvc.New(queuesvc.Deps{Store: stores[1], Ratings: rs, Matcher: queue.TickPass{}, Clock: clock})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return a, b, clock
}

func penaltyQueue(name, gameType string, mutate func(*queue.Queue)) queue.Queue {
	q := queue.DefaultQueue(name)
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = gameType, 1, 1, 50*time.Millisecond
	mutate(&q)
	return q
}

func newSolo(t *testing.T, svc *queuesvc.Service, queueName, player string) (queue.Ticket, error) {
	t.Helper()
	r := 1000.0
	tk, _, err := svc.CreateTicket(testCtx(t), queue.NewTicket{Queue: queueName, Players: []queue.NewPlayer{{ID: player, Rating: &r}}})
	return tk, err
}

// ticksUntil moves the clock on by step until cond holds (the leader ticks at each move).
func ticksUntil(t *testing.T, clock *queuetest.Clock, step time.Duration, what string, cond func() bool) {
	t.Helper()
	waitFor(t, 20*time.Second, what, func() bool {
		if cond() {
			return true
		}
		clock.Advance(step)
		return false
	})
}

// A player who declines twice gets the configured cooldown from any replica: his next
// ticket in any queue of the same context (with a dodge penalty) is a 429 naming him and
// retry_at, on the leader's replica and on the other, until the cooldown is over; a queue
// of another context takes him. The declines are answered on the replica that does not
// lead, the refusals come from both.
func TestPenaltiesDodgeCooldownFromAnyReplica(t *testing.T) {
	t.Parallel()
	a, b, clock := penaltyReplicas(t)
	ctx := testCtx(t)
	dodge := &queue.DodgePenalty{Window: time.Hour, Steps: []queue.CooldownStep{{Count: 2, Cooldown: time.Minute}, {Count: 3, Cooldown: 10 * time.Minute}}}
	for _, q := range []queue.Queue{
		penaltyQueue("duel", "ctf", func(q *queue.Queue) {
			q.Acceptance, q.Penalties.Dodge = &queue.Acceptance{Timeout: 20 * time.Second}, dodge
		}),
		penaltyQueue("duel-eu", "ctf", func(q *queue.Queue) { q.Penalties.Dodge = dodge }),
		penaltyQueue("casual", "dm", func(q *queue.Queue) { q.Penalties.Dodge = dodge }),
	} {
		if _, _, err := a.PutQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := newSolo(t, a, "duel", "bob"); err != nil {
		t.Fatal(err)
	}
	var declinedAt time.Time
	for round := 1; round <= 2; round++ {
		alice, err := newSolo(t, b, "duel", "alice")
		if err != nil {
			t.Fatalf("round %d: alice's ticket: %v", round, err)
		}
		var proposal string
		ticksUntil(t, clock, 50*time.Millisecond, "alice is proposed", func() bool {
			tk, err := b.GetTicket(ctx, alice.ID, 0)
			if err == nil && tk.Proposal != nil {
				proposal = tk.Proposal.MatchID
			}
			return proposal != ""
		})
		declinedAt = clock.Now().UTC()
		if p, err := b.Answer(ctx, proposal, "alice", false); err != nil || p.State != queue.ProposalDeclined {
			t.Fatalf("round %d: alice declines: %+v %v", round, p.State, err)
		}
	}
	until := declinedAt.Add(time.Minute)
	for _, c := range []struct {
		svc   *queuesvc.Service
		queue string
	}{{a, "duel"}, {b, "duel"}, {a, "duel-eu"}, {b, "duel-eu"}} {
		_, err := newSolo(t, c.svc, c.queue, "alice")
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.TooManyRequests || !e.RetryAt.Equal(until) ||
			len(e.Fields) != 1 || e.Fields[0].Field != "players[0].id" {
			t.Fatalf("alice's ticket in %s after two declines: %v (retry at %v), want a 429 until %v", c.queue, err, e, until)
		}
	}
	if _, err := newSolo(t, b, "casual", "alice"); err != nil {
		t.Fatalf("alice in another context: %v", err)
	}
	st, err := a.PlayerStandings(ctx, "alice")
	if err != nil || len(st) != 1 || st[0].Context != "ctf" || len(st[0].Dodges) != 2 || !st[0].CooldownUntil.Equal(until) {
		t.Fatalf("alice's standing: %+v %v", st, err)
	}
	clock.AdvanceTo(until)
	if _, err := newSolo(t, b, "duel-eu", "alice"); err != nil {
		t.Fatalf("alice after her cooldown: %v", err)
	}
	// Cleared by an admin, a third decline's count starts again.
	if n, err := b.ClearStanding(ctx, "alice"); err != nil || n != 1 {
		t.Fatalf("clear: %d %v", n, err)
	}
	if st, err := a.PlayerStandings(ctx, "alice"); err != nil || len(st) != 0 {
		t.Fatalf("alice's standing after the clearing: %+v %v", st, err)
	}
}

// One who left two matches (present below half of each, by their results) plays his next
// three in the low-priority pool: on the leader, with anyone only once he has waited
// extra_wait_s; the fourth is a normal match again. The results are counted on the replica
// that does not lead.
func TestPenaltiesLeaversPlayLowPriority(t *testing.T) {
	t.Parallel()
	a, b, clock := penaltyReplicas(t)
	ctx := testCtx(t)
	const extra = 120 * time.Second
	if _, _, err := a.PutQueue(ctx, penaltyQueue("ranked", "ctf", func(q *queue.Queue) {
		q.Penalties.LowPriority = &queue.LowPriorityPenalty{Leaves: 2, Window: 7 * 24 * time.Hour, Games: 3, ExtraWait: extra}
	})); err != nil {
		t.Fatal(err)
	}
	play := func(game int) (alice queue.Ticket) {
		t.Helper()
		alice, err := newSolo(t, b, "ranked", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := newSolo(t, a, "ranked", "bob"); err != nil {
			t.Fatal(err)
		}
		ticksUntil(t, clock, time.Second, "alice is matched", func() bool {
			tk, err := b.GetTicket(ctx, alice.ID, 0)
			if err == nil && tk.Status == queue.Matched {
				alice = tk
				return true
			}
			return false
		})
		return alice
	}
	for game := 1; game <= 2; game++ {
		alice := play(game)
		if err := b.RecordLeaves(ctx, alice.Assignment.MatchID, 600, map[string]float64{"alice": 250, "bob": 600}); err != nil {
			t.Fatal(err)
		}
	}
	st, err := b.PlayerStandings(ctx, "alice")
	if err != nil || len(st) != 1 || st[0].LowPriorityGames != 3 || len(st[0].Leaves) != 2 {
		t.Fatalf("alice after two leaves: %+v %v", st, err)
	}
	for game := 1; game <= 4; game++ {
		alice := play(game)
		// Played to its end: its result ends the players' claims (a player is in one live
		// match at a time), and counts no leave.
		if err := b.RecordLeaves(ctx, alice.Assignment.MatchID, 600, map[string]float64{"alice": 600, "bob": 600}); err != nil {
			t.Fatal(err)
		}
		waited := alice.UpdatedAt.Sub(alice.CreatedAt)
		low := game <= 3
		if alice.Players[0].LowPriority != low || low && waited < extra || !low && waited >= extra {
			t.Fatalf("game %d after the leaves: low priority %v, matched after %v", game, alice.Players[0].LowPriority, waited)
		}
		st, err := a.PlayerStandings(ctx, "alice")
		if err != nil || len(st) != 1 || st[0].LowPriorityGames != max(3-game, 0) {
			t.Fatalf("alice's standing after game %d: %+v %v", game, st, err)
		}
	}
}
