// Package queuetest is the contract suite every queue.Store passes: the memory store in
// package queue and the Postgres store in package db run the same tests, so the service can
// rely on one behaviour whichever store it is given.
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Run runs the suite. open returns a fresh, empty store for each subtest; it may register
// cleanups with t.
func Run(t *testing.T, open func(t *testing.T) queue.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st queue.Store)
	}{
		{"QueuesPutGetListDelete", testQueues},
		{"DeleteQueueCancelsItsSearchingTickets", testDeleteQueueCancels},
		{"CreateTicket", testCreateTicket},
		{"IdempotentCreate", testIdempotentCreate},
		{"PlayerAlreadySearching", testPlayerAlreadySearching},
		{"CancelTicket", testCancelTicket},
		{"ChangesAreIncremental", testChanges},
		{"CommitTickMatchesOnlySearchingTickets", testCommitTick},
		{"CommitTickExpires", testCommitTickExpires},
		{"EventsInOrderAndWait", testEvents},
		{"FeedEventsCarryTheirTickets", testFeedEvents},
		{"WebhookCursor", testWebhookCursor},
		{"Lead", testLead},
		{"Purge", testPurge},
		{"ConcurrentCreates", testConcurrentCreates},
		{"CancelRacingATick", testCancelRacingATick},
		{"BackfillTicketsAndFills", testBackfill},
		{"StatsPublishedAndRead", testStats},
		{"ExpiryRacingAMatch", testExpiryRacingAMatch},
		{"RulesAndAttributesRoundTrip", testRulesAndAttributes},
		{"TeamShapesRoundTrip", testTeamShapesRoundTrip},
		{"OwnerAndIdempotencyPerOwner", testOwner},
		{"ProposeThenAllAccept", testProposeAccept},
		{"ProposalDeclined", testProposalDeclined},
		{"ProposalTimesOut", testProposalTimeout},
		{"CancelDissolvesProposal", testCancelDissolves},
		{"DeleteQueueWithAProposal", testDeleteQueueWithProposal},
		{"ProposalsAgainstAModel", testProposalModel},
		{"PlaceMatch", testPlacement},
		{"AllocatorPlacement", testAllocatorPlacement},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.fn(t, open(t))
		})
	}
}

// T0 is the suite's epoch: times are the caller's, and whole seconds from here.
var T0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func at(s int) time.Time { return T0.Add(time.Duration(s) * time.Second) }

// Queue is a valid queue definition named name.
func Queue(name string) queue.Queue {
	q := queue.DefaultQueue(name)
	q.GameType = "ctf"
	q.TeamSize, q.MaxPartySize = 2, 2
	q.CreatedAt, q.UpdatedAt = T0, T0
	return q
}

// Ticket is a searching ticket of the given players (a party when several), created at
// second s.
func Ticket(queueName, id string, s int, players ...string) queue.Ticket {
	t := queue.Ticket{ID: id, Queue: queueName, Status: queue.Searching, CreatedAt: at(s), ExpiresAt: at(s + 300)}
	for i, p := range players {
		t.Players = append(t.Players, queue.Player{ID: p, Rating: 1000 + float64(10*i), Source: queue.RatingInline})
	}
	return t
}

// Match2v2 is a match of tickets a (players a1, a2 on team 0) and b (b1, b2 on team 1).
func Match2v2(id string, a, b queue.Ticket) queue.Match {
	team := func(t queue.Ticket) queue.MatchTeam {
		var mt queue.MatchTeam
		for _, p := range t.Players {
			mt.Players = append(mt.Players, queue.MatchPlayer{ID: p.ID, TicketID: t.ID, Rating: p.Rating})
			mt.RatingTotal += p.Rating
		}
		return mt
	}
	m := queue.Match{ID: id, CreatedAt: at(10), Region: "eu", Teams: []queue.MatchTeam{team(a), team(b)}}
	for i := range min(len(a.Players), len(b.Players)) {
		m.Pairs = append(m.Pairs, queue.Pair{Players: [2]string{a.Players[i].ID, b.Players[i].ID}, Interval: 25})
	}
	return m
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func wantCode(t *testing.T, err error, code apperr.Code) {
	t.Helper()
	if got := apperr.CodeOf(err); err == nil || got != code {
		t.Fatalf("error %v (%s), want %s", err, got, code)
	}
}

func putQueue(t *testing.T, st queue.Store, q queue.Queue) {
	t.Helper()
	if _, _, err := st.PutQueue(ctx(t), q); err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, st queue.Store, tk queue.Ticket) queue.Ticket {
	t.Helper()
	got, replayed, err := st.CreateTicket(ctx(t), tk)
	if err != nil {
		t.Fatalf("create %s: %v", tk.ID, err)
	}
	if replayed {
		t.Fatalf("create %s: replayed", tk.ID)
	}
	return got
}

func testQueues(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := Queue("ranked")
	q.Mutators = []string{"instagib"}
	q.Regions = []string{"eu", "us"}
	q.Expansions.MaxLatencyMS = []queue.Step{{AfterS: 0, Value: 60}, {AfterS: 20, Value: 120}}
	q.Webhook = &queue.Webhook{URL: "https://example.com/hook", Secret: "0123456789abcdef"}
	stored, created, err := st.PutQueue(c, q)
	if err != nil || !created {
		t.Fatalf("put: created %v, %v", created, err)
	}
	got := must[queue.Queue](t)(st.GetQueue(c, "ranked"))
	if !sameQueue(got, q) || !sameQueue(stored, q) {
		t.Fatalf("got %+v\nwant %+v", got, q)
	}
	q2 := q
	q2.TeamSize, q2.Webhook, q2.CreatedAt, q2.UpdatedAt = 3, nil, at(50), at(50)
	stored, created, err = st.PutQueue(c, q2)
	if err != nil || created || stored.TeamSize != 3 || stored.Webhook != nil || !stored.CreatedAt.Equal(T0) || !stored.UpdatedAt.Equal(at(50)) {
		t.Fatalf("replace: %+v created %v, %v (CreatedAt kept, the rest replaced)", stored, created, err)
	}
	putQueue(t, st, Queue("casual"))
	list := must[[]queue.Queue](t)(st.ListQueues(c))
	if len(list) != 2 || list[0].Name != "casual" || list[1].Name != "ranked" {
		t.Fatalf("list: %+v", list)
	}
	if err := st.DeleteQueue(c, "ranked", at(60)); err != nil {
		t.Fatal(err)
	}
	_, err = st.GetQueue(c, "ranked")
	wantCode(t, err, apperr.NotFound)
	wantCode(t, st.DeleteQueue(c, "ranked", at(61)), apperr.NotFound)
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
		a.CreatedAt.Equal(b.CreatedAt) && a.UpdatedAt.Equal(b.UpdatedAt)
}

func testDeleteQueueCancels(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "t1", 1, "alice", "bob"))
	create(t, st, Ticket("q", "t2", 2, "carol"))
	if err := st.DeleteQueue(c, "q", at(5)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"t1", "t2"} {
		tk := must[queue.Ticket](t)(st.GetTicket(c, id))
		if tk.Status != queue.Cancelled || tk.Reason != "queue deleted" || !tk.UpdatedAt.Equal(at(5)) {
			t.Fatalf("%s after its queue was deleted: %+v", id, tk)
		}
	}
	evs := must[[]queue.Event](t)(st.Events(c, "q", 0, 10))
	if len(evs) != 2 || evs[0].Type != queue.EventCancelled || evs[0].Seq != 1 || evs[1].Seq != 2 {
		t.Fatalf("events: %+v", evs)
	}
	// The queue can be made again; its players may search again.
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "t3", 6, "alice"))
}

func testCreateTicket(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	in := Ticket("q", "t1", 1, "alice", "bob")
	in.Latencies = map[string]float64{"eu": 30, "us": 110.5}
	got := create(t, st, in)
	read := must[queue.Ticket](t)(st.GetTicket(c, "t1"))
	for _, tk := range []queue.Ticket{got, read} {
		if tk.ID != "t1" || tk.Queue != "q" || tk.Status != queue.Searching || len(tk.Players) != 2 ||
			!reflect.DeepEqual(tk.Players[1], in.Players[1]) || tk.Latencies["us"] != 110.5 || len(tk.Latencies) != 2 ||
			!tk.CreatedAt.Equal(at(1)) || !tk.ExpiresAt.Equal(at(301)) || tk.Assignment != nil {
			t.Fatalf("ticket %+v, want %+v", tk, in)
		}
	}
	_, _, err := st.CreateTicket(c, Ticket("nowhere", "t2", 1, "carol"))
	wantCode(t, err, apperr.NotFound)
	_, err = st.GetTicket(c, "t404")
	wantCode(t, err, apperr.NotFound)
}

func testIdempotentCreate(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	in := Ticket("q", "t1", 1, "alice")
	in.IdempotencyKey, in.BodyHash = "key-1", [32]byte{1}
	create(t, st, in)
	retry := in
	retry.ID = "t1-retry" // the service makes a new id for each attempt
	got, replayed, err := st.CreateTicket(c, retry)
	if err != nil || !replayed || got.ID != "t1" {
		t.Fatalf("retry with the same key and body: %+v replayed %v, %v; want t1 again", got, replayed, err)
	}
	other := retry
	other.BodyHash = [32]byte{2}
	_, _, err = st.CreateTicket(c, other)
	wantCode(t, err, apperr.Conflict)
	// Keys are per queue.
	putQueue(t, st, Queue("q2"))
	elsewhere := Ticket("q2", "t2", 1, "alice")
	elsewhere.IdempotencyKey, elsewhere.BodyHash = "key-1", [32]byte{9}
	create(t, st, elsewhere)
}

func testPlayerAlreadySearching(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "t1", 1, "alice", "bob"))
	_, _, err := st.CreateTicket(c, Ticket("q", "t2", 2, "carol", "bob"))
	wantCode(t, err, apperr.Conflict)
	var se *queue.SearchingError
	if !errors.As(err, &se) || se.PlayerID != "bob" || se.TicketID != "t1" {
		t.Fatalf("conflict %v, want one naming bob's ticket t1", err)
	}
	if _, err := st.GetTicket(c, "t2"); apperr.CodeOf(err) != apperr.NotFound {
		t.Fatalf("the refused ticket was stored: %v", err)
	}
	// carol was not taken by the refused ticket; in another queue bob is free.
	create(t, st, Ticket("q", "t3", 3, "carol"))
	putQueue(t, st, Queue("q2"))
	create(t, st, Ticket("q2", "t4", 3, "bob"))
	// Once t1 ends, alice and bob may search again.
	must[queue.Ticket](t)(st.CancelTicket(c, "t1", at(4)))
	create(t, st, Ticket("q", "t5", 5, "alice", "bob"))
}

func testCancelTicket(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "t1", 1, "alice"))
	got := must[queue.Ticket](t)(st.CancelTicket(c, "t1", at(2)))
	if got.Status != queue.Cancelled || got.Reason != "cancelled" || !got.UpdatedAt.Equal(at(2)) {
		t.Fatalf("cancelled: %+v", got)
	}
	again := must[queue.Ticket](t)(st.CancelTicket(c, "t1", at(3)))
	if again.Status != queue.Cancelled || !again.UpdatedAt.Equal(at(2)) {
		t.Fatalf("cancelled twice: %+v, want the first cancel", again)
	}
	evs := must[[]queue.Event](t)(st.Events(c, "q", 0, 10))
	if len(evs) != 1 || evs[0].Type != queue.EventCancelled || evs[0].TicketID != "t1" {
		t.Fatalf("events: %+v", evs)
	}
	_, err := st.CancelTicket(c, "t404", at(3))
	wantCode(t, err, apperr.NotFound)

	a, b := create(t, st, Ticket("q", "ta", 4, "a1", "a2")), create(t, st, Ticket("q", "tb", 4, "b1", "b2"))
	must[queue.TickCommitted](t)(st.CommitTick(c, "q", queue.TickWrite{At: at(5), Matches: []queue.Match{Match2v2("m1", a, b)}}))
	_, err = st.CancelTicket(c, "ta", at(6))
	wantCode(t, err, apperr.Conflict)
}

func testChanges(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	putQueue(t, st, Queue("other"))
	create(t, st, Ticket("q", "t1", 1, "alice"))
	create(t, st, Ticket("q", "t2", 2, "bob"))
	must[queue.Ticket](t)(st.CancelTicket(c, "t2", at(3)))
	create(t, st, Ticket("other", "x1", 3, "zed"))

	all, cur, err := st.Changes(c, "q", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ids := ticketIDs(searchingOnly(all)); !slices.Equal(ids, []string{"t1"}) {
		t.Fatalf("from the zero cursor: %v, want the searching t1", ids)
	}
	none, cur2, err := st.Changes(c, "q", cur)
	if err != nil || len(searchingOnly(none)) != 0 && !slices.Equal(ticketIDs(searchingOnly(none)), []string{"t1"}) {
		t.Fatalf("nothing changed: %+v, %v", none, err)
	}
	create(t, st, Ticket("q", "t3", 4, "carol"))
	must[queue.Ticket](t)(st.CancelTicket(c, "t1", at(5)))
	changed, _, err := st.Changes(c, "q", cur2)
	if err != nil {
		t.Fatal(err)
	}
	latest := map[string]queue.Status{}
	for _, tk := range changed {
		latest[tk.ID] = tk.Status
	}
	if latest["t3"] != queue.Searching || latest["t1"] != queue.Cancelled || latest["x1"] != "" {
		t.Fatalf("changes since the cursor: %v, want t3 searching and t1 cancelled, nothing of another queue", latest)
	}
}

func searchingOnly(ts []queue.Ticket) []queue.Ticket {
	var out []queue.Ticket
	for _, t := range ts {
		if t.Status == queue.Searching {
			out = append(out, t)
		}
	}
	return out
}

func ticketIDs(ts []queue.Ticket) []string {
	ids := make([]string, len(ts))
	for i, t := range ts {
		ids[i] = t.ID
	}
	slices.Sort(ids)
	return slices.Compact(ids)
}

func testCommitTick(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	a := create(t, st, Ticket("q", "ta", 1, "a1", "a2"))
	b := create(t, st, Ticket("q", "tb", 2, "b1", "b2"))
	x := create(t, st, Ticket("q", "tx", 3, "x1", "x2"))
	y := create(t, st, Ticket("q", "ty", 4, "y1", "y2"))
	must[queue.Ticket](t)(st.CancelTicket(c, "ty", at(5))) // cancelled after the tick read it
	done := must[queue.TickCommitted](t)(st.CommitTick(c, "q", queue.TickWrite{At: at(10),
		Matches: []queue.Match{Match2v2("m1", a, b), Match2v2("m2", x, y)}}))
	if !slices.Equal(done.Matches, []string{"m1"}) || !slices.Equal(done.Dropped, []string{"m2"}) || len(done.Expired) != 0 {
		t.Fatalf("committed %+v, want m1 stored and m2 dropped", done)
	}
	tb := must[queue.Ticket](t)(st.GetTicket(c, "tb"))
	if tb.Status != queue.Matched || tb.Assignment == nil || tb.Assignment.MatchID != "m1" || tb.Assignment.Team != 1 ||
		tb.Assignment.Region != "eu" || len(tb.Assignment.Teams) != 2 || !slices.Equal(tb.Assignment.Teams[0], []string{"a1", "a2"}) ||
		!tb.UpdatedAt.Equal(at(10)) {
		t.Fatalf("matched ticket: %+v %+v", tb, tb.Assignment)
	}
	if tx := must[queue.Ticket](t)(st.GetTicket(c, "tx")); tx.Status != queue.Searching {
		t.Fatalf("a dropped match's other ticket: %s, want it still searching", tx.Status)
	}
	m := must[queue.Match](t)(st.GetMatch(c, "m1"))
	if m.Queue != "q" || len(m.Teams) != 2 || m.Teams[1].Players[0] != (queue.MatchPlayer{ID: "b1", TicketID: "tb", Rating: 1000}) ||
		m.Teams[0].RatingTotal != 2010 || len(m.Pairs) != 2 || m.Region != "eu" || !m.CreatedAt.Equal(at(10)) {
		t.Fatalf("match: %+v", m)
	}
	_, err := st.GetMatch(c, "m2")
	wantCode(t, err, apperr.NotFound)
	// The same match (or one of the same tickets) again changes nothing.
	again := must[queue.TickCommitted](t)(st.CommitTick(c, "q", queue.TickWrite{At: at(11), Matches: []queue.Match{Match2v2("m3", a, x)}}))
	if len(again.Matches) != 0 || !slices.Equal(again.Dropped, []string{"m3"}) {
		t.Fatalf("a match of an already matched ticket: %+v", again)
	}
	evs := must[[]queue.Event](t)(st.Events(c, "q", 0, 10))
	var matched []string
	for _, e := range evs {
		if e.Type == queue.EventMatched {
			matched = append(matched, fmt.Sprintf("%s:%s:%d", e.TicketID, e.MatchID, e.Team))
		}
	}
	slices.Sort(matched)
	if !slices.Equal(matched, []string{"ta:m1:0", "tb:m1:1"}) {
		t.Fatalf("matched events: %v", matched)
	}
	// Matched players may search again.
	create(t, st, Ticket("q", "tc", 12, "a1"))
}

// FeedEvents returns what Events returns and, with them, each of their tickets once, as it
// is now: a long-poll woken by an event answers with it, without a read of its own.
func testFeedEvents(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	a := create(t, st, Ticket("q", "ta", 1, "a1", "a2"))
	b := create(t, st, Ticket("q", "tb", 2, "b1", "b2"))
	create(t, st, Ticket("q", "tc", 3, "c1"))
	must[queue.Ticket](t)(st.CancelTicket(c, "tc", at(4)))
	must[queue.TickCommitted](t)(st.CommitTick(c, "q", queue.TickWrite{At: at(10), Matches: []queue.Match{Match2v2("m1", a, b)}}))
	head := must[int64](t)(st.EventHead(c, "q"))
	evs, tickets, err := st.FeedEvents(c, "q", head-3, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := must[[]queue.Event](t)(st.Events(c, "q", head-3, 10))
	if len(evs) != 3 || !reflect.DeepEqual(evs, want) {
		t.Fatalf("FeedEvents' events %+v, want Events' %+v", evs, want)
	}
	byID := map[string]queue.Ticket{}
	for _, tk := range tickets {
		byID[tk.ID] = tk
	}
	if len(tickets) != 3 || len(byID) != 3 {
		t.Fatalf("%d tickets for the events of tc, ta, tb, want each once: %+v", len(tickets), tickets)
	}
	for _, id := range []string{"ta", "tb", "tc"} {
		now := must[queue.Ticket](t)(st.GetTicket(c, id))
		if got := byID[id]; got.Status != now.Status || !got.UpdatedAt.Equal(now.UpdatedAt) ||
			!reflect.DeepEqual(got.Assignment, now.Assignment) || !reflect.DeepEqual(got.Players, now.Players) {
			t.Fatalf("FeedEvents' %s: %+v, want it as GetTicket reads it: %+v", id, got, now)
		}
	}
	if evs, tickets, err := st.FeedEvents(c, "q", head, 10); err != nil || len(evs) != 0 || len(tickets) != 0 {
		t.Fatalf("after the head: %d events, %d tickets, %v; want none", len(evs), len(tickets), err)
	}
	_, _, err = st.FeedEvents(c, "nope", 0, 10)
	wantCode(t, err, apperr.NotFound)
}

func testCommitTickExpires(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "t1", 1, "alice"))
	create(t, st, Ticket("q", "t2", 1, "bob"))
	must[queue.Ticket](t)(st.CancelTicket(c, "t2", at(2)))
	done := must[queue.TickCommitted](t)(st.CommitTick(c, "q", queue.TickWrite{At: at(400),
		Expired: []queue.Expiry{{TicketID: "t1", Reason: "ttl"}, {TicketID: "t2", Reason: "ttl"}}}))
	if !slices.Equal(done.Expired, []string{"t1"}) {
		t.Fatalf("expired %v, want only the searching t1", done.Expired)
	}
	t1 := must[queue.Ticket](t)(st.GetTicket(c, "t1"))
	if t1.Status != queue.Expired || t1.Reason != "ttl" {
		t.Fatalf("t1: %+v", t1)
	}
	if t2 := must[queue.Ticket](t)(st.GetTicket(c, "t2")); t2.Status != queue.Cancelled {
		t.Fatalf("a cancelled ticket expired: %+v", t2)
	}
	evs := must[[]queue.Event](t)(st.Events(c, "q", 1, 10))
	if len(evs) != 1 || evs[0].Type != queue.EventExpired || evs[0].Reason != "ttl" || evs[0].Seq != 2 || !evs[0].At.Equal(at(400)) {
		t.Fatalf("events after 1: %+v", evs)
	}
	create(t, st, Ticket("q", "t3", 401, "alice"))
}

func testEvents(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	for i := range 5 {
		id := fmt.Sprintf("t%d", i)
		create(t, st, Ticket("q", id, i, "p"+id))
		must[queue.Ticket](t)(st.CancelTicket(c, id, at(10+i)))
	}
	page := must[[]queue.Event](t)(st.Events(c, "q", 1, 2))
	if len(page) != 2 || page[0].Seq != 2 || page[1].Seq != 3 || page[0].TicketID != "t1" || page[0].Queue != "q" {
		t.Fatalf("events after 1, 2 of them: %+v", page)
	}
	if rest := must[[]queue.Event](t)(st.Events(c, "q", 5, 10)); len(rest) != 0 {
		t.Fatalf("events after the last: %+v", rest)
	}
	if head := must[int64](t)(st.EventHead(c, "q")); head != 5 {
		t.Fatalf("event head %d, want 5", head)
	}
	if err := st.WaitEvents(c, "q", 4); err != nil {
		t.Fatalf("an event after 4 exists: WaitEvents = %v", err)
	}
	short, cancel := context.WithTimeout(c, 50*time.Millisecond)
	defer cancel()
	if err := st.WaitEvents(short, "q", 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("nothing after 5: WaitEvents = %v, want the deadline", err)
	}
	woke := make(chan error, 1)
	go func() { woke <- st.WaitEvents(c, "q", 5) }()
	if w, ok := st.(interface{ Waiters(queue string) int }); ok { // the event comes to a waiter
		for deadline := time.Now().Add(5 * time.Second); w.Waiters("q") == 0 && time.Now().Before(deadline); {
			runtime.Gosched()
		}
	}
	create(t, st, Ticket("q", "t9", 20, "late"))
	must[queue.Ticket](t)(st.CancelTicket(c, "t9", at(21)))
	select {
	case err := <-woke:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitEvents did not wake up for a new event")
	}
}

func testWebhookCursor(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	if n := must[int64](t)(st.WebhookCursor(c, "q")); n != 0 {
		t.Fatalf("a new queue's cursor: %d", n)
	}
	if err := st.SetWebhookCursor(c, "q", 7); err != nil {
		t.Fatal(err)
	}
	if err := st.SetWebhookCursor(c, "q", 3); err != nil { // late acknowledgements never go back
		t.Fatal(err)
	}
	if n := must[int64](t)(st.WebhookCursor(c, "q")); n != 7 {
		t.Fatalf("cursor %d, want 7", n)
	}
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
	must[queue.Ticket](t)(st.CancelTicket(c, "old", at(2)))
	create(t, st, Ticket("q", "live", 3, "bob"))
	create(t, st, Ticket("q", "recent", 3, "carol"))
	must[queue.Ticket](t)(st.CancelTicket(c, "recent", at(100)))
	r := must[queue.PurgeReport](t)(st.Purge(c, at(50)))
	if r.Tickets != 1 || r.Events != 1 {
		t.Fatalf("purge: %+v, want the old ticket and its event", r)
	}
	_, err := st.GetTicket(c, "old")
	wantCode(t, err, apperr.NotFound)
	for _, id := range []string{"live", "recent"} {
		must[queue.Ticket](t)(st.GetTicket(c, id))
	}
	evs := must[[]queue.Event](t)(st.Events(c, "q", 0, 10))
	if len(evs) != 1 || evs[0].TicketID != "recent" || evs[0].Seq != 2 {
		t.Fatalf("events after the purge: %+v (seqs keep counting)", evs)
	}
}

// Many clients create tickets at once: every distinct player gets in, and of the tickets that
// name the same player exactly one does.
func testConcurrentCreates(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	const n = 200
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			// Tickets 2k and 2k+1 both name the player "shared-k".
			_, _, errs[i] = st.CreateTicket(c, Ticket("q", fmt.Sprintf("t%03d", i), 1, fmt.Sprintf("own-%03d", i), fmt.Sprintf("shared-%03d", i/2)))
		})
	}
	wg.Wait()
	for k := 0; k < n; k += 2 {
		a, b := errs[k], errs[k+1]
		if (a == nil) == (b == nil) {
			t.Fatalf("tickets %d and %d share a player: errors %v and %v, want exactly one created", k, k+1, a, b)
		}
		if err := cmpOr(a, b); apperr.CodeOf(err) != apperr.Conflict {
			t.Fatalf("the refused one: %v, want a Conflict", err)
		}
	}
	all, _, err := st.Changes(c, "q", 0)
	if err != nil || len(all) != n/2 {
		t.Fatalf("%d searching tickets, want %d: %v", len(all), n/2, err)
	}
}

func cmpOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// A cancel racing a tick: each ticket ends exactly once, either matched (and the cancel is a
// Conflict) or cancelled (and its match is dropped).
func testCancelRacingATick(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	const n = 40
	var tickets []queue.Ticket
	for i := range n {
		tickets = append(tickets, create(t, st, Ticket("q", fmt.Sprintf("t%02d", i), i, fmt.Sprintf("p%02d", i))))
	}
	var matches []queue.Match
	for i := 0; i < n; i += 2 {
		matches = append(matches, Match2v2(fmt.Sprintf("m%02d", i), tickets[i], tickets[i+1]))
	}
	var wg sync.WaitGroup
	cancelErr := make([]error, n)
	var done queue.TickCommitted
	var tickErr error
	wg.Go(func() { done, tickErr = st.CommitTick(c, "q", queue.TickWrite{At: at(100), Matches: matches}) })
	for i := 0; i < n; i += 3 {
		wg.Go(func() { _, cancelErr[i] = st.CancelTicket(c, tickets[i].ID, at(100)) })
	}
	wg.Wait()
	if tickErr != nil {
		t.Fatal(tickErr)
	}
	stored := map[string]bool{}
	for _, id := range done.Matches {
		stored[id] = true
	}
	for i := 0; i < n; i += 2 {
		m := fmt.Sprintf("m%02d", i)
		for _, k := range []int{i, i + 1} {
			tk := must[queue.Ticket](t)(st.GetTicket(c, tickets[k].ID))
			switch {
			case stored[m] && tk.Status != queue.Matched:
				t.Fatalf("%s is in stored match %s but %s", tk.ID, m, tk.Status)
			case !stored[m] && tk.Status == queue.Matched:
				t.Fatalf("%s is matched but its match %s was dropped", tk.ID, m)
			case k%3 == 0 && tk.Status == queue.Matched && apperr.CodeOf(cancelErr[k]) != apperr.Conflict:
				t.Fatalf("%s was matched, yet its cancel answered %v", tk.ID, cancelErr[k])
			case k%3 == 0 && tk.Status == queue.Cancelled && cancelErr[k] != nil:
				t.Fatalf("%s was cancelled, yet its cancel answered %v", tk.ID, cancelErr[k])
			}
		}
	}
	evs := must[[]queue.Event](t)(st.Events(c, "q", 0, 1000))
	perTicket := map[string]int{}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: seqs must count up without gaps", i, e.Seq)
		}
		perTicket[e.TicketID]++
	}
	for id, n := range perTicket {
		if n != 1 {
			t.Fatalf("ticket %s has %d events, want exactly one", id, n)
		}
	}
}

// BackfillTicket is a backfill ticket for running match matchID of a 2v2: players r1 and
// b1, b2 still in it, one slot open on team 0, bots and a bot rule.
func BackfillTicket(queueName, id, matchID string, s int) queue.Ticket {
	t := Ticket(queueName, id, s, "r1", "b1", "b2")
	t.Backfill = &queue.Backfill{MatchID: matchID, OpenSlots: []int{1, 0}, Region: "eu",
		Teams: []queue.BackfillTeam{{Players: []string{"r1"}, Bots: []float64{900.5}}, {Players: []string{"b1", "b2"}}},
		Bots:  &queue.BotRule{MeanRating: 950, TargetPlayers: 4, RecommendedMin: 2, RecommendedMax: 6}}
	return t
}

// A backfill ticket is stored and read back whole (by GetTicket and Changes), holds its
// match's players like any ticket's, and a fill (a match with BackfillOf) ends it and its
// joiners: their assignments carry the running match's id and who joined which team, the
// fill is readable by its own id, and the players are free again.
func testBackfill(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	bf := create(t, st, BackfillTicket("q", "tbf", "running-1", 1))
	got := must[queue.Ticket](t)(st.GetTicket(c, "tbf"))
	want := BackfillTicket("q", "tbf", "running-1", 1)
	if b := got.Backfill; b == nil || b.MatchID != "running-1" || !slices.Equal(b.OpenSlots, want.Backfill.OpenSlots) ||
		b.Region != "eu" || len(b.Teams) != 2 || !slices.Equal(b.Teams[0].Players, []string{"r1"}) ||
		!slices.Equal(b.Teams[0].Bots, []float64{900.5}) || !slices.Equal(b.Teams[1].Players, []string{"b1", "b2"}) ||
		len(b.Teams[1].Bots) != 0 || b.Bots == nil || *b.Bots != *want.Backfill.Bots {
		t.Fatalf("stored backfill %+v", got.Backfill)
	}
	if bf.Backfill == nil || bf.Backfill.MatchID != "running-1" {
		t.Fatalf("created backfill %+v", bf.Backfill)
	}
	changes, _ := must2(t)(st.Changes(c, "q", 0))
	if len(changes) != 1 || changes[0].Backfill == nil || changes[0].Backfill.MatchID != "running-1" {
		t.Fatalf("changes %+v", changes)
	}
	// The match's players are held.
	_, _, err := st.CreateTicket(c, Ticket("q", "tr", 2, "r1"))
	var se *queue.SearchingError
	if !errors.As(err, &se) || se.TicketID != "tbf" {
		t.Fatalf("a match's player searching: %v", err)
	}
	create(t, st, Ticket("q", "tj", 3, "j1"))
	fill := queue.Match{ID: "fill-1", CreatedAt: at(10), Region: "eu", BackfillOf: "running-1", BackfillTicket: "tbf",
		Teams: []queue.MatchTeam{
			{Players: []queue.MatchPlayer{{ID: "r1", TicketID: "tbf", Rating: 1000}, {ID: "j1", TicketID: "tj", Rating: 1000}}, RatingTotal: 2000},
			{Players: []queue.MatchPlayer{{ID: "b1", TicketID: "tbf", Rating: 1010}, {ID: "b2", TicketID: "tbf", Rating: 1020}}, RatingTotal: 2030},
		}, SkillDifference: 30, AverageDifference: 15}
	done := must[queue.TickCommitted](t)(st.CommitTick(c, "q", queue.TickWrite{At: at(10), Matches: []queue.Match{fill}}))
	if !slices.Equal(done.Matches, []string{"fill-1"}) {
		t.Fatalf("committed %+v", done)
	}
	for id, team := range map[string]int{"tbf": 0, "tj": 0} {
		tk := must[queue.Ticket](t)(st.GetTicket(c, id))
		a := tk.Assignment
		if tk.Status != queue.Matched || a == nil || a.MatchID != "running-1" || a.FillID != "fill-1" || a.Team != team || len(a.Joined) != 2 ||
			!slices.Equal(a.Joined[0], []string{"j1"}) || len(a.Joined[1]) != 0 || !slices.Equal(a.Teams[0], []string{"r1", "j1"}) {
			t.Fatalf("ticket %s: %+v %+v", id, tk, a)
		}
	}
	if tk := must[queue.Ticket](t)(st.GetTicket(c, "tj")); tk.Backfill != nil {
		t.Fatalf("a joiner's ticket has a backfill: %+v", tk.Backfill)
	}
	m := must[queue.Match](t)(st.GetMatch(c, "fill-1"))
	if m.BackfillOf != "running-1" || m.BackfillTicket != "tbf" || len(m.Pairs) != 0 || m.Teams[0].Players[1].TicketID != "tj" {
		t.Fatalf("fill %+v", m)
	}
	evs := must[[]queue.Event](t)(st.Events(c, "q", 0, 10))
	if len(evs) != 2 || evs[0].MatchID != "running-1" || evs[1].MatchID != "running-1" {
		t.Fatalf("events %+v", evs)
	}
	create(t, st, Ticket("q", "tr2", 12, "r1")) // free again
	must[queue.Ticket](t)(st.CancelTicket(c, "tr2", at(12)))
	// A backfill ticket is cancelled like any.
	create(t, st, BackfillTicket("q", "tbf2", "running-2", 13))
	if tk := must[queue.Ticket](t)(st.CancelTicket(c, "tbf2", at(14))); tk.Status != queue.Cancelled || tk.Backfill == nil {
		t.Fatalf("cancelled backfill %+v", tk)
	}
}

func must2(t *testing.T) func(a []queue.Ticket, b queue.Cursor, err error) ([]queue.Ticket, queue.Cursor) {
	return func(a []queue.Ticket, b queue.Cursor, err error) ([]queue.Ticket, queue.Cursor) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}

// The leader's stats snapshot is kept per queue, the last one wins, and a queue that does not
// exist (or was deleted) has none.
func testStats(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	if _, ok, err := st.LatestStats(c, "q"); ok || err != nil {
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
	if err := st.PublishStats(c, "q", snap); err != nil {
		t.Fatal(err)
	}
	got, ok, err := st.LatestStats(c, "q")
	if err != nil || !ok || got.SearchingTickets != 5 || got.OldestWait != 7*time.Second || !got.At.Equal(at(5)) ||
		got.Bands[3].SearchingPlayers != 4 || got.Bands[3].Name != queue.Bands[3].Name || got.Wait.Quantiles[20] != 12.5 {
		t.Fatalf("read back %+v ok %v, %v", got, ok, err)
	}
	wantCode(t, st.PublishStats(c, "nope", snap), apperr.NotFound)
	if _, ok, err := st.LatestStats(c, "nope"); ok || err != nil {
		t.Fatalf("no such queue: ok %v, %v", ok, err)
	}
	if err := st.DeleteQueue(c, "q", at(6)); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := st.LatestStats(c, "q"); ok {
		t.Fatal("a deleted queue's stats")
	}
}

// A ticket expiring while its match forms: a tick that matches tickets (an old leader's, still
// writing) races one that expires some of them (the new leader's, at a later now). Each
// ticket ends exactly once: a match is stored whole with its tickets matched and the expiry
// of its ticket has no effect, or the ticket expired and its match is dropped whole, the
// match's other ticket still searching.
func testExpiryRacingAMatch(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	const n = 40
	var tickets []queue.Ticket
	for i := range n {
		tickets = append(tickets, create(t, st, Ticket("q", fmt.Sprintf("t%02d", i), i, fmt.Sprintf("p%02d", i))))
	}
	var matches []queue.Match
	var expiries []queue.Expiry
	for i := 0; i < n; i += 2 {
		matches = append(matches, Match2v2(fmt.Sprintf("m%02d", i), tickets[i], tickets[i+1]))
		expiries = append(expiries, queue.Expiry{TicketID: tickets[i].ID, Reason: "ttl"})
	}
	var wg sync.WaitGroup
	var matched, expired queue.TickCommitted
	var matchErr, expireErr error
	wg.Go(func() { matched, matchErr = st.CommitTick(c, "q", queue.TickWrite{At: at(100), Matches: matches}) })
	wg.Go(func() { expired, expireErr = st.CommitTick(c, "q", queue.TickWrite{At: at(101), Expired: expiries}) })
	wg.Wait()
	if err := cmpOr(matchErr, expireErr); err != nil {
		t.Fatal(err)
	}
	stored, gone := map[string]bool{}, map[string]bool{}
	for _, id := range matched.Matches {
		stored[id] = true
	}
	for _, id := range expired.Expired {
		gone[id] = true
	}
	if len(matched.Matches)+len(matched.Dropped) != n/2 || len(matched.Matches)+len(expired.Expired) != n/2 {
		t.Fatalf("%d matches stored, %d dropped, %d tickets expired: each of the %d pairs ends one way",
			len(matched.Matches), len(matched.Dropped), len(expired.Expired), n/2)
	}
	for i := 0; i < n; i += 2 {
		m := fmt.Sprintf("m%02d", i)
		a := must[queue.Ticket](t)(st.GetTicket(c, tickets[i].ID))
		b := must[queue.Ticket](t)(st.GetTicket(c, tickets[i+1].ID))
		switch {
		case stored[m] && gone[a.ID]:
			t.Fatalf("%s was both matched in %s and expired", a.ID, m)
		case stored[m] && (a.Status != queue.Matched || b.Status != queue.Matched):
			t.Fatalf("match %s stored, its tickets %s and %s", m, a.Status, b.Status)
		case !stored[m] && (a.Status != queue.Expired || a.Reason != "ttl" || b.Status != queue.Searching):
			t.Fatalf("match %s dropped, its tickets %s (%s) and %s: want expired and searching", m, a.Status, a.Reason, b.Status)
		}
	}
	evs := must[[]queue.Event](t)(st.Events(c, "q", 0, 1000))
	perTicket := map[string]int{}
	for i, e := range evs {
		if e.Seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: seqs must count up without gaps", i, e.Seq)
		}
		perTicket[e.TicketID]++
	}
	for id, k := range perTicket {
		if k != 1 {
			t.Fatalf("ticket %s has %d events, want exactly one", id, k)
		}
	}
	if len(evs) != 2*len(matched.Matches)+len(expired.Expired) {
		t.Fatalf("%d events for %d matches and %d expiries", len(evs), len(matched.Matches), len(expired.Expired))
	}
}
