package handlers

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/resultjson"
)

// resultDeletion is DELETE /v1/results/{match_id}'s answer: the result as it was stored (a
// body POST /v1/results takes, to post it again corrected) and the rebuild that followed.
type resultDeletion struct {
	MatchID string           `json:"match_id"`
	Result  storedResultJSON `json:"result"`
	Rebuild rebuildResponse  `json:"rebuild"`
}

// storedResultJSON is a stored result in the shape of a POST /v1/results body, every
// member written out (the mutators, each player's joined_s and left_s).
type storedResultJSON struct {
	MatchID   string            `json:"match_id"`
	Context   contextJSON       `json:"context"`
	Map       string            `json:"map"`
	DurationS float64           `json:"duration_s"`
	Teams     []resultjson.Team `json:"teams"`
	Winner    *int              `json:"winner"`
}

func newStoredResultJSON(r ratings.Result) storedResultJSON {
	out := storedResultJSON{MatchID: r.MatchID, Context: contextJSON{GameType: r.GameType, Mutators: r.Mutators},
		Map: r.Map, DurationS: r.DurationS, Teams: make([]resultjson.Team, len(r.Teams)), Winner: r.Winner}
	if out.Context.Mutators == nil {
		out.Context.Mutators = []string{}
	}
	for i, t := range r.Teams {
		team := resultjson.Team{Side: t.Side, Players: make([]resultjson.Participant, len(t.Players))}
		for j, p := range t.Players {
			rp := resultjson.Participant{ID: p.ID, Bot: p.Bot, JoinedS: &p.JoinedS, LeftS: &p.LeftS}
			if p.CommanderS != 0 {
				rp.CommanderS = &p.CommanderS
			}
			team.Players[j] = rp
		}
		out.Teams[i] = team
	}
	return out
}

// handleDeleteResult answers DELETE /v1/results/{match_id}: the admin's correction of
// history. The result is removed and its game type rebuilt without it, so that every rating
// is what it would be had the result never been posted; results posted meanwhile are kept.
// The match id may then be posted again (a queue match's result still names its roster).
func handleDeleteResult(logger *slog.Logger, svc *ratings.Service, metrics *domainMetrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "match_id")
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		start := time.Now()
		d, err := svc.DeleteResult(r.Context(), id, func(gameType string) error {
			return allowGameType(r.Context(), "game_type", gameType)
		}, nil)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		metrics.resultsDeleted.Inc()
		rep := d.Rebuild
		key := ""
		if k := keyOf(r.Context()); k != nil {
			key = k.Name
		}
		// The audit line of a change to history: who, which match, what it did.
		logger.InfoContext(r.Context(), "result deleted", "match_id", id, "game_type", d.GameType, "key", key,
			"results", rep.Results, "contexts", rep.Contexts, "ratings", rep.Ratings, "request_id", requestIDFrom(r.Context()))
		respond(w, r, logger, http.StatusOK, resultDeletion{MatchID: id, Result: newStoredResultJSON(d.Result),
			Rebuild: rebuildResponse{GameType: d.GameType, Results: rep.Results, Contexts: rep.Contexts,
				Ratings: rep.Ratings, ElapsedMS: float64(time.Since(start).Microseconds()) / 1000}})
	})
}
