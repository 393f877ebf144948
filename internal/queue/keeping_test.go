package queue_test

import (
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// What a store keeps (keeping.go), with no store: the contract suite holds both stores to
// the same through their Purge, EndClaims, standings and Partitions.

func TestEventsPurgeable(t *testing.T) {
	t.Parallel()
	events := []queue.Event{{Seq: 1, At: sec(1)}, {Seq: 2, At: sec(2)}, {Seq: 3, At: sec(9)}, {Seq: 4, At: sec(3)}}
	hooked := queue.DefaultQueue("q")
	hooked.Webhook = &queue.Webhook{URL: "https://example.com/hook", Secret: "0123456789abcdef"}
	plain := queue.DefaultQueue("q")
	for _, c := range []struct {
		name    string
		def     *queue.Queue
		deleted bool
		cursor  int64
		want    int
	}{
		// The prefix older than before: event 4 is older too, but after one that is not.
		{"no webhook", &plain, false, 0, 2},
		{"a webhook, nothing acknowledged: the outbox stays", &hooked, false, 0, 0},
		{"a webhook that acknowledged event 1", &hooked, false, 1, 1},
		{"a deleted queue's outbox goes", &hooked, true, 0, 2},
	} {
		if got := queue.EventsPurgeable(events, sec(5), c.def, c.deleted, c.cursor); got != c.want {
			t.Errorf("%s: %d events purgeable, want %d", c.name, got, c.want)
		}
	}
}

func TestKeepingOfTicketsMatchesAndClaims(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status queue.Status
		at     int
		want   bool
	}{
		{queue.Cancelled, 1, true},
		{queue.Matched, 1, true},
		{queue.Cancelled, 5, false}, // changed at before: kept
		{queue.Searching, 1, false}, // live: kept however old
		{queue.Proposed, 1, false},
		{queue.Placing, 1, false},
	} {
		tk := queue.Ticket{Status: c.status, UpdatedAt: sec(c.at)}
		if got := tk.Purgeable(sec(5)); got != c.want {
			t.Errorf("a %s ticket changed at %d s: purgeable %v, want %v", c.status, c.at, got, c.want)
		}
	}
	if m := (queue.Match{CreatedAt: sec(4)}); !m.Purgeable(sec(5)) || m.Purgeable(sec(4)) {
		t.Error("a match is purgeable once made before the purge's time, not at it")
	}
	cl := queue.Claim{Player: "ann", Match: "m1", Until: sec(60)}
	if cl.Purgeable(sec(60)) || !cl.Purgeable(sec(61)) {
		t.Error("a claim is purgeable once it ended before the purge's time")
	}
	if other := cl; other.End("m2", sec(10)) || !other.Until.Equal(sec(60)) {
		t.Errorf("another match's result ended the claim: %+v", other)
	}
	if ended := cl; !ended.End("m1", sec(10)) || !ended.Until.Equal(sec(10)) {
		t.Errorf("its match's result: %+v, want it ended at 10 s", ended)
	}
	if late := cl; late.End("m1", sec(70)) || !late.Until.Equal(sec(60)) {
		t.Errorf("a result after the claim ran out moved it: %+v", late)
	}
}

func TestPlayLowPriorityStopsAtZero(t *testing.T) {
	t.Parallel()
	st := queue.Standing{LowPriorityGames: 1}
	st.PlayLowPriority()
	st.PlayLowPriority()
	if st.LowPriorityGames != 0 {
		t.Fatalf("%d low-priority games left after two played of one, want 0", st.LowPriorityGames)
	}
}

func TestPartitionsOfLiveTicketsAndPublished(t *testing.T) {
	t.Parallel()
	def := "casual"
	q := queue.DefaultQueue("modes")
	q.Attributes = map[string]matchrules.Attribute{"mode": {Type: matchrules.TypeString, Default: &matchrules.Value{Str: def}}}
	q.PartitionBy = "mode"
	withMode := func(mode string) *queue.Ticket {
		return &queue.Ticket{Attributes: map[string]matchrules.Value{"mode": matchrules.StringValue(mode)}}
	}
	live := []*queue.Ticket{withMode("ranked"), {}, withMode("ranked")} // {}: the default
	if got, want := q.Partitions(live, []string{"arena", ""}), []string{"arena", "casual", "ranked"}; !slices.Equal(got, want) {
		t.Fatalf("partitions %v, want %v (sorted, once each, no \"\")", got, want)
	}
	q.PartitionBy = ""
	if got := q.Partitions(live, nil); len(got) != 0 {
		t.Fatalf("a queue without partition_by has partitions %v", got)
	}
}
