package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// tune fits the hyperparameters of every context of a game type to its stored history and
// stores the accepted fits (ratings.Service.Tune), printing each context's before and after
// log loss; with -rebuild it then rebuilds the game type with them.
func tune(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	if cfg.DatabaseURL == "" {
		return errors.New("tune needs DATABASE_URL (or -database-url): the in-memory store has no history to tune on")
	}
	if cfg.RebuildGameType == "" {
		return errors.New("tune needs -game-type")
	}
	if err := ratings.ValidateName(cfg.RebuildGameType); err != nil {
		return fmt.Errorf("-game-type %s", err)
	}
	if cfg.Migrate {
		if err := db.Migrate(ctx, cfg.DatabaseURL); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	}
	store, err := db.Open(ctx, cfg.DatabaseURL)
	if err != nil {
		return fmt.Errorf("open database: %w", err)
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
		fmt.Fprintf(w, "  skill_sd %.3g (%.3g)  newcomer_skill %.3g (%.3g)  skill_drift %.3g (%.3g)  noise %.3g (%.3g)  bias_prior %.3g (%.3g)  offset_sd %.3g (%.3g)\n",
			p.SkillSD, d.SkillSD, p.NewcomerSkill, d.NewcomerSkill, p.SkillDrift, d.SkillDrift, p.Noise, d.Noise, p.BiasPrior, d.BiasPrior, p.OffsetSD, d.OffsetSD)
	}
}
