// Package matchmaker is the home of the algorithms that turn players into games. It holds no
// code of its own; each subject is a package:
//
//   - skill: the thesis's performance-based skill rating (eq. 6.5) from four stats;
//   - pairing: NvN matches from a queue, each player facing an opponent of near-equal rating
//     found with a widening interval;
//   - teams: the players on one server split into 2..4 balanced teams with bots, late joiners
//     placed, running games rebalanced with the fewest swaps, each side's advantage;
//   - tick: one pass of the ticket queue over its waiting tickets (the queue's rules in
//     tick/matchrules, the tickets and results in tick/matchpool, the passes over two teams
//     and over any team shape in tick/twoteam and tick/shaped).
//
// They know no HTTP, no SQL and no clock: time, when an algorithm needs it, is an argument,
// and the same input gives the same answer. deps_test.go holds them to it. Players are
// referred to by their index in the caller's slices, so the hot paths copy no strings; the
// adapters turn indices back into ids. Invalid input is an apperr.Invalid error whose fields
// name the algorithm's own inputs (each package says how); the adapters rename them to the
// paths of their requests.
package matchmaker
