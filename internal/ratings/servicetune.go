package ratings

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// ContextTuning is what tuning did in one context: the model it learns with and the fit's
// report (Accepted: its parameters are stored and used from now on).
type ContextTuning struct {
	Context Context
	Model   string
	Report  TuneReport
}

// Tune fits the hyperparameters of every context of a game type to its stored history (Tune,
// for the contexts that learn with ns2-kalman or ns2-mix), replaces the game type's stored tunings with
// the accepted fits, and reports every context. From then on results of the game type are
// learnt with them (on other replicas within TuningRefresh); the ratings already stored were
// learnt with the old parameters until a rebuild (Service.Rebuild) replays the history with
// the new ones. Contexts with fewer than MinTuneResults results keep the defaults.
func (s *Service) Tune(ctx context.Context, gameType string) ([]ContextTuning, error) {
	if err := ValidateName(gameType); err != nil {
		return nil, apperr.Field("game_type", "%s", err)
	}
	gameType = fold(gameType)
	policy, err := s.store.Policy(ctx)
	if err != nil {
		return nil, err
	}
	byContext := map[string][]Result{}
	contexts := map[string]Context{}
	err = s.store.History(ctx, gameType, func(r Result) error {
		c, _, err := policy.Context(r.GameType, r.Mutators)
		if err != nil {
			return err
		}
		byContext[c.Key()] = append(byContext[c.Key()], r)
		contexts[c.Key()] = c
		return nil
	})
	if err != nil {
		return nil, err
	}
	keys := make([]string, 0, len(contexts))
	for k := range contexts {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []ContextTuning
	var keep []Tuning
	for _, k := range keys {
		c := contexts[k]
		m := s.models.For(c)
		ct := ContextTuning{Context: c, Model: m.Name(), Report: TuneReport{Results: len(byContext[k])}}
		km, ok := m.(Tunable)
		if !ok {
			ct.Report.Reason = fmt.Sprintf("model %s has no tuned parameters", m.Name())
			out = append(out, ct)
			continue
		}
		if ct.Report, err = Tune(km, byContext[k]); err != nil {
			return nil, err
		}
		delete(byContext, k) // the history is done with: let it go before the next context's fit
		out = append(out, ct)
		if ct.Report.Accepted {
			keep = append(keep, Tuning{Context: c, Model: m.Name(), Params: ct.Report.Params, Report: ct.Report, At: s.clock()})
		}
	}
	if err := s.store.SaveTunings(ctx, gameType, keep); err != nil {
		return nil, err
	}
	s.tunings.forget(gameType)
	return out, nil
}

// Tunings returns the stored tunings of a game type, by context key.
func (s *Service) Tunings(ctx context.Context, gameType string) (map[string]Tuning, error) {
	if err := ValidateName(gameType); err != nil {
		return nil, apperr.Field("game_type", "%s", err)
	}
	return s.store.Tunings(ctx, fold(gameType))
}

// CheckTunings is the stores' check of what SaveTunings is given: every tuning of a context
// of gameType, no context twice, parameters a model accepts.
func CheckTunings(gameType string, ts []Tuning) error {
	seen := map[string]bool{}
	for i, t := range ts {
		key := t.Context.Key()
		switch {
		case t.Context.GameType != gameType:
			return apperr.New(apperr.Invalid, "tuning %d: context %s is not of game type %s", i, key, gameType)
		case seen[key]:
			return apperr.New(apperr.Invalid, "tuning %d: context %s is given twice", i, key)
		}
		seen[key] = true
		if err := DefaultMixture().WithTuned(t.Params).Validate(); err != nil { // ns2-kalman's and Memory
			return apperr.Wrap(apperr.Invalid, err, fmt.Sprintf("tuning %d (%s)", i, key))
		}
	}
	return nil
}

// TuningRefresh is how long a service keeps a game type's tunings before reading them from
// the store again: how soon a tuning made on another replica reaches this one.
const TuningRefresh = 10 * time.Second

// tuningCache holds the stored tunings by game type, read at most every TuningRefresh.
type tuningCache struct {
	mu     sync.Mutex
	byGame map[string]cachedTunings
	now    func() time.Time
}

type cachedTunings struct {
	at      time.Time
	tunings map[string]Tuning
}

func (tc *tuningCache) forget(gameType string) {
	tc.mu.Lock()
	delete(tc.byGame, gameType)
	tc.mu.Unlock()
}

// get returns the game type's tunings, from the cache while fresh. When the store cannot be
// read, the last tunings read are used if there are any.
func (tc *tuningCache) get(ctx context.Context, store Store, gameType string) (map[string]Tuning, error) {
	now := time.Now
	if tc.now != nil {
		now = tc.now
	}
	tc.mu.Lock()
	c, ok := tc.byGame[gameType]
	tc.mu.Unlock()
	if ok && now().Sub(c.at) < TuningRefresh {
		return c.tunings, nil
	}
	t, err := store.Tunings(ctx, gameType)
	if err != nil {
		if ok {
			return c.tunings, nil
		}
		return nil, err
	}
	tc.mu.Lock()
	if tc.byGame == nil {
		tc.byGame = map[string]cachedTunings{}
	}
	tc.byGame[gameType] = cachedTunings{at: now(), tunings: t}
	tc.mu.Unlock()
	return t, nil
}

// tunedModel is the model of context c given its game type's tunings: the ModelSet's, with
// the tuned parameters when there are some for that model.
func (s *Service) tunedModel(c Context, tunings map[string]Tuning) Model {
	m := s.models.For(c)
	t, ok := tunings[c.Key()]
	if !ok || !t.Report.Accepted {
		return m
	}
	if t.Model == m.Name() {
		return WithTuning(m, t.Params)
	}
	return m
}

// modelsOf returns the picker of each context's model for a game type, tuned.
func (s *Service) modelsOf(ctx context.Context, gameType string) (func(Context) Model, error) {
	t, err := s.tunings.get(ctx, s.store, fold(gameType))
	if err != nil {
		return nil, err
	}
	return func(c Context) Model { return s.tunedModel(c, t) }, nil
}

// RebuildSolved is Rebuild with every skill of the game type fitted to its whole history at
// once (Solve, with prior) instead of learnt result by result: the NS2 seed's full-history
// solve. The context's model still learns everything else (bias table, side offsets,
// commanders, the context-wide terms) and the results that come after; each skill and its
// uncertainty are then the solve's. Unlike Rebuild it holds a context's history in memory.
func (s *Service) RebuildSolved(ctx context.Context, gameType string, prior SolvePrior, progress func(Progress)) (RebuildReport, error) {
	if err := ValidateName(gameType); err != nil {
		return RebuildReport{}, apperr.Field("game_type", "%s", err)
	}
	s.tunings.forget(fold(gameType))
	pick, err := s.modelsOf(ctx, gameType)
	if err != nil {
		return RebuildReport{}, err
	}
	return s.store.Rebuild(ctx, gameType, func(policy *MutatorPolicy, from map[string]*State, history iter.Seq[Result]) (map[string]*State, error) {
		if from != nil { // the results recorded during the rebuild: learnt as they would be
			return replayStream(pick, policy, from, history)
		}
		byContext := map[string][]Result{}
		states, err := replayStream(pick, policy, nil, func(yield func(Result) bool) {
			for r := range history {
				if c, _, err := policy.Context(r.GameType, r.Mutators); err == nil {
					byContext[c.Key()] = append(byContext[c.Key()], r)
				}
				if !yield(r) {
					return
				}
			}
		})
		if err != nil {
			return nil, err
		}
		for key, st := range states {
			solved, _, err := Solve(byContext[key], st.Bias, prior)
			if err != nil {
				return nil, err
			}
			for p, r := range st.Ratings {
				if sv, ok := solved[p]; ok {
					r.Skill, r.Sigma = sv.Skill, sv.Sigma
					st.Ratings[p] = r
				}
			}
		}
		return states, nil
	}, progress)
}
