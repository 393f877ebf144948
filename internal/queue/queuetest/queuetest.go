// Package queuetest is the contract suite every queue.Store passes: the memory store in
// package memstore and the Postgres store in package db/queuedb run the same tests, so the
// service can rely on one behaviour whichever store it is given.
package queuetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
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
		{"PartitionChangesAreTheirPartitions", testPartitionChanges},
		{"CommitTickMatchesOnlySearchingTickets", testCommitTick},
		{"CommitTickExpires", testCommitTickExpires},
		{"EventsInOrderAndWait", testEvents},
		{"FeedEventsCarryTheirTickets", testFeedEvents},
		{"WebhookCursor", testWebhookCursor},
		{"Lead", testLead},
		{"Purge", testPurge},
		{"PurgeOfADeletedQueue", testPurgeDeletedQueue},
		{"ConcurrentCreates", testConcurrentCreates},
		{"CancelRacingATick", testCancelRacingATick},
		{"BackfillTicketsAndFills", testBackfill},
		{"StatsPublishedAndRead", testStats},
		{"ExpiryRacingAMatch", testExpiryRacingAMatch},
		{"RulesAndAttributesRoundTrip", testRulesAndAttributes},
		{"AvoidListsRoundTrip", testAvoidLists},
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
		{"DodgesOfADecline", testDodgesOfADecline},
		{"DodgesOfATimeout", testDodgesOfATimeout},
		{"LowPriorityGames", testLowPriorityGames},
		{"MatchedCancelsElsewhere", testMatchedCancelsElsewhere},
		{"ClaimEndsWithItsTime", testClaimEndsWithItsTime},
		{"ProposalClaims", testProposalClaims},
		{"NotExclusive", testNotExclusive},
		{"ResultEndsClaims", testResultEndsClaims},
		{"CreatedWhileClaimed", testCreatedWhileClaimed},
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

func cmpOr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
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

func must2(t *testing.T) func(a []queue.Ticket, b queue.Cursor, err error) ([]queue.Ticket, queue.Cursor) {
	return func(a []queue.Ticket, b queue.Cursor, err error) ([]queue.Ticket, queue.Cursor) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return a, b
	}
}

// WithRules gives a queue a mode (equal, default "casual") and maps (intersect, at most 3).
func WithRules(q *queue.Queue) {
	casual := matchrules.StringValue("casual")
	q.Attributes = map[string]matchrules.Attribute{
		"mode": {Type: matchrules.TypeString, Default: &casual},
		"maps": {Type: matchrules.TypeStringList, MaxItems: 3},
	}
	q.Rules = []matchrules.Rule{
		{Name: "mode", Kind: matchrules.RuleEqual, Attribute: "mode"},
		{Name: "maps", Kind: matchrules.RuleIntersect, Attribute: "maps"},
	}
}
