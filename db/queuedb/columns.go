package queuedb

import (
	"encoding/json"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// --- JSON columns -------------------------------------------------------------------------

// The JSON stored in jsonb columns is named like the API's fields, so that it reads well in
// psql and does not change when a Go field is renamed.
type (
	stepJSON struct {
		AfterS float64 `json:"after_s"`
		Value  float64 `json:"value"`
	}
	stepsJSONList  []stepJSON
	expansionsJSON struct {
		Interval     stepsJSONList `json:"interval"`
		MaxLatencyMS stepsJSONList `json:"max_latency_ms,omitempty"`
	}
	ticketPlayerJSON struct {
		ID     string             `json:"id"`
		Rating float64            `json:"rating"`
		Source queue.RatingSource `json:"source"`
		Roles  []string           `json:"roles,omitempty"`
		Avoid  []string           `json:"avoid,omitempty"`
		// LowPriority: the player owes low-priority games (queue.Player.LowPriority).
		LowPriority bool `json:"low_priority,omitempty"`
	}
	assignmentJSON struct {
		MatchID    string               `json:"match_id"`
		Team       int                  `json:"team"`
		Region     string               `json:"region"`
		Teams      [][]string           `json:"teams"`
		Joined     [][]string           `json:"joined,omitempty"`
		FillID     string               `json:"fill_id,omitempty"`
		Attributes []matchAttributeJSON `json:"attributes,omitempty"`
		TeamNames  []string             `json:"team_names,omitempty"`
		Roles      map[string]string    `json:"roles,omitempty"`
		OpenSlots  []int                `json:"open_slots,omitempty"`
		Connection json.RawMessage      `json:"connection,omitempty"`
	}
	backfillJSON struct {
		MatchID   string             `json:"match_id"`
		Teams     []backfillTeamJSON `json:"teams"`
		OpenSlots []int              `json:"open_slots"`
		Region    string             `json:"region,omitempty"`
		Bots      *botRuleJSON       `json:"bots,omitempty"`
	}
	backfillTeamJSON struct {
		Players []string  `json:"players"`
		Bots    []float64 `json:"bots,omitempty"`
	}
	botRuleJSON struct {
		MeanRating     float64 `json:"mean_rating"`
		TargetPlayers  int     `json:"target_players"`
		RecommendedMin int     `json:"recommended_min"`
		RecommendedMax int     `json:"recommended_max"`
	}
	matchPlayerJSON struct {
		ID          string  `json:"id"`
		TicketID    string  `json:"ticket_id"`
		Rating      float64 `json:"rating"`
		LowPriority bool    `json:"low_priority,omitempty"`
	}
	matchTeamJSON struct {
		Players     []matchPlayerJSON `json:"players"`
		RatingTotal float64           `json:"rating_total"`
		Name        string            `json:"name,omitempty"`
		Roles       []string          `json:"roles,omitempty"`
		OpenSlots   int               `json:"open_slots,omitempty"`
	}
	pairJSON struct {
		Players    [2]string `json:"players"`
		Difference float64   `json:"difference"`
		Interval   float64   `json:"interval"`
	}
)

func stepsJSON(steps []queue.Step) stepsJSONList {
	out := make(stepsJSONList, len(steps))
	for i, s := range steps {
		out[i] = stepJSON(s)
	}
	return out
}

func (l stepsJSONList) steps() []queue.Step {
	if len(l) == 0 {
		return nil
	}
	out := make([]queue.Step, len(l))
	for i, s := range l {
		out[i] = queue.Step(s)
	}
	return out
}

func newAssignmentJSON(a queue.Assignment) assignmentJSON {
	return assignmentJSON{MatchID: a.MatchID, Team: a.Team, Region: a.Region, Teams: a.Teams, Joined: a.Joined,
		FillID: a.FillID, Attributes: matchAttributesJSON(a.Attributes), TeamNames: a.TeamNames, Roles: a.Roles,
		OpenSlots:  a.OpenSlots,
		Connection: a.Connection}
}

func (a assignmentJSON) assignment() *queue.Assignment {
	return &queue.Assignment{MatchID: a.MatchID, Team: a.Team, Region: a.Region, Teams: a.Teams, Joined: a.Joined,
		FillID: a.FillID, Attributes: matchAttributes(a.Attributes), TeamNames: a.TeamNames, Roles: a.Roles,
		OpenSlots:  a.OpenSlots,
		Connection: a.Connection}
}

func newBackfillJSON(b *queue.Backfill) backfillJSON {
	out := backfillJSON{MatchID: b.MatchID, OpenSlots: b.OpenSlots, Region: b.Region,
		Teams: make([]backfillTeamJSON, len(b.Teams))}
	for i, t := range b.Teams {
		out.Teams[i] = backfillTeamJSON(t)
	}
	if b.Bots != nil {
		out.Bots = new(botRuleJSON(*b.Bots))
	}
	return out
}

func (b backfillJSON) backfill() *queue.Backfill {
	out := &queue.Backfill{MatchID: b.MatchID, OpenSlots: b.OpenSlots, Region: b.Region,
		Teams: make([]queue.BackfillTeam, len(b.Teams))}
	for i, t := range b.Teams {
		out.Teams[i] = queue.BackfillTeam(t)
	}
	if b.Bots != nil {
		out.Bots = new(queue.BotRule(*b.Bots))
	}
	return out
}
