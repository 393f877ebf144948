package queuesvc

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuestats"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// The Service's stats: the queue's and its partitions' reads, and a new ticket's estimate and
// tolerances from them (the Stats type is queue/stats.go's, its tracker and the merge
// of partitions queuestats').

// Stats returns a queue's stats (GET /v1/queues/{name}/stats). The replica that leads the
// queue answers from its own view, rebuilt from counters at most every StatsRefresh; the
// others answer the snapshot the leader publishes to the store every StatsPublish, read at
// most once per StatsRefresh per queue: no request scans the queue's tickets.
func (s *Service) Stats(ctx context.Context, name string) (queue.Stats, error) {
	if err := ratings.ValidateName(name); err != nil {
		return queue.Stats{}, apperr.Field("name", "%s", err)
	}
	q, err := s.store.GetQueue(ctx, name)
	if err != nil {
		return queue.Stats{}, err
	}
	var st queue.Stats
	if q.Partitioned() {
		st, err = s.partitionedStats(ctx, name)
	} else {
		st, err = s.statsOf(ctx, name)
	}
	if err != nil {
		return queue.Stats{}, err
	}
	st.Recent = s.predict(ctx, q, st.Recent)
	return st, nil
}

// predict returns recent with each match's win probabilities, as POST /v1/predict would
// answer them, asked once per match (a finished match's prediction is not asked again: the
// ratings it would read have moved on with its own result). A match the model cannot be
// asked about keeps none: the stats are answered all the same.
func (s *Service) predict(ctx context.Context, q queue.Queue, recent []queue.RecentMatch) []queue.RecentMatch {
	if s.ratings == nil || len(recent) == 0 {
		return recent
	}
	out := slices.Clone(recent) // recent is the snapshot's, shared with other readers
	failed := false
	for i := range out {
		m := &out[i]
		s.cacheMu.Lock()
		p, ok := s.predicted[m.ID]
		s.cacheMu.Unlock()
		if !ok && len(m.Teams) == 2 && !failed {
			pred, err := s.ratings.Predict(ctx, ratings.Proposal{GameType: q.GameType, Mutators: q.Mutators,
				Teams: []ratings.ProposedTeam{{Players: m.Teams[0]}, {Players: m.Teams[1]}}})
			if err != nil {
				// The store is failing, or the model refuses these players: the others are not
				// asked either, so a stats answer waits for one failed call at most.
				s.logger.Debug("queue: cannot predict a recent match", "queue", q.Name, "match", m.ID, "err", err)
				failed = true
				continue
			}
			p = pred.WinProbability[:]
			s.cacheMu.Lock()
			if len(s.predicted) > 10_000 { // ten per queue are asked; this only bounds a leak
				clear(s.predicted)
			}
			s.predicted[m.ID] = p
			s.cacheMu.Unlock()
		}
		m.WinProbability = p
	}
	return out
}

// estimate sets t.EstimatedWait if t is searching and its queue has recent waits. The
// stats cannot be read: no estimate, the ticket is still answered.
func (s *Service) estimate(ctx context.Context, t *queue.Ticket) {
	if t.Status != queue.Searching || len(t.Players) == 0 {
		return
	}
	s.explainWait(t)
	s.tolerate(t)
	st, err := s.statsOf(ctx, t.Queue)
	if err != nil {
		return
	}
	if len(st.Partitions) > 0 { // the estimate is the ticket's partition's
		if st, ok := queuestats.Partition(st, s.partitionOf(t)); ok {
			s.estimateFrom(st, t)
		}
		return
	}
	s.estimateFrom(st, t)
}

// estimateFrom sets t.EstimatedWait from st, if it has recent waits.
func (s *Service) estimateFrom(st queue.Stats, t *queue.Ticket) {
	sum := 0.0
	for _, p := range t.Players {
		sum += p.Rating
	}
	if d, ok := st.Estimate(sum/float64(len(t.Players)), max(s.now().Sub(t.CreatedAt), 0)); ok {
		t.EstimatedWait = &d
	}
}

// tolerate sets a searching ticket's Tolerances from its queue's definition as this replica
// holds it (its tick loop's, else one read for a creation within Config.DefinitionTTL) and
// its wait now. It never asks the store: without a definition at hand, none.
func (s *Service) tolerate(t *queue.Ticket) {
	var q *queue.Queue
	if r, ok := s.leaders.Runner(t.Queue); ok {
		q = r.Def()
	}
	if q == nil {
		d, ok, _ := s.definitions.get(t.Queue, s.cfg.DefinitionTTL)
		if !ok {
			return
		}
		q = &d
	}
	wait := max(s.now().Sub(t.CreatedAt), 0).Seconds()
	tol := &queue.Tolerances{Interval: matchrules.Current(queue.TickSteps(q.Expansions.Interval), wait)}
	if len(q.Expansions.MaxLatencyMS) > 0 {
		l := matchrules.Current(queue.TickSteps(q.Expansions.MaxLatencyMS), wait)
		tol.MaxLatencyMS = &l
	}
	for _, r := range q.Rules {
		if len(r.Expansions) > 0 {
			if tol.Rules == nil {
				tol.Rules = make(map[string]float64)
			}
			tol.Rules[r.Name] = matchrules.Current(r.Expansions, wait)
		}
	}
	t.Tolerances = tol
}

// estimated returns a pass-through of a create's results that adds the estimate.
func (s *Service) estimated(ctx context.Context) func(queue.Ticket, bool, error) (queue.Ticket, bool, error) {
	return func(t queue.Ticket, replayed bool, err error) (queue.Ticket, bool, error) {
		if err == nil {
			s.estimate(ctx, &t)
		}
		return t, replayed, err
	}
}

// partitionedStats are queue's stats from its partitions': this replica's own for those it
// leads, the published ones for the others. They are cached for StatsRefresh as a queue's.
func (s *Service) partitionedStats(ctx context.Context, queueName string) (queue.Stats, error) {
	now := s.now()
	if st, ok := s.cachedStats(queueName, now); ok {
		return st, nil
	}
	stored, err := s.store.PublishedStats(ctx, queueName)
	if err != nil {
		return queue.Stats{}, err
	}
	byValue := make(map[string]queue.Stats, len(stored))
	for _, st := range stored {
		if st.Partition != "" { // not the queue's own, from before it was partitioned
			st.Source = "store"
			byValue[st.Partition] = st
		}
	}
	for value, r := range s.leaders.PartitionRunners(queueName) {
		if r.Leading() {
			if st := r.Stats(); st != nil {
				byValue[value] = *st
			}
		}
	}
	parts := make([]queue.Stats, 0, len(byValue))
	for _, v := range slices.Sorted(maps.Keys(byValue)) {
		parts = append(parts, byValue[v])
	}
	st := queuestats.Merge(queueName, parts, now.UTC())
	s.cacheStats(queueName, now, st)
	return st, nil
}

// cachedStats is queue's stats as read at most StatsRefresh before now, if they are.
func (s *Service) cachedStats(queueName string, now time.Time) (queue.Stats, bool) {
	s.cacheMu.Lock()
	c, ok := s.cache[queueName]
	s.cacheMu.Unlock()
	if ok && now.Sub(c.read) < queue.StatsRefresh && !now.Before(c.read) {
		return c.stats, true
	}
	return queue.Stats{}, false
}

// cacheStats keeps st as queue's stats read at now.
func (s *Service) cacheStats(queue string, now time.Time, st queue.Stats) {
	s.cacheMu.Lock()
	defer s.cacheMu.Unlock()
	if len(s.cache) > 10_000 { // queue names are admin-made; this only bounds a leak
		clear(s.cache)
	}
	s.cache[queue] = cachedStats{read: now, stats: st}
}

// explainWait sets a searching ticket's WaitingOn from the last pass of its queue, when
// this replica leads the queue (the pass's reasons are kept in the leader's memory only).
func (s *Service) explainWait(t *queue.Ticket) {
	r, ok := s.leaders.RunnerOf(t)
	if !ok || !r.Leading() {
		return
	}
	if w, ok := r.WaitingOn().Of(t.ID); ok {
		t.WaitingOn = &w
	}
}
