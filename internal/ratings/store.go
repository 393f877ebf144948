package ratings

import (
	"context"
	"crypto/sha256"
	"iter"
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
	// Leaderboard returns the top players (not bots) of context c by Ranking.Score, highest
	// first, ties by id; at most limit of them.
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

// Ranking orders a leaderboard: by Score, the skill less K standard deviations. The zero
// Ranking orders by skill.
type Ranking struct {
	// K is how many standard deviations are taken off: 0 ranks by skill, K > 0 by a
	// conservative estimate, below which the skill lies with probability Phi(-K).
	K float64
	// PriorSigma stands for the standard deviation of a rating whose Sigma is 0 (the model's
	// prior: ratings stored before the model kept one).
	PriorSigma float64
}

// Score is the rating's place on the leaderboard: Skill - K sigma. The product is rounded
// before the subtraction (no fused multiply-add), so that every store computes the same bits.
func (r Ranking) Score(rt Rating) float64 {
	if r.K == 0 {
		return rt.Skill
	}
	s := rt.Sigma
	if s <= 0 {
		s = r.PriorSigma
	}
	return rt.Skill - float64(r.K*s)
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
