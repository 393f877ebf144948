package queue

import (
	"context"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
)

// The ready check (DESIGN, "Ready check (acceptance)"). A queue with Acceptance proposes the
// matches its ticks make instead of assigning them: their tickets become Proposed, holding
// their players (they are not in the tick's input, and their players cannot search again),
// and each player answers. When all accept, the match is stored and the tickets become
// matched, as a match of a queue without a ready check. A decline dissolves the proposal at
// once, and its deadline (AcceptBy) dissolves it when some players have not answered: the
// tickets of the players who declined or never answered are cancelled (ReasonDeclined,
// ReasonAcceptanceTimeout) and the others go back to searching with their CreatedAt, so their
// wait and widened tolerances are kept. A proposed ticket cancelled by its owner dissolves the
// proposal as a decline would.
//
// The store resolves a proposal in one transaction that changes only the tickets still in it,
// and only while the proposal is open, so two replicas (an answer on one, the leader's expiry
// on another) never both resolve it. The leader expires the proposals past their deadline at
// its ticks; the proposals are in the store, so a new leader expires those its predecessor
// left.

// Statuses and events of the ready check.
const (
	Proposed      Status    = "proposed"
	EventProposed EventType = "proposed"
	EventRequeued EventType = "requeued"
)

// Reasons of the tickets a dissolved proposal cancels, and of the requeued events of the
// others (with ReasonCancelled when a ticket of the proposal was cancelled).
const (
	ReasonDeclined          = "declined"
	ReasonAcceptanceTimeout = "acceptance_timeout"
	ReasonCancelled         = "cancelled"
)

// MaxAcceptanceTimeout is the longest ready check: FlexMatch's limit.
const MaxAcceptanceTimeout = 600 * time.Second

// Acceptance is a queue's ready check: every player of a match must accept within Timeout.
type Acceptance struct {
	Timeout time.Duration
}

func (q *Queue) addAcceptanceFaults(f *apperr.Fields) {
	if a := q.Acceptance; a != nil && (a.Timeout < time.Second || a.Timeout > MaxAcceptanceTimeout) {
		f.Add("acceptance.timeout_s", "must be 1..%d seconds", int(MaxAcceptanceTimeout.Seconds()))
	}
}

// TicketProposal is what a proposed ticket is told: the proposed match (its id is the match's
// if all accept), the ticket's team, everyone's ids by team, and the deadline.
type TicketProposal struct {
	MatchID  string
	Team     int
	Region   string
	Teams    [][]string
	AcceptBy time.Time
	// Attributes are what the match's rules agreed on (Match.Attributes).
	Attributes []matchpool.MatchAttribute
}

// ProposalState is where a proposal is: open until every player accepted (accepted), one
// declined or a ticket of it was cancelled (declined), or its deadline passed (timed_out).
type ProposalState string

const (
	ProposalOpen     ProposalState = "open"
	ProposalAccepted ProposalState = "accepted"
	ProposalDeclined ProposalState = "declined"
	ProposalTimedOut ProposalState = "timed_out"
	// With an allocator (placement.go): accepted (or proposed without a ready check) and
	// being placed, then accepted with the allocator's connection, or failed.
	ProposalPlacing ProposalState = "placing"
	ProposalFailed  ProposalState = "failed"
)

// Proposal is a match proposed for a ready check.
type Proposal struct {
	Match Match // as the tick made it; stored as a match when accepted
	// AcceptBy is the deadline of the proposal's current step: the players' answers while
	// open, the allocator's while placing.
	AcceptBy time.Time
	// PlaceFor is how long the queue's allocator has to place the match once every player
	// accepted; 0 without an allocator (the match is made at once).
	PlaceFor time.Duration
	// Answers are the players' answers so far, by player id: true accepted, false declined.
	Answers    map[string]bool
	State      ProposalState
	ResolvedAt time.Time // zero while open
}

// Unresolved says whether p still waits on its players or its allocator.
func (p *Proposal) Unresolved() bool { return p.State == ProposalOpen || p.State == ProposalPlacing }

// Purgeable says whether a purge of what is older than before deletes p: resolved before it,
// or past its deadline before it in a queue gone, which no leader expires.
func (p *Proposal) Purgeable(before time.Time, queueGone bool) bool {
	return !p.Unresolved() && p.ResolvedAt.Before(before) || queueGone && p.AcceptBy.Before(before)
}

// ProposeWrite is the proposals a tick makes: the matches of a queue with a ready check, or
// with an allocator. With Placing (an allocator and no ready check) they are placing at once
// until AcceptBy; otherwise open until AcceptBy, and placing for PlaceFor once all accept.
type ProposeWrite struct {
	At        time.Time
	AcceptBy  time.Time
	PlaceFor  time.Duration
	Placing   bool
	Proposals []Match
	ClaimFor  time.Duration // as TickWrite's: the claims hold to AcceptBy + PlaceFor + ClaimFor
	// Partition is the partition whose leader proposes (its epoch fences the write, as
	// TickWrite.Partition); "" for a queue without partition_by.
	Partition string
}

// ProposalStore is the part of Store that reads ready checks: GetProposal returns a
// proposal, open or resolved; NotFound if there is none. A proposal's changes are the
// lifecycle's (Propose, AnswerProposal, ExpireProposals; a proposed ticket's CancelTicket).
type ProposalStore interface {
	GetProposal(ctx context.Context, id string) (Proposal, error)
}
