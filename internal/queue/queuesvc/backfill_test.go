package queuesvc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

func backfillReq(queueName string) queue.NewBackfill {
	return queue.NewBackfill{Queue: queueName, MatchID: "running-1", OpenSlots: []int{1, 0}, Region: "eu",
		Teams: []queue.NewBackfillTeam{
			{Players: []queue.NewPlayer{{ID: "r1", Rating: rating(1000)}, {ID: "r2"}}, Bots: []float64{950}},
			{Players: []queue.NewPlayer{{ID: "b1"}, {ID: "b2"}, {ID: "b3"}}},
		},
		Bots: &queue.BotRule{MeanRating: 950, TargetPlayers: 6, RecommendedMin: 2, RecommendedMax: 6}}
}

// A backfill ticket holds the match's players with their ratings resolved, is idempotent by
// key, and a player of the match cannot search meanwhile.
func TestCreateBackfill(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize, q.Regions = 3, 3, []string{"eu", "us"} })
	req := backfillReq("duel")
	req.IdempotencyKey = "bk1"
	tk, replayed, err := f.svc.CreateBackfill(ctx, req)
	if err != nil || replayed {
		t.Fatal(err)
	}
	if tk.Backfill == nil || tk.Backfill.MatchID != "running-1" || len(tk.Players) != 5 || tk.Players[0].Rating != 1000 ||
		tk.Players[1].Source != queue.RatingDefault || tk.Backfill.Teams[1].Players[2] != "b3" || tk.Status != queue.Searching {
		t.Fatalf("%+v %+v", tk, tk.Backfill)
	}
	again, replayed, err := f.svc.CreateBackfill(ctx, req)
	if err != nil || !replayed || again.ID != tk.ID {
		t.Fatalf("a retry: %v %v %v", again.ID, replayed, err)
	}
	_, _, err = f.svc.CreateTicket(ctx, solo("duel", "b2"))
	if apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("a match's player searching: %v", err)
	}
	other := backfillReq("duel")
	other.MatchID = "running-2"
	var e *apperr.Error
	if _, _, err := f.svc.CreateBackfill(ctx, other); !errors.As(err, &e) || e.Code != apperr.Conflict ||
		e.Fields[0].Field != "teams[0].players[0].id" {
		t.Fatalf("a second backfill of the same players: %v", err)
	}
}

// Every bad field of a backfill request is named.
func TestCreateBackfillRejectsBadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize, q.Regions = 3, 3, []string{"eu", "us"} })
	tests := []struct {
		name   string
		change func(b *queue.NewBackfill)
		field  string
	}{
		{"no match id", func(b *queue.NewBackfill) { b.MatchID = "" }, "match_id"},
		{"one team", func(b *queue.NewBackfill) { b.Teams = b.Teams[:1] }, "teams"},
		{"nobody left", func(b *queue.NewBackfill) { b.Teams[0].Players, b.Teams[1].Players = nil, nil }, "teams"},
		{"a player twice", func(b *queue.NewBackfill) { b.Teams[1].Players[0].ID = "r1" }, "teams[1].players[0].id"},
		{"a negative rating", func(b *queue.NewBackfill) { b.Teams[0].Players[0].Rating = rating(-1) }, "teams[0].players[0].rating"},
		{"a bot not finite", func(b *queue.NewBackfill) { b.Teams[0].Bots[0] = 1e300 }, "teams[0].bots[0]"},
		{"open slots for one team", func(b *queue.NewBackfill) { b.OpenSlots = []int{1} }, "open_slots"},
		{"no open slot", func(b *queue.NewBackfill) { b.OpenSlots = []int{0, 0} }, "open_slots"},
		{"a negative slot", func(b *queue.NewBackfill) { b.OpenSlots = []int{-1, 0} }, "open_slots[0]"},
		{"slots over team_size", func(b *queue.NewBackfill) { b.OpenSlots = []int{0, 1} }, "open_slots[1]"},
		{"an unknown region", func(b *queue.NewBackfill) { b.Region = "mars" }, "region"},
		{"a bad bot rule", func(b *queue.NewBackfill) { b.Bots.RecommendedMax = 1 }, "bots.recommended.max"},
		{"a bad mean bot", func(b *queue.NewBackfill) { b.Bots.MeanRating = -5 }, "bots.mean_rating"},
		{"a ttl too long", func(b *queue.NewBackfill) { b.TTL = 48 * time.Hour }, "ttl_s"},
	}
	for _, tt := range tests {
		b := backfillReq("duel")
		tt.change(&b)
		_, _, err := f.svc.CreateBackfill(ctx, b)
		var e *apperr.Error
		if !errors.As(err, &e) || e.Code != apperr.Invalid || len(e.Fields) == 0 || e.Fields[0].Field != tt.field {
			t.Errorf("%s: %v, want %s invalid", tt.name, err, tt.field)
		}
	}
	if _, _, err := f.svc.CreateBackfill(ctx, backfillReq("nowhere")); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("no such queue: %v", err)
	}
}

// A replica that does not lead the queue answers the stats the leader published to the
// store (source "store"), and "none" before any; both count the same.
func TestStatsOnAReplicaThatDoesNotLead(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	store := memstore.New()
	rs := ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel())
	c := newClock()
	leader := queuesvc.New(queuesvc.Deps{Store: store, Ratings: rs, Matcher: queue.TickPass{}, Clock: c})
	other := queuesvc.New(queuesvc.Deps{Store: store, Ratings: rs, Matcher: queue.TickPass{}, Clock: c}) // never runs
	q := queue.DefaultQueue("duel")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", 1, 1, 50*time.Millisecond
	if _, _, err := leader.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	if st, err := other.Stats(ctx, "duel"); err != nil || st.Source != "none" {
		t.Fatalf("before any: %+v %v", st, err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if _, _, err := leader.CreateTicket(ctx, queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: id, Rating: rating(1000)}}}); err != nil {
			t.Fatal(err)
		}
	}
	runService(t, leader)
	ticked(t, c, leader, "duel")  // its first tick matches two of them, and publishes its stats
	c.Advance(queue.StatsRefresh) // past the other replica's read of none
	st, err := other.Stats(ctx, "duel")
	if err != nil || st.Source != "store" || st.MatchesLastMinute != 1 || st.SearchingTickets != 1 || st.Bands[4].SearchingPlayers != 1 {
		t.Fatalf("the other replica's stats: %+v %v", st, err)
	}
	if _, err := other.Stats(ctx, "nope"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("no such queue: %v", err)
	}
}
