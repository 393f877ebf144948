package queue

import (
	"context"
	"net/url"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
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

// Placing is the status of a ticket whose match the queue's allocator is placing.
const Placing Status = "placing"

// Reasons of the requeued events of a placement that failed.
const (
	ReasonPlacementFailed  = "placement_failed"
	ReasonPlacementTimeout = "placement_timeout"
)

// MaxPlacementTimeout bounds an allocator's timeout_s.
const MaxPlacementTimeout = 600 * time.Second

// Allocator is a queue's game-server allocator: the leader POSTs each match to URL, signed
// with Secret as webhooks are, retrying with backoff until Timeout from when the match was
// made, and stores the answer's connection (DESIGN, "Placement").
type Allocator struct {
	URL     string
	Secret  string
	Timeout time.Duration
}

func (q *Queue) addAllocatorFaults(f *apperr.Fields) {
	a := q.Allocator
	if a == nil {
		return
	}
	u, err := url.Parse(a.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		f.Add("allocator.url", "must be an absolute http or https URL")
	case len(a.URL) > MaxWebhookURLLen:
		f.Add("allocator.url", "must be at most %d bytes", MaxWebhookURLLen)
	}
	addSecretFault(f, "allocator", a.Secret)
	if a.Timeout < time.Second || a.Timeout > MaxPlacementTimeout {
		f.Add("allocator.timeout_s", "must be 1..%d seconds", int(MaxPlacementTimeout.Seconds()))
	}
}

// AllocatorStore is the part of Store that reads the placements an allocator makes:
// PlacingProposals returns the queue's proposals in state placing (their tickets placing).
// Their ends are changes: CompletePlacement, FailPlacement, and ExpireProposals, which fails
// those past their AcceptBy (ReasonPlacementTimeout).
type AllocatorStore interface {
	PlacingProposals(ctx context.Context, queue string) ([]Proposal, error)
}
