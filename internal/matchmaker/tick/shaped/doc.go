// Package shaped is the pass over a queue with a team shape (matchrules.Config.Shape): any
// number of teams, each of its own size, minimum size and role composition. tick.Run hands
// it the tickets once it has checked the config and now.
//
// Where each part lives: shaper.go holds Run and the pass's state; read.go checks and
// reads the tickets, in sweeps over their parts; link.go orders them by rating for the
// walks; serve.go serves an anchor (its walk, the exhaustive search, why it waits, the
// match made); group.go is the group of tickets a walk grows and what may join it;
// fill.go the exact test that a group's parties and roles can fill the teams; split.go
// splits a group into the teams; balance.go looks ahead to a more even match and keeps the
// balance; parallel.go serves the partitions of an equal rule on every core; buffers.go
// keeps the arrays from one pass to the next.
//
// Each live ticket, oldest first, anchors a search as in the two-team pass: the candidates
// acceptable to it (mutual interval, a common region within every limit, its value of each
// equal rule binding both, a list sharing min_common values for each intersect rule, a
// distance rule's values within the smaller tolerance) are taken nearest in rating first,
// each one kept when the group can still fill the shape with it: the rules hold among all
// the tickets each binds, the parties pack into the teams, and the players' roles can meet
// the compositions. A group as large as the shape is split into teams (split.go); a split
// that breaks team_balance or party_mix drops the last ticket taken and the walk goes on.
// When the walk ends short, a group that reaches every team's current minimum size (the
// anchor's wait on MinSize) is split the same way, its teams short of their size by their
// OpenSlots. An anchor with at most fallbackCandidates acceptable candidates that the walk
// did not serve is searched exhaustively, so on small queues a match is missed only when
// none exists; larger ones may wait where some other choice of candidates would have made a
// match (their walk keeps the nearest in rating).
//
// Parties in a shape of two teams without a team_balance rule: the first full group of an
// anchor that holds a party and whose split spreads the teams' averages by more than
// evenEnough of the anchor's interval is not made at once: its candidates, those walked and
// the next ones (lookAheadTickets in all), are searched for the full match that keeps every
// rule with the least spread (lookAheadSplits splits at most, nearest first), which is made
// instead when it is more even. A match that holds a party and spreads the averages by more
// than matchrules.DefaultBalance of the anchor's interval is turned down (the anchor waits on
// the teams); when no full match of the candidates the search held (all of those within the
// interval) keeps it, the walk ends, and a match at the minimum sizes is left to the
// exhaustive search. Shapes of more teams keep their splits' spreads: a queue bounds them
// with a team_balance rule.
//
// A pass of parallelMin tickets or more uses up to GOMAXPROCS goroutines: with rules or
// roles to read, the tickets are checked and read in sweeps over their parts (at most
// maxSweeps), and the partitions of its first equal rule that binds at any wait (values
// that never share a match) are served in parallel. The result is the one a single
// goroutine finds, in the same order.
package shaped
