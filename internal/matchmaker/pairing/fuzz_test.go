package pairing

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// FuzzMake: any ratings and options either give an apperr.Invalid error or a
// result that keeps every invariant; nothing panics. With wide, every 8 bytes are the bits
// of a float64 (any value, NaN and infinities included); otherwise every byte is a small
// rating, which makes ties common.
func FuzzMake(f *testing.F) {
	f.Add([]byte("the thesis queue, more or less..."), uint8(5), 25.0, 25.0, math.Inf(1), false, false)
	f.Add([]byte{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, uint8(2), 0.0, 1.0, 0.0, true, false)
	f.Add([]byte{0, 255, 3, 250, 7, 9, 200, 100}, uint8(1), 0.5, 1e-9, 3.0, false, false)
	f.Add(binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, math.Float64bits(1e12)), math.Float64bits(-1e12)),
		uint8(1), 25.0, 25.0, math.Inf(1), true, true)
	f.Add(binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.NaN())), uint8(1), 25.0, 25.0, math.Inf(1), true, true)
	f.Fuzz(func(t *testing.T, data []byte, teamSize uint8, initial, step, maxInterval float64, greedy, wide bool) {
		var r []float64
		if wide {
			for len(data) >= 8 {
				r = append(r, math.Float64frombits(binary.LittleEndian.Uint64(data)))
				data = data[8:]
			}
		} else {
			for _, b := range data {
				r = append(r, float64(b)*7.5-500)
			}
		}
		o := Options{
			TeamSize: int(teamSize % (MaxTeamSize + 2)),
			Interval: Interval{Initial: initial, Step: step, Max: maxInterval},
			Strategy: RatingWindow,
		}
		if greedy {
			o.Strategy = GreedyPairs
		}
		valid := o.Validate() == nil
		for _, x := range r {
			valid = valid && math.Abs(x) <= MaxMagnitude
		}
		res, err := Make(r, o)
		if !valid {
			if apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("invalid input, error %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid input, error %v", err)
		}
		if err := checkResult(r, o, res); err != nil {
			t.Fatalf("%+v, ratings %v: %v", o, r, err)
		}
		for _, m := range res.Matches {
			for _, v := range []float64{m.Interval, m.SkillDifference, m.Teams[0].RatingTotal, m.Teams[1].RatingTotal} {
				if math.IsInf(v, 0) || math.IsNaN(v) {
					t.Fatalf("%+v: a match carries %v", o, v)
				}
			}
		}
	})
}
