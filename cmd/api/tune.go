package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// tune fits the hyperparameters of every context of a game type to its stored history and
// stores the accepted fits (ratings.Service.Tune), printing each context's before and after
// log loss; with -rebuild it then rebuilds the game type with them.
func tune(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	store, err := openHistory(ctx, cfg, "tune")
	if err != nil {
		return err
	}
	defer store.Close()

	svc := ratings.NewServiceWithModels(store, cfg.RatingModels)
	start := time.Now()
	fmt.Fprintf(stderr, "tuning %s: reading its history and fitting each context (a replay of the history per step)\n", cfg.RebuildGameType)
	reports, err := svc.Tune(ctx, cfg.RebuildGameType)
	if err != nil {
		return fmt.Errorf("tune %s: %w", cfg.RebuildGameType, err)
	}
	printTuning(stdout, reports)
	fmt.Fprintf(stdout, "tuned %s: %d contexts in %s\n", cfg.RebuildGameType, len(reports), time.Since(start).Round(time.Millisecond))
	if !cfg.TuneRebuild {
		fmt.Fprintf(stdout, "the stored ratings were learnt with the old parameters: `api rebuild -game-type %s` replays them with the new\n", cfg.RebuildGameType)
		return nil
	}
	return rebuild(ctx, cfg, stdout, stderr)
}

// printTuning writes one block per context: the fit's log losses and its parameters.
func printTuning(w io.Writer, reports []ratings.ContextTuning) {
	for _, ct := range reports {
		r := ct.Report
		verdict := "accepted"
		if !r.Accepted {
			verdict = "defaults kept: " + r.Reason
		}
		fmt.Fprintf(w, "%s (%s, %d results, %d replays): %s\n", ct.Context, ct.Model, r.Results, r.Evaluations, verdict)
		if r.Evaluations == 0 {
			continue
		}
		fmt.Fprintf(w, "  log loss  fit %.4f -> %.4f   held-out tail %.4f -> %.4f\n", r.FitBefore, r.FitAfter, r.HeldOutBefore, r.HeldOutAfter)
		p, d := r.Params, r.Default
		fmt.Fprintf(w, "  skill_sd %.3g (%.3g)  newcomer_skill %.3g (%.3g)  skill_drift %.3g (%.3g)  skill_drift_per_day %.3g (%.3g)  noise %.3g (%.3g)  bias_prior %.3g (%.3g)  offset_sd %.3g (%.3g)  size_exponent %.3g (%.3g)\n",
			p.SkillSD, d.SkillSD, p.NewcomerSkill, d.NewcomerSkill, p.SkillDrift, d.SkillDrift, p.SkillDriftPerDay, d.SkillDriftPerDay, p.Noise, d.Noise, p.BiasPrior, d.BiasPrior, p.OffsetSD, d.OffsetSD,
			p.SizeExponent, d.SizeExponent)
		if ct.Model == ratings.DefaultMixture().Name() {
			fmt.Fprintf(w, "  memory %.3g (%.3g)\n", p.Memory, d.Memory)
		}
	}
}
