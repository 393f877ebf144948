package client_test

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// VerifyWebhook accepts what the service signs, and refuses a delivery whose body, delivery id
// or secret differs, or whose timestamp is outside the tolerance (a replay).
func TestVerifyWebhookAcceptsWhatTheServiceSigns(t *testing.T) {
	t.Parallel()
	const secret = "a-secret-of-16-bytes-or-more"
	body := []byte(`{"seq":42,"queue":"duel","type":"cancelled","ticket_id":"t1","at":"2026-11-26T12:00:00Z"}`)
	signedAt := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	header := func(delivery string) http.Header {
		h := http.Header{}
		h.Set(client.WebhookSignatureHeader, queue.Sign(secret, signedAt.Unix(), delivery, body))
		h.Set(client.WebhookDeliveryHeader, delivery)
		return h
	}
	if err := client.VerifyWebhook(secret, header("duel:42"), body, signedAt.Add(time.Minute), 0); err != nil {
		t.Fatalf("the service's own signature: %v", err)
	}
	swapped := header("duel:42")
	swapped.Set(client.WebhookDeliveryHeader, "duel:43")
	noHeader := http.Header{}
	noHeader.Set(client.WebhookSignatureHeader, "sha256=abcd")
	for name, tc := range map[string]struct {
		secret string
		h      http.Header
		body   []byte
		now    time.Time
	}{
		"another body":           {secret, header("duel:42"), []byte(`{"seq":43}`), signedAt},
		"another delivery id":    {secret, swapped, body, signedAt},
		"another secret":         {"another-secret-of-16-bytes", header("duel:42"), body, signedAt},
		"replayed an hour later": {secret, header("duel:42"), body, signedAt.Add(time.Hour)},
		"from the future":        {secret, header("duel:42"), body, signedAt.Add(-time.Hour)},
		"the old body-only form": {secret, noHeader, body, signedAt},
		"no signature at all":    {secret, http.Header{}, body, signedAt},
	} {
		if err := client.VerifyWebhook(tc.secret, tc.h, tc.body, tc.now, 0); !errors.Is(err, client.ErrWebhookSignature) {
			t.Errorf("%s: %v, want ErrWebhookSignature", name, err)
		}
	}
}
