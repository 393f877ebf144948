package queuesvc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
)

func penalties(m *queuesvc.Metrics, event string) float64 {
	var out dto.Metric
	if err := queuesvc.PenaltiesCounter(m).WithLabelValues("duel", event).Write(&out); err != nil {
		panic(err)
	}
	return out.GetCounter().GetValue()
}

// On the memory store: a decline is a dodge, a time-out one per silent player, and a ticket
// in the cooldown a 429 until it ends, each counted in matchmaker_queue_penalties_total.
func TestDodgesAndCooldownsOnTheMemoryStore(t *testing.T) {
	t.Parallel()
	f, m := readyFixture(t)
	ctx := context.Background()
	q, err := f.svc.GetQueue(ctx, "duel")
	if err != nil {
		t.Fatal(err)
	}
	q.Penalties.Dodge = &queue.DodgePenalty{Window: time.Hour, Steps: []queue.CooldownStep{{Count: 1, Cooldown: time.Minute}}}
	if _, _, err := f.svc.PutQueue(ctx, q); err != nil {
		t.Fatal(err)
	}
	a, _, _ := f.svc.CreateTicket(ctx, solo("duel", "alice"))
	b, _, _ := f.svc.CreateTicket(ctx, solo("duel", "bob"))
	runService(t, f.svc)
	pa := waitFor(t, f.svc, a.ID, queue.Proposed)
	if _, err := f.svc.Answer(ctx, pa.Proposal.MatchID, "alice", false); err != nil {
		t.Fatal(err)
	}
	declined := f.clock.Now()
	if got := penalties(m, "dodge"); got != 1 {
		t.Fatalf("dodges after alice declined: %v", got)
	}
	_, _, err = f.svc.CreateTicket(ctx, solo("duel", "alice"))
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.TooManyRequests || !e.RetryAt.Equal(declined.Add(time.Minute)) ||
		e.RetryAfter != time.Minute {
		t.Fatalf("alice's next ticket: %v", err)
	}
	if got := penalties(m, "cooldown_refused"); got != 1 {
		t.Fatalf("refusals: %v", got)
	}
	// bob searches again; carol joins; neither answers: two dodges more.
	waitFor(t, f.svc, b.ID, queue.Searching)
	c, _, _ := f.svc.CreateTicket(ctx, solo("duel", "carol"))
	f.advance(t, 50*time.Millisecond)
	waitFor(t, f.svc, c.ID, queue.Proposed)
	f.advance(t, 20*time.Second)
	waitFor(t, f.svc, c.ID, queue.Cancelled)
	// The tick at the deadline, which f.advance waited for, counted the expiry's dodges
	// once its store call returned.
	if got := penalties(m, "dodge"); got != 3 {
		t.Fatalf("dodges after a time-out of two silent players: %v, want 3", got)
	}
	f.advance(t, time.Minute)
	if _, _, err := f.svc.CreateTicket(ctx, solo("duel", "alice")); err != nil {
		t.Fatalf("alice after her cooldown: %v", err)
	}
}
