package teams

import (
	"fmt"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// RebalanceOptions are the settings of a rebalance.
type RebalanceOptions struct {
	// "max_swaps": nil to swap until no swap helps (at most one swap per human, far more
	// than the greedy ever needs); 0 to only place the unplaced.
	MaxSwaps *int
}

// PlayerRef names a player by where Rebalance was given it: teams[Team].Players[Index], or
// unplaced[Index] when Team is -1.
type PlayerRef struct {
	Team  int
	Index int
}

// MoveKind is "place" or "swap".
type MoveKind string

const (
	Place MoveKind = "place" // an unplaced player joins team To
	Swap  MoveKind = "swap"  // Player goes From -> To, Other To -> From
)

// Move is one step, with the state it leaves.
type Move struct {
	Kind       MoveKind
	Player     PlayerRef
	Other      PlayerRef // swaps only
	From, To   int       // teams; From is -1 for a placement
	Totals     []float64 // every team's total after the move
	Balance    float64
	Difference float64
}

// Measure is the balance of the teams at one point.
type Measure struct {
	Totals     []float64
	Balance    float64
	Difference float64
}

// RebalanceResult is the moves, in order, and the teams they leave.
type RebalanceResult struct {
	Moves          []Move
	Before         Measure       // the teams as given, without the unplaced
	Placed         Measure       // after placing the unplaced, before any swap
	After          Measure       // after the last move
	PlacementExact bool          // the placement is optimal (false: heuristic, or nothing to place)
	Swaps          int           // swaps made
	Teams          [][]PlayerRef // each team's humans at the end
}

func newMeasure(totals []float64) Measure {
	m := Measure{Totals: append([]float64(nil), totals...)}
	m.Balance, m.Difference = Balance(totals)
	return m
}

// Rebalance is the NS2 post's fewest-swaps balancing of teams that are already playing:
//  1. place the players who have no team yet, optimally given the players who stay;
//  2. make the single swap of two players on different teams that most reduces the
//     imbalance, again and again, until no swap helps or MaxSwaps is reached.
//
// The imbalance is the largest team total minus the smallest (|difference| for two teams).
// Swapping only the best pair each time reaches a local optimum quickly while moving very
// few players; it is not the most balanced split, which Split finds by moving everyone.
//
// The unplaced are given by weight and referred to by index. Bots count in the totals and are never moved; the bot counter
// is not modelled here (Assign does that for a single joiner). The unplaced go where they
// leave the human counts as even as possible (the smallest max - min count); among the
// placements that do, the weights decide.
func Rebalance(teams []Roster, unplaced []float64, opt RebalanceOptions) (RebalanceResult, error) {
	var f apperr.Fields
	checkRosters(&f, teams, len(unplaced))
	for i, w := range unplaced {
		checkWeight(&f, fmt.Sprintf("unplaced[%d]", i), w)
	}
	if opt.MaxSwaps != nil && *opt.MaxSwaps < 0 {
		f.Add("max_swaps", "must not be negative")
	}
	if err := f.Err(); err != nil {
		return RebalanceResult{}, err
	}

	t := len(teams)
	var r RebalanceResult
	totals := make([]float64, t)
	members := make([][]PlayerRef, t)
	var weights []float64 // by global player number: the teams' players, then the unplaced
	var who []PlayerRef
	teamOf := []int{} // by global player number
	for j, tm := range teams {
		totals[j] = tm.Total()
		for i, w := range tm.Players {
			members[j] = append(members[j], PlayerRef{j, i})
			weights = append(weights, w)
			who = append(who, PlayerRef{j, i})
			teamOf = append(teamOf, j)
		}
	}
	r.Before = newMeasure(totals)

	// 1. Place the unplaced.
	if len(unplaced) > 0 {
		var place []uint8
		place, r.PlacementExact = placeUnplaced(teams, totals, unplaced)
		for i, j := range place {
			to := int(j)
			totals[to] += unplaced[i]
			members[to] = append(members[to], PlayerRef{-1, i})
			weights = append(weights, unplaced[i])
			who = append(who, PlayerRef{-1, i})
			teamOf = append(teamOf, to)
			m := Move{Kind: Place, Player: PlayerRef{-1, i}, From: -1, To: to,
				Totals: append([]float64(nil), totals...)}
			m.Balance, m.Difference = Balance(totals)
			r.Moves = append(r.Moves, m)
		}
	}
	r.Placed = newMeasure(totals)

	// 2. Swap.
	limit := len(weights)
	if opt.MaxSwaps != nil {
		limit = *opt.MaxSwaps
	}
	scale := 0.0
	for _, x := range totals {
		scale += x
	}
	eps := 1e-12 * max(1, scale)
	for r.Swaps < limit {
		_, cur := Balance(totals)
		bestA, bestB, best := -1, -1, cur-eps
		for a := range weights {
			for b := a + 1; b < len(weights); b++ {
				ta, tb := teamOf[a], teamOf[b]
				if ta == tb {
					continue
				}
				d := weights[b] - weights[a] // into ta, out of tb
				lo, hi := totals[ta]+d, totals[tb]-d
				if lo > hi {
					lo, hi = hi, lo
				}
				for k, x := range totals {
					if k != ta && k != tb {
						lo, hi = min(lo, x), max(hi, x)
					}
				}
				if hi-lo < best {
					bestA, bestB, best = a, b, hi-lo
				}
			}
		}
		if bestA < 0 {
			break
		}
		ta, tb := teamOf[bestA], teamOf[bestB]
		d := weights[bestB] - weights[bestA]
		totals[ta] += d
		totals[tb] -= d
		teamOf[bestA], teamOf[bestB] = tb, ta
		m := Move{Kind: Swap, Player: who[bestA], Other: who[bestB], From: ta, To: tb,
			Totals: append([]float64(nil), totals...)}
		m.Balance, m.Difference = Balance(totals)
		r.Moves = append(r.Moves, m)
		r.Swaps++
	}
	r.After = newMeasure(totals)
	r.Teams = make([][]PlayerRef, t)
	for a, j := range teamOf {
		r.Teams[j] = append(r.Teams[j], who[a])
	}
	return r, nil
}

// placeUnplaced gives each unplaced player a team: head counts as even as possible (the
// smallest spread between the largest and the smallest team; every count vector with that
// spread is a class), then the split of the weights that minimises max total - min total
// given the fixed totals, exactly when small enough.
//
// The water level L is the highest that need(L) = sum of max(0, L - cur_j) <= u allows; no
// vector has a larger minimum, and any with a smaller one spreads more. The r = u - need(L)
// left over (fewer than the teams at L) go anywhere that keeps the largest team within
// S* = max(M0, L+1) - L of L, M0 being today's largest (S* = 0 when r = 0 and M0 <= L): at
// most 20 vectors for 4 teams.
func placeUnplaced(teams []Roster, totals, unplaced []float64) ([]uint8, bool) {
	t, u := len(teams), len(unplaced)
	cur := make([]int, t)
	for j, tm := range teams {
		cur[j] = len(tm.Players)
	}
	need := func(l int) int {
		n := 0
		for _, c := range cur {
			n += max(0, l-c)
		}
		return n
	}
	level := 0
	for need(level+1) <= u {
		level++
	}
	rest := u - need(level)
	ceiling := level + 1 // L + S*
	if m0 := slices.Max(cur); m0 > level {
		ceiling = m0
	} else if rest == 0 {
		ceiling = level
	}
	p := newProblem(unplaced, t, Difference, false)
	base := append([]float64(nil), totals...)
	caps := make([]int, t)
	var gen func(j, left int)
	gen = func(j, left int) {
		if j == t {
			if left == 0 {
				p.addClass(caps, nil, base)
			}
			return
		}
		lo := max(cur[j], level)
		for f := lo; f <= ceiling && f-lo <= left; f++ {
			caps[j] = f - cur[j]
			gen(j+1, left-(f-lo))
		}
	}
	gen(0, rest)
	top := &shortlist{k: 1}
	exact := false
	switch {
	case t == 2 && u <= ExactLimit2:
		p.mitm(top)
		exact = true
	case t > 2 && u <= ExactLimit34:
		exact = p.bnb(top, NodeBudget)
	}
	if !exact {
		top.dedupe = true
		p.heuristic(top)
	}
	return top.list[0].assign, exact
}
