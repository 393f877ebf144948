package queuesvc

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/queueleader"
)

// The queue's trace spans (Deps.Tracer): each webhook event posted; each placement on an
// allocator; a leader's tick's are queueleader/spans.go's, with the same keys. The outbound
// calls under them carry their trace (package outbound's client). A ticket's id is an
// attribute of its creation's span, of the match event and of its webhook events' spans, so
// that a slow match can be followed from the ticket's creation on, across the replicas that
// created it and matched it.
const (
	attrQueue    = queueleader.AttrQueue
	attrTicket   = attribute.Key("matchmaker.ticket_id")
	attrTickets  = queueleader.AttrTickets
	attrMatch    = queueleader.AttrMatch
	attrEventSeq = attribute.Key("matchmaker.event_seq")
	attrEvent    = attribute.Key("matchmaker.event_type")
)

func newTracer(tp trace.TracerProvider) trace.Tracer {
	if tp == nil {
		tp = noop.NewTracerProvider()
	}
	return tp.Tracer("github.com/matchmakerhq/matchmaker/internal/queue")
}

// endSpan ends span, marked failed when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// spanTicket names the ticket a request created on the request's span.
func spanTicket(ctx context.Context, t queue.Ticket) {
	trace.SpanFromContext(ctx).SetAttributes(attrTicket.String(t.ID), attrQueue.String(t.Queue))
}

// webhookSpan starts the span of one webhook event's post.
func (s *Service) webhookSpan(ctx context.Context, e queue.Event) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, "queue webhook", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attrQueue.String(e.Queue), attrEventSeq.Int64(e.Seq), attrEvent.String(string(e.Type)), attrTicket.String(e.TicketID)))
}

// allocationSpan starts the span of one placement's requests to the allocator.
func (s *Service) allocationSpan(ctx context.Context, p queue.Proposal) (context.Context, trace.Span) {
	return s.tracer.Start(ctx, "queue allocate", trace.WithSpanKind(trace.SpanKindProducer), trace.WithAttributes(
		attrQueue.String(p.Match.Queue), attrMatch.String(p.Match.ID), attrTickets.StringSlice(p.Match.Tickets())))
}
