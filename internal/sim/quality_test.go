package sim

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"matchmaker/internal/matchmaker/tick"
)

// Quality over time, the figure: tickets arriving at a steady rate with thesis-like
// ratings (eq. 6.5 with 0.5 each over uniform stats), 80% solo and 20% parties of 2-5, a 5v5
// queue with DESIGN's expansions (interval 25, 50 after 10 s, 150 after 30 s), tickets
// expiring after 300 s, ticked every second. The queue's own pass (matchmaker/tick) and the
// /v1/matchmake algorithm (matchmaker/pairing, run over the same waiting tickets every tick:
// the Pairing matcher) play the same arrivals (common random numbers: one seed). The table
// is the README's.
//
// With solo tickets the queue's pass must make matches at least as even as the pairing. With
// parties the two solve different problems: the pairing treats a party's players as solo
// players and splits nearly every party, the queue's pass never does (asserted), and pays
// for it in team-average difference. Every run must match nearly every ticket.
func TestQualityOverTimeAgainstMatchmake(t *testing.T) {
	t.Parallel()
	matches := 4000
	if testing.Short() || raceDetector {
		matches = 800
	}
	steps := &Expansions{Interval: []Step{{0, 25}, {10, 50}, {30, 150}}}
	def := ThesisDefault
	var rows []string
	for _, arr := range []struct {
		rate    float64
		parties []float64
	}{{0.5, nil}, {5, nil}, {0.5, []float64{80, 5, 5, 5, 5}}, {5, []float64{80, 5, 5, 5, 5}}} {
		rate, label := arr.rate, fmt.Sprintf("%g/s, solo", arr.rate)
		if arr.parties != nil {
			label = fmt.Sprintf("%g/s, 20%% parties", arr.rate)
		}
		sc := Scenario{
			Seed: 1, Matches: matches, TickS: 1, MaxDays: 30, TeamSize: 5, Rounds: 11, RoundS: 45,
			Population: PopulationConfig{Players: 20_000, Accuracy: Uniform01, ReactionTime: Uniform01,
				Awareness: Uniform01, Movement: Uniform01},
			Arrivals: ArrivalConfig{RatePerS: rate, PartySizes: arr.parties},
		}
		for _, s := range []string{tick.RatingWindow, tick.GreedyPairs} {
			for _, m := range []string{"tick", "pairing"} {
				sc.Configurations = append(sc.Configurations, Configuration{Name: m + ", " + s, Matcher: m, Strategy: s,
					Coefficients: &def, Expansions: steps, TicketTTLS: 300})
			}
		}
		if err := sc.Validate(); err != nil {
			t.Fatal(err)
		}
		cmp, err := Compare(context.Background(), &sc, 2, nil)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]Summary{}
		for _, s := range cmp.Summaries {
			byName[s.Name] = s
			rows = append(rows, fmt.Sprintf("| %s | %s | %d | %.2f | %.2f | %.1f s | %.1f s | %.1f%% | %d of %d |",
				label, s.Name, s.Matches, s.AverageDifference.Mean, s.AverageDifference.Median, s.WaitMedian, s.WaitP90,
				100*float64(s.Expired)/float64(s.Tickets), s.PartiesSplit, s.Parties))
			if s.Truncated || float64(s.Expired) > 0.05*float64(s.Tickets) {
				t.Errorf("%s, %s: %d of %d tickets expired (truncated %v)", label, s.Name, s.Expired, s.Tickets, s.Truncated)
			}
			if strings.HasPrefix(s.Name, "tick") && s.PartiesSplit > 0 {
				t.Errorf("%s, %s: the queue's pass split %d parties", label, s.Name, s.PartiesSplit)
			}
		}
		for _, s := range []string{tick.RatingWindow, tick.GreedyPairs} {
			if arr.parties != nil {
				continue // the pairing splits parties: its teams are not the same problem's
			}
			q, p := byName["tick, "+s], byName["pairing, "+s]
			if q.AverageDifference.Mean > p.AverageDifference.Mean {
				t.Errorf("%s, %s: the queue's pass averages %.2f, the pairing %.2f", label, s, q.AverageDifference.Mean, p.AverageDifference.Mean)
			}
		}
	}
	t.Logf("%d matches a run\n| arrivals | matcher, strategy | matches | team-average difference: mean | median | wait: median | p90 | expired | parties split |\n|---|---|---|---|---|---|---|---|---|\n%s",
		matches, strings.Join(rows, "\n"))
}
