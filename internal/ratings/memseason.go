package ratings

import (
	"cmp"
	"context"
	"slices"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// The in-memory store's seasons. A reset takes the store's lock and resets every rating of
// the context at once, so that a result is recorded wholly before or wholly after it.

// seasonKey names a season among every context's.
func seasonKey(c Context, name string) string { return c.Key() + "\x00" + name }

// resetSeasons are the seasons of the context key whose reset was applied, as values, under
// the store's lock.
func (s *MemoryStore) resetSeasons(key string) []Season {
	var out []Season
	for _, se := range s.seasons[key] {
		if se.Epoch > 0 {
			out = append(out, *se)
		}
	}
	return out
}

func (s *MemoryStore) findSeason(c Context, name string) *Season {
	for _, se := range s.seasons[c.Key()] {
		if se.Name == name {
			return se
		}
	}
	return nil
}

func cloneSeason(se Season) Season {
	se.Context = cloneContext(se.Context)
	se.Tiers.Fixed = slices.Clone(se.Tiers.Fixed)
	se.Tiers.Percentiles = slices.Clone(se.Tiers.Percentiles)
	se.Tiers.Names = slices.Clone(se.Tiers.Names)
	return se
}

// PutSeason implements SeasonStore.PutSeason.
func (s *MemoryStore) PutSeason(ctx context.Context, se Season) (Season, error) {
	if err := ctx.Err(); err != nil {
		return Season{}, err
	}
	if err := se.Validate(); err != nil {
		return Season{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := se.Context.Key()
	others := make([]Season, 0, len(s.seasons[key]))
	for _, o := range s.seasons[key] {
		others = append(others, *o)
	}
	if err := CheckSeasonOrder(se, others); err != nil {
		return Season{}, err
	}
	se = cloneSeason(se)
	if old := s.findSeason(se.Context, se.Name); old != nil {
		redefined, err := Redefine(*old, se)
		if err != nil {
			return Season{}, err
		}
		*old = redefined
		return cloneSeason(redefined), nil
	}
	se.Epoch, se.ResetAt, se.FinalAt = 0, time.Time{}, time.Time{}
	stored := se
	s.seasons[key] = append(s.seasons[key], &stored)
	return cloneSeason(stored), nil
}

// Seasons implements SeasonStore.Seasons.
func (s *MemoryStore) Seasons(ctx context.Context, gameType string) ([]Season, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var game string // "": every game type's
	if gameType != "" {
		gc, err := NewContext(gameType, nil)
		if err != nil {
			return nil, err
		}
		game = gc.GameType
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []Season
	for _, list := range s.seasons {
		for _, se := range list {
			if game == "" || se.Context.GameType == game {
				out = append(out, cloneSeason(*se))
			}
		}
	}
	slices.SortFunc(out, func(a, b Season) int {
		return cmp.Or(strings.Compare(a.Context.Key(), b.Context.Key()), a.StartsAt.Compare(b.StartsAt))
	})
	return out, nil
}

// ResetSeason implements SeasonStore.ResetSeason: every rating of the context is reset under
// the store's lock.
func (s *MemoryStore) ResetSeason(ctx context.Context, c Context, name string, at time.Time, priorSigma float64) (Season, error) {
	if err := ctx.Err(); err != nil {
		return Season{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.findSeason(c, name)
	switch {
	case se == nil:
		return Season{}, SeasonNotFoundError(c, name)
	case se.Epoch > 0:
		return cloneSeason(*se), nil
	case at.Before(se.StartsAt):
		return Season{}, SeasonNotStartedError(c, name, se.StartsAt, at)
	}
	mc := s.contexts[c.Key()]
	var all []RatedParticipant
	if mc != nil {
		for p, rt := range mc.ratings {
			all = append(all, RatedParticipant{p, rt})
		}
	}
	slices.SortFunc(all, func(a, b RatedParticipant) int { return a.Participant.Compare(b.Participant) })
	se.Epoch = latestEpoch(s.resetSeasons(c.Key())) + 1
	se.ResetAt, se.ResetMean, se.ResetSigma, se.ResetAfter = at, MeanSkill(all), priorSigma, s.seq
	se.ResetAltMean = MeanAltSkill(all)
	for _, rp := range all {
		mc.ratings[rp.Participant] = CatchUp(rp.Rating, []Season{*se})
	}
	return cloneSeason(*se), nil
}

// FinalizeSeason implements SeasonStore.FinalizeSeason.
func (s *MemoryStore) FinalizeSeason(ctx context.Context, c Context, name string, at time.Time, by Ranking, standings func([]RatedParticipant) []Standing) (Season, error) {
	if err := ctx.Err(); err != nil {
		return Season{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	se := s.findSeason(c, name)
	switch {
	case se == nil:
		return Season{}, SeasonNotFoundError(c, name)
	case !se.FinalAt.IsZero():
		return cloneSeason(*se), nil
	case se.Epoch == 0:
		return Season{}, SeasonNotStartedError(c, name, se.StartsAt, at)
	}
	var ranked []RatedParticipant
	if mc := s.contexts[c.Key()]; mc != nil {
		for p, rt := range mc.ratings {
			if !p.Bot && by.Includes(rt) {
				ranked = append(ranked, RatedParticipant{p, rt})
			}
		}
	}
	sortRanked(ranked, by)
	rows := standings(ranked)
	for i := range rows {
		rows[i].Context, rows[i].Season, rows[i].StartsAt, rows[i].Final = cloneContext(c), name, se.StartsAt, true
	}
	s.standings[seasonKey(c, name)] = rows
	se.FinalAt = at
	return cloneSeason(*se), nil
}

// sortRanked orders ratings best first by the ranking's score, ties by id.
func sortRanked(rs []RatedParticipant, by Ranking) {
	slices.SortFunc(rs, func(a, b RatedParticipant) int {
		return cmp.Or(cmp.Compare(by.Score(b.Rating), by.Score(a.Rating)), cmp.Compare(a.Participant.ID, b.Participant.ID))
	})
}

// Standings implements SeasonStore.Standings.
func (s *MemoryStore) Standings(ctx context.Context, c Context, name string, offset, limit int) ([]Standing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.findSeason(c, name) == nil {
		return nil, SeasonNotFoundError(c, name)
	}
	rows := s.standings[seasonKey(c, name)]
	offset = min(max(offset, 0), len(rows))
	end := min(offset+max(limit, 0), len(rows))
	out := slices.Clone(rows[offset:end])
	for i := range out {
		out[i].Context = cloneContext(out[i].Context)
	}
	if out == nil {
		out = []Standing{}
	}
	return out, nil
}

// PlayerStandings implements SeasonStore.PlayerStandings.
func (s *MemoryStore) PlayerStandings(ctx context.Context, playerID string) ([]Standing, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := []Standing{}
	for _, rows := range s.standings {
		for _, st := range rows {
			if st.Player == playerID {
				st.Context = cloneContext(st.Context)
				out = append(out, st)
			}
		}
	}
	slices.SortFunc(out, func(a, b Standing) int {
		return cmp.Or(strings.Compare(a.Context.Key(), b.Context.Key()), a.StartsAt.Compare(b.StartsAt))
	})
	return out, nil
}

// Scores implements SeasonStore.Scores.
func (s *MemoryStore) Scores(ctx context.Context, c Context, by Ranking) ([]float64, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	var out []float64
	if mc := s.contexts[c.Key()]; mc != nil {
		for p, rt := range mc.ratings {
			if !p.Bot && by.Includes(rt) {
				out = append(out, by.Score(rt))
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// SeasonNotFoundError is the error of a season that is not defined, as both stores say it.
func SeasonNotFoundError(c Context, name string) error {
	return apperr.New(apperr.NotFound, "context %s has no season %q", c, name)
}

// SeasonNotStartedError is the error of a season asked for a reset or its standings at a
// moment it has not started (or not been reset), as both stores say it.
func SeasonNotStartedError(c Context, name string, startsAt, at time.Time) error {
	return apperr.New(apperr.Conflict, "season %q of context %s starts at %s and has not been reset (at %s)", name, c,
		startsAt.Format(time.RFC3339), at.Format(time.RFC3339))
}
