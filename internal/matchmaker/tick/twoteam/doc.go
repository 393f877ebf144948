// Package twoteam is the pass over a queue of two teams of TeamSize (a config without a
// team shape): tick.Run hands it the tickets once it has checked the config and now.
//
// Where each part lives: run.go holds Run and the pass's state; read.go reads the tickets
// (by age, then by rating); anchors.go is the loop over the anchors; window.go the
// rating_window walk and greedy.go greedy_pairs; heads.go the head counts the walks keep;
// match.go makes a match, split.go splits it; balance.go and evener.go look ahead to a
// more even match and keep the balance; classes.go, ruledata.go and matchlevel.go are the
// rules, waits.go says why an anchor waits, backfill.go and backfill_rules.go serve the
// backfill tickets.
//
// Anchors: the tickets are taken oldest first (WaitingSince, then input index) as the
// anchor of a match. A candidate ticket is acceptable to the anchor when the difference of
// their ratings is within both tickets' current intervals (mutual acceptance), a party's
// rating being its players' mean. Acceptance is between the anchor and each other ticket of
// its match: two other tickets of one match, on either side of the anchor, may be further
// apart than either accepts. A match is whole tickets, 2 x TeamSize players, that split
// into two teams of TeamSize with every party on one team. An anchor for which no such set
// of acceptable tickets exists keeps waiting and stays a candidate for the anchors after
// it; the next oldest anchors.
//
// Choosing the tickets, rating_window (the analogue of pairing.RatingWindow): the
// acceptable candidates are taken nearest in rating first (|difference| in float64, the
// older first on a tie) until some of them make a match with the anchor; the last one
// taken is in it, and among the earlier ones the nearest are kept first: each one is kept
// when a match can still be completed with it. So if any match for the anchor exists, one
// is found, and its farthest ticket is as near as it can be.
//
// Looking ahead to the teams: the first pick of a class that holds a party and whose teams
// differ by more than evenEnough of the anchor's interval (on average) is not made at once:
// the candidates of the class walked and the next ones, lookAheadTickets in all at most,
// are searched for their most even match (every choice of them, for each of the two teams or
// none, by the evener), which is made instead when it is more even; of equally even matches
// the pick, then the one whose farthest candidate in the walk's order is the nearest. A
// party of four then meets a party of four, or the solo players that even it, where the
// nearest tickets would have left one team far above the other.
//
// The balance: in a queue without a team_balance rule, a match that holds a party and whose
// teams' averages differ by more than matchrules.DefaultBalance of the anchor's current
// interval is turned down like a match that breaks a rule, and the anchor waits for a better
// set (matchpool.Wait on the teams, Found) until its wait has widened the bound enough. When
// even the most even match of the class breaks it, the most even match of its solo players
// alone is tried (the balance binds only matches with a party); without one, a class whose
// candidates the search held all is tried no more for this anchor. So in a queue without rules
// judged on the match, an anchor whose class holds at most lookAheadTickets candidates is
// matched whenever a match for it keeps the balance.
//
// greedy_pairs (the thesis's rule, as pairing.GreedyPairs, within the anchor's acceptable
// tickets): the anchor takes as its opponent the nearest acceptable ticket that fits; then
// the oldest acceptable ticket not yet taken, the sub-anchor, takes as its own opponent
// the nearest ticket acceptable to both of them that fits; and so on until the match is
// complete. A ticket fits when the teams can still be filled after it, parties whole, and
// are full once the match has 2 x TeamSize players; a sub-anchor that fills the match
// exactly completes it alone, and one that finds no opponent is passed over. When this
// builds no match the anchor is served by rating_window's rule, so an anchor for which a
// match exists never waits.
//
// Latency (MaxLatency not empty): a match is made only in a region where every ticket's
// latency is within its own current limit; a ticket without latency data accepts any
// region. If several regions could hold the match found nearest in rating, the one with
// the smallest worst latency of its tickets wins (then the first by name), and the same
// rule picks Match.Region among all regions every ticket of the match accepts.
//
// Rules (matchrules.Config.Rules; see matchrules.Rule): a rule binds a ticket until its
// wait reaches the rule's OptionalAfterS, and a match satisfies it when the tickets it still binds satisfy it
// together, a tolerance being the smallest of their current values. The search turns the
// rules into classes (classes.go), one set of head counts per class in the walk above, as
// latency's regions always were: a candidate is acceptable when, besides the interval, it
// has the anchor's value of each equal rule binding both, is within the smaller tolerance
// of the anchor's value of each distance rule binding both, and shares a class with the
// anchor; a match is the tickets of one class. The guarantee: if a match for the anchor
// exists whose tickets share one of the anchor's first MaxClasses classes, one is found.
// For latency, equal and intersect that is every match that keeps them (up to the
// MaxClasses cut, reached only with many regions or values). For distance with the anchor
// bound, the classes are windows of the rule's values around the anchor's, and a match
// found keeps the rule; the matches in no window, whose spread exceeds (1 -
// 1/DistanceWindows) of their smallest tolerance, may be missed. The rules judged on the
// match as a whole, team_balance (the teams' average difference after the split) and
// distance when the anchor is past its optional_after_s, are checked on the match picked:
// one that breaks either is turned down and the walk goes on (the next class's pick, then
// the next candidate's), at most MaxPicks picks an anchor, so with such a rule an anchor may
// wait although a match for it exists (its picks hold the nearest tickets in rating, which
// may be what breaks the rule); it then waits on that rule (matchpool.Result.Waiting,
// Found). Among classes whose picks complete at the same candidate, the one whose region
// has the smallest worst latency wins, then the first class. Match.Attributes report what
// equal and intersect rules agreed on. Without rules a pass is what it was before rules
// existed.
//
// Waiting: each ticket that anchored a search and is left waiting has a Wait naming the
// rule that stopped it (see matchpool.Wait).
//
// Backfill: before any anchor, the backfill tickets (matchpool.Ticket.Backfill) are
// served, oldest first, each as backfill (backfill.go) describes: the acceptable tickets
// nearest the match's mean rating, placed by teams.Assign among the teams with open slots,
// until the slots are full. A backfill ticket is never an anchor nor a candidate;
// matchpool.Result.Fills lists what each got, and a backfill that got nobody keeps waiting. With rules, a backfill ticket's
// attributes are its running match's values, and its joiners keep its equal, intersect and
// distance rules with it (backfill_rules.go).
//
// Teams: the most even split of the match's tickets, parties whole (the least |difference
// of team totals| over every split, the anchor's team being team 0; sums in float64, so
// "least" holds up to rounding), then each team sorted by rating and paired in order.
//
// Cost: O(N log N) with a radix sort for N tickets, plus for each anchor the tickets within
// its interval walked until a match forms (a handful in a dense queue) and the exact split
// (every split for m tickets up to 12, meet in the middle above: about 2^(m/2) steps).
package twoteam
