// Package resultjson is a match result in JSON: the body of POST /v1/results, which is also
// a line of a results-jsonl file (api evaluate -data, -export). It holds the one mapping
// between that body and ratings.Result, both ways; each reader decodes it its own way (the
// HTTP handler strictly, a file leniently) and then maps it here.
package resultjson

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Body is a POST /v1/results request body.
type Body struct {
	MatchID   string   `json:"match_id"`
	Context   Context  `json:"context"`
	Map       string   `json:"map"`
	DurationS *float64 `json:"duration_s"`
	Teams     []Team   `json:"teams"`
	// Winner is kept raw: a missing winner (an error) and null (a draw) differ.
	Winner jsontext.Value `json:"winner"`
	// EndedAt is when the match ended, RFC 3339; left out, it is when the service accepted
	// the result.
	EndedAt string `json:"ended_at,omitempty"`
}

// Context is the body's context: the game type and the mutators played.
type Context struct {
	GameType string   `json:"game_type"`
	Mutators []string `json:"mutators,omitempty"`
}

// Team is one team of a body, its players in order.
type Team struct {
	Side    string        `json:"side"`
	Players []Participant `json:"players"`
}

// Participant is a player (ID) or a bot (Bot) of a team; the times are in seconds from the
// match's start.
type Participant struct {
	ID         string   `json:"id,omitempty"`
	Bot        string   `json:"bot,omitempty"`
	JoinedS    *float64 `json:"joined_s,omitempty"`
	LeftS      *float64 `json:"left_s,omitempty"`
	CommanderS *float64 `json:"commander_s,omitempty"`
}

// Result is the body as the model's Result, with the service's defaults: joined_s 0, left_s
// duration_s, commander_s 0, winner null a draw, no ended_at (the service stamps it). The error, an apperr Invalid naming the
// fields, is the body's own faults: duration_s missing, winner missing or not a team index.
// The Result is not validated (ratings.Result.Validate does that).
func (b *Body) Result() (ratings.Result, error) {
	var fields apperr.Fields
	r := ratings.Result{
		MatchID:  b.MatchID,
		GameType: b.Context.GameType,
		Mutators: b.Context.Mutators,
		Map:      b.Map,
		Teams:    make([]ratings.Team, len(b.Teams)),
	}
	if b.DurationS == nil {
		fields.Add("duration_s", "is required")
	} else {
		r.DurationS = *b.DurationS
	}
	switch {
	case len(b.Winner) == 0:
		fields.Add("winner", "is required: a team index, or null for a draw")
	case b.Winner.Kind() == 'n':
	default:
		var winner int
		if err := json.Unmarshal(b.Winner, &winner); err != nil {
			fields.Add("winner", "must be 0 or 1 (a team index), or null for a draw")
		} else {
			r.Winner = &winner
		}
	}
	if b.EndedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, b.EndedAt)
		switch {
		case err != nil:
			fields.Add("ended_at", "must be an RFC 3339 time such as 2026-01-01T20:15:00Z")
		case t.Year() < 1970:
			fields.Add("ended_at", "must be a time from 1970 to 9999")
		}
		r.EndedAt = t
	}
	for ti, t := range b.Teams {
		team := ratings.Team{Side: t.Side, Players: make([]ratings.Player, len(t.Players))}
		for pi, p := range t.Players {
			left := r.DurationS
			if p.LeftS != nil {
				left = *p.LeftS
			}
			team.Players[pi] = ratings.Player{ID: p.ID, Bot: p.Bot, JoinedS: deref(p.JoinedS), LeftS: left,
				CommanderS: deref(p.CommanderS)}
		}
		r.Teams[ti] = team
	}
	return r, fields.Err()
}

// FromResult is the body that posts r, in its shortest form: what equals the service's
// default (no mutators, joined_s 0, left_s the duration, commander_s 0) is left out.
func FromResult(r ratings.Result) Body {
	b := Body{MatchID: r.MatchID, Context: Context{GameType: r.GameType, Mutators: r.Mutators}, Map: r.Map,
		DurationS: &r.DurationS, Winner: jsontext.Value("null")}
	if r.Winner != nil {
		b.Winner = jsontext.Value(fmt.Sprint(*r.Winner))
	}
	if !r.EndedAt.IsZero() {
		b.EndedAt = r.EndedAt.UTC().Format(time.RFC3339Nano)
	}
	for _, t := range r.Teams {
		tb := Team{Side: t.Side, Players: make([]Participant, len(t.Players))}
		for i, p := range t.Players {
			tb.Players[i] = Participant{ID: p.ID, Bot: p.Bot, JoinedS: nonZero(p.JoinedS), CommanderS: nonZero(p.CommanderS)}
			if p.LeftS != r.DurationS {
				tb.Players[i].LeftS = &p.LeftS
			}
		}
		b.Teams = append(b.Teams, tb)
	}
	return b
}

func deref(v *float64) float64 {
	if v == nil {
		return 0
	}
	return *v
}

func nonZero(v float64) *float64 {
	if v == 0 {
		return nil
	}
	return &v
}
