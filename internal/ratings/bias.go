package ratings

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// BiasKey names a cell of the side-bias table: the circumstances of a match that are independent
// of its players (the seed's F(race, map, game size)). The two sides are stored in canonical
// order (lower case, SideA < SideB) so that "marines vs aliens" and "aliens vs marines" share one
// history whichever team index each side had; win counts are SideA's.
type BiasKey struct {
	SideA, SideB string
	Map          string // lower case
	Size         int    // SizeBucket of the match's team size
}

// BiasCell is the history of one cell: games played and games won by SideA, a draw counting
// half a win. Sums of halves and ones are exact in float64 (up to 2^52 games), so the order in
// which results are recorded cannot change a cell.
type BiasCell struct {
	Wins  float64
	Games float64
	// Terms are the statistics a model learns its context-wide terms from (Kalman); zero for
	// the models that learn none. Like Wins and Games they are sums over the matches recorded,
	// so cells, shards and a side pair's total add up.
	Terms Terms
}

// Terms are additive statistics of the matches recorded in a cell, from which the Kalman
// model estimates three terms of its prediction by iteratively reweighted least squares (see
// Kalman): each estimate is (prior weight * prior value + Sum) / (prior weight + Weight).
type Terms struct {
	Presence, PresenceWeight float64 // B: what an average participant is worth over nobody
	Newcomer, NewcomerWeight float64 // the mean skill of a participant in their first match
	Scale, ScaleWeight       float64 // the temperature of the served win probability
	// A Mixture's: its second model's temperature, and the evidence for its first model over
	// its second (Mixture.weight).
	AltScale, AltScaleWeight float64
	Evidence                 float64
}

func (t *Terms) add(u Terms) {
	t.Presence += u.Presence
	t.PresenceWeight += u.PresenceWeight
	t.Newcomer += u.Newcomer
	t.NewcomerWeight += u.NewcomerWeight
	t.Scale += u.Scale
	t.ScaleWeight += u.ScaleWeight
	t.AltScale += u.AltScale
	t.AltScaleWeight += u.AltScaleWeight
	t.Evidence += u.Evidence
}

func (t Terms) neg() Terms {
	return Terms{-t.Presence, -t.PresenceWeight, -t.Newcomer, -t.NewcomerWeight, -t.Scale, -t.ScaleWeight,
		-t.AltScale, -t.AltScaleWeight, -t.Evidence}
}

// valid reports whether every statistic is finite and every weight non-negative.
func (t Terms) valid() bool {
	return finite(t.Presence) && finite(t.Newcomer) && finite(t.Scale) &&
		finite(t.PresenceWeight) && finite(t.NewcomerWeight) && finite(t.ScaleWeight) &&
		t.PresenceWeight >= 0 && t.NewcomerWeight >= 0 && t.ScaleWeight >= 0 &&
		finite(t.AltScale) && finite(t.AltScaleWeight) && finite(t.Evidence) && t.AltScaleWeight >= 0
}

// BiasEntry is a cell with its key: one row of the table, or one match's update to it (Games 1).
type BiasEntry struct {
	Key BiasKey
	BiasCell
}

// BiasTable holds the historical win rates of sides per map and team size, and the side pair's
// total over every map and size, which the cells are smoothed towards. The zero value is an
// empty table (F = 0 everywhere). It is a plain value of maps: copy it with Clone before
// changing a copy, and guard it with the caller's lock when shared.
type BiasTable struct {
	cells  map[BiasKey]BiasCell
	totals map[BiasKey]BiasCell // keyed by the side pair only (Map "", Size 0)
}

// SizeBucket groups team sizes so that each cell of the bias table gathers enough games:
// 1, 2, 3-4, 5-6, 7-9, 10-13, 14-19, 20 and more; it returns the bucket's lower bound.
func SizeBucket(n int) int {
	switch {
	case n <= 2:
		return max(n, 1)
	case n <= 4:
		return 3
	case n <= 6:
		return 5
	case n <= 9:
		return 7
	case n <= 13:
		return 10
	case n <= 19:
		return 14
	default:
		return 20
	}
}

// NewBiasKey returns the key of a match between side0 (team 0) and side1 on a map with the
// given team size, and whether team 0's side is SideA (then F is SideA's bias as is; otherwise
// it is negated).
func NewBiasKey(side0, side1, mapName string, teamSize int) (BiasKey, bool) {
	a, b := fold(side0), fold(side1)
	first := a <= b
	if !first {
		a, b = b, a
	}
	return BiasKey{SideA: a, SideB: b, Map: fold(mapName), Size: SizeBucket(teamSize)}, first
}

func (k BiasKey) total() BiasKey { return BiasKey{SideA: k.SideA, SideB: k.SideB} }

// Cell returns the history of one cell.
func (b BiasTable) Cell(k BiasKey) BiasCell { return b.cells[k] }

// Total returns the side pair's history over every map and size.
func (b BiasTable) Total(k BiasKey) BiasCell { return b.totals[k.total()] }

// Len is the number of cells.
func (b BiasTable) Len() int { return len(b.cells) }

// F is the bias term for SideA in the cell's circumstances, in logit units: the logit of
// SideA's smoothed historical win rate. Smoothing is by k pseudo-games in two levels: the side
// pair's rate over every map and size is shrunk towards 1/2,
//
//	p_pair = (W_pair + k/2) / (N_pair + k),
//
// and the cell's rate towards the pair's,
//
//	p_cell = (W + k p_pair) / (N + k),   F = log(p_cell / (1 - p_cell)).
//
// So an empty table gives F = 0, a new map starts from the side's overall advantage, and a cell
// with many games follows its own record. k must be positive (it keeps F finite).
func (b BiasTable) F(k BiasKey, prior float64) float64 {
	f, _ := smoothed(b.cells[k], b.totals[k.total()], prior)
	return f
}

// smoothed is F for a cell c whose side pair's total is t, and its variance: that of the
// logit of the cell's smoothed rate, whose pseudo-counts are the cell's wins and losses plus
// the prior's.
func smoothed(c, t BiasCell, prior float64) (f, variance float64) {
	pPair := (t.Wins + prior/2) / (t.Games + prior)
	w, l := c.Wins+prior*pPair, c.Games-c.Wins+prior*(1-pPair)
	return logit(w / (c.Games + prior)), 1/w + 1/l
}

// Record adds a match's update (or any entry) to its cell and to the side pair's total.
func (b *BiasTable) Record(e BiasEntry) {
	if b.cells == nil {
		b.cells = make(map[BiasKey]BiasCell)
		b.totals = make(map[BiasKey]BiasCell)
	}
	c := b.cells[e.Key]
	c.Wins += e.Wins
	c.Games += e.Games
	c.Terms.add(e.Terms)
	b.cells[e.Key] = c
	tk := e.Key.total()
	t := b.totals[tk]
	t.Wins += e.Wins
	t.Games += e.Games
	t.Terms.add(e.Terms)
	b.totals[tk] = t
}

// Set replaces a cell, e.g. when loading the table from storage, and keeps the totals right.
func (b *BiasTable) Set(e BiasEntry) error {
	c := e.BiasCell
	if !finite(c.Wins) || !finite(c.Games) || c.Wins < 0 || c.Games < c.Wins || !c.Terms.valid() {
		return apperr.New(apperr.Invalid, "bias cell %+v: want 0 <= wins <= games, finite", e)
	}
	if e.Key.SideA > e.Key.SideB {
		return apperr.New(apperr.Invalid, "bias cell %+v: sides are not in canonical order", e)
	}
	old := b.cells[e.Key]
	d := BiasCell{Wins: c.Wins - old.Wins, Games: c.Games - old.Games, Terms: c.Terms}
	d.Terms.add(old.Terms.neg())
	b.Record(BiasEntry{Key: e.Key, BiasCell: d})
	return nil
}

// SetTotal replaces the side pair's total (k's map and size are ignored), for a store that
// loads only the cells a result needs and keeps each pair's total beside them. Call it after
// Set: Set adds every cell it loads to the total.
func (b *BiasTable) SetTotal(k BiasKey, c BiasCell) error {
	if !finite(c.Wins) || !finite(c.Games) || c.Wins < 0 || c.Games < c.Wins || !c.Terms.valid() {
		return apperr.New(apperr.Invalid, "bias total %+v: want 0 <= wins <= games, finite", c)
	}
	if b.totals == nil {
		b.totals = make(map[BiasKey]BiasCell)
	}
	b.totals[k.total()] = c
	return nil
}

// Pairs lists the side pairs that have a total, in order.
func (b BiasTable) Pairs() []BiasKey {
	out := make([]BiasKey, 0, len(b.totals))
	for k := range b.totals {
		out = append(out, k)
	}
	slices.SortFunc(out, func(x, y BiasKey) int {
		if c := strings.Compare(x.SideA, y.SideA); c != 0 {
			return c
		}
		return strings.Compare(x.SideB, y.SideB)
	})
	return out
}

// Entries lists every cell in a fixed order (sides, map, size).
func (b BiasTable) Entries() []BiasEntry {
	out := make([]BiasEntry, 0, len(b.cells))
	for k, c := range b.cells {
		out = append(out, BiasEntry{k, c})
	}
	slices.SortFunc(out, func(x, y BiasEntry) int {
		return cmp.Or(cmp.Compare(x.Key.SideA, y.Key.SideA), cmp.Compare(x.Key.SideB, y.Key.SideB),
			cmp.Compare(x.Key.Map, y.Key.Map), cmp.Compare(x.Key.Size, y.Key.Size))
	})
	return out
}

// Clone returns an independent copy, totals included as they are (adding the cells up again
// could change the last bits of the terms' sums).
func (b BiasTable) Clone() BiasTable {
	if b.cells == nil && b.totals == nil {
		return BiasTable{}
	}
	return BiasTable{cells: maps.Clone(b.cells), totals: maps.Clone(b.totals)}
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// logit is log(p / (1-p)).
func logit(p float64) float64 { return math.Log(p / (1 - p)) }

// sigmoid is 1 / (1 + e^-x); it never returns NaN for a non-NaN x. It is computed with
// math.Exp2, which is pure Go on amd64: math.Exp there picks an FMA or a non-FMA assembly
// path by CPU, and could make a replay differ in the last bit between two servers.
func sigmoid(x float64) float64 { return 1 / (1 + math.Exp2(-x*math.Log2E)) }
