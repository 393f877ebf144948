package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// SearchOptions configure CompassSearch.
type SearchOptions struct {
	Lo, Hi   []float64 // bounds of each coordinate
	Step     []float64 // initial step of each coordinate
	MinStep  []float64 // a coordinate is no longer polled once its step is below this
	MaxEvals int       // stop after this many evaluations (0: no limit)
	Workers  int       // evaluations run at once
}

// SearchResult is where CompassSearch stopped.
type SearchResult struct {
	X     []float64
	F     float64
	Evals int
}

// CompassSearch minimises f within the box [Lo, Hi] by compass (coordinate) search with a
// complete poll: from the current point it evaluates one step up and one step down along
// every coordinate (clamped to the box), moves to the best of them if it improves on the
// current value, and otherwise halves every step; it stops when every step is below its
// MinStep or after MaxEvals evaluations. It needs no derivative and no smoothness: it only
// compares values, which suits an objective measured by simulation with common random
// numbers (piecewise constant, flat in places). See Kolda, Lewis and Torczon, "Optimization
// by direct search" (SIAM Review, 2003), for its convergence. The polls of one iteration run
// concurrently (f must be safe for that); ties go to the earlier poll, so the search is
// deterministic. A point is never evaluated twice.
func CompassSearch(ctx context.Context, f func(x []float64) float64, x0 []float64, o SearchOptions) (SearchResult, error) {
	n := len(x0)
	if len(o.Lo) != n || len(o.Hi) != n || len(o.Step) != n || len(o.MinStep) != n {
		return SearchResult{}, errors.New("compass search: bounds and steps must have one entry per coordinate")
	}
	clamp := func(i int, v float64) float64 { return min(max(v, o.Lo[i]), o.Hi[i]) }
	x := make([]float64, n)
	for i := range x {
		x[i] = clamp(i, x0[i])
	}
	seen := map[string]float64{}
	evals := 0
	eval := func(points [][]float64) []float64 {
		out := make([]float64, len(points))
		var todo []int
		for k, p := range points {
			if v, ok := seen[pointKey(p)]; ok {
				out[k] = v
			} else {
				todo = append(todo, k)
			}
		}
		sem := make(chan struct{}, max(o.Workers, 1))
		var wg sync.WaitGroup
		for _, k := range todo {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				out[k] = f(points[k])
			})
		}
		wg.Wait()
		for _, k := range todo {
			seen[pointKey(points[k])] = out[k]
		}
		evals += len(todo)
		return out
	}
	fx := eval([][]float64{x})[0]
	step := append([]float64(nil), o.Step...)
	for o.MaxEvals == 0 || evals < o.MaxEvals {
		if err := ctx.Err(); err != nil {
			return SearchResult{X: x, F: fx, Evals: evals}, err
		}
		var polls [][]float64
		for i := range n {
			if step[i] < o.MinStep[i] {
				continue
			}
			for _, dir := range []float64{1, -1} {
				y := append([]float64(nil), x...)
				if y[i] = clamp(i, x[i]+dir*step[i]); y[i] != x[i] {
					polls = append(polls, y)
				}
			}
		}
		if len(polls) == 0 {
			break
		}
		fs := eval(polls)
		best := -1
		for k, v := range fs {
			if v < fx && (best < 0 || v < fs[best]) {
				best = k
			}
		}
		if best >= 0 {
			x, fx = polls[best], fs[best]
			continue
		}
		for i := range step {
			step[i] /= 2
		}
	}
	return SearchResult{X: x, F: fx, Evals: evals}, nil
}

func pointKey(x []float64) string {
	var b []byte
	for _, v := range x {
		b = strconv.AppendFloat(b, v, 'g', -1, 64)
		b = append(b, ',')
	}
	return string(b)
}

// OptimizeOptions configure Optimize.
type OptimizeOptions struct {
	// Base is the configuration the search starts from; it keeps everything the search
	// does not change (matcher, strategy, rating, time to live, EverySeconds).
	Base Configuration
	// WaitBudgetS is the median wait (seconds) the result must stay within.
	WaitBudgetS float64
	// Penalty is what a median wait 100% over the budget costs, in share of one-sided
	// matches (default 10: 1% over the budget costs as much as 10% more one-sided matches,
	// so the budget acts as a constraint that the search can still see across).
	Penalty  float64
	MaxEvals int
	Workers  int
}

// Evaluation is one configuration the optimiser ran.
type Evaluation struct {
	Configuration Configuration
	Summary       Summary
	Objective     float64
}

// SearchedName names the optimiser's best configuration.
const SearchedName = "found by search"

// Optimum is the optimiser's answer.
type Optimum struct {
	Best        Evaluation // named SearchedName
	Start       Evaluation
	Evaluations []Evaluation // best first (by objective, then name)
	Parameters  []string     // the coordinates searched
	Base        string       // the configuration the search started from
	WaitBudgetS float64
}

// Optimize searches the coefficients of eq. 6.5 (for the performance rating) and the
// expansion schedule (for a widening on the clock) of o.Base for the fewest one-sided
// matches with a median wait within o.WaitBudgetS. The schedule is searched as the steps of
// a queue definition: an initial interval (Widening.Initial), grown by Widening.Step at
// every step, one step every EverySeconds (the base's, not searched), up to 32 steps
// (Expansion.Schedule). It minimises
//
//	one-sided share + Penalty x max(0, median wait / budget - 1)
//
// by CompassSearch from o.Base's values: coefficients in [0,1] (first steps 0.25, down to
// 0.01), Initial in [0, 1000] and Step in [1, 1000] (first steps half the start value, at
// least 10, down to 1). Every candidate runs the scenario with the same seed: common random
// numbers, so two candidates differ only by what the queue does with the same players and
// arrivals.
func Optimize(ctx context.Context, sc *Scenario, o OptimizeOptions, progress func(evals int)) (*Optimum, error) {
	if !(o.WaitBudgetS > 0) {
		return nil, errors.New("optimize: the wait budget must be positive")
	}
	if o.Penalty == 0 {
		o.Penalty = 10
	}
	if err := o.Base.validate(sc); err != nil {
		return nil, err
	}
	if o.Base.Matcher == "none" {
		return nil, fmt.Errorf("optimize: configuration %q does no matchmaking: nothing to search", o.Base.Name)
	}
	space, err := newSearchSpace(o.Base)
	if err != nil {
		return nil, err
	}
	op := &optimizer{ctx: ctx, sc: sc, o: o, space: space, progress: progress}
	r, err := CompassSearch(ctx, op.objective, space.x0, SearchOptions{Lo: space.lo, Hi: space.hi,
		Step: space.step, MinStep: space.minStep, MaxEvals: o.MaxEvals, Workers: o.Workers})
	if err := errors.Join(err, op.runErr); err != nil {
		return nil, err
	}
	return op.optimum(r.X), nil
}

// searchSpace is what Optimize searches around its base configuration: eq. 6.5's four
// coefficients unless the rating is learned, then the widening's Initial and Step unless
// the base lists its expansions; each coordinate with its bounds and its first and last step.
type searchSpace struct {
	base                      Configuration
	names                     []string
	x0, lo, hi, step, minStep []float64
}

func newSearchSpace(base Configuration) (*searchSpace, error) {
	sp := &searchSpace{base: base}
	if base.Rating != "learned" {
		c := Coefficients(base.coefficients())
		sp.names = append(sp.names, "accuracy", "reaction_time", "awareness", "movement")
		sp.x0 = append(sp.x0, c.Accuracy, c.ReactionTime, c.Awareness, c.Movement)
		for range 4 {
			sp.lo, sp.hi = append(sp.lo, 0), append(sp.hi, 1)
			sp.step, sp.minStep = append(sp.step, 0.25), append(sp.minStep, 0.01)
		}
	}
	if base.Expansions == nil && base.expansion().Widening.EverySeconds > 0 {
		w := base.expansion().Widening
		sp.names = append(sp.names, "initial", "step")
		sp.x0 = append(sp.x0, w.Initial, w.Step)
		sp.lo, sp.hi = append(sp.lo, 0, 1), append(sp.hi, 1000, 1000)
		sp.step = append(sp.step, max(w.Initial/2, 10), max(w.Step/2, 10))
		sp.minStep = append(sp.minStep, 1, 1)
	}
	if len(sp.names) == 0 {
		return nil, fmt.Errorf("optimize: configuration %q has nothing to search (it needs the performance rating, or a widening with every_s > 0 in place of explicit expansions)", base.Name)
	}
	return sp, nil
}

// at is the base configuration moved to the point x, named after the base and the point
// (so the name finds a point's evaluation).
func (sp *searchSpace) at(x []float64) Configuration {
	cf := sp.base
	k := 0
	if sp.base.Rating != "learned" {
		cf.Coefficients = &Coefficients{Accuracy: x[0], ReactionTime: x[1], Awareness: x[2], Movement: x[3]}
		k = 4
	}
	if k < len(x) {
		w := sp.base.expansion().Widening
		w.Initial, w.Step = x[k], x[k+1]
		if w.Max > 0 && w.Max < w.Initial {
			w.Max = w.Initial
		}
		cf.Widening = &w
	}
	parts := make([]string, len(x))
	for i, v := range x {
		parts[i] = sp.names[i] + "=" + strconv.FormatFloat(v, 'g', -1, 64)
	}
	cf.Name = sp.base.Name + " [" + strings.Join(parts, " ") + "]"
	return cf
}

// optimizer runs the scenario at the points the search asks for and keeps every
// evaluation; the search's polls call objective concurrently.
type optimizer struct {
	ctx      context.Context
	sc       *Scenario
	o        OptimizeOptions
	space    *searchSpace
	progress func(evals int)

	mu     sync.Mutex
	evals  []Evaluation
	runErr error // the first run that failed
}

// objective is the one-sided share plus the penalty of a median wait over the budget; a
// run that fails is infinitely bad (and its error ends the search's answer).
func (op *optimizer) objective(x []float64) float64 {
	cf := op.space.at(x)
	res, err := Run(op.ctx, op.sc, cf, nil)
	op.mu.Lock()
	defer op.mu.Unlock()
	if err != nil {
		op.runErr = cmpErr(op.runErr, err)
		return math.Inf(1)
	}
	s := Summarize(res)
	e := Evaluation{Configuration: cf, Summary: s, Objective: s.OneSided + op.o.Penalty*max(0, s.WaitMedian/op.o.WaitBudgetS-1)}
	op.evals = append(op.evals, e)
	if op.progress != nil {
		op.progress(len(op.evals))
	}
	return e.Objective
}

// optimum is the answer once the search stopped at best: the evaluations of the start and
// of best, found by name, and every evaluation in order.
func (op *optimizer) optimum(best []float64) *Optimum {
	sp := op.space
	opt := &Optimum{Parameters: sp.names, Base: sp.base.Name, WaitBudgetS: op.o.WaitBudgetS}
	byName := map[string]Evaluation{}
	for _, e := range op.evals {
		byName[e.Configuration.Name] = e
	}
	opt.Start, opt.Best = byName[sp.at(clampAll(sp.x0, sp.lo, sp.hi)).Name], byName[sp.at(best).Name]
	opt.Best.Configuration.Name = SearchedName
	opt.Evaluations = sortedEvaluations(op.evals)
	return opt
}

// cmpErr keeps the first error.
func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}

func clampAll(x, lo, hi []float64) []float64 {
	out := make([]float64, len(x))
	for i := range x {
		out[i] = min(max(x[i], lo[i]), hi[i])
	}
	return out
}

// sortedEvaluations orders evaluations by objective, then name: a listing that does not
// depend on which of a poll's runs finished first.
func sortedEvaluations(evals []Evaluation) []Evaluation {
	out := slices.Clone(evals)
	slices.SortFunc(out, func(a, b Evaluation) int {
		return cmp.Or(cmp.Compare(a.Objective, b.Objective), strings.Compare(a.Configuration.Name, b.Configuration.Name))
	})
	return out
}

// QueueSnippet is a configuration of a scenario as a queue definition, the body of
// PUT /v1/queues/{name}: its team size, strategy, expansions.interval (the steps the tick
// matcher runs, Configuration.steps), ticket_ttl_s (in whole seconds; a time to live of 0,
// never, or of more than a day becomes a day, the longest a queue allows), the largest party
// the arrivals make as max_party_size, and the scenario's tick as tick_ms; with rules, the
// scenario's attributes (type and max_items) and the rules; with a composition, the
// scenario's roles and the composition (every team's). Its context is "sim": the
// studio puts its game's. A queue has no coefficients: it
// matches the ratings its tickets carry, and TicketRatings says how to compute them.
func QueueSnippet(sc *Scenario, cf Configuration) []byte {
	ttl := int(math.Ceil(cf.TicketTTLS))
	if ttl <= 0 || ttl > maxTicketTTLS {
		ttl = maxTicketTTLS
	}
	var b strings.Builder
	fmt.Fprintf(&b, "{\n  \"context\": {\"game_type\": \"sim\"},\n  \"team_size\": %d,\n  \"strategy\": %s,\n",
		sc.TeamSize, mustJSON(cf.strategy()))
	b.WriteString("  \"expansions\": {\"interval\": [")
	for i, st := range cf.steps() {
		sep := ", "
		switch {
		case i == 0:
			sep = "\n    "
		case i%4 == 0:
			sep = ",\n    "
		}
		b.WriteString(sep + mustJSON(st))
	}
	b.WriteString("\n  ]},\n")
	if len(cf.Rules) > 0 {
		// Every attribute the tickets carry is declared (a queue refuses an undeclared one),
		// and the rules as the configuration gives them.
		type decl struct {
			Type     string `json:"type"`
			MaxItems int    `json:"max_items,omitempty"`
		}
		decls := map[string]decl{}
		for name, d := range sc.attributeDecls() {
			decls[name] = decl{d.Type, d.MaxItems}
		}
		fmt.Fprintf(&b, "  \"attributes\": %s,\n  \"rules\": [", mustJSON(decls))
		for i, r := range cf.Rules {
			sep := ",\n    "
			if i == 0 {
				sep = "\n    "
			}
			b.WriteString(sep + mustJSON(r))
		}
		b.WriteString("\n  ],\n")
	}
	if roles := cf.queueRoles(sc); len(roles) > 0 {
		// Two teams of team_size, each with the composition, over the scenario's roles.
		fmt.Fprintf(&b, "  \"roles\": %s,\n  \"composition\": %s,\n", mustJSON(roles), mustJSON(cf.Composition))
	}
	fmt.Fprintf(&b, "  \"ticket_ttl_s\": %d,\n  \"max_party_size\": %d,\n  \"tick_ms\": %d\n}\n",
		ttl, cf.arrivals(sc).maxPartySize(), int(math.Round(1000*sc.TickS)))
	return []byte(b.String())
}

// TicketRatings says, for a queue running the configuration, what rating each player of a
// ticket carries (players[].rating of POST /v1/queues/{name}/tickets): eq. 6.5 on the
// player's stats with the configuration's coefficients, or, for the learned rating, none, so
// that the queue takes the player's stored rating in its context.
func TicketRatings(cf Configuration) string {
	if cf.Rating == "learned" {
		return "Tickets carry no \"rating\": the queue takes each player's stored rating in its context,\n" +
			"learned from the results posted to /v1/results (the simulator's learned rating is that model's).\n"
	}
	c := Coefficients(cf.coefficients())
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	return fmt.Sprintf("A queue has no coefficients: it matches the \"rating\" each ticket's players carry, and its\n"+
		"interval is in the same units. Send every player's rating as eq. 6.5 on his stats (each in [0,1])\n"+
		"with these coefficients, %s:\n\n"+
		"  rating = 1000 x ((1 - accuracy) x %s + (1 - reaction_time) x %s + awareness x %s + movement x %s)\n\n"+
		"(POST /v1/matchmake computes the same from \"stats\" and \"coefficients\"). A player sent without a\n"+
		"rating gets his stored one, or 1000, on another scale: rate every player.\n",
		mustJSON(c), num(c.Accuracy), num(c.ReactionTime), num(c.Awareness), num(c.Movement))
}

// mustJSON is a plain value's compact JSON, with a space after each colon and comma.
func mustJSON(v any) string {
	raw, err := json.Marshal(v)
	if err != nil { // plain data: cannot fail
		panic(err)
	}
	return strings.NewReplacer(`":`, `": `, `,"`, `, "`).Replace(string(raw))
}

// point lists the searched parameters of a configuration, formatted, in Parameters order.
func (o *Optimum) point(cf Configuration) []string {
	var out []string
	for _, name := range o.Parameters {
		var v float64
		switch name {
		case "accuracy":
			v = cf.Coefficients.Accuracy
		case "reaction_time":
			v = cf.Coefficients.ReactionTime
		case "awareness":
			v = cf.Coefficients.Awareness
		case "movement":
			v = cf.Coefficients.Movement
		case "initial":
			v = cf.Widening.Initial
		case "step":
			v = cf.Widening.Step
		}
		out = append(out, strconv.FormatFloat(v, 'g', -1, 64))
	}
	return out
}
