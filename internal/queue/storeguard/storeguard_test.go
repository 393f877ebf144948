package storeguard_test

import (
	"context"
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
