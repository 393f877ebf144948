package queue

import (
	"context"
	"encoding/json"
	"time"
)

// ChangeStore is the part of Store every change of a queue's tickets, proposals and matches
// goes through but a ticket's creation (TicketStore.CreateTicket) and a match's claims' end
// (TicketStore.EndClaims).
type ChangeStore interface {
	// Apply has the lifecycle decide cause at at (lifecycle.go: Decide) over what the store
	// locks and reads for it, writes the Change decided in the same transaction, and answers
	// with it. cause is one of lifecycle.go's but TicketsCreated. The functions below are
	// how the callers apply each, and say what each does and answers.
	Apply(ctx context.Context, at time.Time, cause Cause) (Applied, error)
}

// Applied is what a Store.Apply wrote (the Change, empty when it wrote nothing), with what
// the store read beside it for the cause's answer.
type Applied struct {
	Change
	// Ticket is a CancelRequest's ticket as the change left it.
	Ticket Ticket
	// Match is a MatchPlacement's match as placed.
	Match Match
	// Open counts a DeadlinesPassed's queue's proposals still unresolved, not yet due.
	Open int
}

// Op is the name of the store call that applies each cause: its metrics' and spans' op.
func (TickMatches) Op() string    { return "commit_tick" }
func (TickProposals) Op() string  { return "propose" }
func (CancelRequest) Op() string  { return "cancel_ticket" }
func (QueueDeleted) Op() string   { return "delete_queue" }
func (MatchPlacement) Op() string { return "place_match" }
func (TicketsCreated) Op() string { return "create_ticket" }

func (ReadyCheckAnswer) Op() string { return "answer_proposal" }
func (DeadlinesPassed) Op() string  { return "expire_proposals" }

func (c PlacementAnswer) Op() string {
	if c.Failure != "" {
		return "fail_placement"
	}
	return "complete_placement"
}

// CommitTick writes one tick's outcome in one transaction. Each match whose tickets are all
// still searching is stored and its tickets become matched, with their assignments and a
// matched event each; a match with any ticket no longer searching (cancelled, expired or
// matched meanwhile) is dropped whole, and its other tickets stay searching for the next
// tick. Each expiry of a still-searching ticket makes it expired with its reason and an
// event. It returns what took effect. Only the queue's leader calls it: a deposed leader's
// write is refused.
func CommitTick(ctx context.Context, s ChangeStore, queue string, w TickWrite) (TickCommitted, error) {
	a, err := s.Apply(ctx, w.At, TickMatches{Queue: queue, Write: w})
	return a.Committed(), err
}

// Propose stores each match of w whose tickets are all searching as an open proposal (or
// placing, w.Placing): the tickets become proposed (keeping their players from searching
// elsewhere) with a proposed event each; a match with any ticket no longer searching is
// dropped whole (TickCommitted.Dropped). Only the queue's leader calls it (fenced as
// CommitTick).
func Propose(ctx context.Context, s ChangeStore, queue string, w ProposeWrite) (TickCommitted, error) {
	a, err := s.Apply(ctx, w.At, TickProposals{Queue: queue, Write: w})
	return a.Committed(), err
}

// CancelTicket moves a searching ticket to cancelled (Reason "cancelled") with an event and
// returns it. A ticket already cancelled is returned as it is; a matched or expired one is a
// Conflict; an unknown one NotFound. A proposed ticket's cancel dissolves its proposal as a
// decline would, in its transaction.
func CancelTicket(ctx context.Context, s ChangeStore, id string, at time.Time) (Ticket, error) {
	a, err := s.Apply(ctx, at, CancelRequest{Ticket: id, Reason: ReasonCancelled})
	return a.Ticket, err
}

// DeleteQueue removes a queue; in the same transaction its live tickets become cancelled
// with Reason "queue deleted" and an event each. NotFound if there is none. The queue's
// finished tickets, matches and events stay readable until purged.
func DeleteQueue(ctx context.Context, s ChangeStore, name string, at time.Time) error {
	_, err := s.Apply(ctx, at, QueueDeleted{Queue: name})
	return err
}

// AnswerProposal records a player's answer and, if that resolves the proposal, resolves it
// in the same transaction (resolved true: the match stored and its tickets matched with
// their events, or placing for an allocator, or the tickets cancelled and requeued with
// theirs). An answer to a resolved proposal is a Conflict, a player not in it NotFound;
// answering again as before changes nothing. A proposal's tickets no longer proposed in it
// when it resolves (their queue was deleted) are left as they are.
func AnswerProposal(ctx context.Context, s ChangeStore, id, playerID string, accept bool, at time.Time) (p Proposal, resolved bool, err error) {
	a, err := s.Apply(ctx, at, ReadyCheckAnswer{Proposal: id, Player: playerID, Accept: accept})
	if err != nil {
		return Proposal{}, false, err
	}
	p = a.Proposals[0]
	return p, p.State != ProposalOpen, nil
}

// ExpireProposals resolves the queue's open proposals whose AcceptBy is not after at as
// timed out, and fails its placing ones past their AcceptBy (ReasonPlacementTimeout); it
// returns them (resolved) and how many stay unresolved. Only the leader calls it.
func ExpireProposals(ctx context.Context, s ChangeStore, queue string, at time.Time) (resolved []Proposal, open int, err error) {
	a, err := s.Apply(ctx, at, DeadlinesPassed{Queue: queue})
	if err != nil {
		return nil, 0, err
	}
	return a.Proposals, a.Open, nil
}

// PlaceMatch stores connection on match id and on the assignment of each of its tickets
// still matched in it, with a placed event each, in one transaction, and returns the match.
// An unknown match is NotFound; a backfill's fill (its players join a running match, which
// is placed already) is a Conflict.
func PlaceMatch(ctx context.Context, s ChangeStore, id string, connection json.RawMessage, at time.Time) (Match, error) {
	a, err := s.Apply(ctx, at, MatchPlacement{Match: id, Connection: connection})
	return a.Match, err
}

// CompletePlacement stores the match of placing proposal id with connection: the proposal is
// accepted and its tickets matched with the connection in their assignment, with a matched
// event each. A proposal not placing is a Conflict.
func CompletePlacement(ctx context.Context, s ChangeStore, id string, connection json.RawMessage, at time.Time) (Proposal, error) {
	return proposalAnswer(ctx, s, at, PlacementAnswer{Proposal: id, Connection: connection})
}

// FailPlacement ends placing proposal id without a match: its tickets go back to searching
// with a requeued event (reason). A proposal not placing is a Conflict.
func FailPlacement(ctx context.Context, s ChangeStore, id, reason string, at time.Time) (Proposal, error) {
	return proposalAnswer(ctx, s, at, PlacementAnswer{Proposal: id, Failure: reason})
}

// proposalAnswer applies an answer to one proposal, and returns the proposal as it left it.
func proposalAnswer(ctx context.Context, s ChangeStore, at time.Time, c PlacementAnswer) (Proposal, error) {
	a, err := s.Apply(ctx, at, c)
	if err != nil {
		return Proposal{}, err
	}
	return a.Proposals[0], nil
}
