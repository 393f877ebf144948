package queuesvc

import (
	"context"
	"errors"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/memstore"
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
	svc := New(Deps{Store: memstore.New()})
	for _, u := range refused {
		q := queue.DefaultQueue("hooked")
		q.GameType = "ctf"
		q.Webhook = &queue.Webhook{URL: u, Secret: "0123456789abcdef"}
		_, _, err := svc.PutQueue(context.Background(), q)
		var e *apperr.Error
		if apperr.CodeOf(err) != apperr.Invalid || !errors.As(err, &e) || len(e.Fields) != 1 || e.Fields[0].Field != "webhook.url" {
			t.Errorf("%s: %v, want a 400 naming webhook.url", u, err)
		}
	}
	for _, u := range []string{"https://example.com/hook", "https://93.184.216.34/hook", "http://[2606:4700::1111]/h", "https://0xcafe.example/h"} {
		q := queue.DefaultQueue("hooked")
		q.GameType = "ctf"
		q.Webhook = &queue.Webhook{URL: u, Secret: "0123456789abcdef"}
		if _, _, err := svc.PutQueue(context.Background(), q); err != nil {
			t.Errorf("%s: %v, want accepted (a public address)", u, err)
		}
	}
	allowed, err := queue.ParseWebhookAllow("10.20.0.0/16, 127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	onPrem := New(Deps{Store: memstore.New(), Config: Config{WebhookAllow: allowed}})
	for u, ok := range map[string]bool{"http://10.20.3.4/h": true, "http://127.0.0.1:9000/h": true, "http://localhost/h": true,
		"http://10.21.0.1/h": false, "http://127.0.0.2/h": false, "http://169.254.169.254/": false} {
		q := queue.DefaultQueue("hooked")
		q.GameType = "ctf"
		q.Webhook = &queue.Webhook{URL: u, Secret: "0123456789abcdef"}
		if _, _, err := onPrem.PutQueue(context.Background(), q); (err == nil) != ok {
			t.Errorf("with 10.20.0.0/16 and 127.0.0.1 allowed, %s: %v, want accepted %v", u, err, ok)
		}
	}
	if _, err := queue.ParseWebhookAllow("10.0.0.0/33"); err == nil {
		t.Error("a bad prefix must be refused")
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
