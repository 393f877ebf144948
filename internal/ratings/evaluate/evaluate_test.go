package evaluate

import (
	"bytes"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/ratings"
	"github.com/matchmakerhq/matchmaker/internal/ratings/league"
)

func TestScoreByHand(t *testing.T) {
	t.Parallel()
	var s Score
	s.Add(0.8, 1)   // right
	s.Add(0.3, 1)   // wrong
	s.Add(0.5, 0)   // a coin toss: half right
	s.Add(0.6, 0.5) // a draw: scored in log loss and Brier, not in accuracy
	m := s.Metrics()
	wantLL := -(math.Log(0.8) + math.Log(0.3) + math.Log(0.5) + 0.5*math.Log(0.6) + 0.5*math.Log(0.4)) / 4
	wantBrier := (0.04 + 0.49 + 0.25 + 0.01) / 4
	if m.N != 4 || math.Abs(m.Accuracy-1.5/3) > 1e-15 || math.Abs(m.LogLoss-wantLL) > 1e-15 || math.Abs(m.Brier-wantBrier) > 1e-15 {
		t.Errorf("metrics %+v, want n 4, accuracy 0.5, log loss %v, Brier %v", m, wantLL, wantBrier)
	}
	if m := (&Score{}).Metrics(); m.N != 0 || !math.IsNaN(m.LogLoss) || !math.IsNaN(m.Slope) {
		t.Errorf("empty score: %+v", m)
	}
}

// TestSlopeRecoversMiscalibration draws outcomes from sigmoid(b logit p) for known b: the
// fitted slope must find b, and the fit must be the maximum of the likelihood (its gradient,
// computed here by brute force, vanishes there).
func TestSlopeRecoversMiscalibration(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for _, b := range []float64{0.5, 1, 1.8} {
		var s Score
		for range 40000 {
			x := rng.NormFloat64()
			g := 0.0
			if rng.Float64() < 1/(1+math.Exp(-b*x)) {
				g = 1
			}
			s.Add(1/(1+math.Exp(-x)), g)
		}
		m := s.Metrics()
		if math.Abs(m.Slope-b) > 0.05*b {
			t.Errorf("slope %.3f, want %.3f", m.Slope, b)
		}
		a, fb := logisticFit(s.logits, s.results)
		var ga, gb float64
		for i, x := range s.logits {
			d := s.results[i] - 1/(1+math.Exp(-(a+fb*x)))
			ga += d
			gb += d * x
		}
		if math.Abs(ga) > 1e-6 || math.Abs(gb) > 1e-6 {
			t.Errorf("gradient at the fit (%v, %v): %v, %v", a, fb, ga, gb)
		}
	}
	var flat Score // no spread in the predictions: no slope
	flat.Add(0.5, 1)
	flat.Add(0.5, 0)
	if m := flat.Metrics(); !math.IsNaN(m.Slope) {
		t.Errorf("slope of constant predictions = %v, want NaN", m.Slope)
	}
}

// TestHindsightBounds draws outcomes from sigmoid(a + b logit p) for known a and b: Rescaled
// and Recalibrated must be the log loss of the best temperature and of the best recalibration
// (no b, nor (a, b), of a grid around the fit scores below them), Recalibrated near the truth's,
// and on calibrated predictions both must be the log loss itself, to the fit's noise.
func TestHindsightBounds(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct{ a, b float64 }{{0, 1}, {0, 1.8}, {0.4, 0.6}} {
		var s Score
		var truth float64
		for range 20000 {
			x := 1.5 * rng.NormFloat64()
			q := 1 / (1 + math.Exp(-(c.a + c.b*x)))
			g := 0.0
			if rng.Float64() < q {
				g = 1
			}
			truth -= g*math.Log(q) + (1-g)*math.Log(1-q)
			s.Add(1/(1+math.Exp(-x)), g)
		}
		truth /= 20000
		m := s.Metrics()
		if !(m.Recalibrated <= m.Rescaled && m.Rescaled <= m.LogLoss) {
			t.Errorf("a %v b %v: recalibrated %.5f, rescaled %.5f, log loss %.5f: want in that order", c.a, c.b, m.Recalibrated, m.Rescaled, m.LogLoss)
		}
		if math.Abs(m.Recalibrated-truth) > 0.005 {
			t.Errorf("a %v b %v: recalibrated %.5f, the truth %.5f", c.a, c.b, m.Recalibrated, truth)
		}
		for d := -0.2; d <= 0.2; d += 0.05 {
			if l := s.fittedLoss(0, scaleFit(s.logits, s.results)+d); l < m.Rescaled-1e-12 {
				t.Errorf("a %v b %v: temperature off by %v scores %.6f, below the rescaled %.6f", c.a, c.b, d, l, m.Rescaled)
			}
			if l := s.fittedLoss(d, m.Slope+d); l < m.Recalibrated-1e-12 {
				t.Errorf("a %v b %v: (a, b) off by %v scores %.6f, below the recalibrated %.6f", c.a, c.b, d, l, m.Recalibrated)
			}
		}
		if c.a == 0 && c.b == 1 && m.LogLoss-m.Recalibrated > 0.001 {
			t.Errorf("calibrated predictions: log loss %.5f, recalibrated %.5f: want within the fit's noise", m.LogLoss, m.Recalibrated)
		}
	}
	var flat Score
	flat.Add(0.5, 1)
	flat.Add(0.5, 0)
	if m := flat.Metrics(); !math.IsNaN(m.Rescaled) || !math.IsNaN(m.Recalibrated) {
		t.Errorf("constant predictions: rescaled %v, recalibrated %v, want NaN", m.Rescaled, m.Recalibrated)
	}
}

func TestReadATP(t *testing.T) {
	t.Parallel()
	in := "date,event,round,surface,team_a,team_b,winner,retired\n" +
		"20000103,2000-451,R16,Hard,1+2,3+4,1,0\n" +
		"20000110,2000-452,QF,Clay,3+4,5+6,0,1\n"
	got, err := Read(strings.NewReader(in), "atp")
	if err != nil {
		t.Fatal(err)
	}
	one, zero := 1, 0
	full := func(ids ...string) []ratings.Player {
		var ps []ratings.Player
		for _, id := range ids {
			ps = append(ps, ratings.Player{ID: id, LeftS: 1})
		}
		return ps
	}
	want := []ratings.Result{
		{MatchID: "atp-1", GameType: "tennis", Map: "Hard", DurationS: 1, Winner: &one, EndedAt: time.Date(2000, 1, 3, 0, 0, 0, 0, time.UTC),
			Teams: []ratings.Team{{Side: "a", Players: full("1", "2")}, {Side: "b", Players: full("3", "4")}}},
		{MatchID: "atp-2", GameType: "tennis", Map: "Clay", DurationS: 1, Winner: &zero, EndedAt: time.Date(2000, 1, 10, 0, 0, 0, 0, time.UTC),
			Teams: []ratings.Team{{Side: "a", Players: full("3", "4")}, {Side: "b", Players: full("5", "6")}}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	for _, bad := range []string{"a,b\n", "date,event,round,surface,team_a,team_b,winner,retired\n1,e,r,Hard,1,2,2,0\n",
		"date,event,round,surface,team_a,team_b,winner,retired\n2000-01-03,e,r,Hard,1,2,1,0\n"} {
		if _, err := Read(strings.NewReader(bad), "atp"); err == nil {
			t.Errorf("%q: want an error", bad)
		}
	}
	if _, err := Read(strings.NewReader(""), "csv"); err == nil {
		t.Error("unknown format: want an error")
	}
}

func TestReadJSONLDefaults(t *testing.T) {
	t.Parallel()
	in := `{"match_id":"m1","context":{"game_type":"ns2","mutators":["nocheat"]},"map":"ns2_summit","duration_s":600,` +
		`"teams":[{"side":"marines","players":[{"id":"a","commander_s":500},{"bot":"B","joined_s":60,"left_s":300}]},` +
		`{"side":"aliens","players":[{"id":"c"}]}],"winner":null,"extra":true}` + "\n\n" +
		`{"match_id":"m2","context":{"game_type":"ns2"},"map":"x","duration_s":60,"teams":[],"winner":1}` + "\n"
	got, err := Read(strings.NewReader(in), "results-jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Winner != nil || *got[1].Winner != 1 || got[0].Mutators[0] != "nocheat" {
		t.Fatalf("got %+v", got)
	}
	ps := got[0].Teams[0].Players
	if (ps[0] != ratings.Player{ID: "a", LeftS: 600, CommanderS: 500}) || (ps[1] != ratings.Player{Bot: "B", JoinedS: 60, LeftS: 300}) {
		t.Errorf("players %+v", ps)
	}
	if _, err := Read(strings.NewReader(`{"match_id":"m"`), "results-jsonl"); err == nil {
		t.Error("a line that is not JSON: want an error")
	}
	// Bodies the service would refuse read as results that fail validation: Prepare skips them.
	refused := `{"match_id":"a","context":{"game_type":"g"},"map":"m","teams":[],"winner":0}` + "\n" + // no duration_s
		`{"match_id":"b","context":{"game_type":"g"},"map":"m","duration_s":1,"teams":[]}` + "\n" + // no winner
		`{"match_id":"c","context":{"game_type":"g"},"map":"m","duration_s":1,"teams":[],"winner":"x"}`
	got, err = Read(strings.NewReader(refused), "results-jsonl")
	if err != nil || len(got) != 3 {
		t.Fatalf("%d results, %v", len(got), err)
	}
	for _, r := range got {
		if r.Validate() == nil {
			t.Errorf("%+v is valid", r)
		}
	}
}

// TestJSONLRoundTrip writes a simulated league and reads it back unchanged: the export the
// peers' tool replays is the history the Go models see.
func TestJSONLRoundTrip(t *testing.T) {
	t.Parallel()
	cfg := league.Newcomers(3)
	cfg.Matches = 300
	want := league.Results(league.Simulate(cfg))
	draw := want[0]
	draw.Winner = nil
	want = append(want, draw)
	var b bytes.Buffer
	if err := WriteJSONL(&b, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(&b, "results-jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Error("the league read back differs from the league written")
	}
}

func TestPrepareSkipsWhatTheServiceRejects(t *testing.T) {
	t.Parallel()
	cfg := league.Default(4)
	cfg.Matches = 10
	h := league.Results(league.Simulate(cfg))
	bad := h[3]
	bad.MatchID, bad.DurationS = "bad", -1
	h = append(h, h[2], bad) // a repeated match id and an invalid result
	rp, err := Prepare(h, 0.2)
	if err != nil {
		t.Fatal(err)
	}
	if rp.Len() != 10 || rp.Skipped != 2 || rp.Burnin != 2 || rp.Scored(1) || !rp.Scored(2) {
		t.Errorf("len %d, skipped %d, burn-in %d", rp.Len(), rp.Skipped, rp.Burnin)
	}
	if _, err := Prepare(h, 1); err == nil {
		t.Error("burn-in 1: want an error")
	}
	reports, err := rp.RunAll([]ratings.Model{ratings.DefaultNS2()})
	if err != nil || len(reports) != 1 || reports[0].N != 8 || reports[0].Model != "ns2" {
		t.Errorf("reports %+v, %v", reports, err)
	}
	var out bytes.Buffer
	Print(&out, reports)
	if !strings.HasPrefix(out.String(), "model  ") || !strings.Contains(out.String(), "\nns2  ") {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestRunPredictsBeforeLearning checks the replay against the service's own sequence: the
// score of a model is built from the win probability Apply reports before it learns.
func TestRunPredictsBeforeLearning(t *testing.T) {
	t.Parallel()
	cfg := league.Newcomers(8)
	cfg.Matches = 200
	h := league.Results(league.Simulate(cfg))
	rp, _ := Prepare(h, 0.5)
	m := ratings.DefaultModel()
	got, err := rp.Run(m)
	if err != nil {
		t.Fatal(err)
	}
	var st ratings.State
	var s Score
	for i, r := range h {
		o, _ := m.Apply(st.Ratings, st.Bias, r)
		if i >= 100 {
			s.Add(o.WinProbability[0], r.Score())
		}
		st.Record(o)
	}
	if want := s.Metrics(); got.Metrics != want {
		t.Errorf("run %+v, want %+v", got.Metrics, want)
	}
}
