package queue

import (
	"bytes"
	"context"
	"encoding/json"
	"time"

	"matchmaker/internal/apperr"
	"matchmaker/internal/ratings"
)

// Placement (DESIGN, "Placement"): where a match is played. A studio that places its matches
// itself puts the game server's connection (an opaque JSON object: an address, a port, a
// token, whatever its clients need) on the match once it has one; the match and every one of
// its matched tickets then carry it (assignment.connection), with a placed event per ticket,
// so that clients waiting on the queue's events or polling their tickets learn where to go.
// Placing again replaces the connection (a server that died, a move).

// EventPlaced is a matched ticket's match placed: its assignment now has the connection.
const EventPlaced EventType = "placed"

// MaxConnectionBytes bounds a connection object: it is copied into every ticket of the match.
const MaxConnectionBytes = 4096

// PlacementStore is the part of Store that keeps placements. PlaceMatch stores connection on
// match id and on the assignment of each of its tickets still matched in it, with a placed
// event each, in one transaction, and returns the match. An unknown match is NotFound; a
// backfill's fill (its players join a running match, which is placed already) is a Conflict.
type PlacementStore interface {
	PlaceMatch(ctx context.Context, id string, connection json.RawMessage, at time.Time) (Match, error)
}

// Place stores where match id is played (PUT /v1/matches/{id}/placement). The caller must own
// every ticket of the match, or be an admin: otherwise, as for an unknown match, it is
// NotFound. connection must be a JSON object of at most MaxConnectionBytes.
func (s *Service) Place(ctx context.Context, id string, connection json.RawMessage) (Match, error) {
	var f apperr.Fields
	if err := ratings.ValidateID(id); err != nil {
		f.Add("id", "%s", err)
	}
	trimmed := bytes.TrimSpace(connection)
	switch {
	case len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed):
		f.Add("connection", "must be a JSON object: where the match's players connect")
	case len(trimmed) > MaxConnectionBytes:
		f.Add("connection", "must be at most %d bytes", MaxConnectionBytes)
	}
	if err := f.Err(); err != nil {
		return Match{}, err
	}
	m, err := s.store.GetMatch(ctx, id)
	if err != nil {
		return Match{}, err
	}
	for _, tid := range m.Tickets() {
		if _, err := s.ownedTicket(ctx, tid); apperr.CodeOf(err) == apperr.NotFound {
			return Match{}, apperr.New(apperr.NotFound, "no match %q", id)
		} else if err != nil {
			return Match{}, err
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, trimmed); err != nil {
		return Match{}, apperr.Field("connection", "must be a JSON object")
	}
	return s.store.PlaceMatch(ctx, id, compact.Bytes(), s.now().UTC())
}
