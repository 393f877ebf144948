// Package teams divides the players on one server into 2..4 balanced teams and keeps them
// balanced while they play: Split (the most balanced splits, topped up with bots by the
// seed's Ideal Bot Counter), Assign (a late joiner's team, counting the bots the join adds or
// removes), Rebalance (the NS2 post's fewest swaps) and Advantage (each side's strength,
// win probability and handicap).
//
// Players are weights (the seed's per-player weights, 0..100 by convention, 50 = average or
// unknown) referred to by their index in the caller's slices. Balance is measured on team
// totals, by the ratio of the smallest to the largest or by their difference (Objective).
//
// The search behind Split and Rebalance's placement is one problem (problem.go) with three
// solvers: meet in the middle for 2 teams (mitm.go), branch and bound for 3-4 teams
// (bnb.go), both exact, and a heuristic for the sizes above their limits (heuristic.go).
//
// Invalid input is one apperr.Invalid error listing every fault by the name of the input at
// fault, in this package's terms: an option by its snake_case name (candidates,
// max_humans_per_team, bots.mean_weight, ...); a whole argument by its name (weights, teams);
// and a weight by its place in the arguments: weights[3] (Split's fourth human),
// teams[1].players[0] and teams[1].bots[0] (a roster's), unplaced[2], joiner. A field that
// ends in an index, and joiner, is always a weight. An adapter renames them to the paths of
// its own request (apperr.Rename): over HTTP weights[3] is players[3].weight.
package teams
