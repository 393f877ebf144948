// Package matchmaker holds the algorithms that turn players into games, and nothing else: no
// HTTP, no SQL, no clock. Pairing builds NvN matches from a queue with a widening rating
// interval (the thesis's player-to-player rule and the rating-window strategy); the team
// functions split the players on one server into balanced teams with bots, place late
// joiners, rebalance running games with the fewest swaps and measure each side's advantage.
//
// Players are referred to by their index in the caller's slice, so the hot paths copy no
// strings; the HTTP layer turns indices back into ids.
package matchmaker
