package tick

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// The avoid lists in the reference world: which tickets may not meet, written the plain way.

// avoids: a list of ticket i that binds it now names a player of ticket j.
func (w *world) avoids(i, j int) bool {
	if i == j || !w.cfg.Avoid.BindsAt(max(w.now-w.tk[i].WaitingSince, 0)) {
		return false
	}
	for _, ids := range w.tk[i].Avoid {
		for _, id := range ids {
			if slices.Contains(w.tk[j].Players, id) {
				return true
			}
		}
	}
	return false
}

// apart: tickets i and j may not meet (in one match, or with scope team on one team).
func (w *world) apart(i, j int) bool { return w.avoids(i, j) || w.avoids(j, i) }

// meet: with scope match, two tickets of s may not meet.
func (w *world) meet(s []int) bool {
	if w.cfg.Avoid.Team() {
		return false
	}
	for a, i := range s {
		for _, j := range s[a+1:] {
			if w.apart(i, j) {
				return true
			}
		}
	}
	return false
}

// keptApart: with scope team, the split m of s (bit b: the team of s[b]) seats no two
// tickets that may not meet on one team.
func (w *world) keptApart(s []int, m int) bool {
	team := make([]int, len(s))
	for b := range s {
		team[b] = m >> b & 1
	}
	return w.keptApartBy(s, team)
}

// keptApartBy is keptApart with team[b] the team of s[b].
func (w *world) keptApartBy(s, team []int) bool {
	if !w.cfg.Avoid.Team() {
		return true
	}
	for a, i := range s {
		for b := a + 1; b < len(s); b++ {
			if team[a] == team[b] && w.apart(i, s[b]) {
				return false
			}
		}
	}
	return true
}

// checkApart: a match of two teams, team0 its first team's players, keeps the avoid lists.
func (w *world) checkApart(s []int, team0 []matchpool.Slot) error {
	team := make([]int, len(s))
	for b, i := range s {
		if !slices.ContainsFunc(team0, func(x matchpool.Slot) bool { return x.Ticket == i }) {
			team[b] = 1
		}
	}
	if w.meet(s) || !w.keptApartBy(s, team) {
		return fmt.Errorf("tickets %v on teams %v: two the avoid lists keep apart (scope %q)", s, team, w.cfg.Avoid.Scope)
	}
	return nil
}

// apartFromJoiners: ticket i may not meet a joiner of fill f.
func (w *world) apartFromJoiners(i int, f *matchpool.Fill) bool {
	return slices.ContainsFunc(f.Joiners, func(j matchpool.Joiner) bool { return w.apart(i, j.Ticket) })
}

// checkJoinersApart: no two joiners of fill f may not meet.
func (w *world) checkJoinersApart(f *matchpool.Fill) error {
	for a, x := range f.Joiners {
		for _, y := range f.Joiners[a+1:] {
			if w.apart(x.Ticket, y.Ticket) {
				return fmt.Errorf("fill of %d: joiners %d and %d are kept apart by the avoid lists", f.Ticket, x.Ticket, y.Ticket)
			}
		}
	}
	return nil
}

// Random small queues of two teams with avoid lists (scope match and team, optional after
// a wait or not; rules, backfills, both strategies): no match holds two tickets the lists
// keep apart, and a ticket that waits either had the match its walk picked turned down by
// the lists (the pass's bound: matchpool.Wait Found on matchrules.WaitAvoid) or had no match
// at all by the brute force (checkResult). Without the lists' checks in the pass the first
// fails in most seeds (TestIgnoringTheAvoidListsIsCaught).
func TestRandomAvoidListsKeepTicketsApart(t *testing.T) {
	t.Parallel()
	cases := 4000
	if testing.Short() {
		cases = 600
	}
	var matches, apartWaits, turnedDown, missed int
	for seed := range uint64(cases) {
		tk, now, cfg := randomAvoiding(seed)
		res, err := Run(tk, now, cfg)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, describe(tk, now, cfg))
		}
		if err := checkResult(tk, now, cfg, res); err != nil {
			t.Fatalf("seed %d: %v\n%s%+v", seed, err, describe(tk, now, cfg), res)
		}
		matches += len(res.Matches)
		left := waitingTickets(res)
		w := newWorld(tk, now, cfg)
		for _, x := range res.Waiting {
			if x.Rule == matchrules.WaitAvoid {
				apartWaits++
				if x.Found {
					turnedDown++
					if len(w.live) <= bruteLiveMax && w.anyMatch(x.Ticket, left) {
						missed++ // the pass's bound: a match kept the lists, its walk's pick did not
					}
				}
			}
		}
	}
	if matches < cases/4 || apartWaits < cases/20 || turnedDown < cases/200 {
		t.Fatalf("%d matches, %d tickets waiting on the avoid lists (%d on a match turned down) in %d cases: the test hardly tests",
			matches, apartWaits, turnedDown, cases)
	}
	t.Logf("%d matches, %d tickets waiting on the avoid lists (%d on a match turned down, %d of them with a match among the tickets left), in %d cases",
		matches, apartWaits, turnedDown, missed, cases)
}

// waitingTickets are the tickets a pass left waiting.
func waitingTickets(res matchpool.Result) []int {
	out := make([]int, len(res.Waiting))
	for i, x := range res.Waiting {
		out[i] = x.Ticket
	}
	return out
}

// randomAvoiding is a random small queue of two teams with avoid lists.
func randomAvoiding(seed uint64) ([]matchpool.Ticket, float64, matchrules.Config) {
	rng := rand.New(rand.NewPCG(seed, 0xa401d))
	tk, now, cfg := testqueue.Random(rng, 11)
	if rng.IntN(3) == 0 {
		tk = testqueue.WithBackfills(rng, tk, now, cfg)
	}
	if rng.IntN(3) == 0 {
		tk, cfg = testqueue.WithRules(rng, tk, cfg)
	}
	tk, cfg = testqueue.WithAvoid(rng, tk, now, cfg)
	return tk, now, cfg
}

// The check is not vacuous: the same queues with the lists dropped from the config's view
// (every list optional from the start) make matches that hold pairs the lists keep apart.
func TestIgnoringTheAvoidListsIsCaught(t *testing.T) {
	t.Parallel()
	caught := 0
	for seed := range uint64(300) {
		tk, now, cfg := randomAvoiding(seed)
		ignoring := cfg
		never := 1e-9
		ignoring.Avoid.OptionalAfterS = &never
		res, err := Run(tk, now, ignoring)
		if err != nil {
			t.Fatal(err)
		}
		w := newWorld(tk, now, cfg)
		if slices.ContainsFunc(res.Matches, func(m matchpool.Match) bool { return w.checkApart(m.Tickets, m.Teams[0]) != nil }) {
			caught++
		}
	}
	if caught < 15 {
		t.Fatalf("ignoring the lists broke them in %d of 300 queues only", caught)
	}
	t.Logf("ignoring the lists broke them in %d of 300 queues", caught)
}

// The shaped pass with avoid lists against its brute force: as TestShapedAgainstBruteForce,
// no match holds two tickets the lists keep apart, and the oldest ticket is matched whenever
// a match for it keeps them apart.
func TestShapedAvoidListsAgainstBruteForce(t *testing.T) {
	t.Parallel()
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	rng := rand.New(rand.NewPCG(17, 0xa401d))
	matched, oldestWaits := 0, 0
	for run := range runs {
		tk, cfg := testqueue.RandomShaped(rng)
		now := 60.0
		tk, cfg = testqueue.WithAvoid(rng, tk, now, cfg)
		res, err := Run(tk, now, cfg)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		ref := shapedRef{tk: tk, cfg: cfg, now: now}
		if msg := ref.checkMatches(res.Matches); msg != "" {
			t.Fatalf("run %d: %s\nconfig %+v\ntickets %+v\nmatches %+v", run, msg, cfg, tk, res.Matches)
		}
		oldest := ref.oldest()
		in := slices.ContainsFunc(res.Matches, func(m matchpool.Match) bool { return slices.Contains(m.Tickets, oldest) })
		if ref.matchExists(oldest) && !in {
			t.Fatalf("run %d: the oldest ticket %d has a match and waits (%+v)\nconfig %+v\ntickets %+v\nmatches %+v",
				run, oldest, res.Waiting, cfg, tk, res.Matches)
		}
		if in {
			matched++
		} else if slices.ContainsFunc(res.Waiting, func(x matchpool.Wait) bool { return x.Ticket == oldest && x.Rule == matchrules.WaitAvoid }) {
			oldestWaits++
		}
	}
	if matched < runs/10 || oldestWaits < runs/100 {
		t.Fatalf("the oldest matched in %d runs, waiting on the avoid lists in %d, of %d: the test hardly tests", matched, oldestWaits, runs)
	}
	t.Logf("the oldest matched in %d runs, waiting on the avoid lists in %d, of %d", matched, oldestWaits, runs)
}

// Bad avoid lists and avoid config: each fault names its field, in Run and ValidateTicket.
func TestAvoidFaultsNameTheirFields(t *testing.T) {
	t.Parallel()
	ok := matchrules.Config{TeamSize: 2, Interval: []matchrules.Step{{AfterS: 0, Value: 10}}}
	zero, huge := 0.0, math.Inf(1)
	long := make([]string, matchrules.MaxAvoid+1)
	for i := range long {
		long[i] = fmt.Sprintf("p%d", i)
	}
	tests := []struct {
		name   string
		cfg    matchrules.Config
		ticket matchpool.Ticket
		fields []string
	}{
		{"an unknown scope", matchrules.Config{TeamSize: 2, Interval: ok.Interval, Avoid: matchrules.Avoid{Scope: "lobby"}},
			matchpool.Ticket{Ratings: []float64{1}}, []string{"avoid.scope"}},
		{"optional at 0", matchrules.Config{TeamSize: 2, Interval: ok.Interval, Avoid: matchrules.Avoid{OptionalAfterS: &zero}},
			matchpool.Ticket{Ratings: []float64{1}}, []string{"avoid.optional_after_s"}},
		{"optional beyond the bound", matchrules.Config{TeamSize: 2, Interval: ok.Interval, Avoid: matchrules.Avoid{Scope: "team", OptionalAfterS: &huge}},
			matchpool.Ticket{Ratings: []float64{1}}, []string{"avoid.optional_after_s"}},
		{"a list without the players' ids", ok, matchpool.Ticket{Ratings: []float64{1}, Avoid: [][]string{{"bob"}}}, []string{"players"}},
		{"ids for some players only", ok, matchpool.Ticket{Ratings: []float64{1, 2}, Players: []string{"al"}}, []string{"players"}},
		{"more lists than players", ok, matchpool.Ticket{Ratings: []float64{1}, Players: []string{"al"}, Avoid: [][]string{{"bob"}, {"cy"}}}, []string{"avoid"}},
		{"a list too long", ok, matchpool.Ticket{Ratings: []float64{1}, Players: []string{"al"}, Avoid: [][]string{long}}, []string{"avoid[0]"}},
		{"self, a party member, a repeat, empty", ok, matchpool.Ticket{Ratings: []float64{1, 2}, Players: []string{"al", "bo"},
			Avoid: [][]string{{"al", "cy"}, {"cy", "dee", "cy", "", "al"}}},
			[]string{"avoid[0][0]", "avoid[1][2]", "avoid[1][3]", "avoid[1][4]"}},
		{"a backfill that avoids", ok, matchpool.Ticket{Players: []string{}, Avoid: [][]string{{"x"}},
			Backfill: &matchpool.Backfill{Teams: [2]teams.Roster{{Players: []float64{1}}}, OpenSlots: [2]int{1, 0}}}, []string{"avoid"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.ticket.ExpiresAt = math.Inf(1)
			slices.Sort(tt.fields)
			check := func() error { return ValidateTicket(tt.cfg, tt.ticket) }
			if tt.cfg.Validate() != nil {
				check = tt.cfg.Validate
			}
			if got := faultFields(t, check()); !slices.Equal(got, tt.fields) {
				t.Fatalf("fields %v, want %v", got, tt.fields)
			}
			_, err := Run([]matchpool.Ticket{tt.ticket}, 0, tt.cfg)
			var want []string
			for _, f := range tt.fields {
				if strings.HasPrefix(f, "avoid.") || strings.HasPrefix(f, "rules") {
					want = append(want, f)
				} else {
					want = append(want, "tickets[0]."+f)
				}
			}
			if got := faultFields(t, err); !slices.Equal(got, want) {
				t.Fatalf("Run: fields %v, want %v (%v)", got, want, err)
			}
		})
	}
	good := matchpool.Ticket{Ratings: []float64{1, 2}, Players: []string{"al", "bo"}, Avoid: [][]string{{"cy"}, long[:matchrules.MaxAvoid]}, ExpiresAt: 1}
	if err := ValidateTicket(ok, good); err != nil {
		t.Fatalf("a valid ticket: %v", err)
	}
}

// The lists in a 1v1 and a 2v2, both passes: who meets whom, by scope and wait.
func TestAvoidListsByScopeAndWait(t *testing.T) {
	t.Parallel()
	interval := []matchrules.Step{{AfterS: 0, Value: 100}}
	solo := func(id string, rating, since float64, avoid ...string) matchpool.Ticket {
		t := matchpool.Ticket{Ratings: []float64{rating}, WaitingSince: since, ExpiresAt: math.Inf(1), Players: []string{id}}
		if len(avoid) > 0 {
			t.Avoid = [][]string{avoid}
		}
		return t
	}
	after := func(s float64) *float64 { return &s }
	twoTeams := matchrules.Config{TeamSize: 1, Interval: interval}
	shapedDuel := matchrules.Config{TeamSize: 1, Interval: interval, Shape: testqueue.Symmetric(2, 1)}
	for _, cfg := range []matchrules.Config{twoTeams, shapedDuel} {
		name := "two teams"
		if cfg.Shaped() {
			name = "shaped"
		}
		t.Run(name, func(t *testing.T) {
			// al avoids bo, the nearest: al meets cy.
			tk := []matchpool.Ticket{solo("al", 1000, 0, "bo"), solo("bo", 1001, 1), solo("cy", 1010, 2)}
			if got := matchedPairs(t, tk, 10, cfg); !reflect.DeepEqual(got, [][]int{{0, 2}}) {
				t.Fatalf("matches %v, want al with cy", got)
			}
			// bo is avoided by al: bo alone with al waits, on the avoid lists.
			res, err := Run(tk[:2], 10, cfg)
			if err != nil || len(res.Matches) != 0 || len(res.Waiting) == 0 || res.Waiting[0].Rule != matchrules.WaitAvoid {
				t.Fatalf("al and bo: %+v, %v; want al waiting on avoid", res, err)
			}
			if d := res.Waiting[0].Detail(); !strings.Contains(d, "avoid") {
				t.Fatalf("detail %q", d)
			}
			// After optional_after_s of al's wait the list no longer binds.
			cfg.Avoid.OptionalAfterS = after(5)
			if got := matchedPairs(t, tk[:2], 10, cfg); !reflect.DeepEqual(got, [][]int{{0, 1}}) {
				t.Fatalf("after optional_after_s: matches %v, want al with bo", got)
			}
			// Scope team: a 1v1's players are on two teams, so they meet.
			cfg.Avoid = matchrules.Avoid{Scope: matchrules.AvoidTeam}
			if got := matchedPairs(t, tk[:2], 10, cfg); !reflect.DeepEqual(got, [][]int{{0, 1}}) {
				t.Fatalf("scope team: matches %v, want al with bo", got)
			}
		})
	}
	// Scope team in a 2v2 of four solos: al and bo, the nearest pair, on two teams
	// although the most even split puts them together.
	tk := []matchpool.Ticket{solo("al", 1000, 0, "bo"), solo("bo", 1000, 1), solo("cy", 1050, 2), solo("dee", 1050, 3)}
	for _, cfg := range []matchrules.Config{
		{TeamSize: 2, Interval: interval, Avoid: matchrules.Avoid{Scope: matchrules.AvoidTeam}},
		{TeamSize: 2, Interval: interval, Shape: testqueue.Symmetric(2, 2), Avoid: matchrules.Avoid{Scope: matchrules.AvoidTeam}},
	} {
		res, err := Run(tk, 10, cfg)
		if err != nil || len(res.Matches) != 1 {
			t.Fatalf("2v2: %+v, %v", res, err)
		}
		w := newWorld(tk, 10, cfg)
		m := res.Matches[0]
		team0 := m.Teams[0]
		if cfg.Shaped() {
			team0 = m.Shaped[0].Players
		}
		if err := w.checkApart(m.Tickets, team0); err != nil {
			t.Fatalf("shaped %v: %v", cfg.Shaped(), err)
		}
	}
}

// matchedPairs runs a pass and returns each match's tickets, sorted.
func matchedPairs(t *testing.T, tk []matchpool.Ticket, now float64, cfg matchrules.Config) [][]int {
	t.Helper()
	res, err := Run(tk, now, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out [][]int
	for _, m := range res.Matches {
		out = append(out, slices.Sorted(slices.Values(m.Tickets)))
	}
	return out
}
