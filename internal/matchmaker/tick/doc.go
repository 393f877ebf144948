// Package tick is one pass of the ticket queue over its waiting tickets: Run, a pure
// function of (tickets, now, config) that returns the matches to make and the tickets that
// expired, which the queue service runs every tick_ms on the replica that leads the queue.
//
// What it decides, and nothing else (storage, leadership, events and webhooks belong to the
// queue service):
//   - expiry: tickets whose ExpiresAt has come leave the pass as expired, and so do, with
//     latency considered, tickets with no region within even the widest limit;
//   - expansions by wait: each ticket's rating interval and latency limit grow with how long
//     it has waited, by the queue's steps; the oldest ticket anchors first, and a ticket is
//     acceptable to it when each one's current interval covers their rating difference
//     (mutual acceptance; a party's rating is its players' mean);
//   - latency: a match is played in a region within every one of its tickets' current
//     limits, the one with the smallest worst latency;
//   - parties: a match is 2 x team_size players of whole tickets, a party on one team; the
//     teams are the most even split of the chosen tickets (exact, parties as groups), every
//     player paired with the nearest-rated opponent as in the pairing package;
//   - rules: ticket attributes and a queue's rules (equal, intersect, distance,
//     team_balance), each binding a ticket until its optional_after_s, with tolerances by
//     wait; the matches report the values they agreed on, and each ticket left waiting
//     says which rule stopped it (Result.Waiting);
//   - backfill: tickets for running matches that lost players (Ticket.Backfill) are served
//     first, oldest first, each taking the acceptable tickets nearest its match's rating
//     that fit its open slots, placed by the late-joiner rule (teams.Assign); two backfill
//     tickets never match each other, and a team never gets more than its open slots.
//
// Tickets are referred to by their index in Run's input, players by Slot (ticket, index in
// the ticket). Invalid input is one apperr.Invalid error naming each fault in this
// package's terms: team_size, strategy, interval[1].value, max_latency[0].after_s, now,
// tickets[3].ratings[1], tickets[3].latencies[0].region... An adapter renames them to the
// paths of its own request (apperr.Rename).
//
// now is an argument: the package reads no clock, so a pass is reproducible and the
// simulator can run it on simulated time.
//
// A pass over a team shape of 4,096 tickets or more uses up to GOMAXPROCS goroutines: with
// rules or roles to read, the tickets are checked and read in a sweep a core (8 at most),
// and the partitions of its first equal rule (values that never share a match) are served
// in parallel. The result is the one a single goroutine finds, in the same order.
package tick
