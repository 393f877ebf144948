package ratings

import (
	"context"
	"crypto/sha256"
	"iter"
	"math"
	"time"
)

// Store keeps what the model learns: ratings per context, the side-bias table, the mutator
// policy, and the history of results with the response each one got (for idempotent replays
// and rebuilds). MemoryStore implements it in process; the db package implements it on
// Postgres. Both pass the contract suite in ratings/storetest.
//
// Errors are apperr errors: Conflict for a match id reused with another body, Invalid for
// a result whose context is malformed, Unavailable when the backing database cannot be
// reached. Store methods are safe for concurrent use.
type Store interface {
	// RecordResult applies one result atomically. In one transaction it
	//  1. finds a result already stored under req.Result.MatchID: with the same BodyHash it
	//     returns that result's stored response with Replayed set and changes nothing; with
	//     another BodyHash it fails with apperr.Conflict;
	//  2. derives the rating context from the stored mutator policy (MutatorPolicy.Context)
	//     and records the mutators the policy did not know as unknown;
	//  3. reads the current ratings of every participant of the result in that context,
	//     locked against concurrent results (in a fixed order, so two results over the same
	//     players neither deadlock nor lose an update), and the context's bias table for the
	//     result's side pair;
	//  4. calls apply with them; apply returns the outcome to store and the receipt to keep
	//     for replays (Service.Record's encoding of the outcome; it may be called again if the
	//     transaction is retried, so it must be a pure function of its arguments);
	//  5. stores every participant's new rating, the bias update, the result as history and
	//     the response.
	// If apply or any step fails, nothing is stored.
	RecordResult(ctx context.Context, req RecordRequest, apply ApplyFunc) (Recorded, error)

	// Ratings returns the stored ratings of the given participants in context c; those
	// without a rating are absent from the map.
	Ratings(ctx context.Context, c Context, ps []Participant) (map[Participant]Rating, error)
	// PlayerRatings returns the player's rating in every context it has one, by context key.
	PlayerRatings(ctx context.Context, playerID string) ([]ContextRating, error)
	// Leaderboard returns the top players (not bots) of context c that by includes, by
	// Ranking.Score, highest first, ties by id; at most limit of them.
	Leaderboard(ctx context.Context, c Context, limit int, by Ranking) ([]RatedParticipant, error)
	// Bias returns what the bias table of context c holds for a match filed under k: k's cell
	// and its side pair's total, as a BiasTable (the one RecordResult would give apply, but
	// for results not committed yet).
	Bias(ctx context.Context, c Context, k BiasKey) (BiasTable, error)
	// BotMean returns the mean weight (Rating.Weight) of the bots rated in context c and how
	// many there are; with none it returns 50 and 0.
	BotMean(ctx context.Context, c Context) (mean float64, count int, err error)

	// Policy returns the current mutator policy (a copy the caller may keep).
	Policy(ctx context.Context) (*MutatorPolicy, error)
	// SetMutator classifies a mutator (the admin's PUT /v1/mutators/{name}) and returns it as
	// stored. It does not change stored ratings: a rebuild re-splits the history.
	SetMutator(ctx context.Context, name string, affectsGameplay bool) (MutatorInfo, error)

	// Rebuild recomputes every context of a game type from the stored history: it reads the
	// policy and the game type's results in the order they were accepted, replays them
	// through replay (as a stream: the history is never held whole), and replaces all of the
	// game type's ratings and bias cells with the states replay returns (keyed by
	// Context.Key). Results of the game type recorded while it runs are not lost: replay is
	// called again with the states so far and those results, in the order they were
	// accepted, so that the ratings it leaves are those of a rebuild that had come after
	// them. (The Postgres store keeps taking results meanwhile, holding them off only for its
	// last, short step; the in-memory store holds them off throughout.) progress, if not
	// nil, is told how far the store has got.
	Rebuild(ctx context.Context, gameType string, replay ReplayFunc, progress func(Progress)) (RebuildReport, error)

	// StoredResult returns the result stored under matchID (NotFound if none).
	StoredResult(ctx context.Context, matchID string) (Result, error)
	// DeleteResult removes the result stored under matchID, a match of gameType (NotFound if
	// there is none, or it is of another game type), and rebuilds gameType as Rebuild does,
	// with replay: every rating and bias cell of the game type ends as if the result had never
	// been recorded, and results recorded while it runs are kept as Rebuild keeps them. The
	// result is removed in the same step as the rebuild's last rows are written: a deletion
	// that fails leaves the result stored (and may leave the game type part rebuilt, from a
	// history without it: run it again). Once deleted, the match id may be recorded again.
	DeleteResult(ctx context.Context, matchID, gameType string, replay ReplayFunc, progress func(Progress)) (RebuildReport, error)

	// History calls fn with every stored result of a game type, in the order they were
	// accepted, reading them as it goes (it does not hold them all); an error from fn stops
	// it and is returned as it is. fn must not call back into the store.
	History(ctx context.Context, gameType string, fn func(Result) error) error
	// Tunings returns the tuned parameters stored for the contexts of a game type, by
	// Context.Key.
	Tunings(ctx context.Context, gameType string) (map[string]Tuning, error)
	// SaveTunings replaces every tuning of a game type with ts (each of a context of it).
	SaveTunings(ctx context.Context, gameType string, ts []Tuning) error

	SeasonStore
	AutoTuneStore

	// Ping reports whether the store can be reached.
	Ping(ctx context.Context) error
	// Name says which implementation this is: "memory" or "postgres".
	Name() string
}

// Tuning is a context's fitted hyperparameters (Tune), as stored: the model they are for,
// the parameters, and the report of the fit.
type Tuning struct {
	Context Context
	Model   string
	Params  TunedParams
	Report  TuneReport
	// At is when it was fitted (zero for a tuning stored before round 4). Auto: by the
	// service itself (Service.AutoTune), which keeps its attempts that were not accepted too,
	// so as to know when it tried; a tuning not accepted is not used.
	At   time.Time
	Auto bool
}

// AutoTuneStore keeps what self-tuning needs beyond Store: how many results each context has,
// and one context's tuning at a time.
type AutoTuneStore interface {
	// ResultCounts returns how many results each context of a game type (every game type's
	// for "") holds, by the context each was rated in when accepted, by Context.Key.
	ResultCounts(ctx context.Context, gameType string) (map[string]int, error)
	// SaveTuning replaces the tuning of one context (checked as SaveTunings checks a set).
	SaveTuning(ctx context.Context, t Tuning) error
	// ClaimTune takes the claim to tune the context (by Context.Key) for one replica of
	// those sharing the store, until release; claimed is false, and release nil, while
	// another holds it.
	ClaimTune(ctx context.Context, key string) (release func(), claimed bool, err error)
}

// RecordRequest is one result to record.
type RecordRequest struct {
	Result Result
	// BodyHash identifies the result's meaning for idempotency (Result.Fingerprint): the same
	// match id with the same hash is a replay, with another hash a conflict.
	BodyHash [sha256.Size]byte
}

// ApplyFunc computes a result's outcome from the participants' current ratings (absent ones
// are newcomers) and the context's bias table, and encodes the receipt to keep for replays.
type ApplyFunc func(c Context, prior map[Participant]Rating, bias BiasTable) (Outcome, []byte, error)

// Recorded is what RecordResult did.
type Recorded struct {
	Context  Context
	Response []byte // the kept receipt: this call's, or the first call's on a replay
	Replayed bool
}

// ReplayFunc applies a game type's history, in order, under a policy, to the states from
// (nil: none yet; replay may update them in place) and returns the states, like
// ReplayByContext. It must not hold on to history's results beyond each one's step.
type ReplayFunc func(policy *MutatorPolicy, from map[string]*State, history iter.Seq[Result]) (map[string]*State, error)

// Progress reports a rebuild's phase and how much of it is done.
type Progress struct {
	Phase string // "reading", "replaying", "writing"
	Done  int
	Total int
}

// RebuildReport says what a rebuild replaced.
type RebuildReport struct {
	Results  int // results replayed
	Contexts int // contexts written
	Ratings  int // ratings written
}

// Ranking says which ratings a leaderboard ranks and in which order: by Score, the skill less
// K standard deviations. The zero Ranking orders every rating by skill.
type Ranking struct {
	// K is how many standard deviations are taken off: 0 ranks by skill, K > 0 by a
	// conservative estimate, below which the skill lies with probability Phi(-K).
	K float64
	// PriorSigma stands for the standard deviation of a rating whose Sigma is 0 (the model's
	// prior: ratings stored before the model kept one).
	PriorSigma float64
	// DriftSq and Now grow each standard deviation by the idle drift (a variance of DriftSq a
	// day, Kalman.SkillDriftPerDay squared) from the rating's LastPlayed to Now, in Unix
	// seconds, as a read of the rating shows it: an idle player's conservative score sinks.
	DriftSq float64
	Now     int64
	// Season, when positive, ranks only the ratings of that season epoch (Rating.Season) with
	// at least Placed season games: a season's ranked players.
	Season int64
	Placed int
}

// Sigma is the rating's standard deviation as the ranking reads it: its Sigma (PriorSigma
// when 0), grown by the idle drift to Now. Every product and quotient is rounded on its own
// (no fused multiply-add), so that every store computes the same bits.
func (r Ranking) Sigma(rt Rating) float64 {
	s := rt.Sigma
	if s <= 0 {
		s = r.PriorSigma
	}
	if r.DriftSq > 0 && rt.LastPlayed > 0 && r.Now > rt.LastPlayed {
		days := float64(r.Now-rt.LastPlayed) / 86400
		s = math.Sqrt(float64(s*s) + float64(r.DriftSq*days))
	}
	return s
}

// Score is the rating's place on the leaderboard: Skill - K Sigma. The product is rounded
// before the subtraction (no fused multiply-add), so that every store computes the same bits.
func (r Ranking) Score(rt Rating) float64 {
	if r.K == 0 {
		return rt.Skill
	}
	return rt.Skill - float64(r.K*r.Sigma(rt))
}

// Includes reports whether the ranking ranks the rating: every rating, or for a season only
// those of its epoch with its placement games played.
func (r Ranking) Includes(rt Rating) bool {
	return r.Season == 0 || rt.Season == r.Season && rt.SeasonGames >= r.Placed
}

// ContextRating is a rating in a named context.
type ContextRating struct {
	Context Context
	Rating  Rating
}

// RatedParticipant is a participant with its rating.
type RatedParticipant struct {
	Participant Participant
	Rating      Rating
}

// Replayer is the model's ReplayFunc: ReplayByContext under the given policy, for Rebuild.
func Replayer(m Model) ReplayFunc {
	return func(policy *MutatorPolicy, from map[string]*State, history iter.Seq[Result]) (map[string]*State, error) {
		return replayStream(func(Context) Model { return m }, policy, from, history)
	}
}

// SeasonStore keeps the seasons of every context, applies their resets and keeps their final
// standings. A store applies to every rating it reads for a result the resets it has not had
// yet (CatchUp, in the result's transaction: a result committed after a reset learns from
// reset ratings, one committed before is reset with the rest), and stamps every rating a
// result writes with the context's latest reset epoch.
type SeasonStore interface {
	// PutSeason stores a season's definition, new or replacing the one of its context and
	// name (as Redefine allows), checked against the context's other seasons
	// (CheckSeasonOrder) under a lock, and returns it as stored.
	PutSeason(ctx context.Context, s Season) (Season, error)
	// Seasons returns every season of a game type (every game type's for ""), ordered by
	// context key, then start.
	Seasons(ctx context.Context, gameType string) ([]Season, error)
	// ResetSeason applies the soft reset of c's season name once: in one step it takes the
	// mean skill of c's players (MeanSkill), gives the season the context's next epoch, at,
	// that mean, priorSigma (the uncertainty of a rating without one) and the last result
	// accepted (ResetAfter); from then on every rating of c read for a result is reset first,
	// and the store resets the rest (Season.apply, through CatchUp) before it returns or, for
	// a store that resets in the background, soon after. A season reset already is returned
	// as it is. NotFound for no such season; Conflict for one that has not started at at.
	ResetSeason(ctx context.Context, c Context, name string, at time.Time, priorSigma float64) (Season, error)
	// FinalizeSeason keeps c's season name's final standings once: the ratings by includes
	// (the season's placed players), best first (Ranking.Score, ties by id), given to
	// standings, whose rows are stored with FinalAt = at in one step. A season finalized
	// already is returned as it is; one not reset is a Conflict.
	FinalizeSeason(ctx context.Context, c Context, name string, at time.Time, by Ranking, standings func([]RatedParticipant) []Standing) (Season, error)
	// Standings returns a season's final standings, best first, from position offset + 1, at
	// most limit of them.
	Standings(ctx context.Context, c Context, name string, offset, limit int) ([]Standing, error)
	// PlayerStandings returns a player's final standings in every season he was ranked in,
	// by context key, then season start.
	PlayerStandings(ctx context.Context, playerID string) ([]Standing, error)
	// Scores returns Ranking.Score of every rating of c that by includes, ascending: what a
	// season's percentile tiers are cut from.
	Scores(ctx context.Context, c Context, by Ranking) ([]float64, error)
}

// Standing is one player's place in a season's final standings.
type Standing struct {
	Context  Context
	Season   string
	StartsAt time.Time // the season's, for ordering a player's seasons
	Player   string
	Position int // 1 for the best
	Of       int // players ranked
	Tier     string
	Rating   Rating
	Score    float64 // the Ranking.Score it was ranked by
	// Final: kept at the season's end. A read of a season under way gives live standings,
	// Final false.
	Final bool
}
