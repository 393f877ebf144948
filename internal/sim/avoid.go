package sim

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
)

// AvoidDist gives a fraction of the players an avoid list (the players he blocked): each of
// them avoids one player drawn among the Near players nearest him in true skill, those he
// meets most, so that the lists bind in the queue and their cost in wait shows.
type AvoidDist struct {
	Fraction float64 `json:"fraction"` // of the population, 0..1
	Near     int     `json:"near"`     // 0: 20
}

func (d *AvoidDist) validate() error {
	if !(d.Fraction >= 0 && d.Fraction <= 1) {
		return fmt.Errorf("avoid.fraction must be between 0 and 1")
	}
	if d.Near < 0 {
		return fmt.Errorf("avoid.near must not be negative")
	}
	return nil
}

// AvoidResult counts what the lists did: the players with a list, and the matches made
// that hold two players of which one avoids the other (a matcher that ignores the lists:
// only the queue's pass keeps them).
type AvoidResult struct {
	Avoiders, AvoidBroken int
}

// avoids are the players' lists, by population index, and the ids the queue sees.
type avoids struct {
	ids      []string
	list     [][]int
	avoiders int
}

// newAvoids draws the lists of the population, or nil without d.
func newAvoids(d *AvoidDist, pop []Player, rng *rand.Rand) *avoids {
	if d == nil || d.Fraction == 0 || len(pop) < 2 {
		return nil
	}
	near := cmp.Or(d.Near, 20)
	bySkill := make([]int, len(pop))
	for i := range bySkill {
		bySkill[i] = i
	}
	slices.SortStableFunc(bySkill, func(a, b int) int { return cmp.Compare(pop[a].Skill, pop[b].Skill) })
	a := &avoids{ids: make([]string, len(pop)), list: make([][]int, len(pop))}
	for i := range pop {
		a.ids[i] = strconv.Itoa(i)
	}
	for k, p := range bySkill {
		if rng.Float64() >= d.Fraction {
			continue
		}
		lo, hi := max(k-near/2, 0), min(k+near/2, len(pop)-1)
		o := bySkill[lo+rng.IntN(hi-lo+1)]
		if o == p {
			o = bySkill[max(lo, k-1)]
			if o == p {
				o = bySkill[k+1]
			}
		}
		a.list[p] = []int{o}
		a.avoiders++
	}
	return a
}

// give gives a new ticket its players' ids and lists.
func (a *avoids) give(t *Ticket) {
	if a == nil {
		return
	}
	t.IDs = make([]string, len(t.Players))
	for i, p := range t.Players {
		t.IDs[i] = a.ids[p]
		if len(a.list[p]) > 0 && !slices.Contains(t.Players, a.list[p][0]) {
			if t.Avoid == nil {
				t.Avoid = make([][]string, len(t.Players))
			}
			t.Avoid[i] = []string{a.ids[a.list[p][0]]}
		}
	}
}

// check counts the match if it holds a player and one he avoids.
func (a *avoids) check(m Match, res *AvoidResult) {
	if a == nil {
		return
	}
	res.Avoiders = a.avoiders
	in := slices.Concat(m.Teams[0], m.Teams[1])
	for _, p := range in {
		if len(a.list[p]) > 0 && slices.Contains(in, a.list[p][0]) {
			res.AvoidBroken++
			return
		}
	}
}
