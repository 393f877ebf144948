package sim

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/skill"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// smallScenario is a live queue small enough for a test: parties, a daily curve, every kind
// of configuration and a sweep.
func smallScenario(matches int) Scenario {
	sc, err := Preset("live")
	if err != nil {
		panic(err)
	}
	sc.Matches = matches
	sc.Population.Players = 2000
	sc.Sweep = []float64{0.5, 2}
	return sc
}

// testPreset is the preset called name playing matches matches; under -race or -short, where
// the simulator runs many times slower, a third of them (at least 100).
func testPreset(name string, matches int) Scenario {
	sc, err := Preset(name)
	if err != nil {
		panic(err)
	}
	sc.Matches = matches
	if raceDetector || testing.Short() {
		sc.Matches = max(matches/3, 100)
	}
	return sc
}

// reportBytes is everything a comparison writes but the picture.
func reportBytes(t *testing.T, c *Comparison) []byte {
	t.Helper()
	var b bytes.Buffer
	for _, err := range []error{WriteTable(&b, c.Summaries), WriteCSV(&b, c.Summaries),
		WriteTimelineCSV(&b, c.Results), WriteSweepCSV(&b, c.Sweep)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	return b.Bytes()
}

func TestSameSeedSameReport(t *testing.T) {
	t.Parallel()
	sc := smallScenario(600)
	ctx := context.Background()
	one, err := Compare(ctx, &sc, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	three, err := Compare(ctx, &sc, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := reportBytes(t, one), reportBytes(t, three)
	if !bytes.Equal(a, b) {
		t.Fatalf("same seed, different reports (1 worker, then 3):\n%s\n---\n%s", a, b)
	}
	sc.Seed++
	other, err := Compare(ctx, &sc, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, reportBytes(t, other)) {
		t.Fatal("another seed gave the same report")
	}
}

// TestLearnedRatingRunsTheScenariosModel: the learned configuration learns with the model
// the scenario names, so the models give different reports, and no name is the service's
// default.
func TestLearnedRatingRunsTheScenariosModel(t *testing.T) {
	t.Parallel()
	sc := smallScenario(400)
	sc.Sweep = nil
	for _, cf := range sc.Configurations {
		if cf.Rating == "learned" {
			sc.Configurations = []Configuration{cf}
		}
	}
	ctx := context.Background()
	reports := map[string][]byte{}
	for _, name := range append([]string{""}, ratings.ModelNames()...) {
		sc.RatingModel = name
		c, err := Compare(ctx, &sc, 2, nil)
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		reports[name] = reportBytes(t, c)
	}
	if !bytes.Equal(reports[""], reports[ratings.DefaultModel().Name()]) {
		t.Error("no rating_model did not run the service's default")
	}
	for _, name := range ratings.ModelNames() {
		if name != ratings.DefaultModel().Name() && bytes.Equal(reports[name], reports[ratings.DefaultModel().Name()]) {
			t.Errorf("%s gave the same report as the default model", name)
		}
	}
}

// scripted is a Matcher for tests: once the oldest ticket has waited Wait it matches the
// first 2 x TeamSize waiting players in queue order (team 0 the first half); or it plays
// Script's matches.
type scripted struct {
	TeamSize int
	Wait     time.Duration
	Script   func(waiting []Ticket) ([]Match, []int)
	seen     [][]Ticket // the queue at every tick that made a match
}

func (s *scripted) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	if s.Script != nil {
		return s.Script(waiting)
	}
	var players []int
	for _, t := range waiting {
		players = append(players, t.Players...)
	}
	if len(players) < 2*s.TeamSize || now-waiting[0].Created < s.Wait {
		return nil, nil
	}
	s.seen = append(s.seen, slices.Clone(waiting))
	return []Match{{Teams: [2][]int{players[:s.TeamSize], players[s.TeamSize : 2*s.TeamSize]}}}, nil
}

// TestReportsOnASmallRun runs two matches of a scripted queue and recomputes every figure
// of the summary from what the queue saw and the population.
func TestReportsOnASmallRun(t *testing.T) {
	t.Parallel()
	sc, _ := Preset("thesis")
	sc.Matches, sc.TeamSize = 2, 2
	sc.Population.Players = 8
	sc.Arrivals = ArrivalConfig{Bursts: []Burst{{AtS: 0, EveryS: 100, Tickets: 4}}}
	cf := Configuration{Name: "scripted", Matcher: "pairing"}
	r, err := newRun(&sc, cf)
	if err != nil {
		t.Fatal(err)
	}
	m := &scripted{TeamSize: 2, Wait: 5 * time.Second}
	r.matcher = m
	if err := r.loop(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	res := r.res
	s := Summarize(res)
	if s.Matches != 2 || len(m.seen) != 2 || s.Tickets != 8 || s.Expired != 0 || s.Refused != 0 {
		t.Fatalf("summary %+v after %d scripted matches", s, len(m.seen))
	}
	// The second burst comes at 100 s; each match is made 5 s after its burst.
	if res.Matches[0].AtS != 5 || res.Matches[1].AtS != 105 {
		t.Errorf("matches made at %v and %v s, want 5 and 105", res.Matches[0].AtS, res.Matches[1].AtS)
	}
	if s.WaitMedian != 5 || s.WaitP90 != 5 || len(res.Waits) != 8 {
		t.Errorf("waits %v: median %v p90 %v, want 8 waits of 5 s", res.Waits, s.WaitMedian, s.WaitP90)
	}
	pop := NewPopulation(sc.Population, ThesisWeights, stream(sc.Seed, streamPopulation))
	var avg, pairs []float64
	oneSided := 0
	for i, q := range m.seen {
		var r0, r1, s0, s1 float64
		for k := range 2 {
			a, b := q[k], q[2+k]
			if len(a.Players) != 1 || len(b.Players) != 1 {
				t.Fatal("the thesis preset makes solo tickets")
			}
			want := skill.Rating(pop[a.Players[0]].Stats, skill.Coefficients(ThesisDefault))
			if a.Ratings[0] != want {
				t.Fatalf("ticket rating %v, eq. 6.5 gives %v", a.Ratings[0], want)
			}
			r0, r1 = r0+a.Ratings[0], r1+b.Ratings[0]
			s0, s1 = s0+pop[a.Players[0]].Skill, s1+pop[b.Players[0]].Skill
			pairs = append(pairs, math.Abs(a.Ratings[0]-b.Ratings[0]))
		}
		avg = append(avg, math.Abs(r0-r1)/2)
		rec := res.Matches[i]
		if rec.AverageDifference != math.Abs(r0-r1)/2 || math.Abs(rec.SkillGap-math.Abs(s0-s1)/2) > 1e-12 ||
			math.Abs(rec.RoundP-RoundProbability(s0/2, s1/2)) > 1e-12 {
			t.Errorf("match %d: record %+v, want average difference %v, skill gap %v", i, rec, math.Abs(r0-r1)/2, math.Abs(s0-s1)/2)
		}
		if rec.Rounds[0]+rec.Rounds[1] != 11 {
			t.Errorf("match %d: rounds %v", i, rec.Rounds)
		}
		if OneSided(rec.Rounds) {
			oneSided++
		}
	}
	slices.Sort(avg)
	if s.AverageDifference.Mean != (avg[0]+avg[1])/2 || s.AverageDifference.Median != avg[0] || s.AverageDifference.Max != avg[1] {
		t.Errorf("average difference %+v, want mean/median/max of %v", s.AverageDifference, avg)
	}
	slices.Sort(pairs)
	if got := slices.Sorted(slices.Values(res.PairDifferences)); !slices.Equal(got, pairs) {
		t.Errorf("pair differences %v, want %v", got, pairs)
	}
	if s.OneSided != float64(oneSided)/2 {
		t.Errorf("one-sided %v, want %v", s.OneSided, float64(oneSided)/2)
	}
	won := 0
	for _, n := range s.WinnerRounds {
		won += n
	}
	if won != 2 {
		t.Errorf("winner rounds %v count %d matches, want 2", s.WinnerRounds, won)
	}
	if !math.IsNaN(s.LogLoss) {
		t.Errorf("the performance rating predicts nothing, yet log loss %v", s.LogLoss)
	}
}

func TestPartiesAndExpiriesAreCounted(t *testing.T) {
	t.Parallel()
	sc, _ := Preset("thesis")
	sc.Matches, sc.TeamSize = 1, 2
	sc.Population.Players = 6
	// Three parties of two: the script puts one player of each of the first two parties on
	// each team, and expires the third party.
	sc.Arrivals = ArrivalConfig{Bursts: []Burst{{AtS: 0, Tickets: 2}, {AtS: 1, Tickets: 1}}, PartySizes: []float64{0, 1}}
	cf := Configuration{Name: "scripted", Matcher: "pairing"}
	r, err := newRun(&sc, cf)
	if err != nil {
		t.Fatal(err)
	}
	r.matcher = &scripted{Script: func(w []Ticket) ([]Match, []int) {
		if len(w) < 3 {
			return nil, nil
		}
		a, b := w[0].Players, w[1].Players
		return []Match{{Teams: [2][]int{{a[0], b[0]}, {a[1], b[1]}}}}, []int{2}
	}}
	if err := r.loop(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	s := Summarize(r.res)
	if s.Parties != 2 || s.PartiesSplit != 2 || s.Expired != 1 || s.Tickets != 3 {
		t.Fatalf("parties %d split %d expired %d tickets %d; want 2, 2, 1, 3", s.Parties, s.PartiesSplit, s.Expired, s.Tickets)
	}
	if len(r.res.Waits) != 6 {
		t.Errorf("%d waits, want 6 (four matched, two expired)", len(r.res.Waits))
	}
	for p, st := range r.state {
		if st != idle {
			t.Errorf("player %d is in state %d after the run", p, st)
		}
	}
}

// TestMatcherMistakesAreErrors: the simulator refuses a matcher that breaks the contract.
func TestMatcherMistakesAreErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		script func(w []Ticket) ([]Match, []int)
		want   string
	}{
		{"player twice", func(w []Ticket) ([]Match, []int) {
			return []Match{{Teams: [2][]int{{w[0].Players[0], w[1].Players[0]}, {w[0].Players[0], w[2].Players[0]}}}}, nil
		}, "not waiting"},
		{"team too small", func(w []Ticket) ([]Match, []int) {
			return []Match{{Teams: [2][]int{{w[0].Players[0]}, {w[1].Players[0]}}}}, nil
		}, "team of 1"},
		{"not a player", func(w []Ticket) ([]Match, []int) {
			return []Match{{Teams: [2][]int{{-1, w[0].Players[0]}, {w[1].Players[0], w[2].Players[0]}}}}, nil
		}, "not waiting"},
		{"matched and expired", func(w []Ticket) ([]Match, []int) {
			return []Match{{Teams: [2][]int{{w[0].Players[0], w[1].Players[0]}, {w[2].Players[0], w[3].Players[0]}}}}, []int{0}
		}, "both matched and expired"},
		{"expired twice", func(w []Ticket) ([]Match, []int) { return nil, []int{1, 1} }, "not a waiting ticket"},
		{"no such ticket", func(w []Ticket) ([]Match, []int) { return nil, []int{len(w)} }, "not a waiting ticket"},
	} {
		sc, _ := Preset("thesis")
		sc.TeamSize, sc.Population.Players = 2, 8
		sc.Arrivals = ArrivalConfig{Bursts: []Burst{{Tickets: 4}}}
		r, err := newRun(&sc, Configuration{Name: "bad", Matcher: "pairing"})
		if err != nil {
			t.Fatal(err)
		}
		r.matcher = &scripted{Script: tc.script}
		if err := r.loop(context.Background(), nil); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one containing %q", tc.name, err, tc.want)
		}
	}
}

// TestThesisTablesShape runs the thesis preset and checks the shape of Tables 8.3 and 8.4,
// through the pairing adapter and through the queue's pass alike: the team-average
// difference falls from about 145 without matchmaking to about 5 with it (the pass's exact
// split goes lower), a little less with the optimised coefficients, and one-sided matches
// fall from no matchmaking to the default to the optimised coefficients (thesis: 54%, 50%,
// 34%). The learned rating gets to know the players as it learns.
func TestThesisTablesShape(t *testing.T) {
	t.Parallel()
	sc, _ := Preset("thesis")
	sc.Matches = 10_000
	if testing.Short() {
		sc.Matches = 4000
	}
	c, err := Compare(context.Background(), &sc, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	WriteTable(&b, c.Summaries)
	t.Log("\n" + b.String())
	by := map[string]Summary{}
	for _, s := range c.Summaries {
		by[s.Name] = s
	}
	none := by["no matchmaking"]
	if d := none.AverageDifference.Mean; d < 125 || d > 165 {
		t.Errorf("no matchmaking: average difference %.1f, thesis 143.5", d)
	}
	if got := none.OneSided; math.Abs(got-0.54) > 0.10 {
		t.Errorf("no matchmaking: one-sided %.3f, more than 10 points from the thesis's 0.54", got)
	}
	for _, m := range []string{"pairing", "tick"} {
		def, opt, learned := by[m+": thesis default"], by[m+": thesis optimised"], by[m+": learned rating"]
		if d := def.AverageDifference.Mean; d < 0.5 || d > 6.5 {
			t.Errorf("%s: default coefficients: average difference %.2f, thesis 4.48", m, d)
		}
		if !(opt.AverageDifference.Mean < def.AverageDifference.Mean) {
			t.Errorf("%s: optimised average difference %.2f not below the default's %.2f (thesis 4.16 < 4.48)",
				m, opt.AverageDifference.Mean, def.AverageDifference.Mean)
		}
		if !(none.OneSided > def.OneSided+0.02 && def.OneSided > opt.OneSided+0.05) {
			t.Errorf("%s: one-sided %.3f / %.3f / %.3f: want no matchmaking > default > optimised, as the thesis's 54/50/34%%",
				m, none.OneSided, def.OneSided, opt.OneSided)
		}
		for _, tc := range []struct {
			s    Summary
			want float64
		}{{def, 0.50}, {opt, 0.34}} {
			if got := tc.s.OneSided; math.Abs(got-tc.want) > 0.10 {
				t.Errorf("%s: one-sided %.3f, more than 10 points from the thesis's %.2f", tc.s.Name, got, tc.want)
			}
		}
		if !(learned.RatingTruthLast > learned.RatingTruthFirst+0.1) {
			t.Errorf("%s: correlation with the truth %.3f at first, %.3f at the end: it does not learn",
				learned.Name, learned.RatingTruthFirst, learned.RatingTruthLast)
		}
	}
	// The pass splits every match's players into the most even teams: on the thesis's
	// solo players its team-average difference is below the greedy pairing's.
	if p, q := by["pairing: thesis default"].AverageDifference.Mean, by["tick: thesis default"].AverageDifference.Mean; !(q < p) {
		t.Errorf("team-average difference %.2f through the pass, %.2f through the pairing adapter", q, p)
	}
}

// guard wraps a run's matcher and checks, at every tick and across the run, what the tick
// matcher promises beyond the simulator's own checks: each ticket's players all in one
// match on one team, every ticket matched at most once, and no player matched again before
// his last match has ended.
type guard struct {
	t       *testing.T
	inner   Matcher
	matchS  time.Duration // how long a match lasts
	matched map[int]bool  // ticket IDs
	busy    map[int]time.Duration
	parties int // tickets of two or more players matched
}

func (g *guard) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	matches, expired := g.inner.Tick(waiting, now)
	owner := map[int]int{}
	for ti, tk := range waiting {
		for _, p := range tk.Players {
			owner[p] = ti
		}
	}
	where := map[int][2]int{} // ticket index -> {match, team} of its players
	count := map[int]int{}
	for mi, m := range matches {
		for side, team := range m.Teams {
			for _, p := range team {
				ti, ok := owner[p]
				if !ok {
					g.t.Fatalf("at %v: player %d matched but not waiting", now, p)
				}
				if end, ok := g.busy[p]; ok && end > now {
					g.t.Fatalf("at %v: player %d matched again; his last match ends at %v", now, p, end)
				}
				g.busy[p] = now + g.matchS
				if w, ok := where[ti]; ok && w != [2]int{mi, side} {
					g.t.Fatalf("at %v: ticket %d's players in match %d team %d and match %d team %d", now, ti, w[0], w[1], mi, side)
				}
				where[ti] = [2]int{mi, side}
				count[ti]++
			}
		}
	}
	for ti, n := range count {
		tk := waiting[ti]
		if n != len(tk.Players) {
			g.t.Fatalf("at %v: %d of ticket %d's %d players matched", now, n, tk.ID, len(tk.Players))
		}
		if g.matched[tk.ID] {
			g.t.Fatalf("at %v: ticket %d matched twice", now, tk.ID)
		}
		g.matched[tk.ID] = true
		if n > 1 {
			g.parties++
		}
	}
	for _, ti := range expired {
		if _, ok := where[ti]; ok {
			g.t.Fatalf("at %v: ticket %d both matched and expired", now, waiting[ti].ID)
		}
	}
	return matches, expired
}

// TestTickMatcherKeepsPartiesTogether runs the live preset's queue (parties of 1 to 5) on the
// queue's pass under the guard: parties play whole on one team, and no player or ticket is
// ever matched twice. The pairing adapter, on the same queue, splits parties, which the report
// counts: the count is not zero by construction.
func TestTickMatcherKeepsPartiesTogether(t *testing.T) {
	t.Parallel()
	sc := smallScenario(1500)
	for _, name := range []string{"thesis optimised"} {
		var cf Configuration
		for _, c := range sc.Configurations {
			if c.Name == name {
				cf = c
			}
		}
		if cf.Matcher != "tick" {
			t.Fatalf("the live preset's %q runs on %q, not the tick", name, cf.Matcher)
		}
		for _, strategy := range []string{"rating_window", "greedy_pairs"} {
			cf.Strategy = strategy
			r, err := newRun(&sc, cf)
			if err != nil {
				t.Fatal(err)
			}
			g := &guard{t: t, inner: r.matcher, matchS: seconds(float64(sc.Rounds) * sc.RoundS),
				matched: map[int]bool{}, busy: map[int]time.Duration{}}
			r.matcher = g
			if err := r.loop(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			s := Summarize(r.res)
			// The guard sees the matches of the last tick the run no longer needs, too.
			if s.Matches != 1500 || s.Parties < 100 || s.PartiesSplit != 0 || g.parties < s.Parties {
				t.Errorf("%s, %s: %d matches, %d parties (the guard saw %d), %d split", name, strategy, s.Matches, s.Parties, g.parties, s.PartiesSplit)
			}
		}
		cf.Matcher = "pairing"
		res, err := Run(context.Background(), &sc, cf, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s := Summarize(res); s.PartiesSplit == 0 {
			t.Errorf("%s: the pairing adapter split none of %d parties", name, s.Parties)
		}
	}
}
