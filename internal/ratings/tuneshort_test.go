package ratings_test

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/evaluate"
)

// TestTuneShortHistories is TestTuneKalman on histories cut short: the hidden real 8v8 history
// is newcomer-heavy and short (a self-tuning never comes at 2,000 results), so the defaults
// are also scored on the first RATINGS_MATCHES results of each league (0: the leagues' own
// length), seeds 1-3 (RATINGS_SEED=N: N to N+2, to see whether a change holds beyond the
// seeds it was measured on), and on RATINGS_DATA (an ATP doubles CSV) when set.
// RATINGS_LEAGUES picks the leagues (default casual,casual4), RATINGS_ROWS=a,b the rows whose
// name starts with one of those prefixes (all when empty). It runs only with RATINGS_TUNE=1:
//
//	RATINGS_TUNE=1 RATINGS_MATCHES=1200 RATINGS_LEAGUES=default,newcomers,pro,casual,casual4 go test -run TuneShortHistories -v ./internal/ratings/
func TestTuneShortHistories(t *testing.T) {
	if os.Getenv("RATINGS_TUNE") == "" {
		t.Skip("set RATINGS_TUNE=1 (RATINGS_MATCHES=N, RATINGS_LEAGUES=a,b, RATINGS_DATA=FILE) to run the sweeps")
	}
	matches, _ := strconv.Atoi(os.Getenv("RATINGS_MATCHES"))
	names := []string{"casual", "casual4"}
	if s := os.Getenv("RATINGS_LEAGUES"); s != "" {
		names = strings.Split(s, ",")
	}
	rows := []tuneRow{
		{"openskill-pl", func() ratings.Model { return ratings.DefaultWengLin(true) }},
		{"ns2-kalman (defaults)", func() ratings.Model { return ratings.DefaultKalman() }},
		{"ns2-kalman, uncalibrated", func() ratings.Model {
			m := ratings.DefaultKalman()
			m.ScalePrior = 1e12
			return m
		}},
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
	vary("SizeExponent", []float64{0, 0.75, 1}, func(m *ratings.Kalman, v float64) { m.SizeExponent = v })
	vary("SkillSD", []float64{2.5, 3, 4}, func(m *ratings.Kalman, v float64) { m.SkillSD = v })
	vary("ScalePrior", []float64{2, 5, 10, 40, 80}, func(m *ratings.Kalman, v float64) { m.ScalePrior = v })
	vary("NewcomerPrior", []float64{2, 3, 5, 10, 1e9}, func(m *ratings.Kalman, v float64) { m.NewcomerPrior = v })
	vary("BiasPrior", []float64{200, 1e9}, func(m *ratings.Kalman, v float64) { m.BiasPrior = v })
	for _, memory := range []float64{0, 0.5, 2} {
		rows = append(rows, tuneRow{fmt.Sprintf("ns2-mix, memory %g", memory), func() ratings.Model {
			m := ratings.DefaultMixture()
			m.Memory = memory
			return m
		}})
	}
	rows = onlyRows(rows, os.Getenv("RATINGS_ROWS"))

	first := uint64(1)
	if s := os.Getenv("RATINGS_SEED"); s != "" {
		var err error
		if first, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("RATINGS_SEED: %v", err)
		}
	}
	var sets []tuneSet
	for _, name := range names {
		for seed := first; seed < first+3; seed++ {
			rp, err := evaluate.Prepare(leagueHistory(t, name, seed, matches), 0.2)
			if err != nil {
				t.Fatal(err)
			}
			sets = append(sets, tuneSet{fmt.Sprintf("%s:%d", name, seed), rp})
		}
	}
	groups := names
	if path := os.Getenv("RATINGS_DATA"); path != "" {
		sets = append(sets, dataSet(t, path))
		groups = append(groups, "data")
	}
	t.Log("\n" + tuneTable2(t, sets, rows, groups...))
}

// onlyRows keeps the rows whose name starts with one of the comma-separated prefixes (all
// when empty), so that a sweep costs only what it is run for.
func onlyRows(rows []tuneRow, prefixes string) []tuneRow {
	if prefixes == "" {
		return rows
	}
	var out []tuneRow
	for _, r := range rows {
		for _, p := range strings.Split(prefixes, ",") {
			if strings.HasPrefix(r.name, p) {
				out = append(out, r)
				break
			}
		}
	}
	return out
}

// dataSet reads RATINGS_DATA as tuneSets does.
func dataSet(t *testing.T, path string) tuneSet {
	rp, err := evaluate.Prepare(readHistory(t, path), 0.2)
	if err != nil {
		t.Fatal(err)
	}
	return tuneSet{"data", rp}
}
