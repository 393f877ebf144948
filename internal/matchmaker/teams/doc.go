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
package teams
