package handlers

import (
	"log/slog"
	"net/http"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/resultjson"
)

// contextJSON is the context a request names: a game type and its mutators.
type contextJSON struct {
	GameType string   `json:"game_type"`
	Mutators []string `json:"mutators"`
}

type resultResponse struct {
	MatchID        string         `json:"match_id"`
	Context        contextOut     `json:"context"`
	WinProbability [2]float64     `json:"win_probability"`
	Updates        []ratingUpdate `json:"updates"`
}

type contextOut struct {
	GameType string   `json:"game_type"`
	Mutators []string `json:"mutators"`
	Key      string   `json:"key"`
}

type ratingUpdate struct {
	ID     string  `json:"id,omitempty"`
	Bot    string  `json:"bot,omitempty"`
	Team   int     `json:"team"`
	Before float64 `json:"before"`
	After  float64 `json:"after"`
	Weight float64 `json:"weight"`
	Games  int     `json:"games"`
	rankedJSON
	Promoted bool `json:"promoted,omitempty"`
	Demoted  bool `json:"demoted,omitempty"`
}

func newContextOut(c ratings.Context) contextOut {
	m := c.Mutators
	if m == nil {
		m = []string{}
	}
	return contextOut{GameType: c.GameType, Mutators: m, Key: c.Key()}
}

// handleResults answers POST /v1/results: one finished match in, every participant's rating
// moved by the model, in one transaction. The same match id with the same result replays the
// first answer; with another result it is a 409.
func handleResults(logger *slog.Logger, svc *ratings.Service, queues *queue.Service, metrics *domainMetrics) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[resultjson.Body](r)
		var result ratings.Result
		var made *queue.Match // the queue's match of the result, if it made it
		if err == nil {
			result, err = resultOf(&req)
		}
		if err == nil {
			err = allowGameType(r.Context(), "context.game_type", req.Context.GameType)
		}
		if err == nil && queues != nil {
			made, err = queues.CheckResult(r.Context(), req.MatchID, req.Context.GameType, roster(&req))
		}
		if err != nil {
			metrics.results.WithLabelValues("rejected").Inc()
			writeError(w, r, logger, err)
			return
		}
		receipt, err := svc.Record(r.Context(), result)
		if err != nil {
			if apperr.CodeOf(err) == apperr.Invalid {
				metrics.results.WithLabelValues("rejected").Inc()
			}
			writeError(w, r, logger, err)
			return
		}
		if made != nil {
			// Recorded again for a replay: a leave is kept once a match, and a replay after a
			// failure here is how its leaves get counted.
			if err := queues.RecordLeavesOf(r.Context(), *made, result.DurationS, presence(&result)); err != nil {
				writeError(w, r, logger, err)
				return
			}
		}
		if receipt.Replayed {
			w.Header().Set("Idempotent-Replayed", "true")
			metrics.results.WithLabelValues("replayed").Inc()
		} else {
			metrics.results.WithLabelValues("recorded").Inc()
			metrics.ratingUpdates.Add(float64(len(receipt.Outcome.Updates)))
			for _, ch := range receipt.Changes {
				if ch.NewlySuspected {
					metrics.suspectedSmurfs.Inc()
				}
			}
		}
		respond(w, r, logger, http.StatusCreated, newResultResponse(receipt))
	})
}

func newResultResponse(rc ratings.Receipt) resultResponse {
	o := rc.Outcome
	resp := resultResponse{
		MatchID:        rc.MatchID,
		Context:        newContextOut(rc.Context),
		WinProbability: o.WinProbability,
		Updates:        make([]ratingUpdate, len(o.Updates)),
	}
	for i, u := range o.Updates {
		ru := ratingUpdate{Team: u.Team, Before: u.Before.Skill, After: u.After.Skill,
			Weight: u.After.Weight(), Games: u.After.Games}
		if i < len(rc.Changes) {
			ch := rc.Changes[i]
			ru.rankedJSON, ru.Promoted, ru.Demoted = newRankedJSON(ch.Ranked, ch.SuspectedSmurf), ch.Promoted, ch.Demoted
		}
		if u.Participant.Bot {
			ru.Bot = u.Participant.ID
		} else {
			ru.ID = u.Participant.ID
		}
		resp.Updates[i] = ru
	}
	return resp
}

// presence is how long each player of a result was in its match, in seconds.
func presence(r *ratings.Result) map[string]float64 {
	out := make(map[string]float64)
	for _, t := range r.Teams {
		for _, p := range t.Players {
			if p.ID != "" {
				out[p.ID] += p.LeftS - p.JoinedS
			}
		}
	}
	return out
}

// roster is the players' ids by team ("" for a bot), as queue.Service.CheckResult takes them.
func roster(req *resultjson.Body) [][]string {
	out := make([][]string, len(req.Teams))
	for i, t := range req.Teams {
		for _, p := range t.Players {
			out[i] = append(out[i], p.ID)
		}
	}
	return out
}

// resultOf is the body as the model's Result, validated: every fault at once.
func resultOf(req *resultjson.Body) (ratings.Result, error) {
	r, err := req.Result()
	var fields apperr.Fields
	fields.Include(err)
	fields.Include(r.Validate())
	return r, fields.Err()
}
