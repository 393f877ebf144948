package ratings

import (
	"cmp"
	"fmt"
	"iter"
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Season is a ranked season of one rating context: from StartsAt to EndsAt, its ratings
// soft-reset once at the start, a player's rank hidden until he has played PlacementGames in
// it, his tier read from his conservative rating, and the final standings kept at the end.
// Seasons of one context do not overlap.
type Season struct {
	Context        Context
	Name           string
	StartsAt       time.Time
	EndsAt         time.Time
	Reset          SeasonReset
	PlacementGames int
	Tiers          Tiers

	// What the store keeps of the season's course.
	//
	// Epoch is the season's number among its context's resets (1 for the first reset, then
	// 2, ...), 0 until its reset is applied; a rating reset for it carries it (Rating.Season).
	Epoch int64
	// ResetAt is when the reset was applied, ResetMean the mean skill of the context's players
	// it pulled ratings towards, ResetSigma the uncertainty it took for a rating without one
	// (the model's prior), ResetAfter the last result (in the store's order of acceptance) it
	// came after: a rebuild applies it there again.
	ResetAt    time.Time
	ResetMean  float64
	ResetSigma float64
	ResetAfter int64
	// ResetAltMean is the mean second belief (Rating.AltSkill, ns2-mix's openskill-pl) of the
	// context's players that have one (MeanAltSkill), which the reset pulls those towards.
	ResetAltMean float64
	// FinalAt is when the final standings were kept; zero before.
	FinalAt time.Time
}

// SeasonReset is a season's soft reset of every rating of its context.
type SeasonReset struct {
	// Keep is the fraction of each skill's distance from the mean kept, 0..1: 0 puts every
	// player at the mean, 1 keeps every skill.
	Keep float64
	// AddSD is added to each skill's uncertainty (standard deviations add as variances), so
	// that the season's first results move everyone faster.
	AddSD float64
}

// Season defaults, when a definition leaves them out.
const (
	// DefaultResetKeep and DefaultResetAddSD are a gentle reset: a reset forgets what the
	// model knew, and costs its predictions (docs/ranked.md has what a season a year on ATP
	// doubles costs with these and with a harder reset).
	DefaultResetKeep      = 0.8
	DefaultResetAddSD     = 0.5
	DefaultPlacementGames = 5
	// MaxPlacementGames bounds placement_games.
	MaxPlacementGames = 100
	// MaxTiers bounds the tiers of a season.
	MaxTiers = 32
	// MaxSeasons bounds the seasons of one context.
	MaxSeasons = 1000
)

// Tiers are a season's ranks: Fixed tiers over the conservative rating on the weight scale
// (0..100, 50 the average), or Percentiles of the season's ranked players. Exactly one of
// Fixed and Percentiles is set.
type Tiers struct {
	// Fixed lists the tiers from the lowest: each starts at its Min (the first has none, it
	// takes everything below the second's), the Mins ascending.
	Fixed []Tier
	// Percentiles are the cuts, ascending in (0, 100): with [50, 80, 95, 99] the first tier
	// holds the bottom half of the season's ranked players, the last its top 1%. Names are the
	// tiers' names from the lowest, one more than the cuts.
	Percentiles []float64
	Names       []string
}

// Tier is a fixed tier: its name and the conservative weight it starts at.
type Tier struct {
	Name string
	Min  float64
}

// DefaultTiers are a season's tiers when its definition gives none: five tiers by the
// season's percentiles.
func DefaultTiers() Tiers {
	return Tiers{Percentiles: []float64{50, 80, 95, 99}, Names: []string{"Bronze", "Silver", "Gold", "Platinum", "Diamond"}}
}

// Count is how many tiers there are.
func (t Tiers) Count() int {
	if len(t.Fixed) > 0 {
		return len(t.Fixed)
	}
	return len(t.Percentiles) + 1
}

// Name is the name of the i-th tier from the lowest.
func (t Tiers) Name(i int) string {
	if len(t.Fixed) > 0 {
		return t.Fixed[i].Name
	}
	return t.Names[i]
}

// Index is the tier of a conservative score (skill less ConservativeK standard deviations,
// as Ranking.Score): for fixed tiers the last whose Min is at most the score's weight
// (Rating.Weight), for percentiles how many of the cuts (SeasonCuts) are at most the score.
func (t Tiers) Index(score float64, cuts []float64) int {
	i := 0
	if len(t.Fixed) > 0 {
		w := Rating{Skill: score}.Weight()
		for j := 1; j < len(t.Fixed); j++ {
			if t.Fixed[j].Min <= w {
				i = j
			}
		}
		return i
	}
	for _, c := range cuts {
		if c <= score {
			i++
		}
	}
	return i
}

// Validate reports every fault of the season's definition (not of its course) at once, as
// an apperr.Invalid error whose fields are the API's: starts_at, ends_at, reset.keep,
// reset.add_sd, placement_games, tiers[i].name, tiers[i].min, tiers.percentiles[i],
// tiers.names.
func (s *Season) Validate() error {
	var f apperr.Fields
	if msg := checkName(s.Name); msg != "" {
		f.Add("season", "%s", msg)
	}
	switch {
	case s.StartsAt.IsZero():
		f.Add("starts_at", "is required")
	case s.EndsAt.IsZero():
		f.Add("ends_at", "is required")
	case !s.EndsAt.After(s.StartsAt):
		f.Add("ends_at", "must be after starts_at (%s): a season cannot end before it starts", s.StartsAt.Format(time.RFC3339))
	}
	for _, tm := range []struct {
		field string
		t     time.Time
	}{{"starts_at", s.StartsAt}, {"ends_at", s.EndsAt}} {
		if !tm.t.IsZero() && (tm.t.Year() < 1970 || tm.t.Year() > 9999) {
			f.Add(tm.field, "must be a time from 1970 to 9999")
		}
	}
	if k := s.Reset.Keep; !finite(k) || k < 0 || k > 1 {
		f.Add("reset.keep", "must be a number from 0 to 1 (the fraction of each player's distance from the mean kept)")
	}
	if a := s.Reset.AddSD; !finite(a) || a < 0 || a > 10 {
		f.Add("reset.add_sd", "must be a number from 0 to 10")
	}
	if s.PlacementGames < 0 || s.PlacementGames > MaxPlacementGames {
		f.Add("placement_games", "must be an integer from 0 to %d", MaxPlacementGames)
	}
	s.Tiers.check(&f)
	return f.Err()
}

func (t Tiers) check(f *apperr.Fields) {
	switch {
	case len(t.Fixed) > 0 && len(t.Percentiles) > 0:
		f.Add("tiers", "give fixed tiers or percentiles, not both")
		return
	case len(t.Fixed) == 0 && len(t.Percentiles) == 0:
		f.Add("tiers", "must list at least one tier, or percentiles")
		return
	case t.Count() > MaxTiers:
		f.Add("tiers", "must make at most %d tiers", MaxTiers)
		return
	}
	if len(t.Fixed) > 0 {
		checkTierNames(f, func(i int) string { return fmt.Sprintf("tiers[%d].name", i) }, len(t.Fixed), func(i int) string { return t.Fixed[i].Name })
		for i, tier := range t.Fixed {
			switch {
			case i == 0 && tier.Min != 0:
				f.Add("tiers[0].min", "must be left out: the first tier holds everything below the second's min")
			case i == 0:
			case !finite(tier.Min) || tier.Min < 0 || tier.Min > 100:
				f.Add(fmt.Sprintf("tiers[%d].min", i), "must be a weight from 0 to 100 (the conservative rating's, 50 the average)")
			case i > 1 && tier.Min <= t.Fixed[i-1].Min:
				f.Add(fmt.Sprintf("tiers[%d].min", i), "must be above tiers[%d].min (%g): tiers ascend", i-1, t.Fixed[i-1].Min)
			}
		}
		return
	}
	for i, p := range t.Percentiles {
		switch {
		case !finite(p) || p <= 0 || p >= 100:
			f.Add(fmt.Sprintf("tiers.percentiles[%d]", i), "must be a number between 0 and 100")
		case i > 0 && p <= t.Percentiles[i-1]:
			f.Add(fmt.Sprintf("tiers.percentiles[%d]", i), "must be above tiers.percentiles[%d] (%g): tiers ascend", i-1, t.Percentiles[i-1])
		}
	}
	if len(t.Names) != len(t.Percentiles)+1 {
		f.Add("tiers.names", "must name %d tiers (one more than the percentiles), got %d", len(t.Percentiles)+1, len(t.Names))
		return
	}
	checkTierNames(f, func(i int) string { return fmt.Sprintf("tiers.names[%d]", i) }, len(t.Names), func(i int) string { return t.Names[i] })
}

// checkTierNames: every name 1..64 bytes of text, none twice.
func checkTierNames(f *apperr.Fields, field func(int) string, n int, name func(int) string) {
	seen := map[string]int{}
	for i := range n {
		nm := name(i)
		switch {
		case nm == "":
			f.Add(field(i), "is required")
		case len(nm) > MaxNameLen:
			f.Add(field(i), "must be at most %d bytes", MaxNameLen)
		case checkText(nm, true) != nil:
			f.Add(field(i), "%s", checkText(nm, true))
		default:
			if j, ok := seen[nm]; ok {
				f.Add(field(i), "repeats the name of tier %d", j)
			}
			seen[nm] = i
		}
	}
}

// CheckSeasonOrder is the rule between a season and the others of its context (its own
// earlier definition, under the same name, excluded): no two overlap, and none starts before
// a season whose reset was applied ends, since resets happen in the order seasons start. A
// fault names starts_at or ends_at.
func CheckSeasonOrder(s Season, others []Season) error {
	var f apperr.Fields
	for _, o := range others {
		if o.Name == s.Name || !o.Context.Equal(s.Context) {
			continue
		}
		switch {
		case s.StartsAt.Before(o.EndsAt) && o.StartsAt.Before(s.EndsAt):
			f.Add("starts_at", "the season overlaps season %q (%s to %s) of context %s: seasons of one context may not overlap",
				o.Name, o.StartsAt.Format(time.RFC3339), o.EndsAt.Format(time.RFC3339), o.Context)
		case o.Epoch > 0 && s.StartsAt.Before(o.StartsAt):
			f.Add("starts_at", "season %q of context %s (from %s) is under way or over: a new season must start after it",
				o.Name, o.Context, o.StartsAt.Format(time.RFC3339))
		}
	}
	if len(others) >= MaxSeasons {
		f.Add("season", "context %s has %d seasons, the most it may have", s.Context, MaxSeasons)
	}
	return f.Err()
}

// Redefine is the stored season old redefined as s: once old's reset was applied its start
// and reset are fixed (a Conflict naming them if they change), and once its final standings
// are kept nothing changes. The course (epoch, reset, final) is old's.
func Redefine(old, s Season) (Season, error) {
	if !old.FinalAt.IsZero() {
		return Season{}, apperr.New(apperr.Conflict, "season %q of context %s is over (final standings kept at %s): it cannot change",
			old.Name, old.Context, old.FinalAt.Format(time.RFC3339))
	}
	if old.Epoch > 0 && (!old.StartsAt.Equal(s.StartsAt) || old.Reset != s.Reset) {
		return Season{}, &apperr.Error{Code: apperr.Conflict, Message: fmt.Sprintf("season %q of context %s started (its reset was applied at %s): starts_at and reset cannot change",
			old.Name, old.Context, old.ResetAt.Format(time.RFC3339)), Fields: []apperr.FieldError{{Field: "starts_at", Message: "is fixed once the season's reset is applied"}}}
	}
	s.Epoch, s.ResetAt, s.ResetMean, s.ResetSigma, s.ResetAfter = old.Epoch, old.ResetAt, old.ResetMean, old.ResetSigma, old.ResetAfter
	s.ResetAltMean = old.ResetAltMean
	return s, nil
}

// apply soft-resets one rating for the season: its skill pulled towards the reset's mean, its
// uncertainty grown by AddSD, its season games started again. A rating with a second belief
// (ns2-mix's openskill-pl: AltSigma > 0) has it reset by the same rule on its own scale: its
// skill pulled towards the second beliefs' mean (ResetAltMean) keeping Keep of the distance,
// its uncertainty grown by the factor the first's grew by (AddSD is in the first model's
// units; a factor is the same on both scales). A rating without one keeps its zeros.
func (s *Season) apply(r Rating) Rating {
	r.Skill = s.ResetMean + s.Reset.Keep*(r.Skill-s.ResetMean)
	sd := r.Sigma
	if sd <= 0 {
		sd = s.ResetSigma
	}
	grown := math.Sqrt(sd*sd + s.Reset.AddSD*s.Reset.AddSD)
	if r.AltSigma > 0 {
		r.AltSkill = s.ResetAltMean + s.Reset.Keep*(r.AltSkill-s.ResetAltMean)
		if sd > 0 {
			r.AltSigma *= grown / sd
		}
	}
	r.Sigma = grown
	r.Season, r.SeasonGames = s.Epoch, 0
	return r
}

// CatchUp applies to a rating every reset of its context it has not had yet: the seasons'
// (of one context, in any order) whose reset was applied, with an epoch above the rating's,
// in the order of their epochs. A store calls it on the ratings it reads for a result, so
// that a rating the bulk reset has not reached yet is reset before it is learnt from.
func CatchUp(r Rating, seasons []Season) Rating {
	for _, s := range resetsAfter(seasons, r.Season) {
		r = s.apply(r)
	}
	return r
}

// resetsAfter lists the seasons whose reset was applied with an epoch above epoch, by epoch.
func resetsAfter(seasons []Season, epoch int64) []*Season {
	var out []*Season
	for i := range seasons {
		if seasons[i].Epoch > epoch {
			out = append(out, &seasons[i])
		}
	}
	slices.SortFunc(out, func(a, b *Season) int { return int(a.Epoch - b.Epoch) })
	return out
}

// MeanSkill is the mean skill of the players (not bots) of a context's ratings, summed in
// participant order (0 with none): the mean a season's reset pulls towards. Both stores
// compute it with it, over the same ratings, so they agree to the bit.
func MeanSkill(rs []RatedParticipant) float64 {
	var sum float64
	n := 0
	for _, rp := range rs {
		if !rp.Participant.Bot {
			sum += rp.Rating.Skill
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// MeanAltSkill is the mean second belief (Rating.AltSkill) of the players (not bots) that have
// one (AltSigma > 0), summed in participant order as MeanSkill sums (0 with none): the mean a
// season's reset pulls an ns2-mix context's second beliefs towards.
func MeanAltSkill(rs []RatedParticipant) float64 {
	var sum float64
	n := 0
	for _, rp := range rs {
		if !rp.Participant.Bot && rp.Rating.AltSigma > 0 {
			sum += rp.Rating.AltSkill
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// Current is the context's season under way among seasons (of any contexts): the one of c
// whose reset was applied and whose final standings are not kept yet.
func Current(seasons []Season, c Context) (Season, bool) {
	for _, s := range seasons {
		if s.Epoch > 0 && s.FinalAt.IsZero() && s.Context.Equal(c) {
			return s, true
		}
	}
	return Season{}, false
}

// Due says what a season needs at now: its reset (it has started and none was applied), its
// final standings (it has ended, was reset, and has none), or nothing.
func (s *Season) Due(now time.Time) (reset, final bool) {
	switch {
	case s.Epoch == 0 && !now.Before(s.StartsAt):
		return true, false
	case s.Epoch > 0 && s.FinalAt.IsZero() && !now.Before(s.EndsAt):
		return false, true
	}
	return false, false
}

// latestEpoch is the highest epoch among seasons (0 with none reset).
func latestEpoch(seasons []Season) int64 {
	var e int64
	for _, s := range seasons {
		e = max(e, s.Epoch)
	}
	return e
}

// InSeason is a rating a result wrote in a context whose reset seasons are seasons, marked as
// having had every reset of it: a newcomer's first rating starts in the season under way. A
// store calls it on every rating it writes for a result.
func InSeason(r Rating, seasons []Season) Rating { return stampSeason(r, latestEpoch(seasons)) }

// stampSeason is a rating marked as having had every reset of its context up to epoch.
func stampSeason(r Rating, epoch int64) Rating {
	if r.Season < epoch {
		r.Season = epoch
	}
	return r
}

// ReplayWithResets replays part of a game type's history through replay as a rebuild does,
// from the states from (nil: none yet), and applies each season's reset (of seasons, the game
// type's: those whose reset was applied) that came after a result numbered in (lo, hi] right
// after that result (Season.ResetAfter; history yields each result with its number in the
// store's order of acceptance), to the state of its context as replayed so far, pulling
// towards that state's players' mean. It returns the states, every rating of a context
// stamped with the latest epoch applied to it, and the resets it applied with their means as
// the replay found them.
func ReplayWithResets(policy *MutatorPolicy, replay ReplayFunc, from map[string]*State, seasons []Season, lo, hi int64,
	history iter.Seq2[int64, Result]) (map[string]*State, []Season, error) {
	var resets []Season
	for _, se := range seasons {
		if se.Epoch > 0 && se.ResetAfter > lo && se.ResetAfter <= hi {
			resets = append(resets, se)
		}
	}
	slices.SortFunc(resets, func(a, b Season) int {
		return cmp.Or(cmp.Compare(a.ResetAfter, b.ResetAfter), cmp.Compare(a.Epoch, b.Epoch))
	})
	next, stop := iter.Pull2(history)
	defer stop()
	var held *Result // a result pulled past the segment's end, for the next segment
	var heldSeq int64
	states := from
	for i := 0; i <= len(resets); i++ {
		end := int64(math.MaxInt64)
		if i < len(resets) {
			end = resets[i].ResetAfter
		}
		segment := func(yield func(Result) bool) {
			for {
				if held == nil {
					seq, r, ok := next()
					if !ok {
						return
					}
					held, heldSeq = &r, seq
				}
				if heldSeq > end {
					return
				}
				r := *held
				held = nil
				if !yield(r) {
					return
				}
			}
		}
		var err error
		if states, err = replay(policy, states, segment); err != nil {
			return nil, nil, err
		}
		if i < len(resets) {
			resetState(states, &resets[i])
		}
	}
	for key, st := range states {
		var epoch int64
		for _, se := range seasons {
			if se.Epoch > 0 && se.ResetAfter <= hi && se.Context.Key() == key {
				epoch = max(epoch, se.Epoch)
			}
		}
		for p, r := range st.Ratings {
			st.Ratings[p] = stampSeason(r, epoch)
		}
	}
	return states, resets, nil
}

// resetState applies a season's reset to its context's replayed state, the mean taken from
// the state's players.
func resetState(states map[string]*State, se *Season) {
	st := states[se.Context.Key()]
	if st == nil {
		return
	}
	all := make([]RatedParticipant, 0, len(st.Ratings))
	for _, p := range st.Participants() {
		all = append(all, RatedParticipant{p, st.Ratings[p]})
	}
	se.ResetMean, se.ResetAltMean = MeanSkill(all), MeanAltSkill(all)
	for _, rp := range all {
		st.Ratings[rp.Participant] = se.apply(rp.Rating)
	}
}
