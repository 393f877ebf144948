package db_test

import (
	"context"
	"testing"
	"time"

	"matchmaker/internal/apperr"
	"matchmaker/internal/queue"
	"matchmaker/internal/queue/queuetest"
)

// A creation's answer is what happened to its ticket. A caller that gives up before its batch
// starts gets an error and its ticket is never stored; one whose batch is already committing
// when it gives up waits for that batch and is told the ticket was stored. (Callers used to
// be told "unavailable" of tickets their batch then committed, and that were matched.)
func TestQueueCreateAnswersWhatHappened(t *testing.T) {
	t.Parallel()
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	release := holdQueue(t, s.Pool(), "q") // the next batch waits for the queue's row

	type answer struct {
		t   queue.Ticket
		err error
	}
	committing, queued := make(chan answer, 1), make(chan answer, 1)
	go func() {
		c, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		tk, _, err := qs.CreateTicket(c, queuetest.Ticket("q", "committing", 1, "alice"))
		committing <- answer{tk, err}
	}()
	waitFor(t, 10*time.Second, "the first batch waits for the lock", func() bool { return lockWaiters(t, s.Pool()) == 1 })
	go func() {
		c, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		defer cancel()
		tk, _, err := qs.CreateTicket(c, queuetest.Ticket("q", "queued", 1, "bob"))
		queued <- answer{tk, err}
	}()
	// The queued call's deadline passes while it waits for the next batch: it is answered.
	if a := <-queued; apperr.CodeOf(a.err) != apperr.Unavailable {
		t.Fatalf("the call that gave up before its batch: %+v, want Unavailable", a)
	}
	// The committing call's deadline, set before the queued one's, has passed too.
	time.Sleep(50 * time.Millisecond) // room for a wrong answer to arrive
	select {
	case a := <-committing:
		t.Fatalf("the call whose batch is committing answered before its batch: %+v", a)
	default:
	}
	release()
	if a := <-committing; a.err != nil || a.t.ID != "committing" {
		t.Fatalf("the call whose batch committed: %+v, want its ticket", a)
	}
	// The committer reaches the queued call's request only now, and leaves it out.
	mustCreate(t, qs, queuetest.Ticket("q", "after", 1, "carol"))
	var ids string
	if err := s.Pool().QueryRow(ctx, `SELECT string_agg(id, ',' ORDER BY id) FROM queue_tickets`).Scan(&ids); err != nil || ids != "after,committing" {
		t.Fatalf("stored tickets %q (%v), want after and committing: never the one whose caller was told it failed", ids, err)
	}
}
