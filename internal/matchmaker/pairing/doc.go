// Package pairing builds NvN matches from a queue of rated players, each player facing an
// opponent of near-equal rating found with an interval that widens until one is in reach:
// the thesis's player-to-player rule (GreedyPairs) and the default RatingWindow, which pairs
// the oldest player's nearest neighbours and splits the pairs across the teams for the
// smallest difference of team totals. Make is the whole algorithm; Summarize measures its
// matches.
//
// Players are queue positions: index 0 has waited longest, ratings[i] is the rating of the
// player at position i, and every result names players by position.
package pairing
