package queuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The contract of queue definitions, deletion, leadership, published stats and the purge.

func testQueues(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := Queue("ranked")
	q.Mutators = []string{"instagib"}
	q.Regions = []string{"eu", "us"}
	q.Expansions.MaxLatencyMS = []queue.Step{{AfterS: 0, Value: 60}, {AfterS: 20, Value: 120}}
	q.Webhook = &queue.Webhook{URL: "https://example.com/hook", Secret: "0123456789abcdef"}
	q.MatchFunction = &queue.MatchFunction{URL: "https://mmf.example.com/match", Secret: "fedcba9876543210", Timeout: 1500 * time.Millisecond,
		Mode: queue.FunctionShadow, OnFailure: queue.FailureRules, MaxPool: 500}
	stored, created, err := st.PutQueue(c, q)
	if err != nil || !created {
		t.Fatalf("put: created %v, %v", created, err)
	}
	got := must[queue.Queue](t)(st.GetQueue(c, "ranked"))
	if !sameQueue(got, q) || !sameQueue(stored, q) {
		t.Fatalf("got %+v\nwant %+v", got, q)
	}
	q2 := q
	q2.TeamSize, q2.Webhook, q2.MatchFunction, q2.CreatedAt, q2.UpdatedAt = 3, nil, nil, at(50), at(50)
	stored, created, err = st.PutQueue(c, q2)
	if err != nil || created || stored.TeamSize != 3 || stored.Webhook != nil || stored.MatchFunction != nil ||
		!stored.CreatedAt.Equal(T0) || !stored.UpdatedAt.Equal(at(50)) {
		t.Fatalf("replace: %+v created %v, %v (CreatedAt kept, the rest replaced)", stored, created, err)
	}
	putQueue(t, st, Queue("casual"))
	list := must[[]queue.Queue](t)(st.ListQueues(c))
	if len(list) != 2 || list[0].Name != "casual" || list[1].Name != "ranked" {
		t.Fatalf("list: %+v", list)
	}
	if err := queue.DeleteQueue(c, st, "ranked", at(60)); err != nil {
		t.Fatal(err)
	}
	_, err = st.GetQueue(c, "ranked")
	wantCode(t, err, apperr.NotFound)
	wantCode(t, queue.DeleteQueue(c, st, "ranked", at(61)), apperr.NotFound)
	if list := must[[]queue.Queue](t)(st.ListQueues(c)); len(list) != 1 {
		t.Fatalf("list after delete: %+v", list)
	}
}

func sameQueue(a, b queue.Queue) bool {
	return a.Name == b.Name && a.GameType == b.GameType && slices.Equal(a.Mutators, b.Mutators) &&
		slices.Equal(a.Regions, b.Regions) &&
		a.TeamSize == b.TeamSize && a.Teams == b.Teams && a.Strategy == b.Strategy &&
		slices.Equal(a.Expansions.Interval, b.Expansions.Interval) &&
		slices.Equal(a.Expansions.MaxLatencyMS, b.Expansions.MaxLatencyMS) &&
		a.TicketTTL == b.TicketTTL && a.MaxPartySize == b.MaxPartySize && a.Tick == b.Tick &&
		(a.Webhook == nil) == (b.Webhook == nil) && (a.Webhook == nil || *a.Webhook == *b.Webhook) &&
		(a.MatchFunction == nil) == (b.MatchFunction == nil) && (a.MatchFunction == nil || *a.MatchFunction == *b.MatchFunction) &&
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func testDeleteQueueCancels(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "t1", 1, "alice", "bob"))
	create(t, st, Ticket("q", "t2", 2, "carol"))
	if err := queue.DeleteQueue(c, st, "q", at(5)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2"} {
		tk := must[queue.Ticket](t)(st.GetTicket(c, id))
		if tk.Status != queue.Cancelled || tk.Reason != "queue deleted" || !tk.UpdatedAt.Equal(at(5)) {
			t.Fatalf("%s after its queue was deleted: %+v", id, tk)
		}
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events
	if len(evs) != 2 || evs[0].Type != queue.EventCancelled || evs[0].Seq != 1 || evs[1].Seq != 2 {
		t.Fatalf("events: %+v", evs)
	}
	// The queue can be made again; its players may search again.
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "t3", 6, "alice"))
}

func testLead(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	if !must[bool](t)(st.Lead(c, "q")) || !must[bool](t)(st.Lead(c, "q")) {
		t.Fatal("the only process does not lead")
	}
	if err := st.Resign(c, "q"); err != nil {
		t.Fatal(err)
	}
	if !must[bool](t)(st.Lead(c, "q")) {
		t.Fatal("the only process cannot lead again after resigning")
	}
}

func testPurge(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	old := create(t, st, Ticket("q", "old", 1, "alice"))
	_ = old
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "old", at(2)))
	create(t, st, Ticket("q", "live", 3, "bob"))
	create(t, st, Ticket("q", "recent", 3, "carol"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "recent", at(100)))
	r := must[queue.PurgeReport](t)(st.Purge(c, at(50)))
	if r.Tickets != 1 || r.Events != 1 {
		t.Fatalf("purge: %+v, want the old ticket and its event", r)
	}
	_, err := st.GetTicket(c, "old")
	wantCode(t, err, apperr.NotFound)
	for _, id := range []string{"live", "recent"} {
		must[queue.Ticket](t)(st.GetTicket(c, id))
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events
	if len(evs) != 1 || evs[0].TicketID != "recent" || evs[0].Seq != 2 {
		t.Fatalf("events after the purge: %+v (seqs keep counting)", evs)
	}
}

// A queue's webhook outbox (the events after its cursor) is kept from the purge while the
// queue lives; once it is deleted its webhook sends no more, and the purge takes them. The
// queue's event numbers go on if it is defined again (queue/keeping.go).
func testPurgeDeletedQueue(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := Queue("q")
	q.Webhook = &queue.Webhook{URL: "https://example.com/hook", Secret: "0123456789abcdef"}
	putQueue(t, st, q)
	create(t, st, Ticket("q", "a", 1, "alice"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "a", at(2)))
	if r := must[queue.PurgeReport](t)(st.Purge(c, at(50))); r.Events != 0 {
		t.Fatalf("purge of a live queue's outbox: %+v, want its event kept", r)
	}
	if err := queue.DeleteQueue(c, st, "q", at(3)); err != nil {
		t.Fatal(err)
	}
	if r := must[queue.PurgeReport](t)(st.Purge(c, at(50))); r.Events != 1 {
		t.Fatalf("purge of a deleted queue's outbox: %+v, want its event deleted", r)
	}
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "b", 60, "bob"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "b", at(61)))
	evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events
	if len(evs) != 1 || evs[0].TicketID != "b" || evs[0].Seq != 2 {
		t.Fatalf("events of the queue defined again: %+v, want b's cancel as event 2", evs)
	}
}

// latestStats is the queue's own snapshot among those PublishedStats returns, ok false when
// there is none.
func latestStats(c context.Context, st queue.Store, name string) (queue.Stats, bool, error) {
	published, err := st.PublishedStats(c, name)
	if err != nil || len(published) == 0 || published[0].Partition != "" {
		return queue.Stats{}, false, err
	}
	return published[0], true, nil
}

// The leader's stats snapshot is kept per queue (and partition), the last one wins, and a
// queue that does not exist (or was deleted) has none.
func testStats(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	if _, ok, err := latestStats(c, st, "q"); ok || err != nil {
		t.Fatalf("before any: ok %v, %v", ok, err)
	}
	snap := queue.Stats{Queue: "q", At: at(5), Source: "leader", SearchingTickets: 3, SearchingPlayers: 4,
		OldestWait: 7 * time.Second, MatchesLastHour: 2, Wait: queue.WaitSummary{Samples: 1, Quantiles: make([]float64, 21)},
		Bands: make([]queue.BandStats, len(queue.Bands))}
	snap.Bands[3].SearchingPlayers = 4
	snap.Wait.Quantiles[20] = 12.5
	if err := st.PublishStats(c, "q", snap); err != nil {
		t.Fatal(err)
	}
	snap.SearchingTickets = 5
	// The match function's backoff, which the next leader takes on from here.
	snap.FunctionBackoff = &queue.FunctionBackoff{Failures: 2, Next: at(9), Last: "timed out after 200 ms"}
	if err := st.PublishStats(c, "q", snap); err != nil {
		t.Fatal(err)
	}
	got, ok, err := latestStats(c, st, "q")
	if err != nil || !ok || got.SearchingTickets != 5 || got.OldestWait != 7*time.Second || !got.At.Equal(at(5)) ||
		got.Bands[3].SearchingPlayers != 4 || got.Bands[3].Name != queue.Bands[3].Name || got.Wait.Quantiles[20] != 12.5 {
		t.Fatalf("read back %+v ok %v, %v", got, ok, err)
	}
	if b := got.FunctionBackoff; b == nil || b.Failures != 2 || !b.Next.Equal(at(9)) || b.Last != "timed out after 200 ms" {
		t.Fatalf("the function's backoff read back: %+v", b)
	}
	for _, part := range []string{"b", "a"} { // each published by its leader
		if ok, err := st.Lead(c, queue.PartitionKey("q", part)); !ok || err != nil {
			t.Fatalf("lead partition %s: %v %v", part, ok, err)
		}
		if err := st.PublishStats(c, "q", queue.Stats{Queue: "q", At: at(5), Partition: part}); err != nil {
			t.Fatal(err)
		}
	}
	if all := must[[]queue.Stats](t)(st.PublishedStats(c, "q")); len(all) != 3 || all[0].SearchingTickets != 5 ||
		all[1].Partition != "a" || all[2].Partition != "b" {
		t.Fatalf("the queue's and its partitions' stats: %+v", all)
	}
	wantCode(t, st.PublishStats(c, "nope", snap), apperr.NotFound)
	if _, ok, err := latestStats(c, st, "nope"); ok || err != nil {
		t.Fatalf("no such queue: ok %v, %v", ok, err)
	}
	if err := queue.DeleteQueue(c, st, "q", at(6)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := latestStats(c, st, "q"); ok {
		t.Fatal("a deleted queue's stats")
	}
}
