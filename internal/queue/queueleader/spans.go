package queueleader

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A tick's span (Deps.Tracer): a leader's tick that has tickets to match, with an event per
// match naming its tickets.

// The keys the service's spans (queuesvc/spans.go) name a queue, a match and its tickets by
// too, so that a ticket's id finds its creation, its match and its webhooks alike.
const (
	AttrQueue   = attribute.Key("matchmaker.queue")
	AttrTickets = attribute.Key("matchmaker.ticket_ids")
	AttrMatch   = attribute.Key("matchmaker.match_id")
)

const (
	attrWaiting = attribute.Key("matchmaker.waiting")
	attrMatches = attribute.Key("matchmaker.matches")
)

// noSpan is a span that records nothing (not the caller's, which tickSpan's caller ends).
var noSpan = trace.SpanFromContext(context.Background())

// spanMatches records the matches the tick's pass made on its span.
func spanMatches(span trace.Span, w queue.TickWrite) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attrMatches.Int(len(w.Matches)))
	for i := range w.Matches {
		span.AddEvent("match", trace.WithAttributes(AttrMatch.String(w.Matches[i].ID), AttrTickets.StringSlice(w.Matches[i].Tickets())))
	}
}

// endSpan ends span, marked failed when err is not nil.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}
