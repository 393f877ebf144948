package tick

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// FuzzRun: any queue either gives an apperr.Invalid error, exactly when some field is
// invalid, or a result that keeps every rule check knows (with the brute forces on small
// queues); nothing panics. Every ticket takes 4 bytes (players, wait, expiry, latency) and
// one more per player; with wide, a rating is 8 bytes of float64 bits (NaN and infinities
// included), otherwise a small integer, so that ties are common.
func FuzzRun(f *testing.F) {
	f.Add([]byte("tickets of every kind, waiting their turn..."), uint8(2), uint8(20), 30.0, false, false, false)
	f.Add([]byte{0, 0, 9, 0, 50, 0, 0, 9, 0, 51, 1, 5, 9, 3, 49, 60}, uint8(1), uint8(5), 10.0, true, true, false)
	f.Add([]byte{3, 1, 200, 7, 10, 11, 12, 13, 0, 2, 200, 1, 11, 0, 3, 9, 2, 12}, uint8(4), uint8(0), 0.0, false, true, false)
	f.Add(binary.LittleEndian.AppendUint64([]byte{0, 0, 9, 0}, math.Float64bits(math.NaN())), uint8(1), uint8(5), 1.0, false, false, true)
	f.Fuzz(func(t *testing.T, data []byte, teamSize, interval uint8, now float64, greedy, latency, wide bool) {
		cfg := matchrules.Config{TeamSize: int(teamSize % (matchrules.MaxTeamSize + 2)), Strategy: matchrules.RatingWindow,
			Interval: []matchrules.Step{{AfterS: 0, Value: float64(interval)}, {AfterS: 10, Value: 2 * float64(interval)}}}
		if greedy {
			cfg.Strategy = matchrules.GreedyPairs
		}
		if latency {
			cfg.MaxLatency = []matchrules.Step{{AfterS: 0, Value: 50}, {AfterS: 20, Value: 150}}
		}
		var tk []matchpool.Ticket
		for len(data) >= 4 && len(tk) < 200 {
			h, wait, expiry, lat := data[0], data[1], data[2], data[3]
			data = data[4:]
			x := matchpool.Ticket{WaitingSince: now - float64(wait%64) + 2, ExpiresAt: now + float64(int(expiry)-8)}
			if expiry == 255 {
				x.ExpiresAt = math.Inf(1)
			}
			for range 1 + int(h%17) {
				switch {
				case wide && len(data) >= 8:
					x.Ratings = append(x.Ratings, math.Float64frombits(binary.LittleEndian.Uint64(data)))
					data = data[8:]
				case len(data) >= 1:
					x.Ratings = append(x.Ratings, 900+5*float64(data[0]%40))
					data = data[1:]
				}
			}
			for i, r := range []string{"asia", "eu", "us"} {
				if lat>>(2*i)&3 != 0 {
					x.Latencies = append(x.Latencies, matchpool.RegionLatency{Region: r, MS: 30 * float64(lat>>(2*i)&3)})
				}
			}
			tk = append(tk, x)
		}
		valid := cfg.Validate() == nil && math.Abs(now) <= matchrules.MaxMagnitude
		for _, x := range tk {
			valid = valid && x.Validate(cfg.TeamSize) == nil
		}
		res, err := Run(tk, now, cfg)
		if !valid {
			if apperr.CodeOf(err) != apperr.Invalid {
				t.Fatalf("invalid input, error %v", err)
			}
			return
		}
		if err != nil {
			t.Fatalf("valid input, error %v", err)
		}
		if err := checkResult(tk, now, cfg, res); err != nil {
			t.Fatalf("%v\n%s", err, describe(tk, now, cfg))
		}
	})
}
