package queue

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// The allocator (DESIGN, "Placement"): a queue with one makes its matches placing first. The
// leader POSTs each placing match to the allocator, signed as webhooks are (the delivery id
// is the match id, the same on every retry, so an allocator can answer a retry with the
// server it already gave), retrying with backoff until the placement's deadline, and stores
// the answer's connection: the match is made, its tickets matched with the connection in
// their assignment. The studio's backend may answer instead (Place, FailPlacement). A
// placement not answered by its deadline fails at the leader's next tick: its tickets search
// again, their wait kept, with a requeued event (ReasonPlacementTimeout). The placing matches
// are in the store, so a new leader takes over those its predecessor was placing.

// allocationJSON is the body POSTed to an allocator.
type allocationJSON struct {
	MatchID    string                `json:"match_id"`
	Queue      string                `json:"queue"`
	Region     string                `json:"region,omitempty"`
	Teams      []allocationTeamJSON  `json:"teams"`
	Attributes []allocationAttribute `json:"attributes,omitempty"`
	Deadline   time.Time             `json:"deadline"`
}

type allocationTeamJSON struct {
	Players []allocationPlayerJSON `json:"players"`
}

type allocationPlayerJSON struct {
	ID       string  `json:"id"`
	TicketID string  `json:"ticket_id"`
	Rating   float64 `json:"rating"`
}

type allocationAttribute struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// EncodeAllocation is the body an allocator receives for placing proposal p.
func EncodeAllocation(p Proposal) []byte {
	j := allocationJSON{MatchID: p.Match.ID, Queue: p.Match.Queue, Region: p.Match.Region, Deadline: p.AcceptBy.UTC(),
		Teams: make([]allocationTeamJSON, len(p.Match.Teams))}
	for i, t := range p.Match.Teams {
		j.Teams[i].Players = make([]allocationPlayerJSON, len(t.Players))
		for k, pl := range t.Players {
			j.Teams[i].Players[k] = allocationPlayerJSON{ID: pl.ID, TicketID: pl.TicketID, Rating: pl.Rating}
		}
	}
	for _, a := range p.Match.Attributes {
		var v any = a.Value.Str
		switch a.Value.Type {
		case matchrules.TypeNumber:
			v = a.Value.Num
		case matchrules.TypeStringList:
			v = a.Value.List
		}
		j.Attributes = append(j.Attributes, allocationAttribute{Name: a.Name, Value: v})
	}
	b, err := json.Marshal(j)
	if err != nil {
		panic(err) // strings, numbers and a time
	}
	return b
}

// CheckConnection compacts a connection object, or says what is wrong with it.
func CheckConnection(c json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(c)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return nil, errors.New("the connection must be a JSON object")
	}
	if len(trimmed) > MaxConnectionBytes {
		return nil, fmt.Errorf("the connection must be at most %d bytes", MaxConnectionBytes)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, trimmed); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}
