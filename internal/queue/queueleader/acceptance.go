package queueleader

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuestats"
)

// The ready check's leader side (its types and store are queue/acceptance.go's; a player's
// answer is queuesvc/acceptance_service.go's): the runner proposes a tick's matches, accounts for its
// held tickets, and expires the proposals past their deadline.

// propose writes the tick's matches of a queue with a ready check as proposals: fills of
// backfills are not proposed (their match is running already) and go with the tick's commit.
func (r *Runner) propose(ctx context.Context, q queue.Queue, w *queue.TickWrite, now time.Time) {
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
	done, err := queue.Propose(ctx, r.deps.Store, q.Name, pw)
	if err != nil {
		r.deps.Logger.Warn("queue: cannot write the tick's proposals; they are made again at the next tick", "queue", q.Name, "err", err)
		return
	}
	r.deps.Metrics.Claims(q.Name, done)
	stored := make(map[string]bool, len(done.Matches))
	for _, id := range done.Matches {
		stored[id] = true
	}
	for _, m := range proposals {
		if !stored[m.ID] {
			continue
		}
		if !pw.Placing {
			r.deps.Metrics.Proposed(q.Name)
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
func (r *Runner) heldChanged(queueName string, t queue.Ticket, now time.Time, counted map[string]bool) {
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
	r.deps.Metrics.Waited(queueName, samples)
	r.deps.Metrics.Waits(queueName, wait)
}

// expireProposals resolves the queue's proposals past their deadline, while this replica
// leads it: at every tick of a queue with a ready check, and of any queue while some of its
// proposals are open (a ready check removed from the definition, a leader that took over).
// Of a partitioned queue the runner of the queue as a whole calls it (queueWide), not the
// partitions': the proposals are the queue's, resolved once.
func (r *Runner) expireProposals(ctx context.Context, q queue.Queue, now time.Time) {
	if q.Acceptance == nil && q.Allocator == nil && !r.openProposals {
		return
	}
	resolved, open, err := queue.ExpireProposals(ctx, r.deps.Store, q.Name, now)
	if err != nil {
		r.deps.Logger.Warn("queue: cannot expire the queue's proposals; tried again at the next tick", "queue", q.Name, "err", err)
		return
	}
	for _, p := range resolved {
		r.deps.ProposalResolved(p)
	}
	r.openProposals = open > 0
}
