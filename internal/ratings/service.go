package ratings

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"iter"
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Service is the ratings use cases every transport calls: HTTP handlers, the line protocol,
// and the ticket queue. It holds the Store and the Model, decides the rules they share (what
// an unrated player or bot weighs, how a request's context is resolved, what makes a result a
// replay), and checks ids before any store call. Adapters decode, call a method, and render
// what it returns; none of them touches the Store.
type Service struct {
	store   Store
	models  *ModelSet
	tunings tuningCache
	seasons seasonCache
	now     func() time.Time
	nudges  tuneNudges
	// paceNow and paceSleep are self-tuning's clock and timer (pacer); nil is the real ones.
	paceNow   func() time.Time
	paceSleep func(context.Context, time.Duration) error
}

// SetClock makes the service read the time from now (time.Now by default): when a result
// without ended_at ended, and when a season is due. For tests; call it before any use.
func (s *Service) SetClock(now func() time.Time) {
	s.now = now
	s.tunings.now = now
}

func (s *Service) clock() time.Time {
	if s.now != nil {
		return s.now()
	}
	return time.Now()
}

// NewService returns the service over store, learning with model in every context.
func NewService(store Store, model Model) *Service {
	return NewServiceWithModels(store, NewModelSet(model))
}

// NewServiceWithModels returns the service over store, each context learning with the model
// the set gives it (nil: DefaultModel everywhere).
func NewServiceWithModels(store Store, models *ModelSet) *Service {
	if models == nil {
		models = NewModelSet(DefaultModel())
	}
	return &Service{store: store, models: models}
}

// Model is the model context c learns with.
func (s *Service) Model(c Context) Model { return s.models.For(c) }

// StoreName says which store is behind the service ("memory" or "postgres").
func (s *Service) StoreName() string { return s.store.Name() }

// Ping reports whether the store can be reached.
func (s *Service) Ping(ctx context.Context) error { return s.store.Ping(ctx) }

// Ready is the readiness check: the store's own (a Postgres store also checks that its
// schema is at the binary's version), else Ping.
func (s *Service) Ready(ctx context.Context) error {
	if r, ok := s.store.(interface{ Ready(context.Context) error }); ok {
		return r.Ready(ctx)
	}
	return s.store.Ping(ctx)
}

// UnknownWeight is the weight of a player with no stored rating in a context: the average
// player, 50 on the 0..100 scale (the weight of the zero Rating).
const UnknownWeight = 50

// Matchmaking puts players on the thesis's 0..2000 rating scale (its eq. 6.5 with default
// coefficients), where /v1/matchmake's and the ticket queue's intervals (25, 50, ...) are
// measured. A stored weight times MatchRatingScale is on that scale, so stored, inline and
// stats-based ratings share one scale and one interval: the average (and unknown) weight 50
// is DefaultMatchRating.
const (
	MatchRatingScale   = 20
	DefaultMatchRating = UnknownWeight * MatchRatingScale
)

// Receipt is what recording a result did: the context it was rated in, the pre-match
// prediction and every participant's move. A replay of the same result returns the first
// receipt with Replayed set; it carries each update's skill before and after and games, which
// is what is kept of it.
type Receipt struct {
	MatchID string
	Context Context
	Outcome Outcome
	// Changes says, for each of Outcome.Updates, what the result did to the participant's
	// place in the season under way (Change.Ranked nil without one) and whether he is a
	// suspected smurf.
	Changes  []Change
	Replayed bool
}

// MaxFutureEnd is how far after the service's clock a result's ended_at may be: the game
// server's clock may be a little ahead.
const MaxFutureEnd = 5 * time.Minute

// Record learns from one finished match: it validates the result, then, in one store
// transaction, reads the participants' ratings, applies the context's model (known only once
// the store has resolved the context) and stores the new ratings
// with the result as history. The same match id with the same result (by meaning: see
// Result.Fingerprint) is a replay that changes nothing; with another result it is a Conflict.
func (s *Service) Record(ctx context.Context, r Result) (Receipt, error) {
	if err := s.Check(r); err != nil {
		return Receipt{}, err
	}
	now := s.clock()
	fingerprint := r.Fingerprint() // of the result as reported: a replay need not repeat the time it was accepted
	if r.EndedAt.IsZero() {
		r.EndedAt = now.UTC() // no monotonic reading: the stored time reads back the same
	}
	model, err := s.modelsOf(ctx, r.GameType)
	if err != nil {
		return Receipt{}, err
	}
	rankers, err := s.rankersOf(ctx, r.GameType, now)
	if err != nil {
		return Receipt{}, err
	}
	var outcome Outcome
	var changes []Change
	rec, err := s.store.RecordResult(ctx, RecordRequest{Result: r, BodyHash: fingerprint},
		func(c Context, prior map[Participant]Rating, bias BiasTable) (Outcome, []byte, error) {
			o, err := model(c).Apply(prior, bias, r)
			if err != nil {
				return Outcome{}, nil, err
			}
			outcome, changes = o, rankers(c).changes(o)
			kept, err := encodeReceipt(r.MatchID, c, o, changes)
			return o, kept, err
		})
	if err != nil {
		return Receipt{}, err
	}
	if !rec.Replayed {
		s.nudges.recorded()
		return Receipt{MatchID: r.MatchID, Context: rec.Context, Outcome: outcome, Changes: changes}, nil
	}
	receipt, err := decodeReceipt(rec.Response)
	if err != nil {
		return Receipt{}, apperr.Wrap(apperr.Internal, err, "the stored result cannot be read")
	}
	receipt.Context, receipt.Replayed = rec.Context, true
	return receipt, nil
}

// Check is the checks of r that Record makes before its store's transaction: the result
// itself, without the store. Record may still refuse it there: another result of its match
// is a Conflict.
func (s *Service) Check(r Result) error {
	if err := r.Validate(); err != nil {
		return err
	}
	if err := r.CheckPresence(); err != nil {
		return err
	}
	if now := s.clock(); r.EndedAt.After(now.Add(MaxFutureEnd)) {
		return apperr.Field("ended_at", "must not be after the service's clock (%s) by more than %s", now.UTC().Format(time.RFC3339), MaxFutureEnd)
	}
	return nil
}

// storedReceipt is how a receipt is kept for replays. Its JSON is the shape round 1 stored
// (the HTTP response of the time), so results recorded before it replay too.
type storedReceipt struct {
	MatchID        string          `json:"match_id"`
	WinProbability [2]float64      `json:"win_probability"`
	Updates        []storedUpdate  `json:"updates"`
	Context        json.RawMessage `json:"context,omitempty"` // kept by round 1; the store returns the context
}

type storedUpdate struct {
	ID     string  `json:"id,omitempty"`
	Bot    string  `json:"bot,omitempty"`
	Team   int     `json:"team"`
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Weight float64 `json:"weight"`
	Games  int     `json:"games"`
	// The season under way (round 4): its name, the tier (or the placement games played and
	// needed), promoted or demoted; and a suspected smurf.
	Season         string `json:"season,omitempty"`
	Tier           string `json:"tier,omitempty"`
	TierIndex      int    `json:"tier_index,omitempty"`
	Played         int    `json:"placement_played,omitempty"`
	Needed         int    `json:"placement_needed,omitempty"`
	Promoted       bool   `json:"promoted,omitempty"`
	Demoted        bool   `json:"demoted,omitempty"`
	SuspectedSmurf bool   `json:"suspected_smurf,omitempty"`
}

func encodeReceipt(matchID string, c Context, o Outcome, changes []Change) ([]byte, error) {
	kept := storedReceipt{MatchID: matchID, WinProbability: o.WinProbability, Updates: make([]storedUpdate, len(o.Updates))}
	for i, u := range o.Updates {
		su := storedUpdate{Team: u.Team, Before: u.Before.Skill, After: u.After.Skill, Weight: u.After.Weight(), Games: u.After.Games}
		if i < len(changes) {
			su.keep(changes[i])
		}
		if u.Participant.Bot {
			su.Bot = u.Participant.ID
		} else {
			su.ID = u.Participant.ID
		}
		kept.Updates[i] = su
	}
	b, err := json.Marshal(kept)
	if err != nil {
		return nil, fmt.Errorf("encode the receipt of %s in %s: %w", matchID, c, err)
	}
	return b, nil
}

func decodeReceipt(b []byte) (Receipt, error) {
	var kept storedReceipt
	if err := json.Unmarshal(b, &kept); err != nil {
		return Receipt{}, err
	}
	r := Receipt{MatchID: kept.MatchID, Outcome: Outcome{WinProbability: kept.WinProbability, Updates: make([]Update, len(kept.Updates))},
		Changes: make([]Change, len(kept.Updates))}
	for i, su := range kept.Updates {
		r.Changes[i] = su.change()
		p := Participant{ID: su.ID}
		if su.Bot != "" {
			p = Participant{ID: su.Bot, Bot: true}
		}
		r.Outcome.Updates[i] = Update{Participant: p, Team: su.Team,
			Before: Rating{Skill: su.Before}, After: Rating{Skill: su.After, Games: su.Games}}
	}
	return r, nil
}

// Fingerprint identifies a result by its meaning, for idempotency: two results with the same
// fingerprint are the same report of a match. Names the model compares without case (game
// type, mutators, sides, map) are folded, mutators are a set, and each team's participants
// are a set (their order in the report carries no meaning); times are the values the model
// reads, so a left_s given as the match's duration and one left out are the same, and so are
// "mutators": [] and no mutators. Team order carries meaning (winner is an index) and is kept.
func (r Result) Fingerprint() [sha256.Size]byte {
	h := sha256.New()
	var buf []byte
	str := func(s string) { buf = binary.AppendUvarint(buf, uint64(len(s))); buf = append(buf, s...) }
	num := func(x float64) { buf = binary.BigEndian.AppendUint64(buf, math.Float64bits(x)) }
	str(r.MatchID)
	str(fold(r.GameType))
	mutators := make([]string, len(r.Mutators))
	for i, m := range r.Mutators {
		mutators[i] = fold(m)
	}
	slices.Sort(mutators)
	mutators = slices.Compact(mutators)
	buf = binary.AppendUvarint(buf, uint64(len(mutators)))
	for _, m := range mutators {
		str(m)
	}
	str(fold(r.Map))
	num(r.DurationS)
	winner := -1
	if r.Winner != nil {
		winner = *r.Winner
	}
	buf = binary.AppendVarint(buf, int64(winner))
	buf = binary.AppendUvarint(buf, uint64(len(r.Teams)))
	for _, t := range r.Teams {
		str(fold(t.Side))
		players := slices.Clone(t.Players)
		slices.SortFunc(players, func(a, b Player) int { return a.Participant().Compare(b.Participant()) })
		buf = binary.AppendUvarint(buf, uint64(len(players)))
		for _, p := range players {
			who := p.Participant()
			if who.Bot {
				buf = append(buf, 'b')
			} else {
				buf = append(buf, 'p')
			}
			str(who.ID)
			num(p.JoinedS)
			num(p.LeftS)
			num(p.CommanderS)
		}
		h.Write(buf)
		buf = buf[:0]
	}
	if !r.EndedAt.IsZero() { // round 4: results without one hash as before
		buf = append(buf, 't')
		buf = binary.AppendVarint(buf, r.EndedAt.UnixNano())
	}
	h.Write(buf)
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}

// Context resolves the game type and mutators a request names into its rating context,
// through the stored mutator policy: a mutator that does not affect gameplay does not split
// the context. Faults name the fields context.game_type and context.mutators[i].
func (s *Service) Context(ctx context.Context, gameType string, mutators []string) (Context, error) {
	if _, err := NewContext(gameType, mutators); err != nil {
		return Context{}, err // checked before the store is asked for the policy
	}
	policy, err := s.store.Policy(ctx)
	if err != nil {
		return Context{}, err
	}
	c, _, err := policy.Context(gameType, mutators)
	return c, err
}

// Weight is what a participant weighs in a context, on the 0..100 scale that team splits,
// matchmaking and the line protocol use.
type Weight struct {
	Value  float64
	Rated  bool   // whether Value comes from the participant's own stored rating
	Rating Rating // the stored rating; zero when not rated
}

// Weights returns the weight of each participant in context c, in order. The one rule for
// those not rated, for every transport: a player weighs UnknownWeight (the average player);
// a bot weighs the mean weight of the context's rated bots (the seed's "over-all average of
// bots" for a bot not known yet), UnknownWeight when no bot is rated. Ids are checked first.
func (s *Service) Weights(ctx context.Context, c Context, ps []Participant) ([]Weight, error) {
	if err := checkParticipants(ps); err != nil {
		return nil, err
	}
	out := make([]Weight, len(ps))
	if len(ps) == 0 {
		return out, nil
	}
	stored, err := s.store.Ratings(ctx, c, ps)
	if err != nil {
		return nil, err
	}
	botMean := -1.0 // read once, only if an unrated bot needs it
	for i, p := range ps {
		if r, ok := stored[p]; ok {
			out[i] = Weight{Value: r.Weight(), Rated: true, Rating: r}
			continue
		}
		out[i].Value = UnknownWeight
		if p.Bot {
			if botMean < 0 {
				if botMean, _, err = s.BotMean(ctx, c); err != nil {
					return nil, err
				}
			}
			out[i].Value = botMean
		}
	}
	return out, nil
}

// BotMean returns the mean weight of the bots rated in context c and how many there are
// (UnknownWeight and 0 when none): the weight of a bot whose identity is not known yet.
func (s *Service) BotMean(ctx context.Context, c Context) (mean float64, count int, err error) {
	return s.store.BotMean(ctx, c)
}

// PlayerRatings returns the player's rating in every context it has one.
func (s *Service) PlayerRatings(ctx context.Context, playerID string) ([]ContextRating, error) {
	if err := ValidateID(playerID); err != nil {
		return nil, apperr.Field("id", "%s", err)
	}
	return s.store.PlayerRatings(ctx, playerID)
}

// MaxLeaderboard is the most entries one leaderboard read returns.
const MaxLeaderboard = 1000

// ConservativeK is how many standard deviations the conservative leaderboard takes off each
// skill (LeaderboardConservative): the skill lies above skill - 3 sigma with probability
// 99.9%, TrueSkill's and OpenSkill's choice for their leaderboards. In ns2-kalman's units a
// newcomer (sigma 2) starts at -6, three standard deviations below the average of a league
// whose skills spread by 2, and climbs as games make it certain. TestConservativeK measures k = 0 to 4 by how the
// board's top players do afterwards (docs/ratings.md has the table).
const ConservativeK = 3

// LeaderboardRank says how a leaderboard is ordered.
type LeaderboardRank int

const (
	// LeaderboardBySkill orders by the skill's mean: the best estimate, which a newcomer
	// with a lucky start can top.
	LeaderboardBySkill LeaderboardRank = iota
	// LeaderboardConservative orders by skill - ConservativeK sigma: a place is earned by
	// games as well as by wins.
	LeaderboardConservative
)

// Leaderboard returns the top players (not bots) of context c, highest first by rank, and
// the ranking they were ordered by: the conservative one takes off ConservativeK standard
// deviations as reads show them now (grown by the idle drift).
func (s *Service) Leaderboard(ctx context.Context, c Context, limit int, rank LeaderboardRank) (Ranking, []RatedParticipant, error) {
	if limit < 1 || limit > MaxLeaderboard {
		return Ranking{}, nil, apperr.Field("limit", "must be an integer from 1 to %d", MaxLeaderboard)
	}
	rk, err := s.rankerOf(ctx, c, s.clock())
	if err != nil {
		return Ranking{}, nil, err
	}
	by := rk.conservative() // its Sigma is what reads show, whatever the order
	if rank != LeaderboardConservative {
		by.K = 0
	}
	top, err := s.store.Leaderboard(ctx, c, limit, by)
	return by, top, err
}

// Mutators lists every mutator seen or classified, by name.
func (s *Service) Mutators(ctx context.Context) ([]MutatorInfo, error) {
	policy, err := s.store.Policy(ctx)
	if err != nil {
		return nil, err
	}
	return policy.Mutators(), nil
}

// SetMutator classifies a mutator: whether it splits rating contexts. Stored ratings do not
// move until a rebuild re-splits the history.
func (s *Service) SetMutator(ctx context.Context, name string, affectsGameplay bool) (MutatorInfo, error) {
	if err := ValidateName(name); err != nil {
		return MutatorInfo{}, apperr.Field("name", "%s", err)
	}
	return s.store.SetMutator(ctx, name, affectsGameplay)
}

// Rebuild recomputes every context of a game type from the stored history, each with the
// model it uses now and its stored tuning; progress, if not nil, is told how far it has got.
func (s *Service) Rebuild(ctx context.Context, gameType string, progress func(Progress)) (RebuildReport, error) {
	if err := ValidateName(gameType); err != nil {
		return RebuildReport{}, apperr.Field("game_type", "%s", err)
	}
	s.tunings.forget(fold(gameType)) // the tunings as stored now, not as cached
	pick, err := s.modelsOf(ctx, gameType)
	if err != nil {
		return RebuildReport{}, err
	}
	return s.store.Rebuild(ctx, gameType, func(policy *MutatorPolicy, from map[string]*State, history iter.Seq[Result]) (map[string]*State, error) {
		return replayStream(pick, policy, from, history)
	}, progress)
}

// Deletion is what DeleteResult removed: the result as it was stored, and the rebuild of its
// game type without it.
type Deletion struct {
	Result   Result
	GameType string // the result's game type, canonical: the one rebuilt
	Rebuild  RebuildReport
}

// DeleteResult is the admin's correction of history: it removes the result stored under
// matchID and rebuilds its game type without it, each context with the model it uses now and
// its stored tuning, so that every rating is what it would be had the result never been
// recorded (results recorded meanwhile are kept, as a rebuild keeps them). The match id may
// then be recorded again, with the corrected result. allow, if not nil, is asked about the
// result's game type (canonical) before anything changes: its error is returned as it is.
func (s *Service) DeleteResult(ctx context.Context, matchID string, allow func(gameType string) error, progress func(Progress)) (Deletion, error) {
	if err := ValidateID(matchID); err != nil {
		return Deletion{}, apperr.Field("match_id", "%s", err)
	}
	r, err := s.store.StoredResult(ctx, matchID)
	if err != nil {
		return Deletion{}, err
	}
	gc, err := NewContext(r.GameType, nil)
	if err != nil {
		return Deletion{}, apperr.Wrap(apperr.Internal, err, "the stored result cannot be read")
	}
	if allow != nil {
		if err := allow(gc.GameType); err != nil {
			return Deletion{}, err
		}
	}
	s.tunings.forget(gc.GameType)
	pick, err := s.modelsOf(ctx, gc.GameType)
	if err != nil {
		return Deletion{}, err
	}
	// A match id deleted and recorded again under another game type since it was read above
	// is not found in this one: the store answers NotFound, and the caller may ask again.
	rep, err := s.store.DeleteResult(ctx, matchID, gc.GameType, func(policy *MutatorPolicy, from map[string]*State, history iter.Seq[Result]) (map[string]*State, error) {
		return replayStream(pick, policy, from, history)
	}, progress)
	if err != nil {
		return Deletion{}, err
	}
	return Deletion{Result: r, GameType: gc.GameType, Rebuild: rep}, nil
}

// checkParticipants applies the id rule to every participant, before any store call.
func checkParticipants(ps []Participant) error {
	var f apperr.Fields
	for i, p := range ps {
		if err := ValidateID(p.ID); err != nil {
			f.Add(fmt.Sprintf("participants[%d]", i), "%s: %s", p, err)
		}
	}
	return f.Err()
}
