package ratings_test

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/evaluate"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

// tuneSet is a named history prepared for replaying.
type tuneSet struct {
	name string
	rp   *evaluate.Replay
}

// tuneSets are the histories the Kalman defaults are chosen on: three seeds of each simulated
// league, and the file in RATINGS_DATA (ATP doubles CSV, or results JSON lines) if set.
// RATINGS_SWEEP=none runs the models without the sweeps.
func tuneSets(t *testing.T) []tuneSet {
	var out []tuneSet
	add := func(name string, h []ratings.Result) {
		rp, err := evaluate.Prepare(h, 0.2)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tuneSet{name, rp})
	}
	if path := os.Getenv("RATINGS_DATA"); path != "" {
		add("data", readHistory(t, path))
	}
	for _, name := range league.Names() {
		for seed := uint64(1); seed <= 3; seed++ {
			add(fmt.Sprintf("%s:%d", name, seed), leagueHistory(t, name, seed, 0))
		}
	}
	return out
}

// readHistory reads the history file at path (RATINGS_DATA): an ATP doubles CSV (evaluate's
// atp format) when it ends in .csv, else results as JSON lines.
func readHistory(t *testing.T, path string) []ratings.Result {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	format := "results-jsonl"
	if strings.HasSuffix(path, ".csv") {
		format = "atp"
	}
	h, err := evaluate.Read(f, format)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// leagueHistory is the results of the simulated league name with seed, its first matches
// (0: the league's own length).
func leagueHistory(t *testing.T, name string, seed uint64, matches int) []ratings.Result {
	t.Helper()
	cfg, err := league.ByName(name, seed)
	if err != nil {
		t.Fatal(err)
	}
	if matches > 0 {
		cfg.Matches = matches
	}
	return league.Results(league.Simulate(cfg))
}

// tuneRow is one model's metrics on every set.
type tuneRow struct {
	name string
	mk   func() ratings.Model
}

// tuneTable replays every set through every model (two at a time) and prints, per model, the
// accuracy, log loss and slope on the data file and averaged over each league's seeds.
func tuneTable(t *testing.T, sets []tuneSet, rows []tuneRow) string {
	return tuneTable2(t, sets, rows, append([]string{"data"}, league.Names()...)...)
}

func tuneTable2(t *testing.T, sets []tuneSet, rows []tuneRow, groups ...string) string {
	res := make([][]evaluate.Metrics, len(rows))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 2)
	for i, row := range rows {
		res[i] = make([]evaluate.Metrics, len(sets))
		for j, set := range sets {
			wg.Go(func() {
				sem <- struct{}{}
				defer func() { <-sem }()
				r, err := set.rp.Run(row.mk())
				if err != nil {
					t.Error(err)
				}
				res[i][j] = r.Metrics
			})
		}
	}
	wg.Wait()
	var b strings.Builder
	// RATINGS_HINDSIGHT=1 shows, in place of accuracy and slope, what calibration could buy:
	// the log loss, then that of the best temperature and recalibration in hindsight
	// (evaluate.Metrics.Rescaled, Recalibrated).
	hindsight := os.Getenv("RATINGS_HINDSIGHT") != ""
	if hindsight {
		fmt.Fprintf(&b, "%-34s", "log-loss rescaled recalibrated")
	} else {
		fmt.Fprintf(&b, "%-34s", "accuracy log-loss slope")
	}
	for _, g := range groups {
		fmt.Fprintf(&b, " | %-22s", g)
	}
	b.WriteString("\n")
	for i, row := range rows {
		fmt.Fprintf(&b, "%-34s", row.name)
		for _, g := range groups {
			var acc, ll, sl float64
			n := 0
			for j, set := range sets {
				if set.name == g || strings.HasPrefix(set.name, g+":") {
					m := res[i][j]
					if hindsight {
						m.Accuracy, m.LogLoss, m.Slope = m.LogLoss, m.Rescaled, m.Recalibrated
					}
					acc += m.Accuracy
					ll += m.LogLoss
					sl += m.Slope
					n++
				}
			}
			if n == 0 {
				fmt.Fprintf(&b, " | %-22s", "")
				continue
			}
			if hindsight {
				fmt.Fprintf(&b, " | %.4f %.4f %.4f  ", acc/float64(n), ll/float64(n), sl/float64(n))
				continue
			}
			fmt.Fprintf(&b, " | %.4f %.4f %.3f   ", acc/float64(n), ll/float64(n), sl/float64(n))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// TestTuneKalman is where the Kalman defaults come from: each parameter varied around the
// defaults, and each of the model's parts taken out, scored on the leagues (three seeds each)
// and on RATINGS_DATA. It runs only with RATINGS_TUNE=1:
//
//	RATINGS_TUNE=1 RATINGS_DATA=atp-doubles.csv go test -run TuneKalman -v ./internal/ratings/
func TestTuneKalman(t *testing.T) {
	if os.Getenv("RATINGS_TUNE") == "" {
		t.Skip("set RATINGS_TUNE=1 (and RATINGS_DATA=FILE) to run the sweeps")
	}
	rows := []tuneRow{
		{"ns2", func() ratings.Model { return ratings.DefaultNS2() }},
		{"ns2, calibrated", func() ratings.Model {
			m := ratings.DefaultNS2()
			m.ScalePrior = ratings.DefaultScalePrior
			return m
		}},
		{"openskill-pl", func() ratings.Model { return ratings.DefaultWengLin(true) }},
		{"openskill-pl, uncalibrated", func() ratings.Model {
			m := ratings.DefaultWengLin(true)
			m.ScalePrior = 0
			return m
		}},
		{"ns2-kalman (defaults)", func() ratings.Model { return ratings.DefaultKalman() }},
	}
	vary := func(name string, values []float64, set func(*ratings.Kalman, float64)) {
		for _, v := range values {
			rows = append(rows, tuneRow{fmt.Sprintf("%s %g", name, v), func() ratings.Model {
				m := ratings.DefaultKalman()
				set(&m, v)
				return m
			}})
		}
	}
	if sweep := os.Getenv("RATINGS_SWEEP"); sweep == "" || sweep == "all" {
		vary("SkillSD", []float64{1.5, 2.5, 3}, func(m *ratings.Kalman, v float64) { m.SkillSD = v })
		vary("SkillDrift", []float64{0.03, 0.06, 0.15}, func(m *ratings.Kalman, v float64) { m.SkillDrift = v })
		vary("OffsetSD", []float64{0, 0.15, 0.6}, func(m *ratings.Kalman, v float64) { m.OffsetSD = v })
		vary("CommanderSD", []float64{0, 0.5, 2}, func(m *ratings.Kalman, v float64) { m.CommanderSD = v })
		vary("CommanderDrift", []float64{0, 0.1}, func(m *ratings.Kalman, v float64) { m.CommanderDrift = v })
		vary("BaseSkill", []float64{0, 8}, func(m *ratings.Kalman, v float64) { m.BaseSkill = v })
		vary("BasePrior", []float64{0.1, 1, 1e9}, func(m *ratings.Kalman, v float64) { m.BasePrior = v })
		vary("NewcomerPrior", []float64{0.3, 3, 1e9}, func(m *ratings.Kalman, v float64) { m.NewcomerPrior = v })
		vary("ScalePrior", []float64{5, 100, 1e12}, func(m *ratings.Kalman, v float64) { m.ScalePrior = v })
		vary("BiasPrior", []float64{20, 200}, func(m *ratings.Kalman, v float64) { m.BiasPrior = v })
	}
	if sweep := os.Getenv("RATINGS_SWEEP"); sweep == "noise" || sweep == "all" || sweep == "" {
		vary("Noise", []float64{0.5, 1, 1.5}, func(m *ratings.Kalman, v float64) { m.Noise = v })
		vary("NewcomerSkill", []float64{-1, 1}, func(m *ratings.Kalman, v float64) { m.NewcomerSkill = v })
	}
	if sweep := os.Getenv("RATINGS_SWEEP"); sweep == "time" || sweep == "all" || sweep == "" {
		vary("SkillDriftPerDay", []float64{0, 0.005, 0.01, 0.02, 0.04}, func(m *ratings.Kalman, v float64) { m.SkillDriftPerDay = v })
		vary("SkillDriftPerDay 0.01, SkillDrift", []float64{0.05, 0.07}, func(m *ratings.Kalman, v float64) { m.SkillDriftPerDay, m.SkillDrift = 0.01, v })
		vary("SkillDriftPerDay 0.02, SkillDrift", []float64{0.05, 0.07}, func(m *ratings.Kalman, v float64) { m.SkillDriftPerDay, m.SkillDrift = 0.02, v })
	}
	if sweep := os.Getenv("RATINGS_SWEEP"); sweep == "size" || sweep == "all" || sweep == "" {
		vary("SizeExponent", []float64{0, 0.25, 0.75, 1}, func(m *ratings.Kalman, v float64) { m.SizeExponent = v })
	}
	t.Log("\n" + tuneTable(t, tuneSets(t), rows))
}
