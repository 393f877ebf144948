package ratings

import (
	"context"
	"fmt"
	"math"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Proposal is a match not played yet (POST /v1/predict): two teams of players and bots in a
// context, with the sides and map that decide the bias term, as in a Result. Sides and map
// are optional: without a map the side pair's record over every map counts; without sides
// nothing learnt per side pair does (no side bias; the model's priors for its context-wide
// terms, the calibration's temperature among them).
type Proposal struct {
	GameType string
	Mutators []string
	Map      string
	Teams    []ProposedTeam // exactly two
}

// ProposedTeam is one team of a Proposal: players by id and bots by name.
type ProposedTeam struct {
	Side    string
	Players []string
	Bots    []string
}

// Prediction is what the context's model says of a Proposal from the stored ratings.
type Prediction struct {
	Context Context
	Model   string // the context's model (ModelByName)
	// WinProbability is each team's probability of winning, as POST /v1/results would serve
	// it before this match (calibrated; a draw counts half a win). They sum to 1.
	WinProbability [2]float64
	// Quality is 1 - |p0 - p1|: 1 for an even match, 0 for a foregone one. It is computed from
	// the served probability, which already leans towards 1/2 the less is known of the players.
	Quality float64
	// Teams lists each team's participants in the proposal's order: players, then bots.
	Teams [2][]PredictedParticipant
}

// PredictedParticipant is a participant of a Prediction: the rating the model used (a
// newcomer's if none is stored: for ns2-kalman, the context's learnt newcomer mean) and its
// standard deviation.
type PredictedParticipant struct {
	Participant Participant
	Rated       bool // a rating is stored
	Rating      Rating
	Uncertainty float64
}

// noMap is the map of a proposal that names none, noSides the sides of one that names
// none: stand-ins the bias table is never asked about (see Predict).
const noMap = "-"

var noSides = [2]string{"-0", "-1"}

// predictDurationS is the length of the match a proposal is predicted as: everyone plays
// throughout, so only the proportions matter.
const predictDurationS = 1

// Predict answers how the proposal's match would go: the context's model applied to the
// stored ratings and bias table as POST /v1/results would apply it to this match's result,
// keeping the prediction and discarding what would be learnt. It writes nothing. Faults name
// the request's fields: context.game_type, map, teams[1].side, teams[0].players[2],
// teams[1].bots[0], ...
func (s *Service) Predict(ctx context.Context, p Proposal) (Prediction, error) {
	r, err := p.result()
	if err != nil {
		return Prediction{}, err
	}
	c, err := s.Context(ctx, p.GameType, p.Mutators)
	if err != nil {
		return Prediction{}, err
	}
	ps := ResultParticipants(r)
	stored, err := s.store.Ratings(ctx, c, ps)
	if err != nil {
		return Prediction{}, err
	}
	key := ResultBiasKey(r)
	var bias BiasTable
	if p.Teams[0].Side != "" { // without sides there is no side bias, nor what is learnt per side pair
		if bias, err = s.store.Bias(ctx, c, key); err != nil {
			return Prediction{}, err
		}
	}
	if p.Map == "" { // no map: the side pair's record over every map, as for a map never played
		var pair BiasTable
		if err := pair.SetTotal(key, bias.Total(key)); err != nil {
			return Prediction{}, err
		}
		bias = pair
	}
	now := s.clock()
	rk, err := s.rankerOf(ctx, c, now)
	if err != nil {
		return Prediction{}, err
	}
	for p, rt := range stored { // as a result would find them, reset for the season under way
		stored[p] = CatchUp(rt, rk.seasons)
	}
	r.EndedAt = now
	m := rk.model
	o, err := m.Apply(stored, bias, r)
	if err != nil {
		return Prediction{}, err
	}
	before := make(map[Participant]Rating, len(o.Updates))
	for _, u := range o.Updates {
		before[u.Participant] = u.Before
	}
	out := Prediction{Context: c, Model: m.Name(), WinProbability: o.WinProbability,
		Quality: 1 - math.Abs(o.WinProbability[0]-o.WinProbability[1])}
	for ti, t := range r.Teams {
		out.Teams[ti] = make([]PredictedParticipant, len(t.Players))
		for i, pl := range t.Players {
			who := pl.Participant()
			_, rated := stored[who]
			rt := before[who]
			sd := rt.Sigma
			if sd <= 0 {
				sd = m.PriorSigma()
			}
			out.Teams[ti][i] = PredictedParticipant{Participant: who, Rated: rated, Rating: rt, Uncertainty: sd}
		}
	}
	return out, nil
}

// result is the proposal as the result of a match that everyone played throughout and that
// ended in a draw, checked field by field under the request's names.
func (p Proposal) result() (Result, error) {
	var f apperr.Fields
	checkContext(&f, p.GameType, p.Mutators)
	mapName := p.Map
	if mapName == "" {
		mapName = noMap // a stand-in the bias table is never asked about (see Predict)
	} else if msg := checkMap(p.Map); msg != "" {
		f.Add("map", "%s", msg)
	}
	if len(p.Teams) != 2 {
		f.Add("teams", "must list exactly 2 teams, got %d", len(p.Teams))
		return Result{}, f.Err()
	}
	r := Result{MatchID: "predict", GameType: p.GameType, Mutators: p.Mutators, Map: mapName, DurationS: predictDurationS,
		Teams: make([]Team, 2)}
	seen := make(map[Participant]string)
	sided := p.Teams[0].Side != "" || p.Teams[1].Side != ""
	for ti, t := range p.Teams {
		switch {
		case !sided:
			r.Teams[ti].Side = noSides[ti]
		case t.Side == "":
			f.Add(teamField(ti, "side"), "give both teams' sides or neither")
		default:
			if msg := checkName(t.Side); msg != "" {
				f.Add(teamField(ti, "side"), "%s", msg)
			}
			r.Teams[ti].Side = t.Side
		}
		n := len(t.Players) + len(t.Bots)
		switch {
		case n == 0:
			f.Add(teamField(ti, "players"), "a team needs at least one player or bot")
			continue
		case n > MaxTeamSize:
			f.Add(teamField(ti, "players"), "must list at most %d participants with the bots", MaxTeamSize)
			continue
		}
		players := make([]Player, 0, n)
		add := func(field string, who Participant) {
			if msg := checkID(who.ID); msg != "" {
				f.Add(field, "%s", msg)
				return
			}
			if at, ok := seen[who]; ok {
				f.Add(field, "%s already appears at %s", who, at)
				return
			}
			seen[who] = field
			pl := Player{ID: who.ID, LeftS: predictDurationS}
			if who.Bot {
				pl = Player{Bot: who.ID, LeftS: predictDurationS}
			}
			players = append(players, pl)
		}
		for i, id := range t.Players {
			add(fmt.Sprintf("teams[%d].players[%d].id", ti, i), Participant{ID: id})
		}
		for i, name := range t.Bots {
			add(fmt.Sprintf("teams[%d].bots[%d].name", ti, i), Participant{ID: name, Bot: true})
		}
		r.Teams[ti].Players = players
	}
	if sided && fold(p.Teams[0].Side) == fold(p.Teams[1].Side) {
		f.Add("teams[1].side", "must differ from teams[0].side")
	}
	if err := f.Err(); err != nil {
		return Result{}, err
	}
	return r, r.Validate() // what is left to check is ours: a fault here is a bug
}
