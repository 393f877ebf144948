package outbound_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/outbound"
)

// The policy's client checks the address it dials, after name resolution: a name that
// resolves to an internal address (as one rebound after the queue was defined would) is
// refused without a connection; allowed, it is reached.
func TestWebhookClientChecksTheAddressItDials(t *testing.T) {
	t.Parallel()
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	byName := strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
	for _, u := range []string{srv.URL, byName} {
		resp, err := outbound.Client(queue.WebhookPolicy{}, 2*time.Second).Post(u, "application/json", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			t.Fatalf("%s was reached under the default policy", u)
		}
		if !strings.Contains(err.Error(), "loopback") {
			t.Errorf("%s: %v, want the loopback refusal", u, err)
		}
	}
	if hits.Load() != 0 {
		t.Fatalf("the receiver was reached %d times", hits.Load())
	}
	allow := queue.WebhookPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	resp, err := outbound.Client(allow, 2*time.Second).Post(srv.URL, "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatalf("allowed: %v", err)
	}
	resp.Body.Close()
	if hits.Load() != 1 {
		t.Fatalf("allowed: %d hits, want 1", hits.Load())
	}
}

// A redirect is not followed (it could send the signed body to an internal address); the
// delivery is refused for good.
func TestWebhookRedirectsAreNotFollowed(t *testing.T) {
	t.Parallel()
	var reached atomic.Bool
	target := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Store(true) }))
	defer target.Close()
	redirect := httptest.NewServer(http.RedirectHandler(target.URL, http.StatusTemporaryRedirect))
	defer redirect.Close()
	out := outbound.New(queue.WebhookPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}, 5*time.Second)
	err := out.PostEvent(context.Background(), queue.Webhook{URL: redirect.URL, Secret: "0123456789abcdef"},
		queue.Event{Seq: 1, Queue: "duel", Type: queue.EventExpired}, time.Now())
	refused, ok := err.(*queue.RefusedError)
	if !ok || refused.Status != http.StatusTemporaryRedirect || !refused.Permanent() {
		t.Fatalf("a redirect: %v, want a permanent refusal (307)", err)
	}
	if reached.Load() {
		t.Fatal("the redirect was followed")
	}
}
