package ratings

import (
	"math"
	"sync"
)

// Tuning. ns2-kalman's defaults were chosen on a few leagues; the right belief in a newcomer,
// drift, noise and bias strength differ by game. Tune fits them to one context's own history
// by maximum likelihood of its online predictions: the history is replayed in order, every
// result predicted (the served probability, temperature and all) before it is learnt, and the
// mean log loss of those predictions is minimised over the parameters by a coordinate search
// (each parameter stepped up and down in turn, steps halved when no step helps). The first
// TuneBurnin of the results are learnt from only; the fit scores the results up to the last
// TuneHoldout of the history, and the tail is held out: the fit is accepted only if the tuned
// parameters also predict the held-out tail better than the context's untuned model did.

// TunedParams are the hyperparameters of ns2-kalman that Tune fits per context, and for an
// ns2-mix context (whose ns2-kalman they are) the mixture's Memory.
type TunedParams struct {
	// SkillSD is a newcomer's skill uncertainty (Kalman.SkillSD), NewcomerSkill the prior of
	// the newcomers' mean skill (Kalman.NewcomerSkill).
	SkillSD       float64 `json:"skill_sd"`
	NewcomerSkill float64 `json:"newcomer_skill"`
	// SkillDrift is how much a skill's uncertainty grows before each match (Kalman.SkillDrift),
	// SkillDriftPerDay each day between a player's matches (Kalman.SkillDriftPerDay; a tuning
	// stored before it was fitted has 0).
	SkillDrift       float64 `json:"skill_drift"`
	SkillDriftPerDay float64 `json:"skill_drift_per_day"`
	// Noise is the performance noise of a match in logits (Kalman.Noise).
	Noise float64 `json:"noise"`
	// BiasPrior is the smoothing of the side/map/size bias table in pseudo-games
	// (Kalman.BiasPrior: smaller trusts a cell's own win rate sooner), OffsetSD the prior
	// uncertainty of a player's side offset (Kalman.OffsetSD): the bias terms' strength.
	BiasPrior float64 `json:"bias_prior"`
	OffsetSD  float64 `json:"offset_sd"`
	// SizeExponent weighs the players of a big team more (Kalman.SizeExponent). A tuning
	// stored before it was fitted has 0: the mean model it was fitted with.
	SizeExponent float64 `json:"size_exponent"`
	// Memory is an ns2-mix context's Mixture.Memory (absent, 0, for ns2-kalman's).
	Memory float64 `json:"memory,omitempty"`
}

// Tuned returns the parameters Tune fits, as m has them.
func (m Kalman) Tuned() TunedParams {
	return TunedParams{SkillSD: m.SkillSD, NewcomerSkill: m.NewcomerSkill, SkillDrift: m.SkillDrift, SkillDriftPerDay: m.SkillDriftPerDay,
		Noise: m.Noise, BiasPrior: m.BiasPrior, OffsetSD: m.OffsetSD, SizeExponent: m.SizeExponent}
}

// WithTuned returns m with the fitted parameters p (Memory is not ns2-kalman's).
func (m Kalman) WithTuned(p TunedParams) Kalman {
	m.SkillSD, m.NewcomerSkill, m.SkillDrift, m.SkillDriftPerDay, m.Noise, m.BiasPrior, m.OffsetSD, m.SizeExponent =
		p.SkillSD, p.NewcomerSkill, p.SkillDrift, p.SkillDriftPerDay, p.Noise, p.BiasPrior, p.OffsetSD, p.SizeExponent
	return m
}

// Tuned returns the parameters Tune fits, as m has them: its ns2-kalman's, and Memory.
func (m Mixture) Tuned() TunedParams {
	p := m.First.Tuned()
	p.Memory = m.Memory
	return p
}

// WithTuned returns m with the fitted parameters p: its ns2-kalman's, and Memory.
func (m Mixture) WithTuned(p TunedParams) Mixture {
	m.First, m.Memory = m.First.WithTuned(p), p.Memory
	return m
}

// Tunable is a model whose parameters Tune fits: ns2-kalman (Kalman) or ns2-mix (Mixture).
// Its second model, openskill-pl, keeps its defaults: the fit moves the mixture by the
// parameters of the model it mixes in and by how fast its weight follows the better model.
// A model is tunable when it is one (m.(Tunable)); only this package's models can be.
type Tunable interface {
	Model
	Validate() error
	Tuned() TunedParams
	// withTuned is the model with the parameters p, as WithTuned makes it.
	withTuned(p TunedParams) Tunable
}

func (m Kalman) withTuned(p TunedParams) Tunable  { return m.WithTuned(p) }
func (m Mixture) withTuned(p TunedParams) Tunable { return m.WithTuned(p) }

// WithTuning is m with a stored tuning's parameters p, if m is a Tunable model (else m).
func WithTuning(m Model, p TunedParams) Model {
	if tm, ok := m.(Tunable); ok {
		return tm.withTuned(p)
	}
	return m
}

const (
	// MinTuneResults is the smallest history Tune fits: with fewer results its held-out tail
	// is too short to tell a better fit from luck, and the context keeps its model's defaults.
	MinTuneResults = 2000
	// TuneBurnin is the share of a history only learnt from, TuneHoldout the share at its end
	// held out of the fit to check it.
	TuneBurnin  = 0.2
	TuneHoldout = 0.2
	// maxTuneEvaluations bounds the search: each evaluation is one replay of the history.
	maxTuneEvaluations = 100
)

// TuneReport is what Tune found for one context. Log losses are the mean over the scored
// results of -ln(probability served to the outcome); Fit* over the results the search saw,
// HeldOut* over the held-out tail.
type TuneReport struct {
	Results       int         `json:"results"`
	Evaluations   int         `json:"evaluations"`
	Accepted      bool        `json:"accepted"`
	Reason        string      `json:"reason,omitempty"` // why not accepted
	Default       TunedParams `json:"default"`
	Params        TunedParams `json:"params"` // the fit; the defaults when not accepted
	FitBefore     float64     `json:"fit_log_loss_before"`
	FitAfter      float64     `json:"fit_log_loss_after"`
	HeldOutBefore float64     `json:"held_out_log_loss_before"`
	HeldOutAfter  float64     `json:"held_out_log_loss_after"`
}

// Tune fits m's TunedParams (Memory too for a Mixture) to one context's history (valid results, in the order they were
// accepted) and reports the fit. A history shorter than MinTuneResults, or a fit that does
// not predict the held-out tail better than m, is reported not accepted, with m's own
// parameters. Tune is deterministic, and runs up to two replays at a time.
func Tune(m Tunable, history []Result) (TuneReport, error) {
	return tune(m, history, 2, nil)
}

// tune is Tune with at most replaysAtOnce replays running at a time (1 or 2): the same
// candidates in the same order, so the same report whatever the count. Self-tuning runs one
// at a time, beside the service's own work: two replays took both cores of a 2-core host for
// ~10 s at 8,000 results and halved the queue's ticks meanwhile. pace, if not nil, is called
// after each replay (from one goroutine at a time only with replaysAtOnce 1), and its error
// ends the search: it is where self-tuning rests (pacer), which changes nothing of the report.
func tune(m Tunable, history []Result, replaysAtOnce int, pace func() error) (TuneReport, error) {
	rep := TuneReport{Results: len(history), Default: m.Tuned(), Params: m.Tuned()}
	if err := m.Validate(); err != nil {
		return rep, err
	}
	history, err := checkedHistory(history)
	if err != nil {
		return rep, err
	}
	burnin := int(TuneBurnin * float64(len(history)))
	cut := len(history) - int(TuneHoldout*float64(len(history)))
	score := func(p TunedParams) (fit, held float64, err error) {
		if fit, held, err = onlineLoss(m.withTuned(p), history, burnin, cut); err != nil || pace == nil {
			return fit, held, err
		}
		return fit, held, pace()
	}
	fit, held, err := score(rep.Params)
	if err != nil {
		return rep, err
	}
	rep.Evaluations = 1
	rep.FitBefore, rep.FitAfter, rep.HeldOutBefore, rep.HeldOutAfter = fit, fit, held, held
	if len(history) < MinTuneResults {
		rep.Reason = "too few results to tune"
		return rep, nil
	}

	best, bestLoss := rep.Params, fit
	_, mixture := m.(Mixture)
	coords := tuneCoords(mixture)
	for step := 1.0; step > 1.0/16 && rep.Evaluations < maxTuneEvaluations; step /= 2 {
		improved := true
		for improved && rep.Evaluations < maxTuneEvaluations {
			improved = false
			for _, c := range coords {
				if rep.Evaluations >= maxTuneEvaluations {
					break
				}
				cands := []TunedParams{c.move(best, step), c.move(best, -step)}
				losses := make([]float64, len(cands))
				errs := make([]error, len(cands))
				scoreAll(cands, replaysAtOnce, func(i int) { losses[i], _, errs[i] = score(cands[i]) })
				rep.Evaluations += len(cands)
				for i := range cands {
					if errs[i] != nil {
						return rep, errs[i]
					}
					if losses[i] < bestLoss-1e-6 {
						best, bestLoss, improved = cands[i], losses[i], true
					}
				}
			}
		}
	}
	_, heldAfter, err := score(best)
	if err != nil {
		return rep, err
	}
	rep.Evaluations++
	rep.FitAfter, rep.HeldOutAfter = bestLoss, heldAfter
	if heldAfter >= held {
		rep.Reason = "the fit does not predict the held-out tail better than the defaults"
		return rep, nil
	}
	rep.Accepted, rep.Params = true, best
	return rep, nil
}

// scoreAll calls score for each of cands, at most atOnce at a time.
func scoreAll(cands []TunedParams, atOnce int, score func(i int)) {
	if atOnce <= 1 {
		for i := range cands {
			score(i)
		}
		return
	}
	var wg sync.WaitGroup
	for i := range cands {
		wg.Go(func() { score(i) })
	}
	wg.Wait()
}

// tuneCoord is one direction of the search: move returns p stepped by step (a signed
// fraction of the coordinate's scale).
type tuneCoord struct {
	move func(p TunedParams, step float64) TunedParams
}

// tuneCoords are the search's directions (with a mixture's Memory last). Scales are
// multiplicative (a step of 1 doubles or halves) for the positive parameters, additive for the
// newcomers' mean, the noise and the memory, and every value is kept in a range where the
// model stays sensible.
func tuneCoords(mixture bool) []tuneCoord {
	mul := func(get func(*TunedParams) *float64, lo, hi float64) tuneCoord {
		return tuneCoord{func(p TunedParams, step float64) TunedParams {
			x := get(&p)
			*x = math.Min(math.Max(*x*math.Exp2(step), lo), hi)
			return p
		}}
	}
	add := func(get func(*TunedParams) *float64, scale, lo, hi float64) tuneCoord {
		return tuneCoord{func(p TunedParams, step float64) TunedParams {
			x := get(&p)
			*x = math.Min(math.Max(*x+scale*step, lo), hi)
			return p
		}}
	}
	coords := []tuneCoord{
		mul(func(p *TunedParams) *float64 { return &p.SkillSD }, 0.25, 8),
		add(func(p *TunedParams) *float64 { return &p.NewcomerSkill }, 1, -4, 4),
		mul(func(p *TunedParams) *float64 { return &p.SkillDrift }, 0.005, 1),
		mul(func(p *TunedParams) *float64 { return &p.SkillDriftPerDay }, 0.001, 0.5),
		add(func(p *TunedParams) *float64 { return &p.Noise }, 0.5, 0, 4),
		mul(func(p *TunedParams) *float64 { return &p.BiasPrior }, 2, 2000),
		add(func(p *TunedParams) *float64 { return &p.OffsetSD }, 0.3, 0, 2),
		add(func(p *TunedParams) *float64 { return &p.SizeExponent }, 0.25, 0, 1.5),
	}
	if mixture {
		coords = append(coords, add(func(p *TunedParams) *float64 { return &p.Memory }, 0.5, 0, 4))
	}
	return coords
}

// onlineLoss replays history through m as the service would learn it, one context, and
// returns the mean log loss of the served predictions of the results in [burnin, cut) and in
// [cut, len).
func onlineLoss(m Model, history []Result, burnin, cut int) (fit, held float64, err error) {
	var s State
	var sumFit, sumHeld float64
	for i, r := range history {
		o, err := s.Apply(m, r)
		if err != nil {
			return 0, 0, replayError(i, r, err)
		}
		if i < burnin {
			continue
		}
		g := r.Score()
		p := min(max(o.WinProbability[0], 1e-12), 1-1e-12)
		loss := -(g*math.Log(p) + (1-g)*math.Log(1-p))
		if i < cut {
			sumFit += loss
		} else {
			sumHeld += loss
		}
	}
	return mean(sumFit, cut-burnin), mean(sumHeld, len(history)-cut), nil
}

// checkedHistory is a copy of history each of whose results passed Validate once (marked
// checked), so that the replays of the search's candidates do not check each again: that was
// two thirds of every replayed Apply (docs/performance.md, "The request paths a ticket
// takes"). An invalid result is the error each replay would have stopped at.
func checkedHistory(history []Result) ([]Result, error) {
	out := make([]Result, len(history))
	for i, r := range history {
		if err := r.Validate(); err != nil {
			return nil, replayError(i, r, err)
		}
		r.checked = true
		out[i] = r
	}
	return out, nil
}

func mean(sum float64, n int) float64 {
	if n <= 0 {
		return 0
	}
	return sum / float64(n)
}
