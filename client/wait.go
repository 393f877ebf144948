package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// longPoll is how long one WaitForMatch request waits for a change: under the usual proxy
// idle timeouts of 60 s.
const longPoll = 25 * time.Second

// ErrTicketEnded is wrapped in WaitForMatch's error for a ticket that ended unmatched
// (expired or cancelled); the ticket, with its reason, is returned beside it.
var ErrTicketEnded = errors.New("the ticket ended without a match")

// WaitForMatch follows a ticket until it leaves the queue's waiting states: it returns the
// ticket once matched (its Assignment says the match and the teams), or the ticket and an
// error wrapping ErrTicketEnded once it expired or was cancelled. It reads the ticket, then
// long-polls GET /v1/tickets/{id} with the status it last saw (each request answered as soon
// as the ticket is in another, or after 25 s as it is: a change between two requests is not
// missed), so it needs no stream and survives proxies that cut idle connections; a state it
// does not know yet (one a newer service adds before matched) is followed as searching is.
// Transient failures (a 503 or 429, a dropped connection) are retried with backoff until ctx
// ends; any other answer is returned as an error.
//
// Statuses on the way (proposed: a ready check the players must answer with
// POST /v1/matches/{id}/acceptance; placing: a game server being found) are handed to each
// onChange function as the ticket enters them, and again when the ticket is in another
// proposal than the last one handed (a ready check failed and the next tick proposed a new
// match before this long-poll looked: the status reads proposed both times, and the new
// proposal must be answered too).
func WaitForMatch(ctx context.Context, c *ClientWithResponses, ticketID string, onChange ...func(*Ticket)) (*Ticket, error) {
	backoff := 100 * time.Millisecond
	var last TicketStatus
	var lastMatch string // the proposal's match id last handed to onChange
	for {
		params := &GetTicketParams{} // the first read answers at once
		if last != "" {
			wait, known := longPoll.Seconds(), GetTicketParamsStatus(last)
			params = &GetTicketParams{WaitS: &wait, Status: &known}
		}
		resp, err := c.GetTicketWithResponse(ctx, ticketID, params)
		switch {
		case ctx.Err() != nil:
			return nil, ctx.Err()
		case err == nil && resp.JSON200 != nil:
			t := resp.JSON200
			switch t.Status {
			case TicketStatusMatched:
				return t, nil
			case TicketStatusExpired, TicketStatusCancelled:
				return t, fmt.Errorf("ticket %s %s (%s): %w", ticketID, t.Status, reason(t), ErrTicketEnded)
			}
			match := ""
			if t.Proposal != nil {
				match = t.Proposal.MatchId
			}
			if t.Status != last || match != lastMatch {
				last, lastMatch = t.Status, match
				for _, f := range onChange {
					f(t)
				}
			}
			backoff = 100 * time.Millisecond
			continue
		case err == nil && !retryable(resp.StatusCode()):
			return nil, fmt.Errorf("ticket %s: %s: %s", ticketID, resp.Status(), resp.Body)
		}
		select { // a dropped connection, a 503 or a 429: try again, a little later each time
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, 5*time.Second)
	}
}

func retryable(status int) bool {
	return status == http.StatusServiceUnavailable || status == http.StatusTooManyRequests ||
		status == http.StatusBadGateway || status == http.StatusGatewayTimeout
}

func reason(t *Ticket) string {
	if t.Reason != nil {
		return *t.Reason
	}
	return "no reason given"
}
