package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/sim"
)

// simulate is `api simulate`: the simulator (internal/sim) on a built-in preset or a
// scenario file. The report goes to stdout and depends only on the scenario and the seed;
// progress and timings go to stderr; -out adds CSVs and the picture.
func simulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	o, err := parseSimulateFlags(args, stderr)
	if err != nil {
		return err
	}
	sc, source, err := o.scenario()
	if err != nil {
		return err
	}
	if o.printConfig {
		_, err := stdout.Write(sc.JSON())
		return err
	}
	bar := newProgressBar(stdout, stderr)
	var opt *sim.Optimum
	if o.optimize {
		if opt, err = optimiseScenario(ctx, sc, o, bar, stderr); err != nil {
			return err
		}
		sc.Configurations = append(sc.Configurations, opt.Best.Configuration)
	}
	c, err := compareConfigurations(ctx, &sc, o.workers, bar, stderr)
	if err != nil {
		return err
	}
	var report bytes.Buffer
	if err := writeSimulationReport(&report, source, &sc, c, opt); err != nil {
		return err
	}
	if _, err := stdout.Write(report.Bytes()); err != nil {
		return err
	}
	if o.out != "" {
		return writeSimulationFiles(o.out, c, opt, stderr)
	}
	return nil
}

// simulateOptions are the flags of `api simulate`; set names the flags given, which
// override the scenario's own values.
type simulateOptions struct {
	preset, configPath string
	seed               uint64
	matches            int
	model              string
	out                string
	optimize           bool
	budget             time.Duration
	from               string
	maxEvals           int
	optMatches         int
	workers            int
	printConfig        bool
	set                map[string]bool
}

func parseSimulateFlags(args []string, stderr io.Writer) (simulateOptions, error) {
	var o simulateOptions
	fs := flag.NewFlagSet("api simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.preset, "preset", "thesis", "built-in scenario: thesis (the thesis's Tables 8.3 and 8.4), live (a queue all day), rules (the live queue with and without mode and map rules and a 1 tank / 2 healers / 2 dps role queue), ready (the live queue with and without a ready check that players decline) or parties (the live queue with solo tickets only and with parties)")
	fs.StringVar(&o.configPath, "config", "", "scenario JSON file (start from -print-config); replaces -preset")
	fs.Uint64Var(&o.seed, "seed", 0, "random seed: the same seed gives the same report (default: the scenario's)")
	fs.IntVar(&o.matches, "matches", 0, "matches per configuration (default: the scenario's)")
	fs.StringVar(&o.model, "model", "", "rating model of the learned-rating configurations: "+strings.Join(ratings.ModelNames(), ", ")+
		" (default: the scenario's; the presets' is the service's default, "+ratings.DefaultModel().Name()+")")
	fs.StringVar(&o.out, "out", "", "directory for report.csv, timeline.csv, sweep.csv, optimise.csv and simulation.svg/.png")
	fs.BoolVar(&o.optimize, "optimize", false, "search eq. 6.5's coefficients and the expansion schedule for the fewest one-sided matches within -wait-budget")
	fs.DurationVar(&o.budget, "wait-budget", 10*time.Second, "the median wait the optimiser must stay within")
	fs.StringVar(&o.from, "optimize-from", "", "the configuration the search starts from (default: the first with the performance rating on the tick matcher, else on the pairing)")
	fs.IntVar(&o.maxEvals, "max-evals", 200, "the optimiser's limit of runs")
	fs.IntVar(&o.optMatches, "optimize-matches", 0, "matches per optimiser run (default: -matches)")
	fs.IntVar(&o.workers, "workers", runtime.GOMAXPROCS(0), "runs at once")
	fs.BoolVar(&o.printConfig, "print-config", false, "print the scenario as JSON and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("simulate: unexpected arguments %q", fs.Args())
	}
	o.set = make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	return o, nil
}

// scenario loads the scenario the options name, applies the flags that override it and
// validates the result.
func (o simulateOptions) scenario() (sim.Scenario, string, error) {
	sc, source, err := loadScenario(o.configPath, o.preset)
	if err != nil {
		return sc, source, err
	}
	if o.set["seed"] {
		sc.Seed = o.seed
	}
	if o.set["matches"] {
		sc.Matches = o.matches
	}
	if o.set["model"] {
		sc.RatingModel = o.model
	}
	if _, err := ratings.ModelByName(sc.RatingModel); o.model != "" && err != nil {
		return sc, source, fmt.Errorf("simulate: -model %q: not one of the service's rating models (%s)", o.model, strings.Join(ratings.ModelNames(), ", "))
	}
	if err := sc.Validate(); err != nil {
		return sc, source, fmt.Errorf("simulate: %w", err)
	}
	return sc, source, nil
}

// optimiseScenario runs the optimiser from the configuration -optimize-from names (on
// -optimize-matches matches a run, when given) and reports its runs on stderr.
func optimiseScenario(ctx context.Context, sc sim.Scenario, o simulateOptions, bar *progressBar, stderr io.Writer) (*sim.Optimum, error) {
	base, err := optimiseFrom(sc, o.from)
	if err != nil {
		return nil, err
	}
	if o.optMatches > 0 {
		sc.Matches = o.optMatches
	}
	start := time.Now()
	bar.label = "optimise"
	opt, err := sim.Optimize(ctx, &sc, sim.OptimizeOptions{Base: base, WaitBudgetS: o.budget.Seconds(),
		MaxEvals: o.maxEvals, Workers: o.workers}, func(n int) { bar.update(n, o.maxEvals) })
	bar.done()
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	fmt.Fprintf(stderr, "optimiser: %d runs of %d matches in %s\n", len(opt.Evaluations), sc.Matches, time.Since(start).Round(time.Millisecond))
	return opt, nil
}

// compareConfigurations runs every configuration of the scenario and reports the runs on stderr.
func compareConfigurations(ctx context.Context, sc *sim.Scenario, workers int, bar *progressBar, stderr io.Writer) (*sim.Comparison, error) {
	start := time.Now()
	bar.label = "simulate"
	c, err := sim.Compare(ctx, sc, workers, bar.update)
	bar.done()
	if err != nil {
		return nil, fmt.Errorf("simulate: %w", err)
	}
	runs := len(sc.Configurations) + len(c.Sweep) - countFactorOne(c.Sweep)
	fmt.Fprintf(stderr, "simulated %d runs of %d matches in %s (%d workers, GOMAXPROCS %d)\n",
		runs, sc.Matches, time.Since(start).Round(time.Millisecond), workers, runtime.GOMAXPROCS(0))
	return c, nil
}

// writeSimulationReport writes the report: the scenario, the table of configurations, why
// tickets waited (when rules ran), the sweep, and the optimiser's best as a queue definition.
func writeSimulationReport(report *bytes.Buffer, source string, sc *sim.Scenario, c *sim.Comparison, opt *sim.Optimum) error {
	fmt.Fprintf(report, "scenario %s, seed %d: %d players, %d matches per configuration, %dv%d, %d rounds a match\n\n",
		source, sc.Seed, sc.Population.Players, sc.Matches, sc.TeamSize, sc.TeamSize, sc.Rounds)
	if name, ok := sc.LearnedModel(); ok {
		fmt.Fprintf(report, "learned rating: the %s model\n\n", name)
	}
	if err := sim.WriteTable(report, c.Summaries); err != nil {
		return err
	}
	if slices.ContainsFunc(c.Summaries, func(s sim.Summary) bool { return s.Rules || s.Avoiders > 0 }) {
		report.WriteString("\nwhy tickets waited: in every pass, each ticket that anchored a search and found no match counts for the rule that\nstopped it (the leader's waiting_on); the shares over the run:\n\n")
		if err := sim.WriteHeld(report, c.Summaries); err != nil {
			return err
		}
	}
	if slices.ContainsFunc(c.Summaries, func(s sim.Summary) bool { return s.Avoiders > 0 }) {
		report.WriteString("\navoid lists (the scenario's avoid):\n\n")
		if err := sim.WriteAvoid(report, c.Summaries); err != nil {
			return err
		}
	}
	if len(c.Sweep) > 0 {
		report.WriteString("\nthe widening reached later (the wait-versus-one-sided trade-off):\n\n")
		if err := sim.WriteSweepTable(report, c.Sweep); err != nil {
			return err
		}
	}
	if opt != nil {
		writeOptimum(report, sc, opt)
	}
	return nil
}

// writeOptimum writes the optimiser's best against its start, as a queue definition and the
// ticket ratings it needs.
func writeOptimum(report *bytes.Buffer, sc *sim.Scenario, opt *sim.Optimum) {
	s := opt.Best.Summary
	fmt.Fprintf(report, "\noptimised from %q (%d runs of %d matches, median wait budget %g s): one-sided %.1f%%, median wait %.1f s (start: %.1f%%, %.1f s)\n",
		opt.Base, len(opt.Evaluations), opt.Start.Summary.Matches, opt.WaitBudgetS,
		100*s.OneSided, s.WaitMedian, 100*opt.Start.Summary.OneSided, opt.Start.Summary.WaitMedian)
	report.WriteString("as a queue definition (the body of PUT /v1/queues/{name}; put your game's context):\n\n")
	report.Write(sim.QueueSnippet(sc, opt.Best.Configuration))
	report.WriteString("\n")
	report.WriteString(sim.TicketRatings(opt.Best.Configuration))
}

// loadScenario reads the scenario file, or else the preset, and says which it was.
func loadScenario(path, preset string) (sim.Scenario, string, error) {
	if path == "" {
		sc, err := sim.Preset(preset)
		return sc, "preset " + preset, err
	}
	f, err := os.Open(path)
	if err != nil {
		return sim.Scenario{}, "", err
	}
	defer f.Close()
	sc, err := sim.ReadScenario(f)
	if err != nil {
		return sim.Scenario{}, "", fmt.Errorf("%s: %w", path, err)
	}
	return sc, filepath.Base(path), nil
}

// optimiseFrom picks the configuration the search starts from: the one named, else the
// first with the performance rating (which has coefficients to search) on the queue's pass,
// else on the pairing adapter.
func optimiseFrom(sc sim.Scenario, name string) (sim.Configuration, error) {
	if name != "" {
		for _, cf := range sc.Configurations {
			if cf.Name == name {
				return cf, nil
			}
		}
		return sim.Configuration{}, fmt.Errorf("simulate: -optimize-from %q: no such configuration", name)
	}
	for _, matcher := range []string{"tick", "pairing"} {
		for _, cf := range sc.Configurations {
			if cf.Matcher == matcher && cf.Rating != "learned" {
				return cf, nil
			}
		}
	}
	return sim.Configuration{}, errors.New("simulate: -optimize needs a tick or pairing configuration with the performance rating (or -optimize-from)")
}

func countFactorOne(points []sim.SweepPoint) int {
	n := 0
	for _, p := range points {
		if p.Factor == 1 {
			n++
		}
	}
	return n
}

// writeSimulationFiles writes the CSVs and the picture into dir.
func writeSimulationFiles(dir string, c *sim.Comparison, opt *sim.Optimum, stderr io.Writer) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := []struct {
		name  string
		write func(io.Writer) error
	}{
		{"report.csv", func(w io.Writer) error { return sim.WriteCSV(w, c.Summaries) }},
		{"timeline.csv", func(w io.Writer) error { return sim.WriteTimelineCSV(w, c.Results) }},
		{"simulation.svg", func(w io.Writer) error { return sim.Plot(w, "svg", c, opt) }},
		{"simulation.png", func(w io.Writer) error { return sim.Plot(w, "png", c, opt) }},
	}
	if len(c.Sweep) > 0 {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{"sweep.csv", func(w io.Writer) error { return sim.WriteSweepCSV(w, c.Sweep) }})
	}
	if opt != nil {
		files = append(files, struct {
			name  string
			write func(io.Writer) error
		}{"optimise.csv", func(w io.Writer) error { return sim.WriteEvaluationsCSV(w, opt) }})
	}
	for _, f := range files {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		path := filepath.Join(dir, f.name)
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s\n", path)
	}
	return nil
}

// progressBar draws a bar on stderr while a long run goes on; it is on only when both
// stdout and stderr are terminals, so a redirected report or a script stays quiet.
type progressBar struct {
	w     io.Writer
	on    bool
	label string
	last  time.Time
	drawn bool
}

func newProgressBar(stdout, stderr io.Writer) *progressBar {
	return &progressBar{w: stderr, on: isTerminal(stdout) && isTerminal(stderr)}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// update redraws the bar, at most ten times a second (and always at the end).
func (b *progressBar) update(done, total int) {
	if !b.on || done < total && time.Since(b.last) < 100*time.Millisecond {
		return
	}
	b.last, b.drawn = time.Now(), true
	const width = 30
	filled := width * min(done, total) / max(total, 1)
	fmt.Fprintf(b.w, "\r\033[K%-8s [%s%s] %3d%% %d/%d", b.label, strings.Repeat("#", filled), strings.Repeat(".", width-filled),
		100*min(done, total)/max(total, 1), done, total)
}

// done ends the bar's line.
func (b *progressBar) done() {
	if b.drawn {
		fmt.Fprintln(b.w)
		b.drawn = false
	}
}
