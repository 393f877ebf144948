package storeguard_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
	"github.com/matchmakerhq/matchmaker/internal/queue/storeguard"
)

// silentStore never answers, as a frozen database would not: its calls end only with their
// context.
type silentStore struct{ queue.Store }

func (silentStore) GetTicket(ctx context.Context, id string) (queue.Ticket, error) {
	<-ctx.Done()
	return queue.Ticket{}, ctx.Err()
}

// A call into a store that does not answer ends at the deadline with Unavailable, and the
// observer hears of it.
func TestGuardedStoreBoundsEveryCall(t *testing.T) {
	t.Parallel()
	var seen []string
	st := storeguard.New(silentStore{memstore.New()}, 50*time.Millisecond, func(op string, err error, d time.Duration) {
		seen = append(seen, op+":"+string(apperr.CodeOf(err)))
	})
	start := time.Now()
	_, err := st.GetTicket(context.Background(), "tk-1")
	if apperr.CodeOf(err) != apperr.Unavailable || time.Since(start) > time.Second {
		t.Fatalf("%v after %v, want Unavailable after about 50 ms", err, time.Since(start))
	}
	if len(seen) != 1 || seen[0] != "get_ticket:unavailable" {
		t.Fatalf("observed %v", seen)
	}
}

// Every change goes through Apply, observed under the name of the store call it was before
// (the store-call metrics' operation label, the spans' name), whatever it answers.
func TestGuardedApplyIsObservedByItsCause(t *testing.T) {
	t.Parallel()
	var seen []string
	st := storeguard.New(memstore.New(), time.Second, func(op string, _ error, _ time.Duration) { seen = append(seen, op) })
	ctx, at := context.Background(), time.Unix(0, 0)
	_, _ = queue.CommitTick(ctx, st, "q", queue.TickWrite{At: at})
	_, _ = queue.Propose(ctx, st, "q", queue.ProposeWrite{At: at})
	_, _ = queue.CancelTicket(ctx, st, "tk", at)
	_ = queue.DeleteQueue(ctx, st, "q", at)
	_, _, _ = queue.AnswerProposal(ctx, st, "m", "p", true, at)
	_, _, _ = queue.ExpireProposals(ctx, st, "q", at)
	_, _ = queue.PlaceMatch(ctx, st, "m", nil, at)
	_, _ = queue.CompletePlacement(ctx, st, "m", nil, at)
	_, _ = queue.FailPlacement(ctx, st, "m", "no server", at)
	want := []string{"commit_tick", "propose", "cancel_ticket", "delete_queue", "answer_proposal", "expire_proposals",
		"place_match", "complete_placement", "fail_placement"}
	if !slices.Equal(seen, want) {
		t.Fatalf("observed %v, want %v", seen, want)
	}
}
