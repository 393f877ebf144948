package queue

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
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

// ProposalStore is the part of Store that keeps ready checks.
//
//   - Propose stores each match of w whose tickets are all searching as an open proposal:
//     the tickets become proposed (keeping their players from searching elsewhere) with a
//     proposed event each; a match with any ticket no longer searching is dropped whole
//     (TickCommitted.Dropped). Only the queue's leader calls it (fenced as CommitTick).
//   - GetProposal returns a proposal, open or resolved; NotFound if there is none.
//   - AnswerProposal records a player's answer and, if that resolves the proposal, resolves it
//     in the same transaction (resolved true: the match stored and its tickets matched with
//     their events, or the tickets cancelled and requeued with theirs). An answer to a
//     resolved proposal is a Conflict, a player not in it NotFound; answering again as
//     before changes nothing.
//   - ExpireProposals resolves the queue's open proposals whose AcceptBy is not after at as
//     timed out, and returns them (resolved) and how many stay open. Only the leader calls it.
//
// A proposal's tickets that are no longer proposed in it when it resolves (their queue was
// deleted) are left as they are. CancelTicket of a proposed ticket dissolves its proposal
// as a decline would, in its transaction. The lifecycle (lifecycle.go) decides each of them.
type ProposalStore interface {
	Propose(ctx context.Context, queue string, w ProposeWrite) (TickCommitted, error)
	GetProposal(ctx context.Context, id string) (Proposal, error)
	AnswerProposal(ctx context.Context, id, playerID string, accept bool, at time.Time) (p Proposal, resolved bool, err error)
	ExpireProposals(ctx context.Context, queue string, at time.Time) (resolved []Proposal, open int, err error)
}

// Answer records a player's answer to the ready check of match id (POST
// /v1/matches/{id}/acceptance) and returns the proposal as it then is. The caller must own
// the player's ticket (or be an admin): otherwise, as for an unknown proposal or player, it
// is NotFound. An answer to a resolved proposal is a Conflict.
func (s *Service) Answer(ctx context.Context, id, playerID string, accept bool) (Proposal, error) {
	var f apperr.Fields
	if err := ratings.ValidateID(id); err != nil {
		f.Add("id", "%s", err)
	}
	if err := ratings.ValidateID(playerID); err != nil {
		f.Add("player_id", "%s", err)
	}
	if err := f.Err(); err != nil {
		return Proposal{}, err
	}
	p, err := s.store.GetProposal(ctx, id)
	if err != nil {
		return Proposal{}, err
	}
	ticket := ""
	for _, team := range p.Match.Teams {
		for _, pl := range team.Players {
			if pl.ID == playerID {
				ticket = pl.TicketID
			}
		}
	}
	notIn := apperr.New(apperr.NotFound, "no player %q in the proposal of match %q", playerID, id)
	if ticket == "" {
		return Proposal{}, notIn
	}
	if _, err := s.ownedTicket(ctx, ticket); apperr.CodeOf(err) == apperr.NotFound {
		return Proposal{}, notIn
	} else if err != nil {
		return Proposal{}, err
	}
	p, resolved, err := s.store.AnswerProposal(ctx, id, playerID, accept, s.now().UTC())
	if err == nil && resolved {
		s.proposalResolved(p)
	}
	return p, err
}

// proposalResolved counts a resolved ready check or placement (and the match made).
func (s *Service) proposalResolved(p Proposal) {
	switch p.State {
	case ProposalPlacing: // every player accepted: the allocator places it now
		s.metrics.proposalResolved(p.Match.Queue, ProposalAccepted)
	case ProposalFailed:
		s.metrics.placement(p.Match.Queue, "failed")
	default:
		s.metrics.proposalResolved(p.Match.Queue, p.State)
	}
	if p.State == ProposalAccepted {
		s.metrics.matched(p.Match.Queue, p.Match, nil)
	}
	s.metrics.penalty(p.Match.Queue, "dodge", dodgers(p))
}

// propose writes the tick's matches of a queue with a ready check as proposals: fills of
// backfills are not proposed (their match is running already) and go with the tick's commit.
func (r *runner) propose(ctx context.Context, q Queue, w *TickWrite, now time.Time) {
	if (q.Acceptance == nil && q.Allocator == nil) || len(w.Matches) == 0 {
		return
	}
	var proposals []Match
	w.Matches = slices.DeleteFunc(w.Matches, func(m Match) bool {
		if m.BackfillOf == "" {
			proposals = append(proposals, m)
			return true
		}
		return false
	})
	if len(proposals) == 0 {
		return
	}
	pw := ProposeWrite{At: now, Proposals: proposals, ClaimFor: q.TicketTTL, Partition: r.part}
	if q.Allocator != nil {
		pw.PlaceFor = q.Allocator.Timeout
	}
	if q.Acceptance != nil {
		pw.AcceptBy = now.Add(q.Acceptance.Timeout)
	} else {
		pw.Placing, pw.AcceptBy = true, now.Add(q.Allocator.Timeout)
	}
	done, err := r.s.store.Propose(ctx, q.Name, pw)
	if err != nil {
		r.s.logger.Warn("queue: cannot write the tick's proposals; they are made again at the next tick", "queue", q.Name, "err", err)
		return
	}
	r.s.metrics.claims(q.Name, done)
	stored := make(map[string]bool, len(done.Matches))
	for _, id := range done.Matches {
		stored[id] = true
	}
	for _, m := range proposals {
		if !stored[m.ID] {
			continue
		}
		if !pw.Placing {
			r.s.metrics.proposed(q.Name)
		}
		for _, id := range m.Tickets() {
			if t, ok := r.waiting[id]; ok {
				delete(r.waiting, id) // back by Changes if the proposal requeues it
				band, _ := r.track.remove(t)
				r.held[id] = heldTicket{created: t.CreatedAt, band: band, match: m.ID, quality: m.AverageDifference}
			}
		}
	}
	r.openProposals = true
}

// heldTicket is a ticket this leader proposed (or is placing), until its match is made or it
// leaves the proposal: what the stats count of it once matched.
type heldTicket struct {
	created time.Time
	band    int8
	match   string
	quality float64
}

// heldChanged accounts for a change of a held ticket that Changes brought: matched, its wait
// goes to the stats and the wait metrics, and its match (once) to the stats' matches; back
// to searching or ended otherwise, it is no longer held. A new leader holds none: the
// matches its predecessor proposed are not in its stats.
func (r *runner) heldChanged(queue string, t Ticket, now time.Time, counted map[string]bool) {
	h, ok := r.held[t.ID]
	if !ok || t.Status == Proposed || t.Status == Placing {
		return
	}
	delete(r.held, t.ID)
	if t.Status != Matched {
		return
	}
	wait := t.UpdatedAt.Sub(h.created)
	samples := []waitSample{{at: now, band: h.band, s: wait.Seconds()}}
	quality := math.NaN()
	if !counted[h.match] {
		counted[h.match], quality = true, h.quality
	}
	r.track.matchedLater(now, quality, samples)
	r.s.metrics.waited(queue, samples)
	r.s.metrics.waits(queue, wait)
}

// expireProposals resolves the queue's proposals past their deadline, while this replica
// leads it: at every tick of a queue with a ready check, and of any queue while some of its
// proposals are open (a ready check removed from the definition, a leader that took over).
// Of a partitioned queue the runner of the queue as a whole calls it (queueWide), not the
// partitions': the proposals are the queue's, resolved once.
func (r *runner) expireProposals(ctx context.Context, q Queue, now time.Time) {
	if q.Acceptance == nil && q.Allocator == nil && !r.openProposals {
		return
	}
	resolved, open, err := r.s.store.ExpireProposals(ctx, q.Name, now)
	if err != nil {
		r.s.logger.Warn("queue: cannot expire the queue's proposals; tried again at the next tick", "queue", q.Name, "err", err)
		return
	}
	for _, p := range resolved {
		r.s.proposalResolved(p)
	}
	r.openProposals = open > 0
}

// matchedLater records in the stats a match made after its tick (a ready check's, an
// allocator's): the match itself once (quality NaN for its other tickets) and each ticket's
// wait.
func (k *tracker) matchedLater(now time.Time, quality float64, waits []waitSample) {
	if !math.IsNaN(quality) {
		k.matched(now, quality, false, waits)
		return
	}
	k.addWaits(waits)
}
