package queuetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The contract of a tick's commit: matches made only of searching tickets, expiries, and
// both racing a cancel or each other.

func testCommitTick(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	a := create(t, st, Ticket("q", "ta", 1, "a1", "a2"))
	b := create(t, st, Ticket("q", "tb", 2, "b1", "b2"))
	x := create(t, st, Ticket("q", "tx", 3, "x1", "x2"))
	y := create(t, st, Ticket("q", "ty", 4, "y1", "y2"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "ty", at(5))) // cancelled after the tick read it
	done := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "q", queue.TickWrite{At: at(10),
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
	again := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "q", queue.TickWrite{At: at(11), Matches: []queue.Match{Match2v2("m3", a, x)}}))
	if len(again.Matches) != 0 || !slices.Equal(again.Dropped, []string{"m3"}) {
		t.Fatalf("a match of an already matched ticket: %+v", again)
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events
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

func testCommitTickExpires(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "t1", 1, "alice"))
	create(t, st, Ticket("q", "t2", 1, "bob"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "t2", at(2)))
	done := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "q", queue.TickWrite{At: at(400),
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
	evs := must[queue.EventPage](t)(st.Events(c, "q", 1, 10, false)).Events
	if len(evs) != 1 || evs[0].Type != queue.EventExpired || evs[0].Reason != "ttl" || evs[0].Seq != 2 || !evs[0].At.Equal(at(400)) {
		t.Fatalf("events after 1: %+v", evs)
	}
	create(t, st, Ticket("q", "t3", 401, "alice"))
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
	wg.Go(func() { done, tickErr = queue.CommitTick(c, st, "q", queue.TickWrite{At: at(100), Matches: matches}) })
	for i := 0; i < n; i += 3 {
		wg.Go(func() { _, cancelErr[i] = queue.CancelTicket(c, st, tickets[i].ID, at(100)) })
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
	oneEventEach(t, must[queue.EventPage](t)(st.Events(c, "q", 0, 1000, false)).Events)
}

// oneEventEach fails t unless evs are numbered from 1 without a gap and no ticket has two.
func oneEventEach(t *testing.T, evs []queue.Event) {
	t.Helper()
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
	wg.Go(func() {
		matched, matchErr = queue.CommitTick(c, st, "q", queue.TickWrite{At: at(100), Matches: matches})
	})
	wg.Go(func() {
		expired, expireErr = queue.CommitTick(c, st, "q", queue.TickWrite{At: at(101), Expired: expiries})
	})
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
	evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 1000, false)).Events
	oneEventEach(t, evs)
	if len(evs) != 2*len(matched.Matches)+len(expired.Expired) {
		t.Fatalf("%d events for %d matches and %d expiries", len(evs), len(matched.Matches), len(expired.Expired))
	}
}
