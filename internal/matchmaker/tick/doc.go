// Package tick will hold one pass of the ticket queue over its waiting tickets: a pure
// function of (tickets, now, config) that returns the matches to make and the tickets to
// expire, which the queue service runs every tick_ms on the replica that leads the queue.
//
// What it will decide, and nothing else (storage, leadership, events and webhooks belong to
// the queue service):
//   - expansions by wait: each ticket's rating interval and latency limit grow with how long
//     it has waited, by the queue's steps; two tickets accept each other only when each one's
//     current interval covers their rating difference (mutual acceptance);
//   - latency: matched tickets share a region within both tickets' current limits;
//   - parties: a match is 2 x team_size players made of whole tickets, a party on one team;
//     the teams are the most even split of the chosen tickets (the teams package's exact
//     engine, with parties as groups), every player paired with the nearest-rated opponent
//     as in the pairing package;
//   - backfill: tickets for running matches that lost players are served first, joiners
//     placed by the late-joiner rule (teams.Assign), and two backfill tickets never match
//     each other;
//   - expiry: tickets past their expiry leave the pass as expired.
//
// now is an argument: the package reads no clock, so a pass is reproducible and the
// simulator can run it on simulated time.
package tick
