// Package pairing builds NvN matches from a queue of rated players, each player facing an
// opponent of near-equal rating found with an interval that widens until one is in reach:
// the thesis's player-to-player rule (GreedyPairs) and the default RatingWindow, which pairs
// the oldest player's nearest neighbours and splits the pairs across the teams for the
// smallest difference of team totals. Make is the whole algorithm; Summarize measures its
// matches.
//
// Players are queue positions: index 0 has waited longest, ratings[i] is the rating of the
// player at position i, and every result names players by position.
//
// Invalid input is one apperr.Invalid error listing every fault by the name of the input at
// fault, in this package's terms: an option by its snake_case name (team_size,
// interval.initial, interval.step, interval.max, strategy) and a rating by its position
// (ratings[3]). An adapter renames them to the paths of its own request (apperr.Rename).
package pairing
