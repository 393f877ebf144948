package handlers

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// This file holds the ready check (DESIGN, "Ready check (acceptance)"): a queue's
// acceptance, a proposed ticket's proposal, and POST /v1/matches/{id}/acceptance (scope
// match), by which each player of a proposed match accepts or declines it.

type acceptanceJSON struct {
	TimeoutS *int `json:"timeout_s"`
}

// acceptance is the queue's ready check; nil without one. A timeout left out is 0, which the
// queue's validation refuses (naming acceptance.timeout_s).
func (a *acceptanceJSON) acceptance() *queue.Acceptance {
	if a == nil {
		return nil
	}
	var timeout time.Duration
	if a.TimeoutS != nil {
		timeout = durationOf(int64(*a.TimeoutS), time.Second)
	}
	return &queue.Acceptance{Timeout: timeout}
}

func newAcceptanceJSON(a *queue.Acceptance) *acceptanceJSON {
	if a == nil {
		return nil
	}
	return &acceptanceJSON{TimeoutS: new(int(a.Timeout / time.Second))}
}

// ticketProposalJSON is a proposed ticket's ready check.
type ticketProposalJSON struct {
	MatchID  string             `json:"match_id"`
	Team     int                `json:"team"`
	Region   string             `json:"region,omitempty"`
	Teams    []assignedTeamJSON `json:"teams"`
	AcceptBy time.Time          `json:"accept_by"`
	// Attributes: what the match's rules agreed on (the map to play is among maps).
	Attributes map[string]rulesjson.Value `json:"attributes,omitempty"`
}

func newTicketProposalJSON(p *queue.TicketProposal) *ticketProposalJSON {
	if p == nil {
		return nil
	}
	out := &ticketProposalJSON{MatchID: p.MatchID, Team: p.Team, Region: p.Region, AcceptBy: p.AcceptBy,
		Teams: make([]assignedTeamJSON, len(p.Teams)), Attributes: matchAttributesJSON(p.Attributes)}
	for i, ids := range p.Teams {
		out.Teams[i] = assignedTeamJSON{Players: nonNil(ids)}
	}
	return out
}

type acceptanceRequest struct {
	PlayerID string `json:"player_id"`
	Accept   *bool  `json:"accept"`
}

// proposalJSON is a ready check as POST /v1/matches/{id}/acceptance answers it.
type proposalJSON struct {
	MatchID    string               `json:"match_id"`
	Queue      string               `json:"queue"`
	Status     queue.ProposalState  `json:"status"`
	AcceptBy   time.Time            `json:"accept_by"`
	ResolvedAt *time.Time           `json:"resolved_at,omitempty"`
	Players    []proposalPlayerJSON `json:"players"`
}

type proposalPlayerJSON struct {
	ID       string `json:"id"`
	TicketID string `json:"ticket_id"`
	Team     int    `json:"team"`
	// Answer is accepted, declined or pending.
	Answer string `json:"answer"`
}

func newProposalJSON(p queue.Proposal) proposalJSON {
	out := proposalJSON{MatchID: p.Match.ID, Queue: p.Match.Queue, Status: p.State, AcceptBy: p.AcceptBy, Players: []proposalPlayerJSON{}}
	if !p.ResolvedAt.IsZero() {
		out.ResolvedAt = new(p.ResolvedAt)
	}
	for team, t := range p.Match.Teams {
		for _, pl := range t.Players {
			answer := "pending"
			if accepted, ok := p.Answers[pl.ID]; ok && accepted {
				answer = "accepted"
			} else if ok {
				answer = "declined"
			}
			out.Players = append(out.Players, proposalPlayerJSON{ID: pl.ID, TicketID: pl.TicketID, Team: team, Answer: answer})
		}
	}
	return out
}

// handleAnswerProposal answers POST /v1/matches/{id}/acceptance: a player's answer to the
// ready check of a proposed match, by the key that owns the player's ticket (or an admin
// key). 200 with the proposal as it then is: open, or resolved by this answer (accepted:
// the tickets are matched; declined: the decliners' tickets cancelled, the others searching
// again). An unknown proposal or player, or another key's, is a 404; a resolved proposal a 409.
func handleAnswerProposal(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "id")
		var req acceptanceRequest
		if err == nil {
			req, err = decode[acceptanceRequest](r)
		}
		if err == nil && req.Accept == nil {
			err = apperr.Field("accept", "is required: true to accept the match, false to decline it")
		}
		var p queue.Proposal
		if err == nil {
			p, err = svc.Answer(r.Context(), id, req.PlayerID, *req.Accept)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, newProposalJSON(p))
	})
}
