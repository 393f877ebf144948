package sim

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

func TestArrivalsFollowTheRateAndTheDailyCurve(t *testing.T) {
	t.Parallel()
	cfg := ArrivalConfig{RatePerS: 1, DailyAmplitude: 0.5, PeakHour: 20}
	a := newArrivals(cfg, rand.New(rand.NewPCG(1, 2)))
	days := 8
	got := a.until(time.Duration(days)*24*time.Hour, nil)
	var perHour [24]float64
	for i, x := range got {
		if i > 0 && x.at < got[i-1].at {
			t.Fatalf("arrival %d at %v comes before %v", i, x.at, got[i-1].at)
		}
		if x.size != 1 {
			t.Fatalf("a party of %d without party sizes", x.size)
		}
		perHour[int(x.at.Hours())%24]++
	}
	want := cfg.RatePerS * 86400 * float64(days)
	if n := float64(len(got)); math.Abs(n-want) > 4*math.Sqrt(want) {
		t.Errorf("%v arrivals in %d days, want %v +- 4 sd", n, days, want)
	}
	// Hour h's expected count is the integral of the rate over the hour.
	for h, n := range perHour {
		phase0, phase1 := 2*math.Pi*(float64(h)-20)/24, 2*math.Pi*(float64(h+1)-20)/24
		mean := cfg.RatePerS * 3600 * float64(days) * (1 + cfg.DailyAmplitude*(math.Sin(phase1)-math.Sin(phase0))/(phase1-phase0))
		if math.Abs(n-mean) > 4*math.Sqrt(mean) {
			t.Errorf("hour %d: %v arrivals, want %.0f +- 4 sd", h, n, mean)
		}
	}
	if perHour[20] < 2.5*perHour[8] {
		t.Errorf("peak hour %v against trough hour %v: want the ratio near (1+A)/(1-A) = 3", perHour[20], perHour[8])
	}
}

func TestBurstsAndPartySizes(t *testing.T) {
	t.Parallel()
	cfg := ArrivalConfig{Bursts: []Burst{{AtS: 10, EveryS: 600, Tickets: 500}, {AtS: 30, Tickets: 7}},
		PartySizes: []float64{6, 3, 1}}
	a := newArrivals(cfg, rand.New(rand.NewPCG(3, 4)))
	if got := a.next(); got != 10*time.Second {
		t.Fatalf("next = %v, want 10s", got)
	}
	got := a.until(20*time.Minute, nil)
	at := map[time.Duration]int{}
	var sizes [4]float64
	for _, x := range got {
		at[x.at]++
		sizes[x.size]++
	}
	want := map[time.Duration]int{10 * time.Second: 500, 30 * time.Second: 7, 610 * time.Second: 500, 1210 * time.Second: 0}
	for when, n := range want {
		if at[when] != n {
			t.Errorf("%d tickets at %v, want %d", at[when], when, n)
		}
	}
	if len(at) != 3 {
		t.Errorf("arrivals at %d distinct times, want 3: %v", len(at), at)
	}
	if a.next() != 1210*time.Second {
		t.Errorf("next = %v, want 1210s", a.next())
	}
	n := float64(len(got))
	for size, w := range []float64{0, 0.6, 0.3, 0.1} {
		if math.Abs(sizes[size]/n-w) > 4*math.Sqrt(w*(1-w)/n)+1e-9 {
			t.Errorf("party size %d: share %.3f, want %.1f", size, sizes[size]/n, w)
		}
	}
}

func TestArrivalConfigValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  ArrivalConfig
		ok   bool
	}{
		{"rate", ArrivalConfig{RatePerS: 1}, true},
		{"burst", ArrivalConfig{Bursts: []Burst{{Tickets: 1}}}, true},
		{"nothing arrives", ArrivalConfig{}, false},
		{"negative rate", ArrivalConfig{RatePerS: -1}, false},
		{"amplitude over 1", ArrivalConfig{RatePerS: 1, DailyAmplitude: 1.5}, false},
		{"peak hour 24", ArrivalConfig{RatePerS: 1, PeakHour: 24}, false},
		{"empty burst", ArrivalConfig{Bursts: []Burst{{AtS: 1}}}, false},
		{"burst too often", ArrivalConfig{Bursts: []Burst{{Tickets: 1, EveryS: 0.5}}}, false},
		{"party larger than a team", ArrivalConfig{RatePerS: 1, PartySizes: []float64{1, 1, 1, 1, 1, 1}}, false},
		{"party weights all zero", ArrivalConfig{RatePerS: 1, PartySizes: []float64{0, 0}}, false},
		{"NaN rate", ArrivalConfig{RatePerS: math.NaN()}, false},
	} {
		if err := tc.cfg.validate(5); (err == nil) != tc.ok {
			t.Errorf("%s: validate = %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

func TestMaxPartySize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		sizes []float64
		want  int
	}{{nil, 1}, {[]float64{1}, 1}, {[]float64{70, 18, 7, 3, 2}, 5}, {[]float64{1, 2, 0, 0}, 2}, {[]float64{0, 1}, 2}} {
		if got := (ArrivalConfig{PartySizes: tc.sizes}).maxPartySize(); got != tc.want {
			t.Errorf("party sizes %v: largest %d, want %d", tc.sizes, got, tc.want)
		}
	}
}
