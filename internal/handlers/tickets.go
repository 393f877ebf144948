package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queuesvc"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// This file holds the ticket endpoints (scope match): POST /v1/queues/{name}/tickets,
// GET and DELETE /v1/tickets/{id}, the queue's event stream, and GET /v1/matches/{id}
// (scope read).

type ticketRequest struct {
	Players     []ticketPlayerJSON         `json:"players"`
	LatenciesMS map[string]float64         `json:"latencies_ms"`
	Attributes  map[string]rulesjson.Value `json:"attributes"`
	TTLS        *int                       `json:"ttl_s"`
	Exclusive   *bool                      `json:"exclusive"`
}

type ticketPlayerJSON struct {
	ID     string         `json:"id"`
	Rating optionalNumber `json:"rating"`
	Roles  []string       `json:"roles"`
	Avoid  []string       `json:"avoid"`
}

type ticketJSON struct {
	ID          string                     `json:"id"`
	Queue       string                     `json:"queue"`
	Status      queue.Status               `json:"status"`
	Players     []ticketPlayerOut          `json:"players"`
	LatenciesMS map[string]float64         `json:"latencies_ms,omitempty"`
	Attributes  map[string]rulesjson.Value `json:"attributes,omitempty"`
	CreatedAt   time.Time                  `json:"created_at"`
	ExpiresAt   time.Time                  `json:"expires_at"`
	UpdatedAt   time.Time                  `json:"updated_at"`
	Exclusive   bool                       `json:"exclusive"`
	Reason      string                     `json:"reason,omitempty"`
	Assignment  *ticketAssignedJSON        `json:"assignment,omitempty"`
	Proposal    *ticketProposalJSON        `json:"proposal,omitempty"`
	Backfill    *backfillJSON              `json:"backfill,omitempty"`
	// EstimatedWaitS: how much longer a searching ticket is expected to wait.
	EstimatedWaitS *float64 `json:"estimated_wait_s,omitempty"`
	// WaitingOn: why a searching ticket still waits (from the replica that leads its queue).
	WaitingOn *waitingOnJSON `json:"waiting_on,omitempty"`
	// Tolerances: what a searching ticket accepts at its wait now.
	Tolerances *tolerancesJSON `json:"tolerances,omitempty"`
}

type tolerancesJSON struct {
	Interval     float64            `json:"interval"`
	MaxLatencyMS *float64           `json:"max_latency_ms,omitempty"`
	Rules        map[string]float64 `json:"rules,omitempty"`
}

type ticketPlayerOut struct {
	ID           string             `json:"id"`
	Rating       float64            `json:"rating"`
	RatingSource queue.RatingSource `json:"rating_source"`
	Roles        []string           `json:"roles,omitempty"`
	Avoid        []string           `json:"avoid,omitempty"`
	LowPriority  bool               `json:"low_priority,omitempty"`
}

type ticketAssignedJSON struct {
	MatchID string             `json:"match_id"`
	Team    int                `json:"team"`
	Region  string             `json:"region,omitempty"`
	Teams   []assignedTeamJSON `json:"teams"`
	// Joined, for a backfill and its joiners: the players that joined, by team.
	Joined []assignedTeamJSON `json:"joined,omitempty"`
	// FillID, for a backfill and its joiners: the fill's id, for GET /v1/matches/{id}.
	FillID string `json:"fill_id,omitempty"`
	// Attributes: what the match's rules agreed on (the map to play is among maps).
	Attributes map[string]rulesjson.Value `json:"attributes,omitempty"`
	// Connection: where the match is played, once placed.
	Connection json.RawMessage `json:"connection,omitempty"`
}

type assignedTeamJSON struct {
	Players []string `json:"players"`
	// A shaped match's team: its name (named teams), its players' roles (queues with
	// roles), the players it lacks (a match that started short).
	Name      string            `json:"name,omitempty"`
	Roles     map[string]string `json:"roles,omitempty"`
	OpenSlots int               `json:"open_slots,omitempty"`
}

func newTicketJSON(t queue.Ticket) ticketJSON {
	out := ticketJSON{ID: t.ID, Queue: t.Queue, Status: t.Status, Players: make([]ticketPlayerOut, len(t.Players)),
		LatenciesMS: t.Latencies, CreatedAt: t.CreatedAt, ExpiresAt: t.ExpiresAt, UpdatedAt: t.UpdatedAt, Reason: t.Reason, Exclusive: t.Exclusive,
		Attributes: rulesjson.FromValues(t.Attributes), WaitingOn: newWaitingOnJSON(t.WaitingOn)}
	for i, p := range t.Players {
		out.Players[i] = ticketPlayerOut{ID: p.ID, Rating: p.Rating, RatingSource: p.Source, Roles: p.Roles, Avoid: p.Avoid,
			LowPriority: p.LowPriority}
	}
	if a := t.Assignment; a != nil {
		out.Assignment = &ticketAssignedJSON{MatchID: a.MatchID, Team: a.Team, Region: a.Region, Teams: make([]assignedTeamJSON, len(a.Teams)),
			FillID: a.FillID, Attributes: matchAttributesJSON(a.Attributes), Connection: a.Connection}
		for i, ids := range a.Teams {
			team := assignedTeamJSON{Players: ids}
			if i < len(a.TeamNames) {
				team.Name = a.TeamNames[i]
			}
			if i < len(a.OpenSlots) {
				team.OpenSlots = a.OpenSlots[i]
			}
			for _, id := range ids {
				if r, ok := a.Roles[id]; ok {
					if team.Roles == nil {
						team.Roles = map[string]string{}
					}
					team.Roles[id] = r
				}
			}
			out.Assignment.Teams[i] = team
		}
		for _, ids := range a.Joined {
			out.Assignment.Joined = append(out.Assignment.Joined, assignedTeamJSON{Players: nonNil(ids)})
		}
	}
	out.Backfill = newBackfillJSON(t.Backfill)
	if tol := t.Tolerances; tol != nil {
		out.Tolerances = &tolerancesJSON{Interval: tol.Interval, MaxLatencyMS: tol.MaxLatencyMS, Rules: tol.Rules}
	}
	out.Proposal = newTicketProposalJSON(t.Proposal)
	if t.EstimatedWait != nil {
		out.EstimatedWaitS = new(t.EstimatedWait.Seconds())
	}
	return out
}

// handleCreateTicket answers POST /v1/queues/{name}/tickets: 201 with the searching ticket,
// committed to the store. A retry with the same Idempotency-Key and request answers the
// first ticket (200, Idempotent-Replayed); a player already searching is a 409 naming the
// ticket that holds him.
func handleCreateTicket(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[ticketRequest](r)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		nt := queue.NewTicket{Queue: chi.URLParam(r, "name"), Latencies: req.LatenciesMS, Attributes: rulesjson.Values(req.Attributes),
			IdempotencyKey: r.Header.Get("Idempotency-Key"), Players: make([]queue.NewPlayer, len(req.Players)), Exclusive: req.Exclusive}
		for i, p := range req.Players {
			nt.Players[i].ID, nt.Players[i].Roles, nt.Players[i].Avoid = p.ID, p.Roles, p.Avoid
			if p.Rating.Set {
				v := p.Rating.Value
				nt.Players[i].Rating = &v
			}
		}
		if req.TTLS != nil {
			if *req.TTLS <= 0 {
				writeError(w, r, logger, apperr.Field("ttl_s", "must be at least 1 (leave it out for the queue's ticket_ttl_s)"))
				return
			}
			nt.TTL = durationOf(int64(*req.TTLS), time.Second)
		}
		t, replayed, err := svc.CreateTicket(r.Context(), nt)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respondCreatedTicket(w, r, logger, t, replayed)
	})
}

// respondCreatedTicket answers a ticket or backfill creation: 201 with the ticket and its
// Location, or 200 and Idempotent-Replayed for a retry that found the first one.
func respondCreatedTicket(w http.ResponseWriter, r *http.Request, logger *slog.Logger, t queue.Ticket, replayed bool) {
	status := http.StatusCreated
	if replayed {
		status = http.StatusOK
		w.Header().Set("Idempotent-Replayed", "true")
	}
	w.Header().Set("Location", "/v1/tickets/"+t.ID)
	respond(w, r, logger, status, new(newTicketJSON(t)))
}

// handleGetTicket answers GET /v1/tickets/{id}, and with ?wait_s=N (0..60) long-polls: it
// answers when the ticket's status changes or N seconds pass, whichever is first; with
// ?status=S (the status the caller last saw) a ticket in another status is answered at once.
func handleGetTicket(logger *slog.Logger, svc *queuesvc.Service, streams context.Context, waits *waiters) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "id")
		var (
			wait  time.Duration
			known queue.Status
		)
		if err == nil {
			wait, err = waitParam(r, svc.MaxWait())
		}
		if err == nil {
			known, err = statusParam(r)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		if wait > 0 {
			leave, err := waits.enter(w, r)
			if err != nil {
				writeError(w, r, logger, err)
				return
			}
			defer leave()
			// The server's write timeout (60 s by default) would cut off a wait as long as the
			// longest allowed: the answer gets the wait and some seconds to be written.
			_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(wait + 10*time.Second))
		}
		ctx, done := streamContext(r, streams)
		defer done()
		t, err := svc.GetTicketWhile(ctx, id, wait, known)
		if err != nil && streams.Err() != nil && r.Context().Err() == nil {
			t, err = svc.GetTicket(r.Context(), id, 0) // the server is stopping: answer what it is now
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, new(newTicketJSON(t)))
	})
}

// waitParam reads ?wait_s=N, 0..most seconds.
func waitParam(r *http.Request, most time.Duration) (time.Duration, error) {
	v := r.URL.Query().Get("wait_s")
	if v == "" {
		return 0, nil
	}
	n, err := strconv.ParseFloat(v, 64)
	if err != nil || !(n >= 0 && n <= most.Seconds()) {
		return 0, apperr.Field("wait_s", "must be a number of seconds from 0 to %g", most.Seconds())
	}
	return time.Duration(n * float64(time.Second)), nil
}

// statusParam reads ?status=S, a ticket's status ("" when absent).
func statusParam(r *http.Request) (queue.Status, error) {
	v := queue.Status(r.URL.Query().Get("status"))
	switch v {
	case "", queue.Searching, queue.Proposed, queue.Placing, queue.Matched, queue.Expired, queue.Cancelled:
		return v, nil
	}
	return "", apperr.Field("status", "must be a ticket's status: searching, proposed, placing, matched, expired or cancelled")
}

// handleCancelTicket answers DELETE /v1/tickets/{id}: 204 once the ticket is cancelled
// (again 204 if it already was); a matched or expired ticket is a 409.
func handleCancelTicket(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "id")
		if err == nil {
			_, err = svc.CancelTicket(r.Context(), id)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

type matchOutJSON struct {
	ID                string             `json:"id"`
	Queue             string             `json:"queue"`
	CreatedAt         time.Time          `json:"created_at"`
	Region            string             `json:"region,omitempty"`
	Teams             []matchTeamOutJSON `json:"teams"`
	Tickets           []string           `json:"tickets"`
	Pairs             []pairJSON         `json:"pairs"`
	SkillDifference   float64            `json:"skill_difference"`
	AverageDifference float64            `json:"average_difference"`
	// A backfill's fill: the running match it joined players to, and the backfill ticket.
	BackfillOf     string `json:"backfill_of,omitempty"`
	BackfillTicket string `json:"backfill_ticket,omitempty"`
	// Attributes: what the match's rules agreed on, by attribute.
	Attributes map[string]rulesjson.Value `json:"attributes,omitempty"`
	// Connection: where the match is played, once placed.
	Connection json.RawMessage `json:"connection,omitempty"`
}

type matchTeamOutJSON struct {
	Players     []matchPlayerJSON `json:"players"`
	RatingTotal float64           `json:"rating_total"`
	Name        string            `json:"name,omitempty"`
	Roles       map[string]string `json:"roles,omitempty"`
	OpenSlots   int               `json:"open_slots,omitempty"`
}

type matchPlayerJSON struct {
	ID       string  `json:"id"`
	TicketID string  `json:"ticket_id"`
	Rating   float64 `json:"rating"`
}

// handleGetMatch answers GET /v1/matches/{id}: a match the queue made.
func handleGetMatch(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, err := pathParam(r, "id")
		var m queue.Match
		if err == nil {
			m, err = svc.GetMatch(r.Context(), id)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, new(newMatchOutJSON(m)))
	})
}

// newMatchOutJSON is a match as GET /v1/matches/{id} shows it.
func newMatchOutJSON(m queue.Match) matchOutJSON {
	out := matchOutJSON{ID: m.ID, Queue: m.Queue, CreatedAt: m.CreatedAt, Region: m.Region, Tickets: m.Tickets(),
		Teams: make([]matchTeamOutJSON, len(m.Teams)), Pairs: make([]pairJSON, len(m.Pairs)),
		SkillDifference: m.SkillDifference, AverageDifference: m.AverageDifference,
		BackfillOf: m.BackfillOf, BackfillTicket: m.BackfillTicket, Attributes: matchAttributesJSON(m.Attributes),
		Connection: m.Connection}
	for i, t := range m.Teams {
		team := matchTeamOutJSON{RatingTotal: t.RatingTotal, Players: make([]matchPlayerJSON, len(t.Players)),
			Name: t.Name, Roles: teamRoles(t), OpenSlots: t.OpenSlots}
		for j, p := range t.Players {
			team.Players[j] = matchPlayerJSON{ID: p.ID, TicketID: p.TicketID, Rating: p.Rating}
		}
		out.Teams[i] = team
	}
	for i, p := range m.Pairs {
		out.Pairs[i] = pairJSON{Players: p.Players, Difference: p.Difference, Interval: p.Interval}
	}
	return out
}

// handleQueueEvents answers GET /v1/queues/{name}/events with Server-Sent Events: each
// ticket change of the queue as "id: SEQ", "event: matched|expired|cancelled" and "data:" its
// JSON, from after the Last-Event-ID header (or ?after=SEQ; from now on when neither is
// given), until the client goes away or the server shuts down. A comment line every 15 s keeps
// proxies from closing an idle stream.
func handleQueueEvents(logger *slog.Logger, svc *queuesvc.Service, streams context.Context, waits *waiters) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leave, err := waits.enter(w, r)
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		defer leave()
		ctx, done := streamContext(r, streams)
		defer done()
		name := chi.URLParam(r, "name")
		ticket := r.URL.Query().Get("ticket")
		after, field, err := lastEventID(r)
		if err == nil {
			err = queuesvc.CheckEventTicket(ticket)
		}
		if err == nil {
			err = svc.CheckQueue(r.Context(), name)
		}
		if err == nil {
			err = svc.CheckResume(r.Context(), name, after, field)
		}
		if err == nil && after < 0 {
			after, err = svc.StreamStart(r.Context(), name)
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		rc := http.NewResponseController(w)
		h := w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-store")
		h.Set("X-Accel-Buffering", "no")
		w.WriteHeader(http.StatusOK)
		// The client sees the stream open now, not at its first event or keep-alive (15 s).
		if err := rc.Flush(); err != nil {
			return
		}
		var buf []byte
		for {
			// The server's write timeout is for ordinary answers; a stream extends it per write.
			_ = rc.SetWriteDeadline(time.Now().Add(time.Minute))
			// The stream moves on past other keys' events too, not only past those it sends.
			evs, through, err := svc.StreamEvents(ctx, name, ticket, after, 100, 15*time.Second)
			if ctx.Err() != nil {
				return // the client went away, or the server is stopping: the client resumes elsewhere
			}
			if err != nil {
				logger.WarnContext(r.Context(), "event stream: the store failed", "queue", name, "err", err)
				return // the client reconnects with Last-Event-ID
			}
			buf = buf[:0]
			if len(evs) == 0 {
				buf = append(buf, ": keep-alive\n\n"...)
			}
			for _, e := range evs {
				buf = append(buf, "id: "...)
				buf = strconv.AppendInt(buf, e.Seq, 10)
				buf = append(buf, "\nevent: "...)
				buf = append(buf, e.Type...)
				buf = append(buf, "\ndata: "...)
				buf = append(buf, queue.EncodeEvent(e)...)
				buf = append(buf, "\n\n"...)
			}
			after = max(after, through)
			if _, err := w.Write(buf); err != nil {
				return
			}
			if err := rc.Flush(); err != nil {
				return
			}
		}
	})
}

// streamContext is the request's context, ended also by streams (the server's shutdown).
func streamContext(r *http.Request, streams context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(r.Context())
	stop := context.AfterFunc(streams, cancel)
	return ctx, func() { stop(); cancel() }
}

// lastEventID is where a stream resumes, and the field that said so: the Last-Event-ID
// header, else ?after=, else -1 (from now on).
func lastEventID(r *http.Request) (int64, string, error) {
	v, field := r.Header.Get("Last-Event-ID"), "Last-Event-ID"
	if v == "" {
		v, field = r.URL.Query().Get("after"), "after"
	}
	if v == "" {
		return -1, field, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, field, apperr.Field(field, "must be an event id (a whole number from 0)")
	}
	return n, field, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
