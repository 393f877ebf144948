package queue

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"
)

// Webhook deliveries carry these headers. The signature is HMAC-SHA256, with the queue's
// webhook secret, of the timestamp, the delivery id and the body joined by dots
// ("1700000000.duel:42.{...}"), hex-encoded: "t=<unix seconds>,v1=<hex>". A receiver
// recomputes it, compares in constant time, and refuses a timestamp far from its clock, so a
// recorded delivery cannot be replayed later nor its id swapped (client.VerifyWebhook does
// all three).
const (
	SignatureHeader = "X-Matchmaker-Signature" // "t=" + unix seconds + ",v1=" + hex
	EventHeader     = "X-Matchmaker-Event"     // matched, expired, cancelled
	DeliveryHeader  = "X-Matchmaker-Delivery"  // queue:seq, the same on every retry
)

// eventJSON is an event as SSE streams and webhooks send it.
type eventJSON struct {
	Seq      int64     `json:"seq"`
	Queue    string    `json:"queue"`
	Type     EventType `json:"type"`
	TicketID string    `json:"ticket_id"`
	MatchID  string    `json:"match_id,omitempty"`
	Team     *int      `json:"team,omitempty"`
	Reason   string    `json:"reason,omitempty"`
	At       time.Time `json:"at"`
}

// KeepEncoding makes EncodeEvent of e return the JSON it returns now, encoded once for every
// stream that sends e.
func (e *Event) KeepEncoding() { e.encoded = EncodeEvent(*e) }

// Encoding is the JSON KeepEncoding kept, nil if it was not called.
func (e Event) Encoding() []byte { return e.encoded }

// EncodeEvent is an event's JSON, the data of an SSE event and the body of a webhook: seq,
// queue, type, ticket_id, and match_id and team when matched, reason otherwise, and at.
// The result is shared (an event of the queue's feed is encoded once, for every stream that
// sends it): do not modify it.
func EncodeEvent(e Event) []byte {
	if e.encoded != nil {
		return e.encoded
	}
	j := eventJSON{Seq: e.Seq, Queue: e.Queue, Type: e.Type, TicketID: e.TicketID, MatchID: e.MatchID, Reason: e.Reason, At: e.At.UTC()}
	if e.Type == EventMatched || e.Type == EventProposed || e.Type == EventPlaced {
		team := e.Team
		j.Team = &team
	}
	b, err := json.Marshal(j)
	if err != nil {
		panic(err) // strings, ints and a time: it cannot fail
	}
	return b
}

// Sign is the signature header's value for a delivery of body with the given id, signed at
// unix time at under secret.
func Sign(secret string, at int64, delivery string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	ts := strconv.FormatInt(at, 10)
	mac.Write([]byte(ts + "." + delivery + "."))
	mac.Write(body)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Outbound is how the queue reaches outside the service: each event to its queue's webhook,
// each match to be placed to its queue's allocator, each tick's pool to its queue's match
// function. The outbound package sends them over HTTP, signed and under the webhook address
// rule; the domain only names what it needs.
type Outbound interface {
	// PostEvent delivers e to w, signed at at: nil once the receiver answered 2xx, a
	// *RefusedError for another answer, any other error when there was none.
	PostEvent(ctx context.Context, w Webhook, e Event, at time.Time) error
	// Allocate posts placing proposal p to a, signed at at, and returns the connection the
	// allocator answered (CheckConnection's).
	Allocate(ctx context.Context, a Allocator, p Proposal, at time.Time) (json.RawMessage, error)
	// CallFunction posts r to f, signed at r.Now, ctx's deadline the call's, and returns the
	// matches the function proposed (DecodeFunctionAnswer's): an error wrapping
	// ErrFunctionUnreadable for an answer that cannot be read, a *RefusedError for one other
	// than 2xx, any other error when there was none.
	CallFunction(ctx context.Context, f MatchFunction, r FunctionRequest) ([]ProposedMatch, error)
}

// RefusedError is a receiver's answer other than 2xx.
type RefusedError struct {
	Status int
	Text   string // the status's text
	// Detail is what the answer said, when it is kept (a match function's): RefusalDetail's
	// excerpt of its body.
	Detail string
}

func (e *RefusedError) Error() string {
	msg := "the receiver answered " + strconv.Itoa(e.Status) + " " + e.Text
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	return msg
}

// Permanent: a 4xx says the request itself is wrong, and sending it again will not help;
// 408, 425 and 429 say "later". A 3xx is a redirect, which is not followed (it could point
// the signed body at an internal address): the webhook's URL needs fixing.
func (e *RefusedError) Permanent() bool {
	switch e.Status {
	case 408, 425, 429: // Request Timeout, Too Early, Too Many Requests
		return false
	}
	return e.Status >= 300 && e.Status <= 499
}
