package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/matchmakerhq/matchmaker/db"
	"github.com/matchmakerhq/matchmaker/db/ratingsdb"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// rebuild recomputes a game type's ratings from the stored history, showing its progress:
// a line that updates in place on a terminal, one line per phase otherwise (logs, CI).
func rebuild(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	store, err := openHistory(ctx, cfg, "rebuild")
	if err != nil {
		return err
	}
	defer store.Close()

	show := newProgressPrinter(stderr)
	start := time.Now()
	svc := ratings.NewServiceWithModels(store, cfg.RatingModels)
	var report ratings.RebuildReport
	if cfg.RebuildSolve {
		report, err = svc.RebuildSolved(ctx, cfg.RebuildGameType, ratings.DefaultSolvePrior, show.update)
	} else {
		report, err = svc.Rebuild(ctx, cfg.RebuildGameType, show.update)
	}
	show.done()
	if err != nil {
		return fmt.Errorf("rebuild %s: %w", cfg.RebuildGameType, err)
	}
	fmt.Fprintf(stdout, "rebuilt %s: %d results replayed into %d contexts, %d ratings written in %s\n",
		cfg.RebuildGameType, report.Results, report.Contexts, report.Ratings, time.Since(start).Round(time.Millisecond))
	return nil
}

// progressPrinter shows a rebuild's progress without flooding a log: on a terminal it
// redraws one line at most ten times a second; elsewhere it prints each phase once, done.
type progressPrinter struct {
	w        io.Writer
	terminal bool
	last     time.Time
	phase    string
	drawn    bool
}

func newProgressPrinter(w io.Writer) *progressPrinter {
	p := &progressPrinter{w: w}
	if f, ok := w.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.terminal = true
		}
	}
	return p
}

func (p *progressPrinter) update(pr ratings.Progress) {
	finished := pr.Total > 0 && pr.Done >= pr.Total
	if p.terminal {
		if !finished && pr.Phase == p.phase && time.Since(p.last) < 100*time.Millisecond {
			return
		}
		p.last, p.phase, p.drawn = time.Now(), pr.Phase, true
		fmt.Fprintf(p.w, "\r\033[K%s", describe(pr))
		return
	}
	if finished && pr.Phase != p.phase {
		p.phase = pr.Phase
		fmt.Fprintln(p.w, describe(pr))
	}
}

func (p *progressPrinter) done() {
	if p.terminal && p.drawn {
		fmt.Fprintln(p.w)
	}
}

func describe(pr ratings.Progress) string {
	if pr.Total <= 0 {
		return fmt.Sprintf("%-9s %d", pr.Phase, pr.Done)
	}
	return fmt.Sprintf("%-9s %d/%d (%3.0f%%)", pr.Phase, pr.Done, pr.Total, 100*float64(pr.Done)/float64(pr.Total))
}

// openHistory checks what a subcommand over a game type's stored history (rebuild, tune)
// needs — a database and a valid -game-type — migrates it when asked, and opens it.
func openHistory(ctx context.Context, cfg config, command string) (*ratingsdb.Store, error) {
	if cfg.DatabaseURL == "" {
		return nil, fmt.Errorf("%s needs DATABASE_URL (or -database-url): the in-memory store keeps no history", command)
	}
	if cfg.RebuildGameType == "" {
		return nil, fmt.Errorf("%s needs -game-type", command)
	}
	if err := ratings.ValidateName(cfg.RebuildGameType); err != nil {
		return nil, fmt.Errorf("-game-type %s", err)
	}
	// One attempt (no Startup.Within), migrated first on the session URL if there is one.
	d, _, err := db.Connect(ctx, cfg.DatabaseURL, db.Options{DetectPooler: true},
		db.Startup{Migrate: cfg.Migrate, SessionURL: cfg.DatabaseSessionURL})
	if err != nil {
		return nil, fmt.Errorf("open database: %w", poolerAdvice(err))
	}
	return ratingsdb.New(d, ratingsdb.Options{}), nil
}
