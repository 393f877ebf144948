package handlers

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
)

// randomResponse builds a response with the awkward values an encoder gets wrong: ids that
// need escaping, tiny and huge floats, negative zero, nil and empty slices.
func randomResponse(rng *rand.Rand) matchmakeResponse {
	ids := []string{"alice", "p-00017", `quote"d`, "back\\slash", "tab\tid", "<html>&", "ünïcødé", "\u2028", "\x01", "", "\xff\xfe"}
	id := func() string { return ids[rng.IntN(len(ids))] + strconv.Itoa(rng.IntN(3)) }
	floats := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 1e-7, 1e-6, 123456.789, 1e20, 1e21, 5e-324, 1.7976931348623157e308, 25, 1234.5678901234567}
	num := func() float64 {
		if rng.IntN(3) == 0 {
			return (rng.Float64() - 0.5) * math.Pow(10, float64(rng.IntN(40)-20))
		}
		return floats[rng.IntN(len(floats))]
	}
	var r matchmakeResponse
	r.Strategy = pairing.RatingWindow
	r.TeamSize = rng.IntN(17)
	if rng.IntN(5) > 0 {
		r.Matches = make([]matchJSON, rng.IntN(4))
	}
	for i := range r.Matches {
		m := &r.Matches[i]
		m.ID = id()
		for t := range m.Teams {
			if rng.IntN(6) > 0 {
				m.Teams[t].Players = make([]string, rng.IntN(4))
				for k := range m.Teams[t].Players {
					m.Teams[t].Players[k] = id()
				}
			}
			m.Teams[t].RatingTotal = num()
		}
		if rng.IntN(6) > 0 {
			m.Pairs = make([]pairJSON, rng.IntN(4))
		}
		for k := range m.Pairs {
			m.Pairs[k] = pairJSON{Players: [2]string{id(), id()}, Difference: num(), Interval: num()}
		}
		m.Interval, m.SkillDifference, m.AverageDifference = num(), num(), num()
	}
	if rng.IntN(5) > 0 {
		r.Unmatched = make([]unmatchedJSON, rng.IntN(3))
	}
	for i := range r.Unmatched {
		r.Unmatched[i] = unmatchedJSON{ID: id(), Rating: num()}
	}
	r.Stats = matchmakeStatsJSON{Players: rng.IntN(1e6), Matches: rng.IntN(100), Unmatched: rng.IntN(10), ElapsedMS: num(),
		SkillDifference: distributionJSON{num(), num(), num()}, AverageDifference: distributionJSON{num(), num(), num()},
		PairDifference: distributionJSON{num(), num(), num()}}
	return r
}

func TestMatchmakeEncoderMatchesEncodingJSON(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 5000 {
		r := randomResponse(rng)
		var want bytes.Buffer
		if err := json.NewEncoder(&want).Encode(r); err != nil {
			t.Fatal(err)
		}
		if got := r.appendJSON(nil); !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("case %d differs from encoding/json:\n got %s\nwant %s", i, got, want.Bytes())
		}
	}
}
