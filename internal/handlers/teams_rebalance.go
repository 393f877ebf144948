package handlers

import (
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

type rebalanceRequest struct {
	Teams    []rosterJSON     `json:"teams"`
	Unplaced []teamPlayerJSON `json:"unplaced"`
	MaxSwaps *int             `json:"max_swaps"`
	Context  *contextJSON     `json:"context"`
}

type rebalanceResponse struct {
	Moves          []rebalanceMoveJSON  `json:"moves"`
	Before         teamsMeasureJSON     `json:"before"`
	Placed         teamsMeasureJSON     `json:"placed"`
	After          teamsMeasureJSON     `json:"after"`
	PlacementExact bool                 `json:"placement_exact"`
	Swaps          int                  `json:"swaps"`
	Teams          []rebalancedTeamJSON `json:"teams"`
	Weights        map[string]float64   `json:"weights"`
}

// rebalanceMoveJSON is one step: "place" (player joins team to; no from) or "swap" (player
// goes from -> to, other to -> from), with the totals it leaves.
type rebalanceMoveJSON struct {
	Kind       string    `json:"kind"`
	Player     string    `json:"player"`
	Other      string    `json:"other,omitempty"`
	From       *int      `json:"from,omitempty"`
	To         int       `json:"to"`
	Totals     []float64 `json:"totals"`
	Balance    float64   `json:"balance"`
	Difference float64   `json:"difference"`
}

type teamsMeasureJSON struct {
	Totals     []float64 `json:"totals"`
	Balance    float64   `json:"balance"`
	Difference float64   `json:"difference"`
}

type rebalancedTeamJSON struct {
	Players []string `json:"players"`
}

// handleTeamsRebalance answers POST /v1/teams/rebalance, the NS2 post's fewest swaps: the
// teams playing and the players not yet placed in; the placements, then the swaps, each the
// one that most reduces the imbalance, in order, and the teams they leave.
func handleTeamsRebalance(logger *slog.Logger, limits Limits, svc *ratings.Service, metrics *domainMetrics, gate *workGate) http.Handler {
	maxPlayers := teamPlayerLimit(limits)
	return handleCompute(logger, svc, gate, func(req *rebalanceRequest) (computation, error) {
		rs, unplaced, tw, err := req.resolve(maxPlayers)
		if err != nil {
			return computation{}, err
		}
		humans := teamHumans(rs) + len(unplaced)
		var result teams.RebalanceResult
		return computation{
			stored: tw,
			heavy:  rebalanceIsHeavy(len(rs), len(unplaced), humans),
			run: func() (err error) {
				result, err = teams.Rebalance(rs, unplaced, teams.RebalanceOptions{MaxSwaps: req.MaxSwaps})
				return apperr.Rename(err, teamField)
			},
			observe: func(elapsed time.Duration) {
				strategy := "-"
				if len(unplaced) > 0 {
					strategy = searchStrategy(result.PlacementExact)
				}
				metrics.observeTeams("teams_rebalance", strategy, humans, elapsed)
			},
			respond: func(w http.ResponseWriter, r *http.Request) {
				respond(w, r, logger, http.StatusOK, req.response(rs, unplaced, result))
			},
		}, nil
	})
}

// resolve checks the request and builds the rosters and the unplaced weights (50 where left
// out, until tw.load reads the stored ones); Rebalance validates the rest.
func (req *rebalanceRequest) resolve(maxPlayers int) ([]teams.Roster, []float64, *storedWeights, error) {
	var fields apperr.Fields
	tw := newStoredWeights(req.Context, 1, &fields)
	unplaced := make([]float64, len(req.Unplaced))
	rs := rosters(&fields, tw, req.Teams, req.Unplaced,
		func(k int) string { return "unplaced[" + strconv.Itoa(k) + "].id" }, unplaced, maxPlayers)
	return rs, unplaced, tw, fields.Err()
}

// rebalanceIsHeavy says whether a rebalance waits for the gate: its placement is a split of
// the unplaced (teamSearchIsHeavy), and each swap round tries every pair of humans, O(n^2)
// (docs/performance.md, "Team splits", has BenchmarkTeamsRebalanceHandler at 24, 64 and 256
// humans); above 64 humans it takes a slot.
func rebalanceIsHeavy(teams, unplaced, humans int) bool {
	return teamSearchIsHeavy(unplaced, teams) || humans > 64
}

func (req *rebalanceRequest) response(rs []teams.Roster, unplaced []float64, r teams.RebalanceResult) rebalanceResponse {
	id := func(p teams.PlayerRef) string {
		if p.Team < 0 {
			return req.Unplaced[p.Index].ID
		}
		return req.Teams[p.Team].Players[p.Index].ID
	}
	measure := func(m teams.Measure) teamsMeasureJSON {
		return teamsMeasureJSON{Totals: m.Totals, Balance: m.Balance, Difference: m.Difference}
	}
	resp := rebalanceResponse{
		Moves:          make([]rebalanceMoveJSON, len(r.Moves)),
		Before:         measure(r.Before),
		Placed:         measure(r.Placed),
		After:          measure(r.After),
		PlacementExact: r.PlacementExact,
		Swaps:          r.Swaps,
		Teams:          make([]rebalancedTeamJSON, len(r.Teams)),
		Weights:        humanWeights(req.Teams, rs, req.Unplaced, unplaced),
	}
	for i, m := range r.Moves {
		mv := rebalanceMoveJSON{Kind: string(m.Kind), Player: id(m.Player), To: m.To,
			Totals: m.Totals, Balance: m.Balance, Difference: m.Difference}
		if m.Kind == teams.Swap {
			from := m.From
			mv.From, mv.Other = &from, id(m.Other)
		}
		resp.Moves[i] = mv
	}
	for j, members := range r.Teams {
		ids := make([]string, len(members))
		for k, p := range members {
			ids[k] = id(p)
		}
		resp.Teams[j] = rebalancedTeamJSON{Players: ids}
	}
	return resp
}
