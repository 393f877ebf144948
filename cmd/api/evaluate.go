package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/evaluate"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// evaluateCommand is `api evaluate`: replay a results file (or a simulated league) through the rating
// models, predicting each result before learning from it, and print their scores side by side.
func evaluateCommand(args []string, stdout, stderr io.Writer) error {
	opts, usage, err := parseEvaluateFlags(args, stderr)
	if err != nil {
		return err
	}
	return runEvaluate(opts, usage, stdout)
}

// evaluateOptions are the flags of `api evaluate`.
type evaluateOptions struct {
	data, format string
	burnin       float64
	models       string
	league       string
	seed         uint64
	export       string
	solve        int
	matches      int
	tune         bool
}

// parseEvaluateFlags reads the flags; usage prints them to stderr.
func parseEvaluateFlags(args []string, stderr io.Writer) (evaluateOptions, func(), error) {
	var o evaluateOptions
	fs := flag.NewFlagSet("api evaluate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.data, "data", "", "results file to replay")
	fs.StringVar(&o.format, "format", "", "format of -data: atp or results-jsonl (default: atp for a .csv file, else results-jsonl)")
	fs.Float64Var(&o.burnin, "burnin", 0.2, "share of the results learnt from before scoring starts")
	fs.StringVar(&o.models, "models", strings.Join(ratings.ModelNames(), ","), "comma-separated rating models to compare")
	fs.StringVar(&o.league, "league", "", "replay a simulated league instead of -data: "+strings.Join(league.Names(), ", ")+", or all of them")
	fs.Uint64Var(&o.seed, "seed", 1, "seed of the simulated league")
	fs.StringVar(&o.export, "export", "", "with -league: write the league's results to this file as results-jsonl, and evaluate nothing")
	fs.IntVar(&o.solve, "solve", 0, "add the row of the NS2 full-history MAP solve (Gamma prior), re-solved every N results (0: none)")
	fs.IntVar(&o.matches, "matches", 0, "with -league: simulate this many matches instead of the league's own number")
	fs.BoolVar(&o.tune, "tune", false, "add the row of ns2-kalman tuned to each context of the history (what `api tune` fits), and the fits")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: api evaluate -data FILE [-format atp|results-jsonl] [-burnin 0.2] [-models a,b]\n"+
			"       api evaluate -league NAME|all [-seed N] [-matches N] [-burnin 0.2] [-export FILE]\n"+
			"       add -tune for the row of ns2-kalman tuned to the history")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return o, fs.Usage, err
	}
	if fs.NArg() > 0 {
		return o, fs.Usage, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return o, fs.Usage, nil
}

// runEvaluate loads the history the options name and scores the models on it (or exports it).
func runEvaluate(o evaluateOptions, usage func(), stdout io.Writer) error {
	models, err := modelsByName(o.models)
	if err != nil {
		return err
	}
	if o.league == "all" && o.data == "" {
		return evaluateEveryLeague(o, usage, stdout)
	}
	history, truth, err := o.history(usage)
	if err != nil {
		return err
	}
	if o.export != "" {
		return writeResults(o.export, history)
	}
	return scoreHistory(history, truth, models, o, stdout)
}

func modelsByName(list string) ([]ratings.Model, error) {
	var ms []ratings.Model
	for name := range strings.SplitSeq(list, ",") {
		m, err := ratings.ModelByName(strings.TrimSpace(name))
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// evaluateEveryLeague runs the evaluation on each simulated league in turn, each under a
// heading, with models made afresh for each.
func evaluateEveryLeague(o evaluateOptions, usage func(), stdout io.Writer) error {
	if o.export != "" {
		return errors.New("-export needs one league")
	}
	for i, name := range league.Names() {
		if i > 0 {
			fmt.Fprintln(stdout)
		}
		fmt.Fprintf(stdout, "league %s, seed %d\n", name, o.seed)
		one := o
		one.league = name
		if err := runEvaluate(one, usage, stdout); err != nil {
			return err
		}
	}
	return nil
}

// history is the results to replay: the league's simulated matches (with their true win
// probabilities, for a "truth" row) or the file's results (with no truth).
func (o evaluateOptions) history(usage func()) ([]ratings.Result, []float64, error) {
	switch {
	case o.league != "" && o.data != "":
		return nil, nil, errors.New("give -data or -league, not both")
	case o.league != "":
		return o.leagueHistory()
	case o.data != "":
		if o.export != "" {
			return nil, nil, errors.New("-export needs -league")
		}
		history, err := readHistory(o.data, o.format)
		return history, nil, err
	default:
		usage()
		return nil, nil, errors.New("evaluate needs -data FILE or -league NAME")
	}
}

func (o evaluateOptions) leagueHistory() ([]ratings.Result, []float64, error) {
	cfg, err := league.ByName(o.league, o.seed)
	if err != nil {
		return nil, nil, err
	}
	if o.matches > 0 {
		cfg.Matches = o.matches
	}
	var history []ratings.Result
	var truth []float64
	for _, m := range league.Simulate(cfg) {
		history = append(history, m.Result)
		truth = append(truth, m.PTrue)
	}
	return history, truth, nil
}

// readHistory reads a results file; with no format named, a .csv file is ATP's and
// anything else results-jsonl.
func readHistory(path, format string) ([]ratings.Result, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if format == "" {
		format = "results-jsonl"
		if strings.EqualFold(filepath.Ext(path), ".csv") {
			format = "atp"
		}
	}
	return evaluate.Read(f, format)
}

// scoreHistory replays the history through every model (and the tuned and solved rows the
// options ask for) and prints the scores, then the fits of the tuning.
func scoreHistory(history []ratings.Result, truth []float64, models []ratings.Model, o evaluateOptions, stdout io.Writer) error {
	rp, err := evaluate.Prepare(history, o.burnin)
	if err != nil {
		return err
	}
	var fits []evaluate.ContextTuning
	if o.tune {
		tuned, f, err := tuneOnHistory(rp, stdout)
		if err != nil {
			return err
		}
		fits = f
		models = append(models, tuned)
	}
	reports, err := rp.RunAll(models)
	if err != nil {
		return err
	}
	if o.solve > 0 {
		r, err := solveHistory(rp, o.solve, stdout)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	// truth is indexed like the history and the replay's results like its valid ones: they
	// line up only when nothing was skipped.
	if truth != nil && rp.Skipped == 0 {
		reports = append(reports, truthReport(rp, truth))
	}
	fmt.Fprintf(stdout, "%d results replayed (%d skipped as invalid or repeated), the first %d learnt from only\n",
		rp.Len(), rp.Skipped, rp.Burnin)
	evaluate.Print(stdout, reports)
	for _, f := range fits {
		printTuning(stdout, []ratings.ContextTuning{{Context: mustContextKey(f.Context), Model: "ns2-kalman", Report: f.Report}})
	}
	return nil
}

func tuneOnHistory(rp *evaluate.Replay, stdout io.Writer) (ratings.Model, []evaluate.ContextTuning, error) {
	start := time.Now()
	tuned, fits, err := rp.Tune(ratings.DefaultKalman())
	if err != nil {
		return nil, nil, err
	}
	fmt.Fprintf(stdout, "tuned ns2-kalman to %d results in %s\n", rp.Len(), time.Since(start).Round(time.Millisecond))
	return tuned, fits, nil
}

func solveHistory(rp *evaluate.Replay, every int, stdout io.Writer) (evaluate.Report, error) {
	start := time.Now()
	r, err := rp.RunSolve(every, ratings.DefaultSolvePrior)
	if err != nil {
		return evaluate.Report{}, err
	}
	fmt.Fprintf(stdout, "solved the history every %d results in %s\n", every, time.Since(start).Round(time.Millisecond))
	return r, nil
}

// truthReport scores the league's true probabilities on the results the models were scored on.
func truthReport(rp *evaluate.Replay, truth []float64) evaluate.Report {
	var s evaluate.Score
	for i, r := range rp.Results() {
		if rp.Scored(i) {
			s.Add(truth[i], r.Score())
		}
	}
	return evaluate.Report{Model: "(truth)", Metrics: s.Metrics()}
}

// mustContextKey reads a context key the replay made.
func mustContextKey(key string) ratings.Context {
	c, err := ratings.ParseContextKey(key)
	if err != nil {
		return ratings.Context{GameType: key}
	}
	return c
}

func writeResults(path string, results []ratings.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := evaluate.WriteJSONL(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
