// Package outbound is how the ticket queue reaches outside the service, over HTTP: each event
// to its queue's webhook and each match to be placed to its queue's allocator, signed as
// queue.Sign says, under the webhook address rule (queue.WebhookPolicy) checked at every
// connection's dial. It implements queue.Outbound: the queue's domain names the interface
// and never imports net/http.
package outbound

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"syscall"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/tracing"
)

// HTTP sends the queue's outbound requests: webhooks and allocations with one client, match
// function calls with another, whose bound is the longest a function may take (each call's
// own is its context's deadline, the function's timeout).
type HTTP struct {
	client    *http.Client
	functions sender
}

// sender posts with one client.
type sender struct{ client *http.Client }

var _ queue.Outbound = (*HTTP)(nil)

// New sends under policy, each request bounded by timeout.
func New(policy queue.WebhookPolicy, timeout time.Duration) *HTTP {
	return &HTTP{client: Client(policy, timeout), functions: sender{Client(policy, queue.MaxFunctionTimeout)}}
}

// WithClient sends with c, which is trusted to check the addresses it reaches itself.
func WithClient(c *http.Client) *HTTP { return &HTTP{client: c, functions: sender{c}} }

// Traced is h sending each request in a client span of tp's under the caller's span (a
// webhook event's, a placement's, a tick's match function call), the W3C trace context in its headers: the receiver's
// spans join the queue's trace.
func (h *HTTP) Traced(tp trace.TracerProvider) *HTTP {
	traced := func(c *http.Client) *http.Client {
		t := *c
		t.Transport = tracing.Transport(tp, c.Transport)
		return &t
	}
	return &HTTP{client: traced(h.client), functions: sender{traced(h.functions.client)}}
}

// Client is the HTTP client for webhooks and allocators under policy: every connection's
// address is checked when it is dialled (a name that resolved to a public address when the
// queue was defined may resolve to an internal one later), no redirect is followed (a 3xx is
// a refusal: it could point the signed body at an internal address), and no proxy is used
// (the check would see the proxy's address, not the receiver's).
func Client(policy queue.WebhookPolicy, timeout time.Duration) *http.Client {
	dialer := &net.Dialer{
		Timeout: timeout,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("webhook dial to %q: %w", address, err)
			}
			return policy.CheckAddr(ap.Addr())
		},
	}
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:               nil,
			DialContext:         dialer.DialContext,
			ForceAttemptHTTP2:   true,
			MaxIdleConns:        16,
			IdleConnTimeout:     90 * time.Second,
			TLSHandshakeTimeout: timeout,
		},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// PostEvent implements queue.Outbound.
func (h *HTTP) PostEvent(ctx context.Context, w queue.Webhook, e queue.Event, at time.Time) error {
	body := queue.EncodeEvent(e)
	delivery := e.Queue + ":" + strconv.FormatInt(e.Seq, 10)
	resp, err := h.sender().post(ctx, w.URL, "matchmaker-webhook", body, queue.Sign(w.Secret, at.Unix(), delivery, body), delivery,
		map[string]string{queue.EventHeader: string(e.Type)})
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &queue.RefusedError{Status: resp.StatusCode, Text: http.StatusText(resp.StatusCode)}
	}
	return nil
}

// allocatorAnswer is an allocator's 2xx body.
type allocatorAnswer struct {
	Connection json.RawMessage `json:"connection"`
}

// Allocate implements queue.Outbound: the delivery id is the match id, the same on every
// retry, so that an allocator can answer a retry with the server it already gave.
func (h *HTTP) Allocate(ctx context.Context, a queue.Allocator, p queue.Proposal, at time.Time) (json.RawMessage, error) {
	body := queue.EncodeAllocation(p)
	resp, err := h.sender().post(ctx, a.URL, "matchmaker-allocator", body, queue.Sign(a.Secret, at.Unix(), p.Match.ID, body), p.Match.ID, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("the allocator answered %s", resp.Status)
	}
	var ans allocatorAnswer
	if err := json.Unmarshal(b, &ans); err != nil {
		return nil, fmt.Errorf("the allocator's answer is not JSON: %w", err)
	}
	return queue.CheckConnection(ans.Connection)
}

func (h *HTTP) sender() sender { return sender{h.client} }

// post sends one signed JSON request.
func (h sender) post(ctx context.Context, url, agent string, body []byte, signature, delivery string, headers map[string]string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", agent)
	req.Header.Set(queue.SignatureHeader, signature)
	req.Header.Set(queue.DeliveryHeader, delivery)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return h.client.Do(req)
}

// CallFunction implements queue.Outbound: the pool is written into a buffer kept from one
// call to the next (queue.AppendFunctionRequest writes it ticket by ticket, with no copy of
// them), the answer read up to one byte past queue.MaxFunctionAnswer, so that a larger one is
// refused unread rather than held.
func (h *HTTP) CallFunction(ctx context.Context, f queue.MatchFunction, r queue.FunctionRequest) ([]queue.ProposedMatch, error) {
	buf := bodies.Get().(*[]byte)
	defer bodies.Put(buf)
	body := queue.AppendFunctionRequest((*buf)[:0], r)
	*buf = body
	delivery := r.Delivery()
	headers := map[string]string{queue.DeadlineHeader: r.Deadline.UTC().Format(time.RFC3339Nano)}
	resp, err := h.functions.post(ctx, f.URL, "matchmaker-match-function", body, queue.Sign(f.Secret, r.Now.Unix(), delivery, body), delivery, headers)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		// What it said goes to the waiting tickets' waiting_on: a bounded excerpt, the rest
		// read and dropped so that the connection can be used again.
		said, _ := io.ReadAll(io.LimitReader(resp.Body, queue.MaxRefusalRead))
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return nil, &queue.RefusedError{Status: resp.StatusCode, Text: http.StatusText(resp.StatusCode), Detail: queue.RefusalDetail(said)}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, queue.MaxFunctionAnswer+1))
	if err != nil {
		return nil, err
	}
	return queue.DecodeFunctionAnswer(b, len(r.Pool))
}

// bodies are the request bodies of match function calls, each up to a pool's size: kept, a
// leader's calls write into the same array tick after tick.
var bodies = sync.Pool{New: func() any { return new([]byte) }}
