package queuedb_test

import (
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/db/queuedb"
	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuetest"
)

// partitioned is queuetest's queue partitioned by mode.
func partitioned(name string) queue.Queue {
	q := queuetest.Queue(name)
	q.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString}}
	q.Rules = []matchrules.Rule{{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}}
	q.PartitionBy = "mode"
	return q
}

func withMode(tk queue.Ticket, mode string) queue.Ticket {
	tk.Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue(mode)}
	return tk
}

// A partition is led as a queue is, on its own: two replicas count each other, lead
// different partitions of one queue at once, and a partition whose leader hangs is taken
// over once its lease runs out; the hung leader's tick of the partition and its stats are then
// refused (its epoch is the partition's, not the queue's), while the stats of the partitions
// stay apart and the partitions are listed from the tickets and the leases.
func TestQueuePartitionsLedApart(t *testing.T) {
	t.Parallel()
	clocks := []*leaseClock{newLeaseClock(), newLeaseClock()}
	stores, _ := openReplicasWith(t, 2, func(i int) queuedb.Options {
		return queuedb.Options{LeaderLease: testLease, Now: clocks[i].now}
	})
	a, b := stores[0], stores[1]
	ctx := testCtx(t)
	q := partitioned("q")
	mustPut(t, a, q)
	x := mustCreate(t, a, withMode(queuetest.Ticket("q", "x", 1, "x1", "x2"), "ranked"))
	y := mustCreate(t, a, withMode(queuetest.Ticket("q", "y", 2, "y1", "y2"), "ranked"))
	mustCreate(t, a, withMode(queuetest.Ticket("q", "z", 3, "z1", "z2"), "casual"))
	if _, n, err := a.Partitions(ctx, q); n != 2 || err != nil {
		t.Fatalf("replicas: %d %v, want 2", n, err)
	}
	if got, _, err := b.Partitions(ctx, q); !slices.Equal(got, []string{"casual", "ranked"}) || err != nil {
		t.Fatalf("partitions %v %v, want casual and ranked", got, err)
	}
	ranked, casual := queue.PartitionKey("q", "ranked"), queue.PartitionKey("q", "casual")
	if ok, err := a.Lead(ctx, ranked); !ok || err != nil {
		t.Fatalf("a leads ranked: %v %v", ok, err)
	}
	if ok, err := b.Lead(ctx, casual); !ok || err != nil {
		t.Fatalf("b leads casual while a leads ranked: %v %v", ok, err)
	}
	if ok, err := b.Lead(ctx, ranked); ok || err != nil {
		t.Fatalf("b leads ranked over a's live lease: %v %v", ok, err)
	}
	if ok, err := a.Lead(ctx, "q"); !ok || err != nil { // the queue itself (its webhooks): a third lock
		t.Fatalf("a leads the queue: %v %v", ok, err)
	}
	for _, st := range []struct {
		s    *queuedb.Store
		part string
	}{{a, "ranked"}, {b, "casual"}} {
		if err := st.s.PublishStats(ctx, "q", queue.Stats{Queue: "q", At: queuetest.T0, Partition: st.part, Leader: st.part + "-leader", SearchingTickets: len(st.part)}); err != nil {
			t.Fatalf("stats of %s: %v", st.part, err)
		}
	}
	parts, err := b.PublishedStats(ctx, "q")
	if err != nil || len(parts) != 2 || parts[0].Leader != "casual-leader" || parts[1].SearchingTickets != len("ranked") {
		t.Fatalf("partition stats %+v %v", parts, err)
	}
	// a hangs (its clock stops, it renews nothing); b takes ranked once the lease ran out.
	renewedBefore := time.Now()
	waitFor(t, 10*testLease, "b takes ranked from the hung leader", func() bool { ok, _ := b.Lead(ctx, ranked); return ok })
	if took := time.Since(renewedBefore); took < testLease/2 {
		t.Fatalf("b took ranked %v after a's last renewal, well before the lease (%v)", took, testLease)
	}
	clocks[0].advance(time.Since(renewedBefore))
	w := queue.TickWrite{At: queuetest.T0, Partition: "ranked", Matches: []queue.Match{queuetest.Match2v2("m-a", x, y)}}
	if _, err := queue.CommitTick(ctx, a, "q", w); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the hung leader's tick of ranked: %v, want Conflict", err)
	}
	if err := a.PublishStats(ctx, "q", queue.Stats{At: queuetest.T0, Partition: "ranked"}); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the hung leader's stats of ranked: %v, want Conflict", err)
	}
	w.Matches[0].ID = "m-b"
	if done, err := queue.CommitTick(ctx, b, "q", w); err != nil || len(done.Matches) != 1 {
		t.Fatalf("the new leader's tick of ranked: %+v %v", done, err)
	}
	if got, _, err := b.Partitions(ctx, q); !slices.Equal(got, []string{"casual", "ranked"}) || err != nil {
		t.Fatalf("partitions once ranked's tickets matched %v %v: a partition led stays listed", got, err)
	}
}

// A partitioned queue with a ready check on two replicas: each leads a partition and proposes
// its matches, fenced by the partition's epoch (a deposed partition leader's proposal is
// refused though it never led the queue); an answer on either replica resolves a proposal;
// the queue's leader expires the other partition's proposal at its deadline, once.
func TestPartitionedReadyCheckAcrossReplicas(t *testing.T) {
	t.Parallel()
	stores, pool := openReplicas(t, 2)
	a, b := stores[0], stores[1]
	ctx := testCtx(t)
	q := partitioned("q")
	q.Acceptance = &queue.Acceptance{Timeout: 20 * time.Second}
	mustPut(t, a, q)
	x := mustCreate(t, a, withMode(queuetest.Ticket("q", "x", 1, "x1", "x2"), "ranked"))
	y := mustCreate(t, a, withMode(queuetest.Ticket("q", "y", 2, "y1", "y2"), "ranked"))
	z := mustCreate(t, b, withMode(queuetest.Ticket("q", "z", 3, "z1", "z2"), "casual"))
	v := mustCreate(t, b, withMode(queuetest.Ticket("q", "v", 4, "v1", "v2"), "casual"))
	ranked, casual := queue.PartitionKey("q", "ranked"), queue.PartitionKey("q", "casual")
	for _, l := range []struct {
		s   *queuedb.Store
		key string
	}{{a, ranked}, {b, casual}, {b, "q"}} {
		if ok, err := l.s.Lead(ctx, l.key); !ok || err != nil {
			t.Fatalf("lead %q: %v %v", l.key, ok, err)
		}
	}
	deadline := queuetest.T0.Add(20 * time.Second)
	propose := func(s *queuedb.Store, part, id string, t1, t2 queue.Ticket) (queue.TickCommitted, error) {
		return queue.Propose(ctx, s, "q", queue.ProposeWrite{At: queuetest.T0, AcceptBy: deadline, Partition: part,
			Proposals: []queue.Match{queuetest.Match2v2(id, t1, t2)}})
	}
	if done, err := propose(a, "ranked", "m-ranked", x, y); err != nil || len(done.Matches) != 1 {
		t.Fatalf("a proposes ranked's match: %+v %v", done, err)
	}
	if done, err := propose(b, "casual", "m-casual", z, v); err != nil || len(done.Matches) != 1 {
		t.Fatalf("b proposes casual's match: %+v %v", done, err)
	}
	for i, p := range []string{"x1", "x2", "y1", "y2"} { // answered on the replica that did not propose
		if _, resolved, err := queue.AnswerProposal(ctx, b, "m-ranked", p, true, queuetest.T0.Add(time.Second)); err != nil || resolved != (i == 3) {
			t.Fatalf("%s accepts: resolved %v, %v", p, resolved, err)
		}
	}
	if tk, err := b.GetTicket(ctx, "x"); err != nil || tk.Status != queue.Matched || tk.Assignment.MatchID != "m-ranked" {
		t.Fatalf("x once all accepted: %+v %v", tk, err)
	}
	for _, p := range []string{"z1", "z2"} { // z's players accept, v's are silent
		if _, _, err := queue.AnswerProposal(ctx, a, "m-casual", p, true, queuetest.T0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []int{1, 0} { // the queue's leader, at its next two ticks
		resolved, open, err := queue.ExpireProposals(ctx, b, "q", deadline)
		if err != nil || len(resolved) != want || open != 0 {
			t.Fatalf("expiry %d: %d resolved, %d open, %v; want %d and 0", i, len(resolved), open, err, want)
		}
	}
	if tk, err := a.GetTicket(ctx, "z"); err != nil || tk.Status != queue.Searching {
		t.Fatalf("z, whose players accepted, after the timeout: %+v %v", tk, err)
	}
	if tk, err := a.GetTicket(ctx, "v"); err != nil || tk.Status != queue.Cancelled || tk.Reason != queue.ReasonAcceptanceTimeout {
		t.Fatalf("v, silent, after the timeout: %+v %v", tk, err)
	}
	// a loses its session: b takes ranked, and a's proposal of ranked is refused.
	w := mustCreate(t, a, withMode(queuetest.Ticket("q", "w", 5, "w1", "w2"), "ranked"))
	u := mustCreate(t, a, withMode(queuetest.Ticket("q", "u", 6, "u1", "u2"), "ranked"))
	if _, err := pool.Exec(ctx, `SELECT pg_terminate_backend($1)`, a.LeaderPID()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "b takes ranked", func() bool { ok, _ := b.Lead(ctx, ranked); return ok })
	if _, err := propose(a, "ranked", "m-a", w, u); apperr.CodeOf(err) != apperr.Conflict {
		t.Fatalf("the deposed partition leader's proposal: %v, want Conflict", err)
	}
	if done, err := propose(b, "ranked", "m-b", w, u); err != nil || len(done.Matches) != 1 {
		t.Fatalf("the new partition leader's proposal: %+v %v", done, err)
	}
}
