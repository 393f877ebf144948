package queuesvc_test

import (
	"context"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/storeguard"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// slowStore answers its queue definitions after a delay and never commits a ticket: a
// database that froze between the two calls of a creation.
type slowStore struct {
	queue.Store
	delay time.Duration
}

func (s slowStore) GetQueue(ctx context.Context, name string) (queue.Queue, error) {
	answer := time.NewTimer(s.delay) // the database's time to answer
	defer answer.Stop()
	select {
	case <-answer.C:
	case <-ctx.Done():
		return queue.Queue{}, ctx.Err()
	}
	return s.Store.GetQueue(ctx, name)
}

func (slowStore) CreateTicket(ctx context.Context, t queue.Ticket) (queue.Ticket, bool, error) {
	<-ctx.Done()
	return queue.Ticket{}, false, ctx.Err()
}

// A ticket creation's and a backfill's deadline covers all of their store calls: a slow first
// call leaves the commit only what remains, so the client waits one deadline, not one per call
// (which would take 1.75 times the timeout). The bound is a control timer of the timeout
// started with the creation, plus three eighths of it: on a loaded host the creation's
// deadline fires as late as the control does (a fixed 1.5 times the timeout failed under
// load, 327 ms against 300).
func TestCreationsHaveOneDeadline(t *testing.T) {
	t.Parallel()
	const timeout = 400 * time.Millisecond
	for name, create := range map[string]func(*queuesvc.Service) error{
		"ticket": func(svc *queuesvc.Service) error {
			_, _, err := svc.CreateTicket(context.Background(), queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: "ann", Rating: rating(1000)}}})
			return err
		},
		"backfill": func(svc *queuesvc.Service) error {
			_, _, err := svc.CreateBackfill(context.Background(), backfillReq("duel"))
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mem := memstore.New()
			q := queue.DefaultQueue("duel")
			q.GameType, q.TeamSize, q.MaxPartySize, q.Regions = "ctf", 3, 3, []string{"eu"}
			if _, _, err := mem.PutQueue(context.Background(), q); err != nil {
				t.Fatal(err)
			}
			st := storeguard.New(slowStore{Store: mem, delay: timeout * 3 / 4}, timeout, nil)
			svc := queuesvc.New(queuesvc.Deps{Store: st, Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()),
				Matcher: pairInOrder{}, Config: queuesvc.Config{CreateTimeout: timeout}})
			start := time.Now()
			fired := make(chan time.Duration, 1)
			time.AfterFunc(timeout, func() { fired <- time.Since(start) })
			err := create(svc)
			took := time.Since(start)
			if apperr.CodeOf(err) != apperr.Unavailable {
				t.Fatalf("err = %v, want Unavailable", err)
			}
			if control := <-fired; took > control+timeout*3/8 {
				t.Fatalf("the creation took %v (a control timer of %v fired after %v): each call got its own %v", took, timeout, control, timeout)
			}
		})
	}
}

// lateStore answers a queue definition only once the caller's deadline has passed, as a
// database whose answer arrives just too late: the creation's next step meets the deadline.
type lateStore struct{ queue.Store }

func (s lateStore) GetQueue(ctx context.Context, name string) (queue.Queue, error) {
	<-ctx.Done()
	return s.Store.GetQueue(context.WithoutCancel(ctx), name)
}

// A creation whose deadline passes between two store calls (here: before its players'
// ratings are read) is Unavailable, a 503 the client retries, whichever step met it; the
// bare context error was an Internal error (seen as a 500 under load).
func TestCreationsDeadlineBetweenCallsIsUnavailable(t *testing.T) {
	t.Parallel()
	for name, create := range map[string]func(*queuesvc.Service) error{
		"ticket": func(svc *queuesvc.Service) error {
			_, _, err := svc.CreateTicket(context.Background(), queue.NewTicket{Queue: "duel", Players: []queue.NewPlayer{{ID: "ann"}}})
			return err
		},
		"backfill": func(svc *queuesvc.Service) error {
			nb := backfillReq("duel")
			for i := range nb.Teams {
				for j := range nb.Teams[i].Players {
					nb.Teams[i].Players[j].Rating = nil // read from the ratings, after the definition
				}
			}
			_, _, err := svc.CreateBackfill(context.Background(), nb)
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			mem := memstore.New()
			q := queue.DefaultQueue("duel")
			q.GameType, q.TeamSize, q.MaxPartySize, q.Regions = "ctf", 3, 3, []string{"eu"}
			if _, _, err := mem.PutQueue(context.Background(), q); err != nil {
				t.Fatal(err)
			}
			svc := queuesvc.New(queuesvc.Deps{Store: lateStore{mem}, Ratings: ratings.NewService(ratings.NewMemoryStore(nil), ratings.DefaultModel()),
				Matcher: pairInOrder{}, Config: queuesvc.Config{CreateTimeout: 50 * time.Millisecond, DefinitionTTL: -1}})
			if err := create(svc); apperr.CodeOf(err) != apperr.Unavailable {
				t.Fatalf("err = %v (%s), want Unavailable", err, apperr.CodeOf(err))
			}
		})
	}
}
