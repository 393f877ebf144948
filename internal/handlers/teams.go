package handlers

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// This file holds POST /v1/teams and what the four team endpoints share: the JSON of players,
// bots, rosters and the bot rule, the weights read from the rating store, the gate that
// bounds the expensive searches, and their metrics. The algorithms are the teams
// package's Split, Assign, Rebalance and Advantage; this layer turns ids into indices and
// back, fills in the weights a request leaves out, and reports every fault by its JSON path.
//
// A request is checked in two passes, each reporting all of its faults: this layer's first
// (limits, ids, bot names, the context, required fields, and options given explicitly as 0
// that the matchmaker would read as "the default"), before any store read; then, if those
// pass, the matchmaker's own (teams, weights, the bot rule, the options), which it runs at
// the start of each call and does not export separately.

type teamsRequest struct {
	Players          []teamPlayerJSON `json:"players"`
	Teams            *int             `json:"teams"`
	Bots             *botRuleJSON     `json:"bots"`
	MaxHumansPerTeam *int             `json:"max_humans_per_team"`
	Candidates       *int             `json:"candidates"`
	Selection        *string          `json:"selection"`
	Seed             *int64           `json:"seed"`
	Objective        *string          `json:"objective"`
	Context          *contextJSON     `json:"context"`
}

// teamPlayerJSON is a human: an id and, optionally, a weight (0..100 by convention, any
// finite number in [0, 1e9] accepted).
type teamPlayerJSON struct {
	ID     string   `json:"id"`
	Weight *float64 `json:"weight"`
}

// teamBotJSON is a bot that is playing, with its own weight or, without one, its stored one.
type teamBotJSON struct {
	Name   string   `json:"name"`
	Weight *float64 `json:"weight"`
}

// rosterJSON is a team that is already playing (assign, rebalance, advantage).
type rosterJSON struct {
	Players []teamPlayerJSON `json:"players"`
	Bots    []teamBotJSON    `json:"bots"`
}

// botRuleJSON is the server's bot set-up, the seed's Ideal Bot Counter.
type botRuleJSON struct {
	MeanWeight    *float64         `json:"mean_weight"`
	TargetPlayers *int             `json:"target_players"`
	Recommended   *recommendedJSON `json:"recommended"`
}

type recommendedJSON struct {
	Min *int `json:"min"`
	Max *int `json:"max"`
}

type teamsResponse struct {
	Teams            []splitTeamJSON      `json:"teams"`
	Balance          float64              `json:"balance"`
	Difference       float64              `json:"difference"`
	MinPlayers       int                  `json:"min_players"`
	MaxHumansPerTeam int                  `json:"max_humans_per_team"`
	Exact            bool                 `json:"exact"`
	Objective        string               `json:"objective"`
	Selection        string               `json:"selection"`
	Seed             int64                `json:"seed"`
	Chosen           int                  `json:"chosen"`
	Candidates       []splitCandidateJSON `json:"candidates"`
	Weights          map[string]float64   `json:"weights"`
}

type splitTeamJSON struct {
	Players []string `json:"players"`
	Bots    int      `json:"bots"`
	Total   float64  `json:"total"`
}

type splitCandidateJSON struct {
	Teams      []splitTeamJSON `json:"teams"`
	Balance    float64         `json:"balance"`
	Difference float64         `json:"difference"`
}

// handleTeams answers POST /v1/teams: the players on one server in, their most balanced
// split into 2..4 teams (topped up with bots by the server's rule) out.
func handleTeams(logger *slog.Logger, limits Limits, svc *ratings.Service, metrics *domainMetrics, gate *workGate) http.Handler {
	maxPlayers := teamPlayerLimit(limits)
	return handleCompute(logger, svc, gate, func(req *teamsRequest) (computation, error) {
		weights, opts, tw, err := req.resolve(maxPlayers)
		if err != nil {
			return computation{}, err
		}
		var result teams.SplitResult
		return computation{
			stored: tw,
			heavy:  teamSearchIsHeavy(len(weights), opts.Teams),
			run: func() (err error) {
				result, err = teams.Split(weights, opts)
				return apperr.Rename(err, teamField)
			},
			observe: func(elapsed time.Duration) {
				metrics.observeTeams("teams", searchStrategy(result.Exact), len(weights), elapsed)
			},
			respond: func(w http.ResponseWriter, r *http.Request) {
				respond(w, r, logger, http.StatusOK, req.response(weights, result))
			},
		}, nil
	})
}

// searchStrategy names a team search for the metrics: exact or heuristic.
func searchStrategy(exact bool) string {
	if exact {
		return "exact"
	}
	return "heuristic"
}

// resolve checks what the matchmaker cannot (ids, limits, fields given explicitly as 0 that
// the matchmaker would read as "the default") and builds its inputs. Weights left out are 50
// until tw.load reads the stored ones; Split validates the rest.
func (req *teamsRequest) resolve(maxPlayers int) ([]float64, teams.SplitOptions, *storedWeights, error) {
	var fields apperr.Fields
	opts := teams.SplitOptions{Teams: 2}
	switch {
	case req.Players == nil:
		fields.Add("players", "is required")
	case len(req.Players) > maxPlayers:
		fields.Add("players", "must hold at most %d players", maxPlayers)
		return nil, opts, nil, fields.Err()
	}
	tw := newStoredWeights(req.Context, 1, &fields)
	weights := make([]float64, len(req.Players))
	ids := make([]string, len(req.Players))
	for i, p := range req.Players {
		ids[i] = p.ID
		tw.human(p.ID, p.Weight, &weights[i])
	}
	checkIDs(&fields, ids, func(i int) string { return playerField(i, "id") })

	setIf(&opts.Teams, req.Teams)
	opts.Bots = req.Bots.resolve(&fields, tw)
	if req.MaxHumansPerTeam != nil {
		opts.MaxHumansPerTeam = *req.MaxHumansPerTeam
		if opts.MaxHumansPerTeam == 0 {
			fields.Add("max_humans_per_team", "must be at least 1 (leave it out for the default)")
		}
	}
	if req.Candidates != nil {
		opts.Candidates = *req.Candidates
		if opts.Candidates == 0 {
			fields.Add("candidates", "must be 1..%d", teams.MaxCandidates)
		}
	}
	if req.Selection != nil {
		opts.Selection = teams.Selection(*req.Selection)
		if opts.Selection == "" {
			fields.Add("selection", "must be %q or %q", teams.SelectBest, teams.SelectWeighted)
		}
	}
	opts.Seed = req.Seed
	opts.Objective = objectiveOf(&fields, req.Objective)
	return weights, opts, tw, fields.Err()
}

func (req *teamsRequest) response(weights []float64, r teams.SplitResult) teamsResponse {
	toJSON := func(ts []teams.Team) []splitTeamJSON {
		out := make([]splitTeamJSON, len(ts))
		for j, t := range ts {
			ids := make([]string, len(t.Players))
			for k, p := range t.Players {
				ids[k] = req.Players[p].ID
			}
			out[j] = splitTeamJSON{Players: ids, Bots: t.Bots, Total: t.Total}
		}
		return out
	}
	cands := make([]splitCandidateJSON, len(r.Candidates))
	for i, c := range r.Candidates {
		cands[i] = splitCandidateJSON{Teams: toJSON(c.Teams), Balance: c.Balance, Difference: c.Difference}
	}
	byID := make(map[string]float64, len(weights))
	for i, p := range req.Players {
		byID[p.ID] = weights[i]
	}
	return teamsResponse{
		Teams:            cands[r.Chosen].Teams,
		Balance:          r.Balance,
		Difference:       r.Difference,
		MinPlayers:       r.MinPlayers,
		MaxHumansPerTeam: r.MaxHumans,
		Exact:            r.Exact,
		Objective:        string(r.Objective),
		Selection:        string(r.Selection),
		Seed:             r.Seed,
		Chosen:           r.Chosen,
		Candidates:       cands,
		Weights:          byID,
	}
}

// resolve turns the bot rule into the matchmaker's (nil without one). target_players is
// required; recommended defaults to no clamp; a missing mean_weight is the stored mean bot
// weight in the request's context (MEANBOT), else 50.
func (b *botRuleJSON) resolve(fields *apperr.Fields, tw *storedWeights) *teams.BotRule {
	if b == nil {
		return nil
	}
	rule := &teams.BotRule{RecommendedMax: teams.MaxBots}
	if b.TargetPlayers == nil {
		fields.Add("bots.target_players", "is required")
	} else {
		rule.TargetPlayers = *b.TargetPlayers
	}
	if rec := b.Recommended; rec != nil {
		setIf(&rule.RecommendedMin, rec.Min)
		setIf(&rule.RecommendedMax, rec.Max)
	}
	tw.meanBot(b.MeanWeight, &rule.MeanWeight)
	return rule
}

// objectiveOf reads an optional objective; the matchmaker checks the value.
func objectiveOf(fields *apperr.Fields, o *string) teams.Objective {
	if o == nil {
		return ""
	}
	if *o == "" {
		fields.Add("objective", "must be %q or %q", teams.Ratio, teams.Difference)
	}
	return teams.Objective(*o)
}

// teamField names a teams fault by its JSON path. The package names a weight by its place
// in its arguments (weights[i], teams[i].players[j], teams[i].bots[j], unplaced[i], joiner)
// and calls Split's humans weights; the request holds each weight in its player's or bot's
// object and calls the humans players. The options have the same names in both.
func teamField(f string) string {
	if rest, ok := strings.CutPrefix(f, "weights"); ok {
		f = "players" + rest
	}
	if strings.HasSuffix(f, "]") || f == "joiner" {
		return f + ".weight"
	}
	return f
}

// teamPlayerLimit is the most humans one team request may hold: Limits.MaxTeamPlayers, its
// default when unset, and never more than the matchmaker accepts.
func teamPlayerLimit(limits Limits) int {
	n := limits.MaxTeamPlayers
	if n <= 0 {
		n = DefaultLimits().MaxTeamPlayers
	}
	return min(n, teams.MaxHumans)
}

// rosters checks the teams of an assign, rebalance or advantage request and turns them into
// the matchmaker's rosters, noting missing weights in tw. extra are the humans the request
// holds besides the teams' (the joiner, the unplaced): their weights go to extraWeights and
// extraPath(k) names the id of the k-th. Ids are checked across teams and extra together.
// It returns nil when the request holds more humans or bots than allowed, having said so.
func rosters(fields *apperr.Fields, tw *storedWeights, in []rosterJSON, extra []teamPlayerJSON,
	extraPath func(k int) string, extraWeights []float64, maxPlayers int) []teams.Roster {
	humans, bots := len(extra), 0
	for _, t := range in {
		humans += len(t.Players)
		bots += len(t.Bots)
	}
	tooMany := false
	if humans > maxPlayers {
		fields.Add("teams", "must hold at most %d human players in all", maxPlayers)
		tooMany = true
	}
	if bots > teams.MaxBots {
		fields.Add("teams", "must hold at most %d bots in all", teams.MaxBots)
		tooMany = true
	}
	if tooMany {
		return nil
	}
	out := make([]teams.Roster, len(in))
	ids := make([]string, 0, humans)
	type place struct{ team, index int } // team -1: extra
	where := make([]place, 0, humans)
	for i, t := range in {
		out[i].Players = make([]float64, len(t.Players))
		for j, p := range t.Players {
			ids = append(ids, p.ID)
			where = append(where, place{i, j})
			tw.human(p.ID, p.Weight, &out[i].Players[j])
		}
		out[i].Bots = make([]float64, len(t.Bots))
		for j, b := range t.Bots {
			tw.bot(fields, i, j, b.Name, b.Weight, &out[i].Bots[j])
		}
	}
	for k, p := range extra {
		ids = append(ids, p.ID)
		where = append(where, place{-1, k})
		tw.human(p.ID, p.Weight, &extraWeights[k])
	}
	checkIDs(fields, ids, func(n int) string {
		if w := where[n]; w.team >= 0 {
			return fmt.Sprintf("teams[%d].players[%d].id", w.team, w.index)
		}
		return extraPath(where[n].index)
	})
	return out
}

// humanWeights lists the weight used for every human, by id, for a response.
func humanWeights(in []rosterJSON, rs []teams.Roster, extra []teamPlayerJSON, extraWeights []float64) map[string]float64 {
	out := make(map[string]float64, len(extra))
	for i, t := range in {
		for j, p := range t.Players {
			out[p.ID] = rs[i].Players[j]
		}
	}
	for k, p := range extra {
		out[p.ID] = extraWeights[k]
	}
	return out
}

// teamSearchIsHeavy says whether placing humans on teams costs enough to wait for the gate:
// above 24 humans on 2 teams (meet in the middle, whose time and scratch double with every
// two humans more, 38 MB of scratch at 40; the heuristic beyond) and above 12 on 3-4 teams
// (branch and bound, up to its node budget; then the heuristic). Below those a split is
// cheap (docs/performance.md, "Team splits", has the matchmaker's BenchmarkSplit at every
// size) and never queues behind big ones.
func teamSearchIsHeavy(humans, nTeams int) bool {
	if nTeams < teams.MinTeams || nTeams > teams.MaxTeams {
		return false // the matchmaker rejects it at once
	}
	if nTeams == 2 {
		return humans > 24
	}
	return humans > 12
}

// observeTeams records one team computation: endpoint is teams, teams_assign,
// teams_rebalance or teams_advantage; strategy exact, heuristic, or "-" where there is no
// search.
func (m *domainMetrics) observeTeams(endpoint, strategy string, players int, elapsed time.Duration) {
	m.duration.WithLabelValues(endpoint, strategy).Observe(elapsed.Seconds())
	m.players.WithLabelValues(endpoint).Observe(float64(players))
}
