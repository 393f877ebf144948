package ratings

import (
	"fmt"
	"math"
)

// The full-history solve of the NS2 seed ("Fully solving for faster convergence"): instead of
// one gradient step per result as it comes, every skill is fitted to the whole history at
// once -- the maximum a posteriori estimate under NS2's logistic team model, with a Gamma
// prior on each skill so that a player with few results stays near the mean. In the seed's
// terms the skill u_i is positive, Gamma(k, theta) a priori (mean k theta), and the update
// adds (k-1)/u_i - 1/theta to the sum of the player's gradients; here the skill served is
// s_i = u_i - k theta, so that 0 is the average as everywhere else in the package.
//
// The model is NS2's prediction without side offsets or commander skills: team 0's logit is
// sum_i T_i w_i (B + s_i) + F, w_i the time-weighted participation, B = NS2's BaseSkill, F
// the side/map/size bias of the whole history's smoothed win rates. The log posterior is
// concave in the skills, and is maximised by cyclic coordinate Newton steps (each skill in
// turn, its matches' logits kept current), to convergence.

// SolvePrior is the Gamma prior of the solve, on the skill shifted by its mean.
type SolvePrior struct {
	K, Theta float64
}

// DefaultSolvePrior has the spread of a newcomer's skill in the package's other models
// (standard deviation sqrt(K) Theta = 2, NS2PriorSigma), centred at K Theta = 8 so that a
// skill 4 below the mean (2 standard deviations) still has room: K 16, Theta 0.5.
var DefaultSolvePrior = SolvePrior{K: 16, Theta: 0.5}

// Solved is one participant's skill as the solve fits it, with its uncertainty (the Laplace
// approximation: one over the square root of the log posterior's curvature) and how many
// results it took part in.
type Solved struct {
	Skill, Sigma float64
	Games        int
}

// solveGame is one result in the solve: its fixed part of the logit, its outcome, and its
// participants with their coefficients.
type solveGame struct {
	base, g float64
	who     []int32
	coef    []float64
}

// solver holds a history prepared for solving.
type solver struct {
	prior   SolvePrior
	index   map[Participant]int32
	players []Participant
	games   []solveGame
	byGame  [][]int32 // player -> the games it is in
}

// newSolver prepares history (one context, in order) for the solve; bias is the bias table
// whose smoothed rates give each result's F.
func newSolver(history []Result, bias BiasTable, prior SolvePrior) (*solver, error) {
	if !(prior.K >= 1 && prior.Theta > 0 && finite(prior.K) && finite(prior.Theta)) {
		return nil, fmt.Errorf("solve prior %+v: want K >= 1 and Theta > 0", prior)
	}
	m := DefaultNS2()
	s := &solver{prior: prior, index: map[Participant]int32{}}
	for i := range history {
		r := history[i]
		var buf [32]matchEntry
		order, ups, err := prepare(m, nil, &r, buf[:0])
		if err != nil {
			return nil, replayError(i, r, err)
		}
		sumT, _ := shares(&r, order, ups, m.RoundS)
		entry, sigma0 := r.biasEntry()
		g := solveGame{base: sigma0 * bias.F(entry.Key, m.BiasPrior), g: r.Score()}
		for _, u := range ups {
			c := teamSign(u.Team) * ratio(u.Share, sumT)
			g.base += c * m.BaseSkill
			if c == 0 {
				continue
			}
			id, ok := s.index[u.Participant]
			if !ok {
				id = int32(len(s.players))
				s.index[u.Participant] = id
				s.players = append(s.players, u.Participant)
				s.byGame = append(s.byGame, nil)
			}
			g.who = append(g.who, id)
			g.coef = append(g.coef, c)
			s.byGame[id] = append(s.byGame[id], int32(len(s.games)))
		}
		s.games = append(s.games, g)
	}
	return s, nil
}

// solve fits the skills (shifted, u = s + K Theta) to convergence and returns them with their
// curvatures.
func (s *solver) solve() (u, curvature []float64, sweeps int) {
	mean := s.prior.K * s.prior.Theta
	u = make([]float64, len(s.players))
	for i := range u {
		u[i] = mean
	}
	x := make([]float64, len(s.games)) // each game's logit at the current skills
	for j, g := range s.games {
		x[j] = g.base
		for k, id := range g.who {
			x[j] += g.coef[k] * (u[id] - mean)
		}
	}
	curvature = make([]float64, len(u))
	for sweeps = 1; sweeps <= 500; sweeps++ {
		biggest := 0.0
		for i := range u {
			grad := (s.prior.K-1)/u[i] - 1/s.prior.Theta
			h := (s.prior.K - 1) / (u[i] * u[i])
			for _, j := range s.byGame[i] {
				g := &s.games[j]
				c := coefOf(g, int32(i))
				p := sigmoid(x[j])
				grad += c * (g.g - p)
				h += c * c * p * (1 - p)
			}
			step := grad / h
			next := u[i] + step
			if next <= 0 { // the Gamma's support: go half way to 0 instead
				next = u[i] / 2
			}
			step = next - u[i]
			if step != 0 {
				for _, j := range s.byGame[i] {
					x[j] += coefOf(&s.games[j], int32(i)) * step
				}
				u[i] = next
			}
			curvature[i] = h
			biggest = max(biggest, math.Abs(step))
		}
		if biggest < 1e-7 {
			break
		}
	}
	return u, curvature, sweeps
}

// coefOf is player id's coefficient in game g.
func coefOf(g *solveGame, id int32) float64 {
	c := 0.0
	for k, w := range g.who {
		if w == id {
			c += g.coef[k]
		}
	}
	return c
}

// Solve fits every participant's skill to a context's whole history (valid results, in the
// order accepted) under the prior; bias is the context's bias table, whose smoothed rates
// give each result's side/map/size bias. It also returns how many sweeps it took.
func Solve(history []Result, bias BiasTable, prior SolvePrior) (map[Participant]Solved, int, error) {
	s, err := newSolver(history, bias, prior)
	if err != nil {
		return nil, 0, err
	}
	u, h, sweeps := s.solve()
	out := make(map[Participant]Solved, len(u))
	mean := prior.K * prior.Theta
	for i, p := range s.players {
		out[p] = Solved{Skill: u[i] - mean, Sigma: 1 / math.Sqrt(h[i]), Games: len(s.byGame[i])}
	}
	return out, sweeps, nil
}

// SolvePredictions is how well the solve predicts the next result: the history (one context,
// in order) is cut into blocks of refit results, and each result is predicted from the skills
// solved on every result before its block (a newcomer at the mean) and the bias table learnt
// so far, as a service that re-solved every refit results would. It returns team 0's win
// probability for each result.
func SolvePredictions(history []Result, refit int, prior SolvePrior) ([]float64, error) {
	if refit < 1 {
		return nil, fmt.Errorf("refit %d: want at least 1", refit)
	}
	var st State // the online model's state, for the bias table as it stood
	m := DefaultKalman()
	out := make([]float64, len(history))
	for start := 0; start < len(history); start += refit {
		end := min(start+refit, len(history))
		skills, _, err := Solve(history[:start], st.Bias, prior)
		if err != nil {
			return nil, err
		}
		prev, err := newSolver(history[start:end], st.Bias, prior)
		if err != nil {
			return nil, err
		}
		for j, g := range prev.games {
			x := g.base
			for k, id := range g.who {
				x += g.coef[k] * skills[prev.players[id]].Skill
			}
			out[start+j] = sigmoid(x)
		}
		for i := start; i < end; i++ {
			if _, err := st.Apply(m, history[i]); err != nil {
				return nil, replayError(i, history[i], err)
			}
		}
	}
	return out, nil
}
