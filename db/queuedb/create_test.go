package queuedb_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// A creation's answer is what happened to its ticket, whenever its caller gives up: a ticket
// means it was stored; an error, that nothing was stored (the batch deletes, before its
// COMMIT, the tickets of the callers who gave up while it wrote them). Only a COMMIT that
// goes out and never answers can leave a failed creation's ticket, which is then cancelled
// (without an idempotency key) or found by the retry with the key. No caller waits long past
// its own deadline. (Callers used to be told "unavailable" of tickets that their batch,
// bound by a deadline of its own, committed seconds later, and that were then matched; then
// such tickets were stored and cancelled a moment later, a moment in which the tick could
// match them.) Here the queue's row is locked, as a deletion locks it, while callers with
// deadlines from 100 to 700 ms create tickets; the lock goes at 400 ms.
func TestQueueCreateAnswersWhatHappened(t *testing.T) {
	t.Parallel()
	qs, s := openQueueStore(t)
	ctx := testCtx(t)
	mustPut(t, qs, queuetest.Queue("q"))
	release := holdQueue(t, s.Pool(), "q")
	const callers = 40
	errs := make([]error, callers)
	late := make([]time.Duration, callers)
	var wg sync.WaitGroup
	for i := range callers {
		wg.Go(func() {
			deadline := time.Now().Add(100*time.Millisecond + time.Duration(i)*15*time.Millisecond)
			c, cancel := context.WithDeadline(ctx, deadline)
			defer cancel()
			_, _, errs[i] = qs.CreateTicket(c, ticketFor(i))
			late[i] = time.Since(deadline)
		})
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(400*time.Millisecond - callers*5*time.Millisecond)
	release()
	wg.Wait()

	uncertain := qs.UncertainCommits() > 0
	if uncertain {
		t.Logf("%d COMMITs did not answer in time: their failed creations may be stored", qs.UncertainCommits())
	}
	stored := map[string]bool{}
	waitFor(t, 10*time.Second, "the tickets of failed creations are cancelled", func() bool {
		clear(stored)
		rows, err := s.Pool().Query(ctx, `SELECT id, status, reason FROM queue_tickets`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var id, status, reason string
			if err := rows.Scan(&id, &status, &reason); err != nil {
				t.Fatal(err)
			}
			if status == "searching" {
				stored[id] = true
			} else if !uncertain || reason != queuedb.ReasonCreationFailed {
				t.Fatalf("ticket %s is %s (%s)", id, status, reason)
			}
		}
		for i, err := range errs {
			if err != nil && (!uncertain || !keyed(i)) && stored[fmt.Sprintf("t%02d", i)] {
				return false
			}
		}
		return true
	})
	answeredOK := 0
	for i, err := range errs {
		id := fmt.Sprintf("t%02d", i)
		switch {
		case err == nil && !stored[id]:
			t.Errorf("%s: created, but not stored", id)
		case err != nil && apperr.CodeOf(err) != apperr.Unavailable:
			t.Errorf("%s: %v, want Unavailable", id, err)
		case err == nil:
			answeredOK++
		case keyed(i):
			// The retry with the same key finds the ticket if its batch stored it, or makes it.
			tk, _, err := qs.CreateTicket(ctx, ticketFor(i))
			if err != nil || tk.Status != queue.Searching {
				t.Errorf("%s: the retry with its key: %+v %v", id, tk, err)
			}
		}
		if late[i] > 500*time.Millisecond {
			t.Errorf("%s answered %v after its deadline", id, late[i])
		}
	}
	if answeredOK == 0 || answeredOK == callers {
		t.Fatalf("%d of %d created: the test wants both outcomes", answeredOK, callers)
	}
}

// keyed says which of the test's callers send an idempotency key: every other one.
func keyed(i int) bool { return i%2 == 1 }

func ticketFor(i int) queue.Ticket {
	t := queuetest.Ticket("q", fmt.Sprintf("t%02d", i), 1, fmt.Sprintf("p%02d", i))
	if keyed(i) {
		t.IdempotencyKey, t.BodyHash = fmt.Sprintf("key-%02d", i), [32]byte{byte(i)}
	}
	return t
}
