package ratings

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// SeasonDefinition is a season as an admin defines it (PUT /v1/seasons/{game_type}/{season}):
// the left-out parts take their defaults.
type SeasonDefinition struct {
	Mutators         []string
	StartsAt, EndsAt time.Time
	Reset            *SeasonReset // nil: DefaultResetKeep, DefaultResetAddSD
	PlacementGames   *int         // nil: DefaultPlacementGames
	Tiers            *Tiers       // nil: DefaultTiers
}

// seasonStore is the store's SeasonStore (an error never, today: every Store keeps seasons;
// the error is kept for a wrapper that would not).
func (s *Service) seasonStore() (SeasonStore, error) { return s.store, nil }

// PutSeason defines (or redefines) the season name of the context the game type and mutators
// make (through the mutator policy, as a result's). Faults name the fields: season,
// context.game_type, context.mutators[i], starts_at, ends_at, reset.keep, reset.add_sd,
// placement_games, tiers...; a season that overlaps another of its context is a 400 naming
// starts_at.
func (s *Service) PutSeason(ctx context.Context, gameType, name string, d SeasonDefinition) (Season, error) {
	ss, err := s.seasonStore()
	if err != nil {
		return Season{}, err
	}
	se := Season{Name: name, StartsAt: d.StartsAt, EndsAt: d.EndsAt, Reset: SeasonReset{Keep: DefaultResetKeep, AddSD: DefaultResetAddSD},
		PlacementGames: DefaultPlacementGames, Tiers: DefaultTiers()}
	if d.Reset != nil {
		se.Reset = *d.Reset
	}
	if d.PlacementGames != nil {
		se.PlacementGames = *d.PlacementGames
	}
	if d.Tiers != nil {
		se.Tiers = *d.Tiers
	}
	var f apperr.Fields
	f.Include(se.Validate())
	if _, err := NewContext(gameType, d.Mutators); err != nil {
		f.Include(err)
	}
	if err := f.Err(); err != nil {
		return Season{}, err
	}
	if se.Context, err = s.Context(ctx, gameType, d.Mutators); err != nil {
		return Season{}, err
	}
	stored, err := ss.PutSeason(ctx, se)
	s.seasons.forget(se.Context.GameType)
	return stored, err
}

// Seasons lists the seasons of a game type, by context and start.
func (s *Service) Seasons(ctx context.Context, gameType string) ([]Season, error) {
	if err := ValidateName(gameType); err != nil {
		return nil, apperr.Field("game_type", "%s", err)
	}
	ss, err := s.seasonStore()
	if err != nil {
		return nil, err
	}
	return ss.Seasons(ctx, fold(gameType))
}

// SeasonRefresh is how long a service keeps a game type's seasons (and a season's tier cuts)
// before reading them again: how soon a season defined, reset or finished on another replica
// shows in this one's reads and results' answers. (Which ratings a result learns from is the
// store's to say, in the result's own transaction: it never waits on this.)
const SeasonRefresh = 5 * time.Second

// seasonCache holds the seasons by game type, and the percentile tiers' cuts by season.
type seasonCache struct {
	mu     sync.Mutex
	byGame map[string]cachedSeasons
	cuts   map[string]cachedCuts
}

type cachedSeasons struct {
	at      time.Time
	seasons []Season
}

type cachedCuts struct {
	at   time.Time
	cuts []float64
}

func (sc *seasonCache) forget(gameType string) {
	sc.mu.Lock()
	delete(sc.byGame, gameType)
	sc.mu.Unlock()
}

// gameSeasons returns a game type's seasons, from the cache while fresh (the last read when
// the store cannot be read and some were read before). A store without seasons has none.
func (s *Service) gameSeasons(ctx context.Context, gameType string) ([]Season, error) {
	ss := s.store
	now := s.clock()
	sc := &s.seasons
	sc.mu.Lock()
	c, ok := sc.byGame[gameType]
	sc.mu.Unlock()
	if ok && now.Sub(c.at) < SeasonRefresh && !now.Before(c.at) {
		return c.seasons, nil
	}
	list, err := ss.Seasons(ctx, gameType)
	if err != nil {
		if ok {
			return c.seasons, nil
		}
		return nil, err
	}
	sc.mu.Lock()
	if sc.byGame == nil {
		sc.byGame = map[string]cachedSeasons{}
	}
	sc.byGame[gameType] = cachedSeasons{at: now, seasons: list}
	sc.mu.Unlock()
	return list, nil
}

// seasonCuts returns the percentile tiers' cuts of a season under way: the conservative
// scores of its ranked players at the tiers' percentiles, cached for SeasonRefresh.
func (s *Service) seasonCuts(ctx context.Context, se Season, by Ranking) ([]float64, error) {
	if len(se.Tiers.Percentiles) == 0 {
		return nil, nil
	}
	now := s.clock()
	key := seasonKey(se.Context, se.Name)
	sc := &s.seasons
	sc.mu.Lock()
	c, ok := sc.cuts[key]
	sc.mu.Unlock()
	if ok && now.Sub(c.at) < SeasonRefresh && !now.Before(c.at) {
		return c.cuts, nil
	}
	ss, err := s.seasonStore()
	if err != nil {
		return nil, err
	}
	scores, err := ss.Scores(ctx, se.Context, by)
	if err != nil {
		if ok {
			return c.cuts, nil
		}
		return nil, err
	}
	cuts := SeasonCuts(se.Tiers, scores)
	sc.mu.Lock()
	if sc.cuts == nil {
		sc.cuts = map[string]cachedCuts{}
	}
	sc.cuts[key] = cachedCuts{at: now, cuts: cuts}
	sc.mu.Unlock()
	return cuts, nil
}

// SeasonCuts are the percentile tiers' cuts among ascending scores: for each percentile p the
// score from which the top (100 - p)% start. Fixed tiers, or no scores, have none.
func SeasonCuts(t Tiers, ascending []float64) []float64 {
	n := len(ascending)
	if len(t.Percentiles) == 0 || n == 0 {
		return nil
	}
	cuts := make([]float64, len(t.Percentiles))
	for i, p := range t.Percentiles {
		cuts[i] = ascending[min(n-1, int(math.Floor(p/100*float64(n))))]
	}
	return cuts
}

// SeasonTick does what the seasons of every game type need at the service's clock's now: the
// reset of each that has started, the final standings of each that has ended, in the order
// they start. Every replica may run it: the store applies each once. It returns the first
// error, after trying every season.
func (s *Service) SeasonTick(ctx context.Context) error {
	ss := s.store
	all, err := ss.Seasons(ctx, "")
	if err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b Season) int { return a.StartsAt.Compare(b.StartsAt) })
	now := s.clock()
	var errs []error
	for _, se := range all {
		reset, final := se.Due(now)
		switch {
		case reset:
			_, err = ss.ResetSeason(ctx, se.Context, se.Name, now, s.models.For(se.Context).PriorSigma())
		case final:
			err = s.finalize(ctx, ss, se, now)
		default:
			continue
		}
		s.seasons.forget(se.Context.GameType)
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// finalize keeps a season's final standings: its ranked players by conservative rating at
// now, each with his position and tier.
func (s *Service) finalize(ctx context.Context, ss SeasonStore, se Season, now time.Time) error {
	rk, err := s.rankerOf(ctx, se.Context, now)
	if err != nil {
		return err
	}
	by := rk.ranking(se)
	_, err = ss.FinalizeSeason(ctx, se.Context, se.Name, now, by, func(ranked []RatedParticipant) []Standing {
		scores := make([]float64, len(ranked))
		for i, rp := range ranked {
			scores[len(ranked)-1-i] = by.Score(rp.Rating)
		}
		cuts := SeasonCuts(se.Tiers, scores)
		out := make([]Standing, len(ranked))
		for i, rp := range ranked {
			score := by.Score(rp.Rating)
			out[i] = Standing{Player: rp.Participant.ID, Position: i + 1, Of: len(ranked), Rating: rp.Rating, Score: score,
				Tier: se.Tiers.Name(se.Tiers.Index(score, cuts))}
		}
		return out
	})
	return err
}

// RunSeasons runs SeasonTick every interval until ctx ends, logging nothing: errors are
// retried at the next tick, and report says them (nil: dropped).
func (s *Service) RunSeasons(ctx context.Context, every time.Duration, report func(error)) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := s.SeasonTick(ctx); err != nil && report != nil && ctx.Err() == nil {
			report(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// TierCount is how many of a season's ranked players hold a tier.
type TierCount struct {
	Tier    string
	Players int
}

// Distribution is how a season's players are spread over its tiers: Ranked have played the
// placement games (by tier, from the lowest), Placing not yet (0 once the season ended).
type Distribution struct {
	Season  Season
	Tiers   []TierCount
	Ranked  int
	Placing int
}

// TierDistribution is the spread of context c's season name over its tiers: live while it
// runs (its ranked players' tiers now), the final standings' once it ended, nobody before
// it starts.
func (s *Service) TierDistribution(ctx context.Context, c Context, name string) (Distribution, error) {
	se, final, err := s.SeasonStandings(ctx, c, name, 0, 1)
	if err != nil {
		return Distribution{}, err
	}
	d := Distribution{Season: se, Tiers: make([]TierCount, se.Tiers.Count())}
	for i := range d.Tiers {
		d.Tiers[i].Tier = se.Tiers.Name(i)
	}
	ss, err := s.seasonStore()
	if err != nil {
		return Distribution{}, err
	}
	switch {
	case se.Epoch == 0:
		return d, nil
	case !se.FinalAt.IsZero():
		of := 0
		if len(final) > 0 {
			of = final[0].Of
		}
		rows, err := ss.Standings(ctx, c, name, 0, of)
		if err != nil {
			return Distribution{}, err
		}
		for _, st := range rows {
			d.count(st.Tier)
		}
		return d, nil
	}
	rk, err := s.rankerOf(ctx, c, s.clock())
	if err != nil {
		return Distribution{}, err
	}
	by := rk.ranking(se)
	scores, err := ss.Scores(ctx, c, by)
	if err != nil {
		return Distribution{}, err
	}
	cuts := SeasonCuts(se.Tiers, scores)
	for _, sc := range scores {
		d.Tiers[se.Tiers.Index(sc, cuts)].Players++
		d.Ranked++
	}
	by.Placed = 0
	all, err := ss.Scores(ctx, c, by)
	if err != nil {
		return Distribution{}, err
	}
	d.Placing = len(all) - d.Ranked
	return d, nil
}

func (d *Distribution) count(tier string) {
	for i := range d.Tiers {
		if d.Tiers[i].Tier == tier {
			d.Tiers[i].Players++
			d.Ranked++
			return
		}
	}
}
