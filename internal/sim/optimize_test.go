package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// TestCompassSearchFindsKnownOptima runs the search on objectives whose minimum is known.
func TestCompassSearchFindsKnownOptima(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		f    func(x []float64) float64
		x0   []float64
		o    SearchOptions
		want []float64
		tol  float64
	}{
		{
			name: "quadratic inside the box, unequal scales",
			f: func(x []float64) float64 {
				return 3*sq(x[0]-0.3) + sq(x[1]-0.7) + sq((x[2]-12.5)/50) + (x[0]-0.3)*(x[1]-0.7)
			},
			x0: []float64{0.5, 0.5, 50},
			o: SearchOptions{Lo: []float64{0, 0, 0}, Hi: []float64{1, 1, 100}, Step: []float64{0.25, 0.25, 25},
				MinStep: []float64{1e-4, 1e-4, 1e-2}},
			want: []float64{0.3, 0.7, 12.5}, tol: 1e-2,
		},
		{
			name: "minimum outside the box: the nearest corner",
			f:    func(x []float64) float64 { return sq(x[0]-2) + sq(x[1]+1) },
			x0:   []float64{0.5, 0.5},
			o:    SearchOptions{Lo: []float64{0, 0}, Hi: []float64{1, 1}, Step: []float64{0.25, 0.25}, MinStep: []float64{1e-3, 1e-3}},
			want: []float64{1, 0}, tol: 0,
		},
		{
			// The queue's problem in miniature: quality improves with x1 (a slower widening),
			// the wait grows with it (10 x1 seconds), the budget is 5 s.
			name: "a wait budget as a penalty",
			f: func(x []float64) float64 {
				oneSided := 0.5 - 0.3*x[1] + sq(x[0]-0.4)
				return oneSided + 10*max(0, 10*x[1]/5-1)
			},
			x0:   []float64{1, 0},
			o:    SearchOptions{Lo: []float64{0, 0}, Hi: []float64{1, 1}, Step: []float64{0.25, 0.25}, MinStep: []float64{1e-3, 1e-3}},
			want: []float64{0.4, 0.5}, tol: 2e-3,
		},
		{
			name: "piecewise constant (a count, as a simulated share is)",
			f: func(x []float64) float64 {
				return math.Round(100*(sq(x[0]-0.62)+sq(x[1]-0.25))) / 100
			},
			x0:   []float64{0, 1},
			o:    SearchOptions{Lo: []float64{0, 0}, Hi: []float64{1, 1}, Step: []float64{0.25, 0.25}, MinStep: []float64{1e-3, 1e-3}},
			want: []float64{0.62, 0.25}, tol: 0.071, // every point within 0.0707 rounds to 0
		},
	} {
		for _, workers := range []int{1, 4} {
			tc.o.Workers = workers
			r, err := CompassSearch(context.Background(), tc.f, tc.x0, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			for i := range tc.want {
				if math.Abs(r.X[i]-tc.want[i]) > tc.tol {
					t.Errorf("%s (%d workers): found %v (f %v) after %d evaluations, want %v +- %v",
						tc.name, workers, r.X, r.F, r.Evals, tc.want, tc.tol)
					break
				}
			}
		}
	}
}

func sq(x float64) float64 { return x * x }

func TestCompassSearchIsDeterministicAndBounded(t *testing.T) {
	t.Parallel()
	f := func(x []float64) float64 { return math.Abs(x[0]-0.123) + math.Abs(x[1]-0.456) }
	o := SearchOptions{Lo: []float64{0, 0}, Hi: []float64{1, 1}, Step: []float64{0.5, 0.5}, MinStep: []float64{1e-6, 1e-6}, MaxEvals: 25}
	o.Workers = 1
	a, err := CompassSearch(context.Background(), f, []float64{0.9, 0.9}, o)
	if err != nil {
		t.Fatal(err)
	}
	o.Workers = 3
	b, err := CompassSearch(context.Background(), f, []float64{0.9, 0.9}, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("1 worker %+v, 3 workers %+v", a, b)
	}
	// MaxEvals stops the search after the poll that reaches it (at most 4 polls over).
	if a.Evals < 25 || a.Evals > 28 {
		t.Errorf("%d evaluations, want 25 to 28", a.Evals)
	}
}

// TestOptimizeImprovesOnTheStart runs the optimiser briefly on a small live queue: it
// searches the coefficients and the widening, keeps every evaluation, improves on its
// start, and prints a queue definition.
func TestOptimizeImprovesOnTheStart(t *testing.T) {
	t.Parallel()
	sc := smallScenario(400)
	base := sc.Configurations[1] // thesis default
	o, err := Optimize(context.Background(), &sc, OptimizeOptions{Base: base, WaitBudgetS: 8, MaxEvals: 40, Workers: 2}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"accuracy", "reaction_time", "awareness", "movement", "initial", "step"}; !reflect.DeepEqual(o.Parameters, want) {
		t.Errorf("parameters %v, want %v", o.Parameters, want)
	}
	if !(o.Best.Objective <= o.Start.Objective) || o.Start.Summary.Matches != 400 {
		t.Errorf("best %v, start %v", o.Best.Objective, o.Start.Objective)
	}
	if len(o.Evaluations) < 40 || o.Evaluations[0].Objective != o.Best.Objective {
		t.Errorf("%d evaluations, the first %v, best %v", len(o.Evaluations), o.Evaluations[0].Objective, o.Best.Objective)
	}
	t.Logf("start %.3f (one-sided %.3f, wait %.1f s), best %.3f (one-sided %.3f, wait %.1f s) after %d runs\n%s",
		o.Start.Objective, o.Start.Summary.OneSided, o.Start.Summary.WaitMedian,
		o.Best.Objective, o.Best.Summary.OneSided, o.Best.Summary.WaitMedian, len(o.Evaluations), QueueSnippet(&sc, o.Best.Configuration))

	// The snippet is a whole queue definition; the coefficients are for the tickets' ratings.
	dec := json.NewDecoder(bytes.NewReader(QueueSnippet(&sc, o.Best.Configuration)))
	dec.DisallowUnknownFields()
	var q struct {
		Context struct {
			GameType string `json:"game_type"`
		} `json:"context"`
		TeamSize     int        `json:"team_size"`
		Strategy     string     `json:"strategy"`
		Expansions   Expansions `json:"expansions"`
		TicketTTLS   int        `json:"ticket_ttl_s"`
		MaxPartySize int        `json:"max_party_size"`
		TickMS       int        `json:"tick_ms"`
	}
	if err := dec.Decode(&q); err != nil {
		t.Fatal(err)
	}
	best := o.Best.Configuration
	if q.Context.GameType == "" || q.TeamSize != 5 || q.Strategy != "rating_window" || q.TicketTTLS != 300 || q.MaxPartySize != 5 || q.TickMS != 1000 {
		t.Errorf("snippet %+v, configuration %+v", q, best)
	}
	steps := q.Expansions.Interval
	if len(steps) == 0 || len(steps) > maxSteps || steps[0] != (Step{AfterS: 0, Value: best.Widening.Initial}) {
		t.Fatalf("snippet steps %v for %+v", steps, *best.Widening)
	}
	if want := best.steps(); !reflect.DeepEqual(steps, want) {
		t.Errorf("snippet steps %v, the tick matcher ran %v", steps, want)
	}
	c := *best.Coefficients
	if r := TicketRatings(best); !strings.Contains(r, mustJSON(c)) ||
		!strings.Contains(r, "(1 - accuracy) x "+strconv.FormatFloat(c.Accuracy, 'g', -1, 64)+" ") {
		t.Errorf("the ticket ratings do not give the coefficients %+v:\n%s", c, r)
	}
}

func TestOptimizeNeedsSomethingToSearch(t *testing.T) {
	t.Parallel()
	sc := smallScenario(10)
	for _, base := range []Configuration{
		{Name: "learned thesis", Matcher: "pairing", Rating: "learned"},
		{Name: "no matchmaking", Matcher: "none"},
		{Name: "steps", Matcher: "pairing", Rating: "learned", Expansions: &Expansions{Interval: []Step{{AfterS: 0, Value: 25}}}},
		{Name: "tick steps", Matcher: "tick", Rating: "learned", Expansions: &Expansions{Interval: []Step{{AfterS: 0, Value: 25}}}},
		{Name: "tick thesis", Matcher: "tick", Rating: "learned"},
	} {
		if _, err := Optimize(context.Background(), &sc, OptimizeOptions{Base: base, WaitBudgetS: 10}, nil); err == nil {
			t.Errorf("%s: no error", base.Name)
		}
	}
	if _, err := Optimize(context.Background(), &sc, OptimizeOptions{Base: sc.Configurations[1]}, nil); err == nil {
		t.Error("no wait budget: no error")
	}
}
