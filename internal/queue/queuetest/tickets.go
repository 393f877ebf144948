package queuetest

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sync"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The contract of tickets: creation (idempotent, one live ticket a player), cancels, the
// changes the leader loads, backfills.

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
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "t1", at(4)))
	create(t, st, Ticket("q", "t5", 5, "alice", "bob"))
}

func testCancelTicket(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	create(t, st, Ticket("q", "t1", 1, "alice"))
	got := must[queue.Ticket](t)(queue.CancelTicket(c, st, "t1", at(2)))
	if got.Status != queue.Cancelled || got.Reason != "cancelled" || !got.UpdatedAt.Equal(at(2)) {
		t.Fatalf("cancelled: %+v", got)
	}
	again := must[queue.Ticket](t)(queue.CancelTicket(c, st, "t1", at(3)))
	if again.Status != queue.Cancelled || !again.UpdatedAt.Equal(at(2)) {
		t.Fatalf("cancelled twice: %+v, want the first cancel", again)
	}
	evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events
	if len(evs) != 1 || evs[0].Type != queue.EventCancelled || evs[0].TicketID != "t1" {
		t.Fatalf("events: %+v", evs)
	}
	_, err := queue.CancelTicket(c, st, "t404", at(3))
	wantCode(t, err, apperr.NotFound)

	a, b := create(t, st, Ticket("q", "ta", 4, "a1", "a2")), create(t, st, Ticket("q", "tb", 4, "b1", "b2"))
	must[queue.TickCommitted](t)(queue.CommitTick(c, st, "q", queue.TickWrite{At: at(5), Matches: []queue.Match{Match2v2("m1", a, b)}}))
	_, err = queue.CancelTicket(c, st, "ta", at(6))
	wantCode(t, err, apperr.Conflict)
}

func testPartitionChanges(t *testing.T, st queue.Store) {
	c := ctx(t)
	q := Queue("modes")
	q.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString, Default: &matchrules.Value{Str: "casual"}}}
	q.Rules = []matchrules.Rule{{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"}}
	q.PartitionBy = "mode"
	putQueue(t, st, q)
	withMode := func(tk queue.Ticket, mode string) queue.Ticket {
		tk.Attributes = map[string]matchrules.Value{"mode": matchrules.StringValue(mode)}
		return tk
	}
	create(t, st, withMode(Ticket("modes", "r1", 1, "alice"), "ranked"))
	create(t, st, Ticket("modes", "c1", 2, "bob")) // no mode: the default's partition
	create(t, st, withMode(Ticket("modes", "c2", 3, "carol"), "casual"))
	create(t, st, withMode(Ticket("modes", "r2", 4, "dan"), "ranked"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "r2", at(5)))

	read := func(part string, since queue.Cursor) ([]queue.Ticket, queue.Cursor) {
		t.Helper()
		ts, cur, err := st.Changes(c, q, part, since)
		if err != nil {
			t.Fatal(err)
		}
		return ts, cur
	}
	ranked, rcur := read("ranked", 0)
	casual, ccur := read("casual", 0)
	if ids := ticketIDs(searchingOnly(ranked)); !slices.Equal(ids, []string{"r1"}) {
		t.Fatalf("ranked from the zero cursor: %v, want the searching r1", ids)
	}
	if ids := ticketIDs(searchingOnly(casual)); !slices.Equal(ids, []string{"c1", "c2"}) {
		t.Fatalf("casual from the zero cursor: %v, want c1 (the default) and c2", ids)
	}
	if arena, _ := read("arena", 0); len(arena) != 0 {
		t.Fatalf("a partition without tickets: %v", ticketIDs(arena))
	}
	create(t, st, withMode(Ticket("modes", "r3", 6, "erin"), "ranked"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "c1", at(7)))
	latest := func(ts []queue.Ticket) map[string]queue.Status {
		out := map[string]queue.Status{}
		for _, tk := range ts {
			out[tk.ID] = tk.Status
		}
		return out
	}
	ranked, _ = read("ranked", rcur)
	if got := latest(ranked); got["r3"] != queue.Searching || got["c1"] != "" || got["c2"] != "" {
		t.Fatalf("ranked since its cursor: %v, want r3 searching and nothing of casual", got)
	}
	casual, _ = read("casual", ccur)
	if got := latest(casual); got["c1"] != queue.Cancelled || got["r3"] != "" {
		t.Fatalf("casual since its cursor: %v, want c1 cancelled and nothing of ranked", got)
	}
}

func testChanges(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	putQueue(t, st, Queue("other"))
	create(t, st, Ticket("q", "t1", 1, "alice"))
	create(t, st, Ticket("q", "t2", 2, "bob"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "t2", at(3)))
	create(t, st, Ticket("other", "x1", 3, "zed"))

	all, cur, err := st.Changes(c, queue.Queue{Name: "q"}, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if ids := ticketIDs(searchingOnly(all)); !slices.Equal(ids, []string{"t1"}) {
		t.Fatalf("from the zero cursor: %v, want the searching t1", ids)
	}
	none, cur2, err := st.Changes(c, queue.Queue{Name: "q"}, "", cur)
	if err != nil || len(searchingOnly(none)) != 0 && !slices.Equal(ticketIDs(searchingOnly(none)), []string{"t1"}) {
		t.Fatalf("nothing changed: %+v, %v", none, err)
	}
	create(t, st, Ticket("q", "t3", 4, "carol"))
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "t1", at(5)))
	changed, _, err := st.Changes(c, queue.Queue{Name: "q"}, "", cur2)
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
	all, _, err := st.Changes(c, queue.Queue{Name: "q"}, "", 0)
	if err != nil || len(all) != n/2 {
		t.Fatalf("%d searching tickets, want %d: %v", len(all), n/2, err)
	}
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
	changes, _ := must2(t)(st.Changes(c, queue.Queue{Name: "q"}, "", 0))
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
	done := must[queue.TickCommitted](t)(queue.CommitTick(c, st, "q", queue.TickWrite{At: at(10), Matches: []queue.Match{fill}}))
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
	evs := must[queue.EventPage](t)(st.Events(c, "q", 0, 10, false)).Events
	if len(evs) != 2 || evs[0].MatchID != "running-1" || evs[1].MatchID != "running-1" {
		t.Fatalf("events %+v", evs)
	}
	create(t, st, Ticket("q", "tr2", 12, "r1")) // free again
	must[queue.Ticket](t)(queue.CancelTicket(c, st, "tr2", at(12)))
	// A backfill ticket is cancelled like any.
	create(t, st, BackfillTicket("q", "tbf2", "running-2", 13))
	if tk := must[queue.Ticket](t)(queue.CancelTicket(c, st, "tbf2", at(14))); tk.Status != queue.Cancelled || tk.Backfill == nil {
		t.Fatalf("cancelled backfill %+v", tk)
	}
}
