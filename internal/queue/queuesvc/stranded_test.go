package queuesvc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// A queue whose team_size shrinks below a searching party keeps working: the party expires
// (reason invalid) and the other tickets still match and expire. It used to fail every pass,
// so that nothing in the queue was matched or expired again.
func TestAShrunkQueueExpiresTheTicketsItStrands(t *testing.T) {
	t.Parallel()
	svc, q, _ := arena(t, queue.TickPass{}, 5)
	ctx := context.Background()
	party := queue.NewTicket{Queue: "arena"}
	for _, id := range []string{"a", "b", "c", "d", "e"} {
		party.Players = append(party.Players, queue.NewPlayer{ID: id, Rating: rating(1000)})
	}
	stranded, _, err := svc.CreateTicket(ctx, party)
	if err != nil {
		t.Fatal(err)
	}
	q.TeamSize, q.MaxPartySize = 1, 1
	if _, _, err := svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	x, _, _ := svc.CreateTicket(ctx, queue.NewTicket{Queue: "arena", Players: []queue.NewPlayer{{ID: "x", Rating: rating(1000)}}})
	y, _, _ := svc.CreateTicket(ctx, queue.NewTicket{Queue: "arena", Players: []queue.NewPlayer{{ID: "y", Rating: rating(1000)}}})
	runService(t, svc)
	for _, tc := range []struct {
		id     string
		status queue.Status
		reason string
	}{{stranded.ID, queue.Expired, queue.ReasonInvalid}, {x.ID, queue.Matched, ""}, {y.ID, queue.Matched, ""}} {
		got := waitForStatus(t, svc, tc.id)
		if got.Status != tc.status || got.Reason != tc.reason {
			t.Errorf("ticket %s: %s (%q), want %s (%q)", tc.id, got.Status, got.Reason, tc.status, tc.reason)
		}
	}
}

// failingMatcher is a pass that fails every time.
type failingMatcher struct{}

func (failingMatcher) Match(queue.Queue, []queue.Ticket, time.Time) (queue.TickWrite, error) {
	return queue.TickWrite{}, errors.New("the pass is broken")
}

// A pass that fails still lets the tickets whose time is up expire.
func TestTicketsExpireWhenThePassFails(t *testing.T) {
	t.Parallel()
	svc, _, c := arena(t, failingMatcher{}, 1)
	ctx := context.Background()
	short, _, _ := svc.CreateTicket(ctx, queue.NewTicket{Queue: "arena", Players: []queue.NewPlayer{{ID: "x"}}, TTL: 10 * time.Second})
	long, _, _ := svc.CreateTicket(ctx, queue.NewTicket{Queue: "arena", Players: []queue.NewPlayer{{ID: "y"}}, TTL: time.Hour})
	runService(t, svc)
	ticked(t, c, svc, "arena")
	advance(t, c, svc, "arena", 11*time.Second)
	if got := waitForStatus(t, svc, short.ID); got.Status != queue.Expired || got.Reason != "ttl" {
		t.Fatalf("the short ticket: %s (%q), want expired (ttl)", got.Status, got.Reason)
	}
	if got, err := svc.GetTicket(ctx, long.ID, 0); err != nil || got.Status != queue.Searching {
		t.Fatalf("the long ticket: %+v %v, want still searching", got, err)
	}
}

// waitForStatus long-polls a ticket until it leaves searching (10 s at most).
func waitForStatus(t *testing.T, svc *queuesvc.Service, id string) queue.Ticket {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		tk, err := svc.GetTicket(context.Background(), id, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if tk.Status != queue.Searching || time.Now().After(deadline) {
			return tk
		}
	}
}

// arena is a service with matcher over a queue "arena" of teams of teamSize that ticks every
// 50 ms, on a clock of the test's.
func arena(t *testing.T, matcher queue.Matcher, teamSize int) (*queuesvc.Service, queue.Queue, *queuetest.Clock) {
	t.Helper()
	c := newClock()
	svc := queuesvc.New(queuesvc.Deps{Store: memstore.New(), Matcher: matcher,
		Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()), Clock: c})
	q := queue.DefaultQueue("arena")
	q.GameType, q.TeamSize, q.MaxPartySize, q.Tick = "ctf", teamSize, teamSize, 50*time.Millisecond
	if _, _, err := svc.PutQueue(context.Background(), q); err != nil {
		t.Fatal(err)
	}
	return svc, q, c
}
