package handlers

import (
	"context"
	"log/slog"
	"net/http"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
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
func handleResults(logger *slog.Logger, svc *ratings.Service, queues *queuesvc.Service, metrics *domainMetrics) http.Handler {
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
		if err == nil {
			err = svc.Check(result)
		}
		if err != nil {
			metrics.results.WithLabelValues("rejected").Inc()
			writeError(w, r, logger, err)
			return
		}
		receipt, err := recordResult(r.Context(), svc, queues, made, result)
		if err != nil {
			if apperr.CodeOf(err) == apperr.Invalid {
				metrics.results.WithLabelValues("rejected").Inc()
			}
			writeError(w, r, logger, err)
			return
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
		respond(w, r, logger, http.StatusCreated, new(newResultResponse(receipt)))
	})
}

// recordResult records a result that passed its checks, and for a match the queue made (made
// not nil) ends its claims and counts its leaves.
//
// The claims end first, not durable, and the result's synchronous COMMIT makes them durable:
// its WAL flush (and wait for a synchronous standby) covers every record written before it on
// the server, and the ratings and the queue share one (cmd/api opens both on DATABASE_URL's
// one pool; a pooler in front sends both to the same primary). Ending them after the commit
// took a flush of their own, which was the wait of most results at a few thousand a second
// (docs/performance.md). The order costs nothing in meaning: the result got here past every
// check Record makes before its transaction (Check) and the queue's roster check, so the
// game server says the match is over; a Conflict there is another result of the match,
// which ended them already. A replay commits nothing, so when this end did end claims (the
// first request failed after its commit) a durable end follows before the answer. A result
// that fails in Record after the end has no 201: its claims' end may not outlive a crash, and
// the client's resend ends them again. The leaves are counted again for a replay: a leave is
// kept once a match, and a replay after a failure here is how its leaves get counted.
func recordResult(ctx context.Context, svc *ratings.Service, queues *queuesvc.Service, made *queue.Match, result ratings.Result) (ratings.Receipt, error) {
	var ended bool
	if made != nil {
		var err error
		if ended, err = queues.EndClaimsOf(ctx, *made, false); err != nil {
			return ratings.Receipt{}, err
		}
	}
	receipt, err := svc.Record(ctx, result)
	if err != nil || made == nil {
		return receipt, err
	}
	if receipt.Replayed && ended {
		if _, err := queues.EndClaimsOf(ctx, *made, true); err != nil {
			return ratings.Receipt{}, err
		}
	}
	return receipt, queues.CountLeavesOf(ctx, *made, result.DurationS, presence(&result))
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

// roster is the players' ids by team ("" for a bot), as queuesvc.Service.CheckResult takes them.
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
