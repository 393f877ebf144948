package ratings

import (
	"math"
	"slices"
)

// matchEntry is one participant of a result, in the order every model processes them.
type matchEntry struct {
	p    Participant
	team int
	pl   *Player
}

// ordered lists a valid result's participants by team, then Participant.Compare, appended to
// buf (a stack array spares the allocation). Every sum a model runs over a match goes in this
// order, whatever the order of the teams' lists, so a replay is bit-identical.
func (r *Result) ordered(buf []matchEntry) []matchEntry {
	order := buf[:0]
	for ti := range r.Teams {
		for pi := range r.Teams[ti].Players {
			pl := &r.Teams[ti].Players[pi]
			order = append(order, matchEntry{pl.Participant(), ti, pl})
		}
	}
	slices.SortFunc(order, func(a, b matchEntry) int {
		if a.team != b.team {
			return a.team - b.team
		}
		return a.p.Compare(b.p)
	})
	return order
}

// Score is team 0's result: 1 won, 0 lost, 1/2 a draw.
func (r *Result) Score() float64 {
	switch {
	case r.Winner == nil:
		return 0.5
	case *r.Winner == 0:
		return 1
	}
	return 0
}

// biasEntry is the result's entry for the bias table, and sigma0, the sign of team 0's side:
// +1 when it is the key's SideA (then the cell's F is team 0's as it is), -1 otherwise.
func (r *Result) biasEntry() (entry BiasEntry, sigma0 float64) {
	key, first := NewBiasKey(r.Teams[0].Side, r.Teams[1].Side, r.Map, r.teamSize())
	wins, sigma0 := r.Score(), 1.0
	if !first {
		wins, sigma0 = 1-wins, -1
	}
	return BiasEntry{Key: key, BiasCell: BiasCell{Wins: wins, Games: 1}}, sigma0
}

// shares fills each update's (unnormalised) presence t_i in Share and commanding c_i in
// CommandShare, and returns their sums. Times are shifted by the earliest join (and the
// earliest commander's join): the common factor cancels in every share, and a late start
// cannot underflow the weights.
func shares(r *Result, order []matchEntry, ups []Update, roundS float64) (sumT, sumC float64) {
	round := roundS
	if round <= 0 {
		round = r.DurationS
	}
	k := 2 / round // a^-x = 2^(-k x)
	minJ, minC := math.Inf(1), math.Inf(1)
	for _, e := range order {
		minJ = min(minJ, e.pl.JoinedS)
		if e.pl.CommanderS > 0 {
			minC = min(minC, e.pl.JoinedS)
		}
	}
	for i, e := range order {
		u := &ups[i]
		u.Share = presence(e.pl.JoinedS-minJ, e.pl.LeftS-minJ, k)
		if e.pl.CommanderS > 0 {
			u.CommandShare = presence(e.pl.JoinedS-minC, e.pl.JoinedS-minC+e.pl.CommanderS, k)
		}
		sumT += u.Share
		sumC += u.CommandShare
	}
	return sumT, sumC
}
