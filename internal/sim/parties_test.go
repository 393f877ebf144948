package sim

import (
	"context"
	"math"
	"testing"
)

// A configuration's party sizes replace the arrivals' for it alone: the parties preset's
// solo queue has no party, its party queue some; the report's share of mixed-party
// matches counts the matches whose teams' largest tickets differ in size, none without
// parties.
func TestPartiesPresetRunsASoloQueueBesideThePartyQueue(t *testing.T) {
	t.Parallel()
	sc, err := Preset("parties")
	if err != nil {
		t.Fatal(err)
	}
	sc.Matches, sc.Population.Players = 400, 3000
	for _, cf := range sc.Configurations[:2] {
		res, err := Run(context.Background(), &sc, cf, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := Summarize(res)
		mixed := 0
		for _, m := range res.Matches {
			if m.LargestParty[0] < 1 || m.LargestParty[1] < 1 || max(m.LargestParty[0], m.LargestParty[1]) > sc.TeamSize {
				t.Fatalf("%s: a match's largest parties %v", cf.Name, m.LargestParty)
			}
			if m.LargestParty[0] != m.LargestParty[1] {
				mixed++
			}
		}
		switch cf.Name {
		case "solos":
			if res.Parties != 0 || mixed != 0 || !math.IsNaN(s.MixedParties) {
				t.Fatalf("solos: %d parties, %d mixed matches, share %g", res.Parties, mixed, s.MixedParties)
			}
		default:
			if res.Parties == 0 || mixed == 0 || s.MixedParties != float64(mixed)/float64(len(res.Matches)) {
				t.Fatalf("%s: %d parties, %d mixed matches of %d, share %g", cf.Name, res.Parties, mixed, len(res.Matches), s.MixedParties)
			}
		}
	}
}

// The team-average difference's percentiles are the empirical ones.
func TestDistPercentiles(t *testing.T) {
	t.Parallel()
	xs := make([]float64, 200)
	for i := range xs {
		xs[i] = float64(200 - i) // 200 down to 1
	}
	d := distOf(xs)
	if d.Median != 100 || d.P90 != 180 || d.P99 != 198 || d.Max != 200 || d.Mean != 100.5 {
		t.Fatalf("%+v", d)
	}
}
