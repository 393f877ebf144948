package queuesvc

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuestats"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The ready check's Service side (its types and store are queue/acceptance.go's): a player's answer,
// and the leader's proposing and expiring at its ticks.

// Answer records a player's answer to the ready check of match id (POST
// /v1/matches/{id}/acceptance) and returns the proposal as it then is. The caller must own
// the player's ticket (or be an admin): otherwise, as for an unknown proposal or player, it
// is NotFound. An answer to a resolved proposal is a Conflict.
func (s *Service) Answer(ctx context.Context, id, playerID string, accept bool) (queue.Proposal, error) {
	var f apperr.Fields
	if err := ratings.ValidateID(id); err != nil {
		f.Add("id", "%s", err)
	}
	if err := ratings.ValidateID(playerID); err != nil {
		f.Add("player_id", "%s", err)
	}
	if err := f.Err(); err != nil {
		return queue.Proposal{}, err
	}
	p, err := s.store.GetProposal(ctx, id)
	if err != nil {
		return queue.Proposal{}, err
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
		return queue.Proposal{}, notIn
	}
	if _, err := s.ownedTicket(ctx, ticket); apperr.CodeOf(err) == apperr.NotFound {
		return queue.Proposal{}, notIn
	} else if err != nil {
		return queue.Proposal{}, err
	}
	p, resolved, err := queue.AnswerProposal(ctx, s.store, id, playerID, accept, s.now().UTC())
	if err == nil && resolved {
		s.proposalResolved(p)
	}
	return p, err
}

// proposalResolved counts a resolved ready check or placement (and the match made).
func (s *Service) proposalResolved(p queue.Proposal) {
	switch p.State {
	case queue.ProposalPlacing: // every player accepted: the allocator places it now
		s.metrics.proposalResolved(p.Match.Queue, queue.ProposalAccepted)
	case queue.ProposalFailed:
		s.metrics.placement(p.Match.Queue, "failed")
	default:
		s.metrics.proposalResolved(p.Match.Queue, p.State)
	}
	if p.State == queue.ProposalAccepted {
		s.metrics.matched(p.Match.Queue, p.Match, nil)
	}
	s.metrics.penalty(p.Match.Queue, "dodge", queue.Dodgers(p))
}

// propose writes the tick's matches of a queue with a ready check as proposals: fills of
// backfills are not proposed (their match is running already) and go with the tick's commit.
func (r *runner) propose(ctx context.Context, q queue.Queue, w *queue.TickWrite, now time.Time) {
	if (q.Acceptance == nil && q.Allocator == nil) || len(w.Matches) == 0 {
		return
	}
	var proposals []queue.Match
	w.Matches = slices.DeleteFunc(w.Matches, func(m queue.Match) bool {
		if m.BackfillOf == "" {
			proposals = append(proposals, m)
			return true
		}
		return false
	})
	if len(proposals) == 0 {
		return
	}
	pw := queue.ProposeWrite{At: now, Proposals: proposals, ClaimFor: q.TicketTTL, Partition: r.part}
	if q.Allocator != nil {
		pw.PlaceFor = q.Allocator.Timeout
	}
	if q.Acceptance != nil {
		pw.AcceptBy = now.Add(q.Acceptance.Timeout)
	} else {
		pw.Placing, pw.AcceptBy = true, now.Add(q.Allocator.Timeout)
	}
	done, err := queue.Propose(ctx, r.s.store, q.Name, pw)
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
				band, _ := r.track.Remove(t)
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
func (r *runner) heldChanged(queueName string, t queue.Ticket, now time.Time, counted map[string]bool) {
	h, ok := r.held[t.ID]
	if !ok || t.Status == queue.Proposed || t.Status == queue.Placing {
		return
	}
	delete(r.held, t.ID)
	if t.Status != queue.Matched {
		return
	}
	wait := t.UpdatedAt.Sub(h.created)
	samples := []queuestats.WaitSample{{At: now, Band: h.band, Seconds: wait.Seconds()}}
	quality := math.NaN()
	if !counted[h.match] {
		counted[h.match], quality = true, h.quality
	}
	r.track.MatchedLater(now, quality, samples)
	r.s.metrics.waited(queueName, samples)
	r.s.metrics.waits(queueName, wait)
}

// expireProposals resolves the queue's proposals past their deadline, while this replica
// leads it: at every tick of a queue with a ready check, and of any queue while some of its
// proposals are open (a ready check removed from the definition, a leader that took over).
// Of a partitioned queue the runner of the queue as a whole calls it (queueWide), not the
// partitions': the proposals are the queue's, resolved once.
func (r *runner) expireProposals(ctx context.Context, q queue.Queue, now time.Time) {
	if q.Acceptance == nil && q.Allocator == nil && !r.openProposals {
		return
	}
	resolved, open, err := queue.ExpireProposals(ctx, r.s.store, q.Name, now)
	if err != nil {
		r.s.logger.Warn("queue: cannot expire the queue's proposals; tried again at the next tick", "queue", q.Name, "err", err)
		return
	}
	for _, p := range resolved {
		r.s.proposalResolved(p)
	}
	r.openProposals = open > 0
}
