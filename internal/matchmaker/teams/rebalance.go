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
// The unplaced are given by weight and referred to by index. Bots count in the totals and
// are never moved; the bot counter is not modelled here (Assign does that for a single
// joiner). The unplaced go where they leave the human counts as even as possible (the
// smallest max - min count); among the placements that do, the weights decide.
func Rebalance(teams []Roster, unplaced []float64, opt RebalanceOptions) (RebalanceResult, error) {
	if err := validateRebalance(teams, unplaced, opt); err != nil {
		return RebalanceResult{}, err
	}
	l := newLineup(teams, len(unplaced))
	var r RebalanceResult
	r.Before = newMeasure(l.totals)
	if len(unplaced) > 0 {
		r.Moves, r.PlacementExact = l.place(teams, unplaced)
	}
	r.Placed = newMeasure(l.totals)

	limit := len(l.weights)
	if opt.MaxSwaps != nil {
		limit = *opt.MaxSwaps
	}
	// A swap must gain more than rounding can, so that none is made (or undone) for noise.
	eps := 1e-12 * max(1, l.sumOfTotals())
	for r.Swaps < limit {
		a, b, ok := l.bestSwap(eps)
		if !ok {
			break
		}
		r.Moves = append(r.Moves, l.swap(a, b))
		r.Swaps++
	}
	r.After = newMeasure(l.totals)
	r.Teams = l.rosters(len(teams))
	return r, nil
}

func validateRebalance(teams []Roster, unplaced []float64, opt RebalanceOptions) error {
	var f apperr.Fields
	checkRosters(&f, teams, len(unplaced))
	for i, w := range unplaced {
		checkWeight(&f, fmt.Sprintf("unplaced[%d]", i), w)
	}
	if opt.MaxSwaps != nil && *opt.MaxSwaps < 0 {
		f.Add("max_swaps", "must not be negative")
	}
	return f.Err()
}

// lineup is the humans of a rebalance by global number (the teams' players in order, then
// the unplaced as they are placed), each with his weight, his name and his team now, and
// the teams' totals (bots included).
type lineup struct {
	totals  []float64
	weights []float64
	who     []PlayerRef
	teamOf  []int
}

func newLineup(teams []Roster, unplaced int) *lineup {
	n := unplaced
	for _, tm := range teams {
		n += len(tm.Players)
	}
	l := &lineup{
		totals:  make([]float64, len(teams)),
		weights: make([]float64, 0, n),
		who:     make([]PlayerRef, 0, n),
		teamOf:  make([]int, 0, n),
	}
	for j, tm := range teams {
		l.totals[j] = tm.Total()
		for i, w := range tm.Players {
			l.add(w, PlayerRef{j, i}, j)
		}
	}
	return l
}

func (l *lineup) add(w float64, p PlayerRef, team int) {
	l.weights = append(l.weights, w)
	l.who = append(l.who, p)
	l.teamOf = append(l.teamOf, team)
}

// place gives every unplaced player his team (placeUnplaced) and returns the placements as
// moves, and whether the placement is optimal.
func (l *lineup) place(teams []Roster, unplaced []float64) ([]Move, bool) {
	place, exact := placeUnplaced(teams, l.totals, unplaced)
	moves := make([]Move, 0, len(place))
	for i, j := range place {
		to := int(j)
		l.totals[to] += unplaced[i]
		l.add(unplaced[i], PlayerRef{-1, i}, to)
		moves = append(moves, l.record(Move{Kind: Place, Player: PlayerRef{-1, i}, From: -1, To: to}))
	}
	return moves, exact
}

func (l *lineup) sumOfTotals() float64 {
	s := 0.0
	for _, x := range l.totals {
		s += x
	}
	return s
}

// bestSwap finds the two players on different teams whose swap leaves the smallest
// imbalance (max total - min total), the first such pair in global order; ok is false when
// none improves today's imbalance by more than eps.
func (l *lineup) bestSwap(eps float64) (bestA, bestB int, ok bool) {
	totals, weights, teamOf := l.totals, l.weights, l.teamOf
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
	return bestA, bestB, bestA >= 0
}

// swap moves player a to b's team and b to a's, and returns the move.
func (l *lineup) swap(a, b int) Move {
	ta, tb := l.teamOf[a], l.teamOf[b]
	d := l.weights[b] - l.weights[a]
	l.totals[ta] += d
	l.totals[tb] -= d
	l.teamOf[a], l.teamOf[b] = tb, ta
	return l.record(Move{Kind: Swap, Player: l.who[a], Other: l.who[b], From: ta, To: tb})
}

// record completes m with the totals and the balance it leaves.
func (l *lineup) record(m Move) Move {
	m.Totals = append([]float64(nil), l.totals...)
	m.Balance, m.Difference = Balance(l.totals)
	return m
}

// rosters lists each team's humans by name, in global order.
func (l *lineup) rosters(teams int) [][]PlayerRef {
	r := make([][]PlayerRef, teams)
	for a, j := range l.teamOf {
		r[j] = append(r[j], l.who[a])
	}
	return r
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
