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
	fs := flag.NewFlagSet("api evaluate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	data := fs.String("data", "", "results file to replay")
	format := fs.String("format", "", "format of -data: atp or results-jsonl (default: atp for a .csv file, else results-jsonl)")
	burnin := fs.Float64("burnin", 0.2, "share of the results learnt from before scoring starts")
	models := fs.String("models", strings.Join(ratings.ModelNames(), ","), "comma-separated rating models to compare")
	leagueName := fs.String("league", "", "replay a simulated league instead of -data: "+strings.Join(league.Names(), ", ")+", or all of them")
	seed := fs.Uint64("seed", 1, "seed of the simulated league")
	export := fs.String("export", "", "with -league: write the league's results to this file as results-jsonl, and evaluate nothing")
	solve := fs.Int("solve", 0, "add the row of the NS2 full-history MAP solve (Gamma prior), re-solved every N results (0: none)")
	matches := fs.Int("matches", 0, "with -league: simulate this many matches instead of the league's own number")
	tune := fs.Bool("tune", false, "add the row of ns2-kalman tuned to each context of the history (what `api tune` fits), and the fits")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: api evaluate -data FILE [-format atp|results-jsonl] [-burnin 0.2] [-models a,b]\n"+
			"       api evaluate -league NAME|all [-seed N] [-matches N] [-burnin 0.2] [-export FILE]\n"+
			"       add -tune for the row of ns2-kalman tuned to the history")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	var ms []ratings.Model
	for name := range strings.SplitSeq(*models, ",") {
		m, err := ratings.ModelByName(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		ms = append(ms, m)
	}

	var history []ratings.Result
	var truth []float64 // the league's true probabilities, for a "truth" row
	switch {
	case *leagueName != "" && *data != "":
		return errors.New("give -data or -league, not both")
	case *leagueName == "all":
		if *export != "" {
			return errors.New("-export needs one league")
		}
		for i, name := range league.Names() {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			fmt.Fprintf(stdout, "league %s, seed %d\n", name, *seed)
			args := []string{"-league", name, "-seed", fmt.Sprint(*seed), "-burnin", fmt.Sprint(*burnin), "-models", *models,
				"-matches", fmt.Sprint(*matches), fmt.Sprintf("-tune=%v", *tune), "-solve", fmt.Sprint(*solve)}
			if err := evaluateCommand(args, stdout, stderr); err != nil {
				return err
			}
		}
		return nil
	case *leagueName != "":
		cfg, err := league.ByName(*leagueName, *seed)
		if err != nil {
			return err
		}
		if *matches > 0 {
			cfg.Matches = *matches
		}
		for _, m := range league.Simulate(cfg) {
			history = append(history, m.Result)
			truth = append(truth, m.PTrue)
		}
		if *export != "" {
			return writeResults(*export, history)
		}
	case *data != "":
		if *export != "" {
			return errors.New("-export needs -league")
		}
		f, err := os.Open(*data)
		if err != nil {
			return err
		}
		defer f.Close()
		if *format == "" {
			*format = "results-jsonl"
			if strings.EqualFold(filepath.Ext(*data), ".csv") {
				*format = "atp"
			}
		}
		if history, err = evaluate.Read(f, *format); err != nil {
			return err
		}
	default:
		fs.Usage()
		return errors.New("evaluate needs -data FILE or -league NAME")
	}

	rp, err := evaluate.Prepare(history, *burnin)
	if err != nil {
		return err
	}
	var fits []evaluate.ContextTuning
	if *tune {
		start := time.Now()
		tuned, f, err := rp.Tune(ratings.DefaultKalman())
		if err != nil {
			return err
		}
		fits = f
		fmt.Fprintf(stdout, "tuned ns2-kalman to %d results in %s\n", rp.Len(), time.Since(start).Round(time.Millisecond))
		ms = append(ms, tuned)
	}
	reports, err := rp.RunAll(ms)
	if err != nil {
		return err
	}
	if *solve > 0 {
		start := time.Now()
		r, err := rp.RunSolve(*solve, ratings.DefaultSolvePrior)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "solved the history every %d results in %s\n", *solve, time.Since(start).Round(time.Millisecond))
		reports = append(reports, r)
	}
	if truth != nil && rp.Skipped == 0 {
		var s evaluate.Score
		for i, r := range rp.Results() {
			if rp.Scored(i) {
				s.Add(truth[i], r.Score())
			}
		}
		reports = append(reports, evaluate.Report{Model: "(truth)", Metrics: s.Metrics()})
	}
	fmt.Fprintf(stdout, "%d results replayed (%d skipped as invalid or repeated), the first %d learnt from only\n",
		rp.Len(), rp.Skipped, rp.Burnin)
	evaluate.Print(stdout, reports)
	for _, f := range fits {
		printTuning(stdout, []ratings.ContextTuning{{Context: mustContextKey(f.Context), Model: "ns2-kalman", Report: f.Report}})
	}
	return nil
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
