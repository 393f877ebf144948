package queuesvc_test

import (
	"context"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

// A ticket's avoid lists are checked (players[i].avoid[j]), stored and returned, and part
// of the idempotency fingerprint, as a set.
func TestTicketAvoidLists(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queuesvc.Config{})
	ctx := context.Background()
	f.queue(t, func(q *queue.Queue) { q.TeamSize, q.MaxPartySize = 1, 1 })
	for _, c := range []struct {
		avoid []string
		field string
	}{
		{[]string{"bob", "alice"}, "players[0].avoid[1]"},
		{[]string{"bob", "bob"}, "players[0].avoid[1]"},
		{[]string{" bob"}, "players[0].avoid[0]"},
		{make([]string, matchrules.MaxAvoid+1), "players[0].avoid"},
	} {
		nt := solo("duel", "alice")
		nt.Players[0].Avoid = c.avoid
		if _, _, err := f.svc.CreateTicket(ctx, nt); apperr.CodeOf(err) != apperr.Invalid || !slices.Contains(fieldsOf(err), c.field) {
			t.Fatalf("avoid %q: error %v, want a fault of %s", c.avoid, err, c.field)
		}
	}
	nt := solo("duel", "alice")
	nt.IdempotencyKey = "k1"
	nt.Players[0].Avoid = []string{"bob", "carol"}
	tk, _, err := f.svc.CreateTicket(ctx, nt)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := f.svc.GetTicket(ctx, tk.ID, 0); err != nil || !slices.Equal(got.Players[0].Avoid, []string{"bob", "carol"}) {
		t.Fatalf("stored %+v, %v", got.Players, err)
	}
	nt.Players[0].Avoid = []string{"carol", "bob"}
	if again, replayed, err := f.svc.CreateTicket(ctx, nt); err != nil || !replayed || again.ID != tk.ID {
		t.Fatalf("replay of the same list in another order: %v %v %v", again.ID, replayed, err)
	}
	nt.Players[0].Avoid = []string{"bob"}
	if _, _, err := f.svc.CreateTicket(ctx, nt); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("another list under the same key: %v", err)
	}
}
