package queue

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// A webhook URL naming an internal address, in any notation, or a name standing for one, is
// refused when the queue is defined, unless the allow-list covers it.
func TestWebhookURLsRefuseInternalAddresses(t *testing.T) {
	t.Parallel()
	refused := []string{
		"http://127.0.0.1:5432/",             // loopback: the database
		"http://0x7f000001/",                 // loopback in hex
		"http://2130706433/",                 // loopback as one decimal number
		"http://127.1/",                      // loopback, short form
		"http://0177.0.0.1/",                 // loopback in octal
		"http://[::1]/",                      // IPv6 loopback
		"http://[::ffff:127.0.0.1]/",         // loopback mapped into IPv6
		"http://169.254.169.254/latest/meta", // link-local: the cloud metadata service
		"http://[fe80::1]/",                  // IPv6 link-local
		"http://[fd00:ec2::254]/",            // unique local: AWS's IPv6 metadata address
		"http://10.0.0.5/",                   // private
		"http://172.16.3.4/",                 // private
		"http://192.168.1.1/",                // private
		"http://100.64.0.1/",                 // carrier-grade NAT
		"http://100.100.100.200/",            // carrier-grade NAT: Alibaba's metadata address
		"http://0.0.0.0/",                    // unspecified
		"http://[::]/",                       // unspecified
		"http://224.0.0.1/",                  // multicast
		"http://255.255.255.255/",            // broadcast
		"http://localhost:8080/",             // the machine itself, by name
		"http://api.localhost/",              // .localhost names are loopback
		"http://LOCALHOST./",                 // in any case, fully qualified
		"http://metadata.google.internal/",   // metadata, by name
		"http://[64:ff9b::a00:1]/",           // NAT64 of 10.0.0.1
	}
	svc := NewService(Deps{Store: NewMemoryStore()})
	for _, u := range refused {
		q := DefaultQueue("hooked")
		q.GameType = "ctf"
		q.Webhook = &Webhook{URL: u, Secret: "0123456789abcdef"}
		_, _, err := svc.PutQueue(context.Background(), q)
		var e *apperr.Error
		if apperr.CodeOf(err) != apperr.Invalid || !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "webhook.url" {
			t.Errorf("%s: %v, want a 400 naming webhook.url", u, err)
		}
	}
	for _, u := range []string{"https://example.com/hook", "https://93.184.216.34/hook", "http://[2606:4700::1111]/h", "https://0xcafe.example/h"} {
		q := DefaultQueue("hooked")
		q.GameType = "ctf"
		q.Webhook = &Webhook{URL: u, Secret: "0123456789abcdef"}
		if _, _, err := svc.PutQueue(context.Background(), q); err != nil {
			t.Errorf("%s: %v, want accepted (a public address)", u, err)
		}
	}
	allowed, err := ParseWebhookAllow("10.20.0.0/16, 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	onPrem := NewService(Deps{Store: NewMemoryStore(), Config: Config{WebhookAllow: allowed}})
	for u, ok := range map[string]bool{"http://10.20.3.4/h": true, "http://127.0.0.1:9000/h": true, "http://localhost/h": true,
		"http://10.21.0.1/h": false, "http://127.0.0.2/h": false, "http://169.254.169.254/": false} {
		q := DefaultQueue("hooked")
		q.GameType = "ctf"
		q.Webhook = &Webhook{URL: u, Secret: "0123456789abcdef"}
		if _, _, err := onPrem.PutQueue(context.Background(), q); (err == nil) != ok {
			t.Errorf("with 10.20.0.0/16 and 127.0.0.1 allowed, %s: %v, want accepted %v", u, err, ok)
		}
	}
	if _, err := ParseWebhookAllow("10.0.0.0/33"); err == nil {
		t.Error("a bad prefix must be refused")
	}
}

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
		resp, err := WebhookPolicy{}.Client(2*time.Second).Post(u, "application/json", strings.NewReader("{}"))
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
	allow := WebhookPolicy{Allow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}}
	resp, err := allow.Client(2*time.Second).Post(srv.URL, "application/json", strings.NewReader("{}"))
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
	svc := NewService(Deps{Store: NewMemoryStore(), Config: Config{WebhookAllow: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}}})
	err := svc.post(context.Background(), &Webhook{URL: redirect.URL, Secret: "0123456789abcdef"}, Event{Seq: 1, Queue: "duel", Type: EventExpired}, 5*time.Second)
	refused, ok := err.(*refusedError)
	if !ok || refused.status != http.StatusTemporaryRedirect || !refused.permanent() {
		t.Fatalf("a redirect: %v, want a permanent refusal (307)", err)
	}
	if reached.Load() {
		t.Fatal("the redirect was followed")
	}
}

// The public /metrics counts deliveries by outcome only: by queue, a webhook's failures beside
// its successes would map what the service can reach.
func TestWebhookMetricNamesNoQueue(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg)
	m.webhook("failed")
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "matchmaker_queue_webhook_deliveries_total" {
			continue
		}
		for _, l := range mf.GetMetric()[0].GetLabel() {
			if l.GetName() != "outcome" {
				t.Fatalf("the webhook counter has the label %q", l.GetName())
			}
		}
		return
	}
	t.Fatal("no webhook counter")
}
