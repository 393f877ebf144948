package handlers

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

type assignRequest struct {
	Teams            []rosterJSON    `json:"teams"`
	Joiner           *teamPlayerJSON `json:"joiner"`
	Bots             *botRuleJSON    `json:"bots"`
	MaxHumansPerTeam *int            `json:"max_humans_per_team"`
	Objective        *string         `json:"objective"`
	Context          *contextJSON    `json:"context"`
}

type assignResponse struct {
	Team             int                `json:"team"`
	Balance          float64            `json:"balance"`
	Difference       float64            `json:"difference"`
	Totals           []float64          `json:"totals"`
	BotChange        []int              `json:"bot_change"`
	Before           []float64          `json:"before"`
	Objective        string             `json:"objective"`
	MaxHumansPerTeam int                `json:"max_humans_per_team,omitempty"`
	Choices          []assignChoiceJSON `json:"choices"`
	Weights          map[string]float64 `json:"weights"`
}

type assignChoiceJSON struct {
	Team       int       `json:"team"`
	Allowed    bool      `json:"allowed"`
	Balance    float64   `json:"balance"`
	Difference float64   `json:"difference"`
	Totals     []float64 `json:"totals"`
	BotChange  []int     `json:"bot_change"`
}

// handleTeamsAssign answers POST /v1/teams/assign: the teams playing and one late joiner in,
// the team that leaves the best balance (counting the bots the join adds or removes) out.
// Nobody already placed moves.
func handleTeamsAssign(logger *slog.Logger, limits Limits, svc *ratings.Service, metrics *domainMetrics, gate *workGate) http.Handler {
	maxPlayers := teamPlayerLimit(limits)
	return handleCompute(logger, svc, gate, func(req *assignRequest) (computation, error) {
		rs, joiner, opts, tw, err := req.resolve(maxPlayers)
		if err != nil {
			return computation{}, err
		}
		var result teams.AssignResult
		return computation{
			stored: tw,
			run: func() (err error) {
				result, err = teams.Assign(rs, joiner[0], opts)
				return apperr.Rename(err, teamField)
			},
			observe: func(elapsed time.Duration) {
				metrics.observeTeams("teams_assign", "-", 1+teamHumans(rs), elapsed)
			},
			respond: func(w http.ResponseWriter, r *http.Request) {
				resp := assignResponse{
					Team:             result.Team,
					Balance:          result.Balance,
					Difference:       result.Difference,
					Totals:           result.Totals,
					BotChange:        result.BotChange,
					Before:           result.Before,
					Objective:        string(result.Objective),
					MaxHumansPerTeam: result.MaxHumans,
					Choices:          make([]assignChoiceJSON, len(result.Choices)),
					Weights:          humanWeights(req.Teams, rs, []teamPlayerJSON{*req.Joiner}, joiner),
				}
				for i, c := range result.Choices {
					resp.Choices[i] = assignChoiceJSON{Team: c.Team, Allowed: c.Allowed, Balance: c.Balance,
						Difference: c.Difference, Totals: c.Totals, BotChange: c.BotChange}
				}
				respond(w, r, logger, http.StatusOK, resp)
			},
		}, nil
	})
}

// resolve checks the request and builds the matchmaker's inputs; joiner is a one-element
// slice holding the joiner's weight (50 until tw.load reads a stored one).
func (req *assignRequest) resolve(maxPlayers int) ([]teams.Roster, []float64, teams.AssignOptions, *storedWeights, error) {
	var fields apperr.Fields
	var opts teams.AssignOptions
	tw := newStoredWeights(req.Context, 1, &fields)
	joiner := make([]float64, 1)
	var extra []teamPlayerJSON
	if req.Joiner == nil {
		fields.Add("joiner", "is required")
	} else {
		extra = []teamPlayerJSON{*req.Joiner}
	}
	rs := rosters(&fields, tw, req.Teams, extra, func(int) string { return "joiner.id" }, joiner, maxPlayers)
	opts.Bots = req.Bots.resolve(&fields, tw)
	if req.MaxHumansPerTeam != nil {
		opts.MaxHumansPerTeam = *req.MaxHumansPerTeam
		if opts.MaxHumansPerTeam == 0 {
			fields.Add("max_humans_per_team", "must be at least 1 (leave it out for the default)")
		}
	}
	opts.Objective = objectiveOf(&fields, req.Objective)
	return rs, joiner, opts, tw, fields.Err()
}

// teamHumans counts the humans on the teams.
func teamHumans(rs []teams.Roster) int {
	n := 0
	for _, t := range rs {
		n += len(t.Players)
	}
	return n
}
