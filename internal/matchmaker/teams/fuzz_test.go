package teams

import (
	"errors"
	"math"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// fuzzWeights turns bytes into weights, two bytes each (0.00 .. 655.32), with a few
// codes for the values validation must refuse: NaN, +Inf, -1, 2e9.
func fuzzWeights(raw []byte, limit int) []float64 {
	var w []float64
	for i := 0; i+1 < len(raw) && len(w) < limit; i += 2 {
		v := uint16(raw[i])<<8 | uint16(raw[i+1])
		switch v {
		case 0xFFFF:
			w = append(w, math.NaN())
		case 0xFFFE:
			w = append(w, math.Inf(1))
		case 0xFFFD:
			w = append(w, -1)
		case 0xFFFC:
			w = append(w, 2e9)
		default:
			w = append(w, float64(v)/100)
		}
	}
	return w
}

// wantInvalid checks that a refusal is an Invalid apperr naming at least one field.
func wantInvalid(t *testing.T, err error) {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.Invalid || len(e.Fields) == 0 {
		t.Fatalf("err = %v, want an invalid apperr with fields", err)
	}
}

// Split never panics; it either refuses with field errors or returns valid splits.
func FuzzSplit(f *testing.F) {
	raw := []byte{}
	for _, w := range seedExample {
		raw = append(raw, 0, byte(w))
	}
	f.Add(uint8(2), true, 20.0, int16(8), int16(6), int16(12), int16(0), int8(0), uint8(0), uint8(0), int64(1), raw)
	f.Add(uint8(3), false, 0.0, int16(0), int16(0), int16(0), int16(0), int8(20), uint8(1), uint8(1), int64(-1), raw[:12])
	f.Add(uint8(4), true, 50.0, int16(30), int16(2), int16(40), int16(9), int8(3), uint8(1), uint8(2), int64(5), append(raw, raw...))
	f.Add(uint8(2), true, math.NaN(), int16(-1), int16(9), int16(3), int16(-2), int8(-1), uint8(3), uint8(3), int64(0), []byte{0xFF, 0xFF, 0xFF, 0xFE})
	f.Fuzz(func(t *testing.T, teams uint8, bots bool, mean float64, target, recMin, recMax, capH int16,
		cand int8, sel, obj uint8, seed int64, raw []byte) {
		w := fuzzWeights(raw, 34)
		o := SplitOptions{Teams: int(teams % 6), MaxHumansPerTeam: int(capH), Candidates: int(cand),
			Selection: []Selection{"", SelectBest, SelectWeighted, "other"}[sel%4],
			Objective: []Objective{"", Ratio, Difference, "other"}[obj%4]}
		if seed != 0 {
			o.Seed = &seed
		}
		if bots {
			o.Bots = &BotRule{MeanWeight: mean, TargetPlayers: int(target), RecommendedMin: int(recMin), RecommendedMax: int(recMax)}
		}
		r, err := Split(w, o)
		if err != nil {
			wantInvalid(t, err)
			return
		}
		checkResult(t, w, o, r)
		if want := len(w) <= [...]int{2: ExactLimit2, 3: ExactLimit34, 4: ExactLimit34}[o.Teams]; want != r.Exact && o.Teams == 2 {
			t.Fatalf("exact %v for %d players on 2 teams", r.Exact, len(w))
		}
		if len(r.Candidates) > wantK(o) {
			t.Fatalf("%d candidates, asked for %d", len(r.Candidates), wantK(o))
		}
	})
}

// fuzzRosters splits bytes into teams of players and bots.
func fuzzRosters(n uint8, raw []byte) []Roster {
	w := fuzzWeights(raw, 60)
	teams := make([]Roster, int(n%6))
	for i, x := range w {
		if len(teams) == 0 {
			break
		}
		tm := &teams[i%len(teams)]
		if i%5 == 4 {
			tm.Bots = append(tm.Bots, x)
		} else {
			tm.Players = append(tm.Players, x)
		}
	}
	return teams
}

// Assign, Rebalance and Advantage never panic on what the HTTP layer may hand them, and
// their results hold together.
func FuzzPlaying(f *testing.F) {
	f.Add(uint8(2), []byte{0, 50, 0, 60, 0, 70, 0, 80, 0, 90}, uint16(40), []byte{0, 30, 0, 20}, int8(-1), true)
	f.Add(uint8(3), []byte{1, 0, 0, 10, 0, 20}, uint16(0), []byte{}, int8(0), false)
	f.Add(uint8(4), []byte{0xFF, 0xFF}, uint16(0xFFFE), []byte{0xFF, 0xFD}, int8(-3), true)
	f.Fuzz(func(t *testing.T, n uint8, raw []byte, joiner uint16, unplacedRaw []byte, maxSwaps int8, bots bool) {
		teams := fuzzRosters(n, raw)
		jw := fuzzWeights([]byte{byte(joiner >> 8), byte(joiner)}, 1)[0]
		var ao AssignOptions
		if bots {
			ao.Bots = &BotRule{MeanWeight: 40, TargetPlayers: 8, RecommendedMin: 4, RecommendedMax: 12}
		}
		if a, err := Assign(teams, jw, ao); err != nil {
			wantInvalid(t, err)
		} else if !a.Allowed || a.Team < 0 || a.Team >= len(teams) || len(a.Totals) != len(teams) {
			t.Fatalf("assign: %+v", a)
		}

		unplaced := fuzzWeights(unplacedRaw, 24)
		var ro RebalanceOptions
		ms := int(maxSwaps)
		if ms >= -1 {
			ro.MaxSwaps = &ms
		}
		if ms == -1 {
			ro.MaxSwaps = nil
		}
		if r, err := Rebalance(teams, unplaced, ro); err != nil {
			wantInvalid(t, err)
		} else {
			limit := -1
			if ro.MaxSwaps != nil {
				limit = *ro.MaxSwaps
			}
			checkRebalance(t, teams, unplaced, r, limit)
		}

		if v, err := Advantage(teams); err != nil {
			wantInvalid(t, err)
		} else {
			sum := 0.0
			for _, tm := range v.Teams {
				sum += tm.WinProbability
				if tm.WinProbability < 0 || tm.Handicap < 0 || math.IsNaN(tm.Handicap) || math.IsInf(tm.Handicap, 0) {
					t.Fatalf("advantage: %+v", v)
				}
			}
			if math.Abs(sum-1) > 1e-12 {
				t.Fatalf("probabilities sum to %v", sum)
			}
		}
	})
}
