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

// This file holds the queue administration endpoints (scope admin): PUT, GET and DELETE
// /v1/queues/{name}, and GET /v1/queues.

type queueRequest struct {
	Context      *contextJSON                       `json:"context"`
	TeamSize     *int                               `json:"team_size"`
	Teams        *int                               `json:"teams"`
	Strategy     *string                            `json:"strategy"`
	Expansions   *expansionsJSON                    `json:"expansions"`
	Regions      []string                           `json:"regions"`
	TicketTTLS   *int                               `json:"ticket_ttl_s"`
	MaxPartySize *int                               `json:"max_party_size"`
	MaxSearching *int                               `json:"max_searching"`
	MaxPerKey    *int                               `json:"max_searching_per_key"`
	TickMS       *int                               `json:"tick_ms"`
	Webhook      *webhookJSON                       `json:"webhook"`
	Attributes   map[string]rulesjson.AttributeDecl `json:"attributes"`
	Rules        []rulesjson.Rule                   `json:"rules"`
	MinTeamSize  []rulesjson.Step                   `json:"min_team_size"`
	Composition  map[string]rulesjson.RoleRange     `json:"composition"`
	TeamDefs     []rulesjson.TeamDef                `json:"team_defs"`
	Roles        []string                           `json:"roles"`
	Avoid        *avoidJSON                         `json:"avoid"`
	PartitionBy  string                             `json:"partition_by"`
	Penalties    *rulesjson.Penalties               `json:"penalties"`
	Acceptance   *acceptanceJSON                    `json:"acceptance"`
	Allocator    *allocatorJSON                     `json:"allocator"`
	MatchFn      *matchFunctionJSON                 `json:"match_function"`
}

type expansionsJSON struct {
	Interval     []rulesjson.Step `json:"interval"`
	MaxLatencyMS []rulesjson.Step `json:"max_latency_ms"`
}

type webhookJSON struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
}

// queueJSON is a queue as the API shows it. The webhook's, allocator's and match function's
// secrets are never shown.
type queueJSON struct {
	Name         string                             `json:"name"`
	Context      contextJSON                        `json:"context"`
	TeamSize     int                                `json:"team_size"`
	Teams        int                                `json:"teams"`
	Strategy     queue.Strategy                     `json:"strategy"`
	Expansions   expansionsJSON                     `json:"expansions"`
	Regions      []string                           `json:"regions"`
	TicketTTLS   int                                `json:"ticket_ttl_s"`
	MaxPartySize int                                `json:"max_party_size"`
	MaxSearching int                                `json:"max_searching,omitempty"`
	MaxPerKey    int                                `json:"max_searching_per_key,omitempty"`
	TickMS       int64                              `json:"tick_ms"`
	Webhook      *webhookPublicJSON                 `json:"webhook,omitempty"`
	Attributes   map[string]rulesjson.AttributeDecl `json:"attributes,omitempty"`
	Rules        []rulesjson.Rule                   `json:"rules,omitempty"`
	MinTeamSize  []rulesjson.Step                   `json:"min_team_size,omitempty"`
	Composition  map[string]rulesjson.RoleRange     `json:"composition,omitempty"`
	TeamDefs     []rulesjson.TeamDef                `json:"team_defs,omitempty"`
	Roles        []string                           `json:"roles,omitempty"`
	Avoid        *avoidJSON                         `json:"avoid,omitempty"`
	PartitionBy  string                             `json:"partition_by,omitempty"`
	Penalties    *rulesjson.Penalties               `json:"penalties,omitempty"`
	Acceptance   *acceptanceJSON                    `json:"acceptance,omitempty"`
	Allocator    *allocatorPublicJSON               `json:"allocator,omitempty"`
	MatchFn      *matchFunctionPublicJSON           `json:"match_function,omitempty"`
	CreatedAt    time.Time                          `json:"created_at"`
	UpdatedAt    time.Time                          `json:"updated_at"`
}

// avoidJSON is a queue's avoid: the scope of its players' avoid lists and when they turn
// optional.
type avoidJSON struct {
	Scope          string   `json:"scope,omitempty"`
	OptionalAfterS *float64 `json:"optional_after_s,omitempty"`
}

type webhookPublicJSON struct {
	URL string `json:"url"`
}

type queuesResponse struct {
	Queues []queueJSON `json:"queues"`
}

// definition turns the request into a queue of the given name: what it leaves out takes
// queue.DefaultQueue's values, except max_party_size, which defaults to team_size.
func (req *queueRequest) definition(name string) queue.Queue {
	q := queue.DefaultQueue(name)
	if req.Context != nil {
		q.GameType, q.Mutators = req.Context.GameType, req.Context.Mutators
	}
	q.TeamDefs, q.MinTeamSize, q.Composition, q.Roles = rulesjson.TeamDefs(req.TeamDefs), steps(req.MinTeamSize), rulesjson.Composition(req.Composition), req.Roles
	if a := req.Avoid; a != nil {
		q.Avoid.Scope, q.Avoid.OptionalAfterS = a.Scope, a.OptionalAfterS
	}
	if q.TeamDefs != nil { // their number and the largest, unless the request says otherwise
		q.Teams, q.TeamSize = queue.TeamDefsShape(q.TeamDefs)
	}
	setIf(&q.TeamSize, req.TeamSize)
	q.MaxPartySize = q.TeamSize
	setIf(&q.MaxPartySize, req.MaxPartySize)
	setIf(&q.MaxSearching, req.MaxSearching)
	setIf(&q.MaxSearchingPerKey, req.MaxPerKey)
	setIf(&q.Teams, req.Teams)
	if req.Strategy != nil {
		q.Strategy = queue.Strategy(*req.Strategy)
	}
	if e := req.Expansions; e != nil {
		if e.Interval != nil {
			q.Expansions.Interval = steps(e.Interval)
		}
		q.Expansions.MaxLatencyMS = steps(e.MaxLatencyMS)
	}
	q.Regions = req.Regions
	if req.TicketTTLS != nil {
		q.TicketTTL = durationOf(int64(*req.TicketTTLS), time.Second)
	}
	if req.TickMS != nil {
		q.Tick = durationOf(int64(*req.TickMS), time.Millisecond)
	}
	if w := req.Webhook; w != nil {
		q.Webhook = &queue.Webhook{URL: w.URL, Secret: w.Secret}
	}
	q.Attributes, q.Rules = rulesjson.Attributes(req.Attributes), rulesjson.Rules(req.Rules)
	q.Acceptance, q.Allocator = req.Acceptance.acceptance(), req.Allocator.allocator()
	q.MatchFunction = req.MatchFn.matchFunction()
	q.PartitionBy = req.PartitionBy
	q.Penalties = queue.PenaltiesOf(req.Penalties)
	return q
}

func steps(in []rulesjson.Step) []queue.Step {
	if in == nil {
		return nil
	}
	out := make([]queue.Step, len(in))
	for i, s := range in {
		out[i] = queue.Step{AfterS: s.AfterS, Value: s.Value}
	}
	return out
}

func stepsJSON(in []queue.Step) []rulesjson.Step {
	out := make([]rulesjson.Step, len(in))
	for i, s := range in {
		out[i] = rulesjson.Step{AfterS: s.AfterS, Value: s.Value}
	}
	return out
}

func newQueueJSON(q queue.Queue) queueJSON {
	out := queueJSON{
		Name:         q.Name,
		Context:      contextJSON{GameType: q.GameType, Mutators: orEmpty(q.Mutators)},
		TeamSize:     q.TeamSize,
		Teams:        q.Teams,
		Strategy:     q.Strategy,
		Expansions:   expansionsJSON{Interval: stepsJSON(q.Expansions.Interval), MaxLatencyMS: stepsJSON(q.Expansions.MaxLatencyMS)},
		Regions:      orEmpty(q.Regions),
		TicketTTLS:   int(q.TicketTTL / time.Second),
		MaxPartySize: q.MaxPartySize,
		MaxSearching: q.MaxSearching,
		MaxPerKey:    q.MaxSearchingPerKey,
		TickMS:       q.Tick.Milliseconds(),
		Attributes:   rulesjson.FromAttributes(q.Attributes),
		Rules:        rulesjson.FromRules(q.Rules),
		MinTeamSize:  nilIfEmpty(stepsJSON(q.MinTeamSize)),
		Composition:  rulesjson.FromComposition(q.Composition),
		TeamDefs:     rulesjson.FromTeamDefs(q.TeamDefs),
		Roles:        q.Roles,
		PartitionBy:  q.PartitionBy,
		CreatedAt:    q.CreatedAt,
		UpdatedAt:    q.UpdatedAt,
	}
	if q.Webhook != nil {
		out.Webhook = &webhookPublicJSON{URL: q.Webhook.URL}
	}
	if q.Avoid.Scope != "" || q.Avoid.OptionalAfterS != nil {
		out.Avoid = &avoidJSON{Scope: q.Avoid.Scope, OptionalAfterS: q.Avoid.OptionalAfterS}
	}
	out.Acceptance, out.Allocator = newAcceptanceJSON(q.Acceptance), newAllocatorPublicJSON(q.Allocator)
	out.MatchFn = newMatchFunctionPublicJSON(q.MatchFunction)
	out.Penalties = queue.PenaltiesJSON(q.Penalties)
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// handlePutQueue answers PUT /v1/queues/{name}: 201 with the queue when it is new, 200 when
// it replaced a definition (its searching tickets stay and follow the new one).
func handlePutQueue(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, err := decode[queueRequest](r)
		var q queue.Queue
		var created bool
		if err == nil {
			if req.Context == nil {
				err = apperr.Field("context", "is required: the rating context the queue's players are rated in")
			} else if err = allowGameType(r.Context(), "context.game_type", req.Context.GameType); err == nil {
				q, created, err = svc.PutQueue(r.Context(), req.definition(chi.URLParam(r, "name")))
			}
		}
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		respond(w, r, logger, status, newQueueJSON(q))
	})
}

// handleGetQueue answers GET /v1/queues/{name}.
func handleGetQueue(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q, err := svc.GetQueue(r.Context(), chi.URLParam(r, "name"))
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		respond(w, r, logger, http.StatusOK, newQueueJSON(q))
	})
}

// handleListQueues answers GET /v1/queues.
func handleListQueues(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		qs, err := svc.ListQueues(r.Context())
		if err != nil {
			writeError(w, r, logger, err)
			return
		}
		resp := queuesResponse{Queues: make([]queueJSON, len(qs))}
		for i, q := range qs {
			resp.Queues[i] = newQueueJSON(q)
		}
		respond(w, r, logger, http.StatusOK, resp)
	})
}

// handleDeleteQueue answers DELETE /v1/queues/{name}: 204; its searching tickets are
// cancelled.
func handleDeleteQueue(logger *slog.Logger, svc *queuesvc.Service) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := svc.DeleteQueue(r.Context(), chi.URLParam(r, "name")); err != nil {
			writeError(w, r, logger, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}
