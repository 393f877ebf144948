package ratings

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// View is a rating as a read shows it at a moment: caught up with its context's season
// resets, its uncertainty grown by the idle drift since it was last played, its conservative
// score, whether it is a suspected smurf, and its place in the season under way.
type View struct {
	Rating       Rating
	Uncertainty  float64
	Conservative float64 // Rating.Skill - ConservativeK Uncertainty
	// SuspectedSmurf: the participant's first results say he is far better than rated
	// (Kalman.SuspectedSmurf); his uncertainty is being kept high.
	SuspectedSmurf bool
	// Ranked is the season under way in the context; nil without one.
	Ranked *Ranked
}

// Ranked is a rating's place in its context's season under way: its tier, or while the
// participant has not played the season's placement games, how far he is.
type Ranked struct {
	Season    string
	Tier      string // "" while in placement
	TierIndex int    // 0 for the lowest
	Placement *Placement
}

// Placement is how many of a season's placement games a participant has played.
type Placement struct {
	Played, Needed int
}

// Placed reports whether the rating has a tier (its placement games played).
func (r *Ranked) Placed() bool { return r != nil && r.Placement == nil }

// ranker reads the ratings of one context as the service shows them at now.
type ranker struct {
	model   Model
	now     time.Time
	seasons []Season // the context's seasons whose reset was applied
	season  *Season  // the season under way, nil without one
	cuts    []float64
}

// rankerOf is the ranker of context c at now: its model as tuned, its seasons (as cached,
// SeasonRefresh) and the cuts of its season's percentile tiers.
func (s *Service) rankerOf(ctx context.Context, c Context, now time.Time) (*ranker, error) {
	rankers, err := s.rankersOf(ctx, c.GameType, now)
	if err != nil {
		return nil, err
	}
	return rankers(c), nil
}

// conservative is the conservative ranking at the ranker's now: skill less ConservativeK
// standard deviations, grown by the model's idle drift.
func (rk *ranker) conservative() Ranking {
	by := Ranking{K: ConservativeK, PriorSigma: rk.model.PriorSigma(), Now: rk.now.Unix()}
	if km, ok := kalmanOf(rk.model); ok {
		by.DriftSq = km.SkillDriftPerDay * km.SkillDriftPerDay
	}
	return by
}

// ranking is the conservative ranking of a season's ranked players.
func (rk *ranker) ranking(se Season) Ranking {
	by := rk.conservative()
	by.Season, by.Placed = se.Epoch, se.PlacementGames
	return by
}

// view is how a read shows r; rated says whether it is stored (not a newcomer's zero).
func (rk *ranker) view(r Rating, rated bool) View {
	if rated {
		r = CatchUp(r, rk.seasons)
	}
	by := rk.conservative()
	v := View{Rating: r, Uncertainty: by.Sigma(r), Conservative: by.Score(r)}
	if km, ok := kalmanOf(rk.model); ok {
		v.SuspectedSmurf = km.SuspectedSmurf(r)
	}
	if rk.season != nil {
		v.Ranked = rk.ranked(r, v.Conservative)
	}
	return v
}

// ranked is r's place in the season under way, its conservative score being score.
func (rk *ranker) ranked(r Rating, score float64) *Ranked {
	se := rk.season
	played := 0
	if r.Season == se.Epoch {
		played = r.SeasonGames
	}
	out := &Ranked{Season: se.Name}
	if played < se.PlacementGames {
		out.Placement = &Placement{Played: played, Needed: se.PlacementGames}
		return out
	}
	out.TierIndex = se.Tiers.Index(score, rk.cuts)
	out.Tier = se.Tiers.Name(out.TierIndex)
	return out
}

// Change is what a result did to a participant's place in the season: his place after it,
// and whether it took him to a higher or lower tier (both false in placement, or on the
// result that ended it).
type Change struct {
	Ranked            *Ranked
	Promoted, Demoted bool
	SuspectedSmurf    bool
	NewlySuspected    bool // suspected after the result, not before
}

// change is what a result that moved a rating from before to after did to it.
func (rk *ranker) change(before, after Rating) Change {
	b, a := rk.view(before, before.Games > 0), rk.view(after, true)
	out := Change{Ranked: a.Ranked, SuspectedSmurf: a.SuspectedSmurf, NewlySuspected: a.SuspectedSmurf && !b.SuspectedSmurf}
	if a.Ranked.Placed() && b.Ranked.Placed() {
		out.Promoted = a.Ranked.TierIndex > b.Ranked.TierIndex
		out.Demoted = a.Ranked.TierIndex < b.Ranked.TierIndex
	}
	return out
}

// rankersOf returns the ranker of each context of a game type at now, read once for a
// result: its apply, under the store's transaction, only picks one.
func (s *Service) rankersOf(ctx context.Context, gameType string, now time.Time) (func(Context) *ranker, error) {
	pick, err := s.modelsOf(ctx, gameType)
	if err != nil {
		return nil, err
	}
	seasons, err := s.gameSeasons(ctx, fold(gameType))
	if err != nil {
		return nil, err
	}
	cuts := map[string][]float64{}
	for _, se := range seasons {
		if se.Epoch > 0 && se.FinalAt.IsZero() {
			rk := &ranker{model: pick(se.Context), now: now}
			if cuts[se.Context.Key()], err = s.seasonCuts(ctx, se, rk.ranking(se)); err != nil {
				return nil, err
			}
		}
	}
	return func(c Context) *ranker {
		rk := &ranker{model: pick(c), now: now}
		for _, se := range seasons {
			if se.Epoch > 0 && se.Context.Equal(c) {
				rk.seasons = append(rk.seasons, se)
			}
		}
		if cur, ok := Current(seasons, c); ok {
			rk.season, rk.cuts = &cur, cuts[c.Key()]
		}
		return rk
	}, nil
}

// changes is what an outcome did to each participant's place, in its updates' order.
func (rk *ranker) changes(o Outcome) []Change {
	out := make([]Change, len(o.Updates))
	for i, u := range o.Updates {
		out[i] = rk.change(u.Before, u.After)
	}
	return out
}

// keep stores a change in a receipt's update.
func (su *storedUpdate) keep(c Change) {
	su.Promoted, su.Demoted, su.SuspectedSmurf = c.Promoted, c.Demoted, c.SuspectedSmurf
	if c.Ranked == nil {
		return
	}
	su.Season, su.Tier, su.TierIndex = c.Ranked.Season, c.Ranked.Tier, c.Ranked.TierIndex
	if p := c.Ranked.Placement; p != nil {
		su.Played, su.Needed = p.Played, p.Needed
	}
}

// change is the change a receipt's update kept (NewlySuspected is not kept: a replay
// announces nothing new).
func (su storedUpdate) change() Change {
	c := Change{Promoted: su.Promoted, Demoted: su.Demoted, SuspectedSmurf: su.SuspectedSmurf}
	if su.Season == "" {
		return c
	}
	c.Ranked = &Ranked{Season: su.Season, Tier: su.Tier, TierIndex: su.TierIndex}
	if su.Tier == "" {
		c.Ranked.Placement = &Placement{Played: su.Played, Needed: su.Needed}
	}
	return c
}

// Viewer returns how reads of context c show its ratings now (View): rated says whether a
// rating is stored, not a newcomer's zero.
func (s *Service) Viewer(ctx context.Context, c Context) (func(r Rating, rated bool) View, error) {
	rk, err := s.rankerOf(ctx, c, s.clock())
	if err != nil {
		return nil, err
	}
	return rk.view, nil
}

// SeasonStandings returns a season of context c and its standings from position offset + 1,
// at most limit: the final ones once kept, else those of the season under way, live (its
// ranked players by conservative rating now), else none (it has not started).
func (s *Service) SeasonStandings(ctx context.Context, c Context, name string, offset, limit int) (Season, []Standing, error) {
	if err := ValidateName(name); err != nil {
		return Season{}, nil, apperr.Field("season", "%s", err)
	}
	if limit < 1 || limit > MaxLeaderboard {
		return Season{}, nil, apperr.Field("limit", "must be an integer from 1 to %d", MaxLeaderboard)
	}
	ss, err := s.seasonStore()
	if err != nil {
		return Season{}, nil, err
	}
	seasons, err := ss.Seasons(ctx, c.GameType)
	if err != nil {
		return Season{}, nil, err
	}
	i := slices.IndexFunc(seasons, func(se Season) bool { return se.Name == name && se.Context.Equal(c) })
	if i < 0 {
		return Season{}, nil, SeasonNotFoundError(c, name)
	}
	se := seasons[i]
	switch {
	case !se.FinalAt.IsZero():
		rows, err := ss.Standings(ctx, c, name, offset, limit)
		return se, rows, err
	case se.Epoch == 0:
		return se, []Standing{}, nil
	}
	rows, err := s.liveStandings(ctx, se, offset+limit)
	if err != nil {
		return Season{}, nil, err
	}
	return se, rows[min(offset, len(rows)):], nil
}

// liveStandings are the first n of a season under way's ranked players, best first.
func (s *Service) liveStandings(ctx context.Context, se Season, n int) ([]Standing, error) {
	rk, err := s.rankerOf(ctx, se.Context, s.clock())
	if err != nil {
		return nil, err
	}
	by := rk.ranking(se)
	top, err := s.store.Leaderboard(ctx, se.Context, n, by)
	if err != nil {
		return nil, err
	}
	ss, err := s.seasonStore()
	if err != nil {
		return nil, err
	}
	scores, err := ss.Scores(ctx, se.Context, by)
	if err != nil {
		return nil, err
	}
	out := make([]Standing, len(top))
	for i, rp := range top {
		v := rk.view(rp.Rating, true)
		out[i] = Standing{Context: se.Context, Season: se.Name, StartsAt: se.StartsAt, Player: rp.Participant.ID, Position: i + 1,
			Of: len(scores), Tier: v.Ranked.Tier, Rating: v.Rating, Score: v.Conservative}
	}
	return out, nil
}

// PlayerSeasons returns a player's final standing in every season he was ranked in and, for
// each context with a season under way in which he is ranked, his live one (Final false),
// by context key, then season start.
func (s *Service) PlayerSeasons(ctx context.Context, playerID string) ([]Standing, error) {
	if err := ValidateID(playerID); err != nil {
		return nil, apperr.Field("id", "%s", err)
	}
	ss, err := s.seasonStore()
	if err != nil {
		return nil, err
	}
	out, err := ss.PlayerStandings(ctx, playerID)
	if err != nil {
		return nil, err
	}
	rated, err := s.store.PlayerRatings(ctx, playerID)
	if err != nil {
		return nil, err
	}
	for _, cr := range rated {
		rk, err := s.rankerOf(ctx, cr.Context, s.clock())
		if err != nil {
			return nil, err
		}
		v := rk.view(cr.Rating, true)
		if !v.Ranked.Placed() {
			continue
		}
		by := rk.ranking(*rk.season)
		scores, err := ss.Scores(ctx, cr.Context, by)
		if err != nil {
			return nil, err
		}
		above := len(scores) - sort.SearchFloat64s(scores, math.Nextafter(v.Conservative, math.Inf(1)))
		out = append(out, Standing{Context: cr.Context, Season: rk.season.Name, StartsAt: rk.season.StartsAt, Player: playerID,
			Position: above + 1, Of: len(scores), Tier: v.Ranked.Tier, Rating: v.Rating, Score: v.Conservative})
	}
	slices.SortFunc(out, func(a, b Standing) int {
		return cmp.Or(strings.Compare(a.Context.Key(), b.Context.Key()), a.StartsAt.Compare(b.StartsAt))
	})
	return out, nil
}
