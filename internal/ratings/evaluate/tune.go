package evaluate

import (
	"fmt"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// ContextTuning is one context's fit, for printing.
type ContextTuning struct {
	Context string
	Report  ratings.TuneReport
}

// Tune fits base's hyperparameters to each context of the history as the service's tuning
// does (ratings.Tune over the context's results in order), and returns the model that learns
// each context with its fit: the "tuned" row. Its scores are in-sample -- the fit saw the
// results it is then scored on, less the held-out tail that decides whether it is kept --
// so they say what tuning can buy, not what it will.
func (rp *Replay) Tune(base ratings.Kalman) (ratings.Model, []ContextTuning, error) {
	byContext := map[string][]ratings.Result{}
	for i, r := range rp.results {
		byContext[rp.contexts[i]] = append(byContext[rp.contexts[i]], r)
	}
	keys := make([]string, 0, len(byContext))
	for k := range byContext {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	m := tunedModel{base: base, byContext: map[string]ratings.Kalman{}}
	var out []ContextTuning
	for _, k := range keys {
		rep, err := ratings.Tune(base, byContext[k])
		if err != nil {
			return nil, nil, err
		}
		m.byContext[k] = base.WithTuned(rep.Params)
		out = append(out, ContextTuning{k, rep})
	}
	return m, out, nil
}

// tunedModel is ns2-kalman with each context's own parameters.
type tunedModel struct {
	base      ratings.Kalman
	byContext map[string]ratings.Kalman
}

func (m tunedModel) Name() string { return "ns2-kalman (tuned)" }

func (m tunedModel) Apply(prior map[ratings.Participant]ratings.Rating, bias ratings.BiasTable, r ratings.Result) (ratings.Outcome, error) {
	km := m.base
	if c, _, err := (*ratings.MutatorPolicy)(nil).Context(r.GameType, r.Mutators); err == nil {
		if t, ok := m.byContext[c.Key()]; ok {
			km = t
		}
	}
	return km.Apply(prior, bias, r)
}

func (m tunedModel) PriorSigma() float64 { return m.base.PriorSigma() }

// RunSolve scores the full-history solve (ratings.SolvePredictions) as the other models are
// scored: each context's results predicted from a solve of every result of the context
// before their block of refit results.
func (rp *Replay) RunSolve(refit int, prior ratings.SolvePrior) (Report, error) {
	byContext := map[string][]int{}
	for i := range rp.results {
		byContext[rp.contexts[i]] = append(byContext[rp.contexts[i]], i)
	}
	p := make([]float64, len(rp.results))
	for _, idx := range byContext {
		h := make([]ratings.Result, len(idx))
		for k, i := range idx {
			h[k] = rp.results[i]
		}
		preds, err := ratings.SolvePredictions(h, refit, prior)
		if err != nil {
			return Report{}, err
		}
		for k, i := range idx {
			p[i] = preds[k]
		}
	}
	var s Score
	for i, r := range rp.results {
		if rp.Scored(i) {
			s.Add(p[i], r.Score())
		}
	}
	return Report{Model: fmt.Sprintf("ns2 MAP solve (every %d)", refit), Metrics: s.Metrics()}, nil
}
