// Package evaluate replays a history of results through rating models the way the live
// service sees it, and scores the predictions: each result is first predicted from the ratings
// learnt so far -- the pre-match win_probability that POST /v1/results reports -- then learnt
// from. The first part of the history (the burn-in) is learnt from but not scored. It prints
// accuracy, log loss, Brier score and calibration slope per model side by side.
package evaluate

import (
	"fmt"
	"io"
	"sync"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Report is one model's replay of a history.
type Report struct {
	Model string
	Metrics
}

// Replay is a history prepared for replaying: its valid results in order, each with the key
// of the context the service would rate it in.
type Replay struct {
	results  []ratings.Result
	contexts []string
	Skipped  int // results dropped: invalid (the service would answer 422) or a repeated match id
	Burnin   int // results learnt from before scoring starts
}

// Prepare validates a history and splits it into contexts as a fresh service would (by game
// type: no mutator is classified as gameplay). burnin is the share of the valid results that
// is only learnt from, 0 <= burnin < 1.
func Prepare(history []ratings.Result, burnin float64) (*Replay, error) {
	if !(burnin >= 0 && burnin < 1) {
		return nil, fmt.Errorf("burn-in %v: want 0 <= burnin < 1", burnin)
	}
	rp := &Replay{}
	seen := make(map[string]bool, len(history))
	for _, r := range history {
		if r.Validate() != nil || seen[r.MatchID] {
			rp.Skipped++
			continue
		}
		seen[r.MatchID] = true
		c, _, err := (*ratings.MutatorPolicy)(nil).Context(r.GameType, r.Mutators)
		if err != nil {
			rp.Skipped++
			continue
		}
		rp.results = append(rp.results, r)
		rp.contexts = append(rp.contexts, c.Key())
	}
	rp.Burnin = int(burnin * float64(len(rp.results)))
	return rp, nil
}

// Len is the number of results replayed.
func (rp *Replay) Len() int { return len(rp.results) }

// Results are the results replayed, in order.
func (rp *Replay) Results() []ratings.Result { return rp.results }

// Scored reports whether the i-th result is scored (it is past the burn-in).
func (rp *Replay) Scored(i int) bool { return i >= rp.Burnin }

// Run replays the history through one model and scores it.
func (rp *Replay) Run(m ratings.Model) (Report, error) {
	states := make(map[string]*ratings.State)
	var s Score
	for i, r := range rp.results {
		st := states[rp.contexts[i]]
		if st == nil {
			st = &ratings.State{}
			states[rp.contexts[i]] = st
		}
		o, err := st.Apply(m, r)
		if err != nil {
			return Report{}, fmt.Errorf("%s: result %d (match %q): %w", m.Name(), i, r.MatchID, err)
		}
		if rp.Scored(i) {
			s.Add(o.WinProbability[0], r.Score())
		}
	}
	return Report{Model: m.Name(), Metrics: s.Metrics()}, nil
}

// RunAll replays the history through every model, concurrently, and returns the reports in
// the models' order.
func (rp *Replay) RunAll(models []ratings.Model) ([]Report, error) {
	reports := make([]Report, len(models))
	errs := make([]error, len(models))
	var wg sync.WaitGroup
	for i, m := range models {
		wg.Go(func() { reports[i], errs[i] = rp.Run(m) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return reports, nil
}

// Print writes the reports as a table.
func Print(w io.Writer, reports []Report) {
	width := len("model")
	for _, r := range reports {
		width = max(width, len(r.Model))
	}
	fmt.Fprintf(w, "%-*s  %6s  %8s  %8s  %6s  %5s\n", width, "model", "n", "accuracy", "log loss", "brier", "slope")
	for _, r := range reports {
		fmt.Fprintf(w, "%-*s  %v\n", width, r.Model, r.Metrics)
	}
}
