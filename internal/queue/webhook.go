package queue

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"
)

// Webhook deliveries carry these headers. The signature is HMAC-SHA256 of the body with the
// queue's webhook secret, hex-encoded: a receiver recomputes it and compares in constant time.
const (
	SignatureHeader = "X-Matchmaker-Signature" // "sha256=" + hex
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

// EncodeEvent is an event's JSON, the data of an SSE event and the body of a webhook: seq,
// queue, type, ticket_id, and match_id and team when matched, reason otherwise, and at.
func EncodeEvent(e Event) []byte {
	j := eventJSON{Seq: e.Seq, Queue: e.Queue, Type: e.Type, TicketID: e.TicketID, MatchID: e.MatchID, Reason: e.Reason, At: e.At.UTC()}
	if e.Type == EventMatched {
		team := e.Team
		j.Team = &team
	}
	b, err := json.Marshal(j)
	if err != nil {
		panic(err) // strings, ints and a time: it cannot fail
	}
	return b
}

// Sign is the signature header's value for body under secret.
func Sign(secret string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// deliverLoop posts the queue's events to its webhook while this replica leads the queue: the
// events after the webhook cursor, in order, each retried with backoff (1 s doubling to a
// minute) until the receiver answers 2xx. The cursor is kept in the store, so the outbox
// survives restarts and leader changes; delivery is at least once (a receiver dedupes by
// X-Matchmaker-Delivery).
func (r *runner) deliverLoop(ctx context.Context) {
	backoff := time.Duration(0)
	for {
		wait := time.Second
		if backoff > 0 {
			wait = backoff
		}
		select {
		case <-ctx.Done():
			return
		case <-r.kick:
			if backoff > 0 {
				continue // a failing receiver is not hammered at every tick
			}
		case <-time.After(wait):
		}
		q := r.def.Load()
		if !r.leading.Load() || q.Webhook == nil {
			backoff = 0
			continue
		}
		if err := r.s.deliverWebhooks(ctx, *q); err != nil {
			backoff = min(max(2*backoff, time.Second), time.Minute)
			if ctx.Err() == nil {
				r.s.logger.Warn("queue: webhook delivery failed; retrying", "queue", q.Name, "err", err, "retry_in", backoff.String())
			}
			continue
		}
		backoff = 0
	}
}

// deliverWebhooks posts every event after the queue's webhook cursor, advancing it after each
// acknowledged one; it stops at the first failure.
func (s *Service) deliverWebhooks(ctx context.Context, q Queue) error {
	cursor, err := s.store.WebhookCursor(ctx, q.Name)
	if err != nil {
		return err
	}
	for {
		evs, err := s.store.Events(ctx, q.Name, cursor, 100)
		if err != nil || len(evs) == 0 {
			return err
		}
		for _, e := range evs {
			err := s.post(ctx, q.Webhook, e)
			s.metrics.webhook(q.Name, err == nil)
			if err != nil {
				return fmt.Errorf("event %d: %w", e.Seq, err)
			}
			if err := s.store.SetWebhookCursor(ctx, q.Name, e.Seq); err != nil {
				return err
			}
			cursor = e.Seq
		}
	}
}

func (s *Service) post(ctx context.Context, w *Webhook, e Event) error {
	body := EncodeEvent(e)
	ctx, cancel := context.WithTimeout(ctx, s.cfg.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "matchmaker-webhook")
	req.Header.Set(SignatureHeader, Sign(w.Secret, body))
	req.Header.Set(EventHeader, string(e.Type))
	req.Header.Set(DeliveryHeader, e.Queue+":"+strconv.FormatInt(e.Seq, 10))
	resp, err := s.webhook.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the receiver answered %s", resp.Status)
	}
	return nil
}
