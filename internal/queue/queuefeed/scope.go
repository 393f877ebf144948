package queuefeed

import (
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// Scope is which events a stream reads: every ticket's (all) or one owner's, and of
// those one ticket's when ticket is set.
type Scope struct {
	All    bool
	Owner  string
	Ticket string
}

func (s Scope) keeps(e queue.Event) bool {
	return (s.All || e.Owner == s.Owner) && (s.Ticket == "" || e.TicketID == s.Ticket)
}

// every says whether the scope keeps every event.
func (s Scope) every() bool { return s.All && s.Ticket == "" }

// Filter keeps the events of evs that s keeps (evs itself when it keeps every event).
func (s Scope) Filter(evs []queue.Event) []queue.Event {
	if s.every() {
		return evs
	}
	out := evs[:0:0]
	for _, e := range evs {
		if s.keeps(e) {
			out = append(out, e)
		}
	}
	return out
}
