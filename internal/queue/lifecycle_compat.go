package queue

import "time"

// What the Postgres store (package db) still calls until it decides through Decide too: the
// lifecycle's own steps, exported. They go once db/queuedb asks the lifecycle instead.

// ProposalOutcome is what resolving a proposal does to its tickets.
type ProposalOutcome struct {
	State  ProposalState
	Cancel map[string]string // ticket id -> reason
	Reason string            // the requeued events' reason
}

// Outcome is the lifecycle's outcome of p (lifecycle_proposals.go).
func (p *Proposal) Outcome(timedOut bool, cancelled string) (ProposalOutcome, bool) {
	o, ok := outcome(p, timedOut, cancelled)
	return ProposalOutcome{State: o.state, Cancel: o.cancel, Reason: o.reason}, ok
}

// Assignments is what each ticket of m is told when the match is made.
func Assignments(m Match) map[string]Assignment { return assignments(m) }

// NewTicketProposal is what ticket id of m is told of its proposal.
func NewTicketProposal(m Match, id string, acceptBy time.Time) *TicketProposal {
	return ticketProposal(m, assignments(m)[id], acceptBy)
}
