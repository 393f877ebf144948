// Package tick is one pass of the ticket queue over its waiting tickets: Run, a pure
// function of (tickets, now, rules) that returns the matches to make and the tickets that
// expired, which the queue service runs every tick_ms on the replica that leads the queue.
//
// What a pass decides, and nothing else (storage, leadership, events and webhooks belong
// to the queue service):
//   - expiry: tickets whose ExpiresAt has come leave the pass as expired, and so do, with
//     latency considered, tickets with no region within even the widest limit;
//   - expansions by wait: each ticket's rating interval and latency limit grow with how long
//     it has waited, by the queue's steps; the oldest ticket anchors first, and a ticket is
//     acceptable to it when each one's current interval covers their rating difference
//     (mutual acceptance; a party's rating is its players' mean);
//   - latency: a match is played in a region within every one of its tickets' current
//     limits, the one with the smallest worst latency;
//   - parties: a match is of whole tickets, a party on one team; the teams are the most
//     even split of the chosen tickets (exact, parties as groups), and with parties in a
//     queue of two teams the tickets are chosen for that split: an uneven pick looks ahead
//     to the most even match of the anchor's nearest candidates, and a match more uneven
//     than the balance (matchrules.DefaultBalance) waits for a better set;
//   - rules: ticket attributes and a queue's rules (equal, intersect, distance,
//     team_balance, party_mix), each binding a ticket until its optional_after_s, with
//     tolerances by wait; the matches report the values they agreed on, and each ticket left
//     waiting says which rule stopped it (Result.Waiting);
//   - backfill: tickets for running matches that lost players are served first, each
//     taking the acceptable tickets nearest its match's rating that fit its open slots,
//     placed by the late-joiner rule (teams.Assign).
//
// Where each part lives:
//   - matchrules: a queue's rules (Config: team size or shape, interval and latency by
//     wait, attributes, match rules, roles) and the checks that refuse a config;
//   - matchpool: what a pass is given and returns: the tickets (Ticket), the Result
//     (matches, fills, expiries) and why a ticket waits (Wait);
//   - twoteam: the pass over two teams of TeamSize, with greedy_pairs, backfill and the
//     rules' classes;
//   - shaped: the pass over any team shape, role compositions and minimum sizes;
//   - internal/check: a ticket judged against a queue's rules (ValidateTicket, and each
//     pass's reading); internal/scratch, internal/intern: the arrays a pass keeps and the
//     numbering of the rules' values; internal/testqueue: the queues of the tests and the
//     benchmarks.
//
// Tickets are referred to by their index in Run's input, players by Slot (ticket, index in
// the ticket). Invalid input is one apperr.Invalid error naming each fault in the pass's
// terms: team_size, strategy, interval[1].value, max_latency[0].after_s, now,
// tickets[3].ratings[1], tickets[3].latencies[0].region... An adapter renames them to the
// paths of its own request (apperr.Rename).
//
// now is an argument: no package here reads a clock, so a pass is reproducible and the
// simulator can run it on simulated time.
package tick
