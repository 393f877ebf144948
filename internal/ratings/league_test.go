package ratings

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
)

// The simulated league: a pool of players with hidden true skills, random 5v5 matches between
// two sides on several maps, and outcomes drawn from a logistic truth of the model's own form
// (time-weighted skills with per-side offsets, commanders, a side bias per map), with late
// joiners, early leavers and substitutes, and skills that drift slowly. Each model predicts a
// match before learning from it; after a warm-up we score the predictions.

type leagueConfig struct {
	seed        uint64
	players     int     // pool size
	warmup      int     // matches before scoring starts
	scored      int     // matches scored
	skillSD     float64 // true skills ~ N(0, skillSD^2), in logit units as the model's
	offsetSD    float64 // true side offsets ~ N(0, offsetSD^2)
	commandSD   float64 // true commander skills ~ N(0, commandSD^2)
	drift       float64 // a player's skill takes a N(0, drift^2) step after each match
	maps        int
	sideBias    float64 // the aliens' advantage in logit units on an average map
	mapBiasSD   float64 // per-map deviation of that advantage
	roundS      float64 // the truth's median round length (its participation weighting)
	presence    float64 // the truth's B: an average player's worth over an empty slot
	substitute  float64 // probability a starter leaves early
	replace     float64 // probability a leaver is replaced
	lateStarter float64 // probability a slot's starter joins late
}

func defaultLeague(seed uint64) leagueConfig {
	return leagueConfig{
		seed: seed, players: 200, warmup: 3000, scored: 3000,
		skillSD: 2, offsetSD: 0.5, commandSD: 1, drift: 0.03,
		maps: 8, sideBias: 0.25, mapBiasSD: 0.3, roundS: 1500, presence: 4,
		substitute: 0.15, replace: 0.7, lateStarter: 0.05,
	}
}

type simMatch struct {
	r     Result
	pTrue float64 // the truth's probability that team 0 wins
	g     float64 // the outcome for team 0
}

func simulateLeague(cfg leagueConfig) []simMatch {
	rng := rand.New(rand.NewPCG(cfg.seed, cfg.seed^0x9e3779b97f4a7c15))
	type truth struct {
		skill, offset, command float64
		likesCommand           bool
	}
	pool := make([]truth, cfg.players)
	for i := range pool {
		pool[i] = truth{rng.NormFloat64() * cfg.skillSD, rng.NormFloat64() * cfg.offsetSD,
			rng.NormFloat64() * cfg.commandSD, rng.Float64() < 0.2}
	}
	mapBias := make([]float64, cfg.maps)
	for i := range mapBias {
		mapBias[i] = cfg.sideBias + rng.NormFloat64()*cfg.mapBiasSD
	}
	id := func(i int) string { return fmt.Sprintf("p%03d", i) }
	out := make([]simMatch, 0, cfg.warmup+cfg.scored)
	for len(out) < cfg.warmup+cfg.scored {
		dur := 600 + rng.Float64()*1800
		mapIdx := rng.IntN(cfg.maps)
		perm := rng.Perm(cfg.players)
		next := 10 // the next unused pool index in perm, for substitutes
		sides := [2]string{"marines", "aliens"}
		if rng.IntN(2) == 0 {
			sides = [2]string{"aliens", "marines"}
		}
		r := Result{MatchID: fmt.Sprintf("m%d", len(out)), GameType: "ns2", Map: fmt.Sprintf("ns2_map%d", mapIdx), DurationS: dur}
		who := map[string]int{} // id -> pool index, for lookups only
		var played []int        // pool indexes in order, for the drift (no map-order randomness)
		for ti := range 2 {
			team := Team{Side: sides[ti]}
			var fullTimers []int // indexes into team.Players
			for slot := range 5 {
				pi := perm[ti*5+slot]
				joined := 0.0
				if rng.Float64() < cfg.lateStarter {
					joined = rng.Float64() * 0.3 * dur
				}
				left := dur
				if rng.Float64() < cfg.substitute {
					left = joined + (0.1+0.8*rng.Float64())*(dur-joined)
					if rng.Float64() < cfg.replace {
						sub := perm[next]
						next++
						team.Players = append(team.Players, Player{ID: id(sub), JoinedS: left, LeftS: dur})
						who[id(sub)] = sub
						played = append(played, sub)
					}
				}
				if joined == 0 && left == dur {
					fullTimers = append(fullTimers, len(team.Players))
				}
				team.Players = append(team.Players, Player{ID: id(pi), JoinedS: joined, LeftS: left})
				who[id(pi)] = pi
				played = append(played, pi)
			}
			if len(fullTimers) > 0 {
				c := fullTimers[rng.IntN(len(fullTimers))]
				if rng.Float64() < 0.8 { // most often one who likes commanding, if any
					var likers []int
					for _, ft := range fullTimers {
						if pool[who[team.Players[ft].ID]].likesCommand {
							likers = append(likers, ft)
						}
					}
					if len(likers) > 0 {
						c = likers[rng.IntN(len(likers))]
					}
				}
				team.Players[c].CommanderS = dur * (0.6 + 0.4*rng.Float64())
			}
			r.Teams = append(r.Teams, team)
		}
		// The truth: the model's form with a fixed round length and the true values.
		k := 2 / cfg.roundS
		var sumT, sumC, x, y float64
		for ti, team := range r.Teams {
			ts := teamSign(ti)
			sigma := 1.0 // aliens sort first: SideA
			if team.Side == "marines" {
				sigma = -1
			}
			for _, p := range team.Players {
				tr := pool[who[p.ID]]
				t := presence(p.JoinedS, p.LeftS, k)
				c := presence(p.JoinedS, p.JoinedS+p.CommanderS, k)
				sumT += t
				sumC += c
				x += ts * t * (cfg.presence + tr.skill + sigma*tr.offset)
				y += ts * c * tr.command
			}
		}
		logit0 := x / sumT
		if sumC > 0 {
			logit0 += y / sumC
		}
		if sides[0] == "aliens" {
			logit0 += mapBias[mapIdx]
		} else {
			logit0 -= mapBias[mapIdx]
		}
		p := sigmoid(logit0)
		w := 1
		g := 0.0
		if rng.Float64() < p {
			w, g = 0, 1
		}
		r.Winner = &w
		out = append(out, simMatch{r: r, pTrue: p, g: g})
		for _, pi := range played {
			pool[pi].skill += rng.NormFloat64() * cfg.drift
		}
	}
	return out
}

// score accumulates log loss and accuracy of predictions of team 0 winning.
type score struct {
	n       int
	logLoss float64
	correct float64
}

func (s *score) add(p, g float64) {
	p = min(max(p, 1e-12), 1-1e-12)
	s.logLoss -= g*math.Log(p) + (1-g)*math.Log(1-p)
	switch {
	case p == 0.5:
		s.correct += 0.5
	case (p > 0.5) == (g == 1):
		s.correct++
	}
	s.n++
}

func (s score) LogLoss() float64  { return s.logLoss / float64(s.n) }
func (s score) Accuracy() float64 { return s.correct / float64(s.n) }
func (s score) String() string {
	return fmt.Sprintf("log loss %.4f, accuracy %.1f%%", s.LogLoss(), 100*s.Accuracy())
}

func evalModel(tb testing.TB, m Model, ms []simMatch, warmup int) score {
	var st State
	var sc score
	for i, sm := range ms {
		o, err := st.Apply(m, sm.r)
		if err != nil {
			tb.Fatalf("match %d: %v", i, err)
		}
		if i >= warmup {
			sc.add(o.WinProbability[0], sm.g)
		}
	}
	return sc
}

// evalElo is the baseline: team Elo on the average rating of everyone listed, every player
// moving by K (G - E) whatever their time on the server.
func evalElo(ms []simMatch, warmup int, k float64) score {
	rating := map[string]float64{}
	var sc score
	for i, sm := range ms {
		var avg [2]float64
		for ti, t := range sm.r.Teams {
			for _, p := range t.Players {
				r, ok := rating[p.ID]
				if !ok {
					r = 1500
				}
				avg[ti] += r / float64(len(t.Players))
			}
		}
		e := 1 / (1 + math.Pow(10, (avg[1]-avg[0])/400))
		if i >= warmup {
			sc.add(e, sm.g)
		}
		for ti, t := range sm.r.Teams {
			for _, p := range t.Players {
				r, ok := rating[p.ID]
				if !ok {
					r = 1500
				}
				rating[p.ID] = r + teamSign(ti)*k*(sm.g-e)
			}
		}
	}
	return sc
}

func evalTruth(ms []simMatch, warmup int) score {
	var sc score
	for _, sm := range ms[warmup:] {
		sc.add(sm.pTrue, sm.g)
	}
	return sc
}

var eloKs = []float64{4, 8, 12, 16, 24, 32, 48}

// bestElo tunes K on the scored matches themselves: an optimistic baseline.
func bestElo(ms []simMatch, warmup int) (score, float64) {
	var best score
	var bestK float64
	for _, k := range eloKs {
		if s := evalElo(ms, warmup, k); bestK == 0 || s.LogLoss() < best.LogLoss() {
			best, bestK = s, k
		}
	}
	return best, bestK
}

func TestLeagueModelBeatsEloAndNearsTheTruth(t *testing.T) {
	cfg := defaultLeague(20240601) // not a seed the defaults were tuned on
	ms := simulateLeague(cfg)
	truth := evalTruth(ms, cfg.warmup)
	model := evalModel(t, DefaultModel(), ms, cfg.warmup)
	elo, k := bestElo(ms, cfg.warmup)
	noBias := DefaultNS2()
	noBias.BiasPrior = 1e12 // F stays ~0
	t.Logf("%d players, %d warm-up matches, %d scored", cfg.players, cfg.warmup, cfg.scored)
	t.Logf("truth:               %v", truth)
	t.Logf("model (defaults):    %v", model)
	t.Logf("model without bias:  %v", evalModel(t, noBias, ms, cfg.warmup))
	t.Logf("Elo (best K=%g):     %v", k, elo)
	t.Logf("always 50%%:          log loss %.4f", math.Ln2)

	// Measured when written: truth 0.6079, model 0.6383, Elo 0.6716 (K=12). Most of the
	// model's gap to the truth is what 5v5 results can tell about one player: a game carries
	// about p(1-p) w^2 = 0.25 * 0.1^2 = 0.0025 of Fisher information on a skill, so after the
	// ~150 games of the warm-up even an exact posterior (prior sd 2) has an sd near
	// 1/sqrt(150 * 0.0025 + 1/4) = 1.3.
	if model.LogLoss() > elo.LogLoss()-0.015 {
		t.Errorf("model log loss %.4f does not beat Elo's %.4f by 0.015", model.LogLoss(), elo.LogLoss())
	}
	if gap := model.LogLoss() - truth.LogLoss(); gap > 0.04 {
		t.Errorf("model log loss %.4f is %.4f above the truth's %.4f, want within 0.04", model.LogLoss(), gap, truth.LogLoss())
	}
	if model.Accuracy() < elo.Accuracy()-0.01 {
		t.Errorf("model accuracy %.3f is well below Elo's %.3f", model.Accuracy(), elo.Accuracy())
	}
}

// TestTuneLeague is where the defaults come from: one-at-a-time sweeps of each parameter
// around the defaults, and a joint grid of c and a (which trade off), each scored as the mean
// log loss over three seeds that the league test does not use. It runs only with
// RATINGS_TUNE=1 (about half a minute): RATINGS_TUNE=1 go test -run TuneLeague -v ./internal/ratings/
func TestTuneLeague(t *testing.T) {
	if os.Getenv("RATINGS_TUNE") == "" {
		t.Skip("set RATINGS_TUNE=1 to run the sweeps")
	}
	seeds := []uint64{1, 2, 3}
	leagues := make([][]simMatch, len(seeds))
	var truth, elo float64
	for i, s := range seeds {
		cfg := defaultLeague(s)
		leagues[i] = simulateLeague(cfg)
		truth += evalTruth(leagues[i], cfg.warmup).LogLoss() / float64(len(seeds))
		e, _ := bestElo(leagues[i], cfg.warmup)
		elo += e.LogLoss() / float64(len(seeds))
	}
	loss := func(m NS2) float64 {
		var ll float64
		for i, ms := range leagues {
			ll += evalModel(t, m, ms, defaultLeague(seeds[i]).warmup).LogLoss() / float64(len(seeds))
		}
		return ll
	}
	var b strings.Builder
	fmt.Fprintf(&b, "truth %.4f, best Elo %.4f, defaults %.4f\n", truth, elo, loss(DefaultNS2()))
	sweeps := []struct {
		name   string
		values []float64
		set    func(*NS2, float64)
	}{
		{"BaseSkill", []float64{0, 2, 4, 6, 8}, func(m *NS2, v float64) { m.BaseSkill = v }},
		{"Constant", []float64{0, 0.05, 0.1, 0.3, 1}, func(m *NS2, v float64) { m.Constant = v }},
		{"Adagrad", []float64{0.3, 0.4, 0.5, 0.6, 0.8, 1}, func(m *NS2, v float64) { m.Adagrad = v }},
		{"Epsilon", []float64{1e-4, 1e-3, 1e-2, 3e-2, 0.1}, func(m *NS2, v float64) { m.Epsilon = v }},
		{"OffsetRate", []float64{0, 0.25, 0.5, 1, 2}, func(m *NS2, v float64) { m.OffsetRate = v }},
		{"BiasPrior", []float64{5, 20, 50, 100, 1e12}, func(m *NS2, v float64) { m.BiasPrior = v }},
		{"RoundS", []float64{0, 900, 1500, 2400}, func(m *NS2, v float64) { m.RoundS = v }},
	}
	for _, sw := range sweeps {
		fmt.Fprintf(&b, "%-10s", sw.name)
		for _, v := range sw.values {
			m := DefaultNS2()
			sw.set(&m, v)
			fmt.Fprintf(&b, "  %g: %.4f", v, loss(m))
		}
		b.WriteString("\n")
	}
	b.WriteString("c \\ a     ")
	as := []float64{0.3, 0.5, 0.7, 1}
	for _, a := range as {
		fmt.Fprintf(&b, "  %-6g", a)
	}
	b.WriteString("\n")
	for _, c := range []float64{0, 0.05, 0.1, 0.3} {
		fmt.Fprintf(&b, "%-10g", c)
		for _, a := range as {
			m := DefaultNS2()
			m.Constant, m.Adagrad = c, a
			fmt.Fprintf(&b, "  %.4f", loss(m))
		}
		b.WriteString("\n")
	}
	// Two assumptions the defaults lean on, varied: faster drift (for c) and larger true side
	// offsets (for the offset rate).
	scenarios := []struct {
		name   string
		mod    func(*leagueConfig)
		varied string
		values []float64
		set    func(*NS2, float64)
	}{
		{"drift 0.1/game", func(c *leagueConfig) { c.drift = 0.1 }, "Constant", []float64{0, 0.05, 0.1, 0.3}, func(m *NS2, v float64) { m.Constant = v }},
		{"offset sd 1.5", func(c *leagueConfig) { c.offsetSD = 1.5 }, "OffsetRate", []float64{0, 0.5, 1, 2}, func(m *NS2, v float64) { m.OffsetRate = v }},
	}
	for _, sc := range scenarios {
		var ms [][]simMatch
		for _, s := range seeds {
			cfg := defaultLeague(s)
			sc.mod(&cfg)
			ms = append(ms, simulateLeague(cfg))
		}
		fmt.Fprintf(&b, "%s, %s", sc.name, sc.varied)
		for _, v := range sc.values {
			m := DefaultNS2()
			sc.set(&m, v)
			var ll float64
			for i := range ms {
				ll += evalModel(t, m, ms[i], defaultLeague(seeds[i]).warmup).LogLoss() / float64(len(ms))
			}
			fmt.Fprintf(&b, "  %g: %.4f", v, ll)
		}
		b.WriteString("\n")
	}
	t.Log("\n" + b.String())
}
