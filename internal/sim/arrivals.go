package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// ArrivalConfig is how tickets arrive over simulated time: a Poisson stream whose rate
// follows a daily curve, plus bursts. Each ticket is a party whose size is drawn from
// PartySizes; its players are drawn from the idle part of the population.
type ArrivalConfig struct {
	// RatePerS is the mean rate of tickets a second over a day; 0 for bursts only.
	RatePerS float64 `json:"rate_per_s"`
	// DailyAmplitude (0..1) makes the rate swing over 24 h between RatePerS x (1-A) and
	// RatePerS x (1+A), as a cosine that peaks at PeakHour (hours after the start, mod 24).
	DailyAmplitude float64 `json:"daily_amplitude,omitzero"`
	PeakHour       float64 `json:"peak_hour,omitzero"`
	// Bursts are tickets that arrive all at once.
	Bursts []Burst `json:"bursts,omitempty"`
	// PartySizes are the relative weights of party sizes 1, 2, 3, ...; empty means solo only.
	PartySizes []float64 `json:"party_sizes,omitempty"`
}

// Burst is Tickets tickets arriving at AtS seconds, and again every EveryS seconds (0: once).
type Burst struct {
	AtS     float64 `json:"at_s"`
	EveryS  float64 `json:"every_s,omitzero"`
	Tickets int     `json:"tickets"`
}

func (c ArrivalConfig) validate(teamSize int) error {
	if !(c.RatePerS >= 0 && c.RatePerS <= 1e6) {
		return fmt.Errorf("arrivals.rate_per_s must be between 0 and 1e6, got %g", c.RatePerS)
	}
	if !(c.DailyAmplitude >= 0 && c.DailyAmplitude <= 1) {
		return fmt.Errorf("arrivals.daily_amplitude must be between 0 and 1, got %g", c.DailyAmplitude)
	}
	if !(c.PeakHour >= 0 && c.PeakHour < 24) {
		return fmt.Errorf("arrivals.peak_hour must be in [0, 24), got %g", c.PeakHour)
	}
	for i, b := range c.Bursts {
		if !(b.AtS >= 0 && b.AtS <= 1e9) || !(b.EveryS == 0 || b.EveryS >= 1 && b.EveryS <= 1e9) || b.Tickets < 1 {
			return fmt.Errorf("arrivals.bursts[%d]: at_s must be in [0, 1e9], every_s 0 or in [1, 1e9], tickets at least 1", i)
		}
	}
	if c.RatePerS == 0 && len(c.Bursts) == 0 {
		return fmt.Errorf("arrivals: need a rate_per_s or bursts, or no ticket ever arrives")
	}
	return validatePartySizes("arrivals.party_sizes", c.PartySizes, teamSize)
}

// validatePartySizes checks the weights of party sizes 1, 2, ... given as field.
func validatePartySizes(field string, sizes []float64, teamSize int) error {
	if len(sizes) > teamSize {
		return fmt.Errorf("%s lists %d sizes, but a party must fit in a team of %d", field, len(sizes), teamSize)
	}
	sum := 0.0
	for i, w := range sizes {
		if !(w >= 0 && w <= 1e9) {
			return fmt.Errorf("%s[%d] must be a non-negative weight", field, i)
		}
		sum += w
	}
	if len(sizes) > 0 && sum == 0 {
		return fmt.Errorf("%s must have a positive weight", field)
	}
	return nil
}

// maxPartySize is the largest party size with a positive weight (1 without PartySizes).
func (c ArrivalConfig) maxPartySize() int {
	n := 1
	for i, w := range c.PartySizes {
		if w > 0 {
			n = i + 1
		}
	}
	return n
}

// arrival is one ticket's arrival: its time and party size.
type arrival struct {
	at   time.Duration
	size int
}

// arrivals generates the ticket stream in time order. The Poisson stream is drawn by
// thinning: candidates at the peak rate, each kept with probability rate(t) / peak rate.
type arrivals struct {
	cfg       ArrivalConfig
	rng       *rand.Rand
	peak      float64 // tickets a second at the top of the daily curve
	partyCDF  []float64
	nextRate  time.Duration   // time of the next Poisson arrival; math.MaxInt64 when none
	nextBurst []time.Duration // per burst, the time of its next firing; math.MaxInt64 when done
}

const never = time.Duration(math.MaxInt64)

func newArrivals(cfg ArrivalConfig, rng *rand.Rand) *arrivals {
	a := &arrivals{cfg: cfg, rng: rng, peak: cfg.RatePerS * (1 + cfg.DailyAmplitude), nextRate: never}
	sum := 0.0
	for _, w := range cfg.PartySizes {
		sum += w
		a.partyCDF = append(a.partyCDF, sum)
	}
	for _, b := range cfg.Bursts {
		a.nextBurst = append(a.nextBurst, seconds(b.AtS))
	}
	if a.peak > 0 {
		a.advanceRate(0)
	}
	return a
}

// rate is the Poisson rate at t, in tickets a second.
func (a *arrivals) rate(t time.Duration) float64 {
	phase := 2 * math.Pi * (t.Hours() - a.cfg.PeakHour) / 24
	return a.cfg.RatePerS * (1 + a.cfg.DailyAmplitude*math.Cos(phase))
}

// advanceRate sets nextRate to the first kept candidate after from.
func (a *arrivals) advanceRate(from time.Duration) {
	t := from.Seconds()
	for {
		t += a.rng.ExpFloat64() / a.peak
		if t > 1e9 {
			a.nextRate = never
			return
		}
		at := seconds(t)
		if a.rng.Float64()*a.peak < a.rate(at) {
			a.nextRate = at
			return
		}
	}
}

// next is the time of the next arrival, or never.
func (a *arrivals) next() time.Duration {
	t := a.nextRate
	for _, b := range a.nextBurst {
		t = min(t, b)
	}
	return t
}

// until appends every arrival at or before t to buf, in time order (bursts first at equal
// times, in their configured order), and returns it.
func (a *arrivals) until(t time.Duration, buf []arrival) []arrival {
	for {
		bi, bt := -1, never
		for i, nb := range a.nextBurst {
			if nb < bt {
				bi, bt = i, nb
			}
		}
		switch {
		case bt <= t && bt <= a.nextRate:
			b := a.cfg.Bursts[bi]
			for range b.Tickets {
				buf = append(buf, arrival{bt, a.partySize()})
			}
			if b.EveryS > 0 && bt < seconds(1e9) {
				a.nextBurst[bi] = bt + seconds(b.EveryS)
			} else {
				a.nextBurst[bi] = never
			}
		case a.nextRate <= t:
			buf = append(buf, arrival{a.nextRate, a.partySize()})
			a.advanceRate(a.nextRate)
		default:
			return buf
		}
	}
}

func (a *arrivals) partySize() int {
	if len(a.partyCDF) <= 1 {
		return 1
	}
	u := a.rng.Float64() * a.partyCDF[len(a.partyCDF)-1]
	for i, c := range a.partyCDF {
		if u < c {
			return i + 1
		}
	}
	return len(a.partyCDF)
}

// seconds converts simulated seconds to a Duration.
func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
