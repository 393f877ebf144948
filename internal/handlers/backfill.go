package handlers

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// This file holds POST /v1/queues/{name}/backfill (scope match): a ticket for a running
// match that lost players.

type backfillRequest struct {
	MatchID   string                `json:"match_id"`
	Teams     []backfillTeamRequest `json:"teams"`
	OpenSlots []int                 `json:"open_slots"`
	Region    string                `json:"region"`
	Bots      *backfillBotsJSON     `json:"bots"`
	// Attributes: the running match's values, which its joiners keep by the queue's rules.
	Attributes map[string]rulesjson.Value `json:"attributes"`
	TTLS       *int                       `json:"ttl_s"`
}

type backfillTeamRequest struct {
	Players []ticketPlayerJSON `json:"players"`
	Bots    []float64          `json:"bots"`
}

// backfillBotsJSON is a game server's bot rule, as /v1/teams/assign's bots but with the
// mean bot on the matchmaking scale the queue rates players on.
type backfillBotsJSON struct {
	MeanRating    float64          `json:"mean_rating"`
	TargetPlayers *int             `json:"target_players"`
	Recommended   *recommendedJSON `json:"recommended"`
}

// backfillJSON is a backfill ticket's request as the ticket shows it.
type backfillJSON struct {
	MatchID   string             `json:"match_id"`
	Teams     []backfillTeamJSON `json:"teams"`
	OpenSlots []int              `json:"open_slots"`
	Region    string             `json:"region,omitempty"`
	Bots      *backfillBotsOut   `json:"bots,omitempty"`
}

type backfillTeamJSON struct {
	Players []string  `json:"players"`
	Bots    []float64 `json:"bots"`
}

type backfillBotsOut struct {
	MeanRating    float64         `json:"mean_rating"`
	TargetPlayers int             `json:"target_players"`
	Recommended   recommendedBots `json:"recommended"`
}

type recommendedBots struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

func newBackfillJSON(b *queue.Backfill) *backfillJSON {
	if b == nil {
		return nil
	}
	out := &backfillJSON{MatchID: b.MatchID, OpenSlots: b.OpenSlots, Region: b.Region, Teams: make([]backfillTeamJSON, len(b.Teams))}
	for i, t := range b.Teams {
		out.Teams[i] = backfillTeamJSON{Players: t.Players, Bots: t.Bots}
		if out.Teams[i].Bots == nil {
			out.Teams[i].Bots = []float64{}
		}
	}
	if r := b.Bots; r != nil {
		out.Bots = &backfillBotsOut{MeanRating: r.MeanRating, TargetPlayers: r.TargetPlayers,
			Recommended: recommendedBots{Min: r.RecommendedMin, Max: r.RecommendedMax}}
	}
	return out
}

// newBackfill turns the request into the service's, the faults of its shape (what the
// service cannot see once it is decoded) named.
func (req *backfillRequest) newBackfill(queueName, key string) (queue.NewBackfill, error) {
	nb := queue.NewBackfill{Queue: queueName, MatchID: req.MatchID, OpenSlots: req.OpenSlots, Region: req.Region,
		IdempotencyKey: key, Teams: make([]queue.NewBackfillTeam, len(req.Teams)), Attributes: rulesjson.Values(req.Attributes)}
	var f apperr.Fields
	for i, t := range req.Teams {
		nb.Teams[i].Bots = t.Bots
		nb.Teams[i].Players = make([]queue.NewPlayer, len(t.Players))
		for j, p := range t.Players {
			nb.Teams[i].Players[j].ID = p.ID
			if p.Rating.Set {
				v := p.Rating.Value
				nb.Teams[i].Players[j].Rating = &v
			}
		}
	}
	if b := req.Bots; b != nil {
		rule := &queue.BotRule{MeanRating: b.MeanRating, RecommendedMax: 1024}
		if b.TargetPlayers == nil {
			f.Add("bots.target_players", "is required")
		} else {
			rule.TargetPlayers = *b.TargetPlayers
		}
		if rec := b.Recommended; rec != nil {
			setIf(&rule.RecommendedMin, rec.Min)
			setIf(&rule.RecommendedMax, rec.Max)
		}
		nb.Bots = rule
	}
	if req.TTLS != nil {
		if *req.TTLS <= 0 {
			f.Add("ttl_s", "must be at least 1 (leave it out for the queue's ticket_ttl_s)")
		} else {
			nb.TTL = durationOf(int64(*req.TTLS), time.Second)
		}
	}
	return nb, f.Err()
}

// handleCreateBackfill answers POST /v1/queues/{name}/backfill: 201 with the searching
// backfill ticket, committed to the store. Its players are the match's: the tick serves
// it before any other ticket, and its assignment (GET /v1/tickets/{id}, the matched event)
// lists who joined which team under the running match's id. Idempotency-Key as for tickets.
func handleCreateBackfill(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[backfillRequest](r)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		nb, err := req.newBackfill(chi.URLParam(r, "name"), r.Header.Get("Idempotency-Key"))
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		t, replayed, err := svc.CreateBackfill(r.Context(), nb)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respondCreatedTicket(w, r, logger, t, replayed)
	})
}
