package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The headers of a queue's webhook deliveries.
const (
	WebhookSignatureHeader = "X-Matchmaker-Signature" // t=<unix seconds>,v1=<hex HMAC-SHA256>
	WebhookEventHeader     = "X-Matchmaker-Event"     // matched, expired, cancelled
	WebhookDeliveryHeader  = "X-Matchmaker-Delivery"  // queue:seq, the same on every retry
)

// DefaultWebhookTolerance is how far a delivery's timestamp may be from the receiver's clock.
const DefaultWebhookTolerance = 5 * time.Minute

// ErrWebhookSignature is the error VerifyWebhook wraps for every delivery it refuses.
var ErrWebhookSignature = errors.New("webhook: bad signature")

// VerifyWebhook checks a webhook delivery's signature: HMAC-SHA256 under the queue's secret of
// "<t>.<delivery id>.<body>", with t within tolerance of now (0: DefaultWebhookTolerance), so
// that a recorded delivery can be neither replayed later nor passed off under another
// delivery id. Call it with the raw body, before decoding it. A receiver that has seen the
// delivery id before may skip it: deliveries are at least once.
func VerifyWebhook(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	if tolerance <= 0 {
		tolerance = DefaultWebhookTolerance
	}
	var ts, sig string
	for part := range strings.SplitSeq(h.Get(WebhookSignatureHeader), ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	at, err := strconv.ParseInt(ts, 10, 64)
	if err != nil || sig == "" {
		return fmt.Errorf("%w: the %s header has no t= and v1=", ErrWebhookSignature, WebhookSignatureHeader)
	}
	if d := now.Sub(time.Unix(at, 0)); d > tolerance || d < -tolerance {
		return fmt.Errorf("%w: signed at %s, %v from now", ErrWebhookSignature, time.Unix(at, 0).UTC().Format(time.RFC3339), d.Round(time.Second))
	}
	got, err := hex.DecodeString(sig)
	if err != nil {
		return fmt.Errorf("%w: v1 is not hex", ErrWebhookSignature)
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts + "." + h.Get(WebhookDeliveryHeader) + "."))
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fmt.Errorf("%w: it does not match the body, the delivery id and the secret", ErrWebhookSignature)
	}
	return nil
}
