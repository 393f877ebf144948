package tick

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// checkResult verifies what must hold of any pass, whatever the queue:
//   - every ticket is matched at most once and never when expired; Expired lists exactly the
//     tickets with now >= ExpiresAt (ReasonTTL) or, latency considered, with no region
//     within the widest limit (ReasonNoRegion), by index;
//   - every match has teams of TeamSize, holds every player of its tickets exactly once,
//     each party on one team, the anchor (Tickets[0]) on team 0;
//   - the pairs are the teams sorted by rating and paired in order, with their differences
//     and intervals; the skill differences are those of the teams;
//   - mutual acceptance, exactly the pairs it is required of: every other ticket of a match
//     accepts and is accepted by the match's anchor at now;
//   - latency: Region is "" when latency is off or no ticket of the match has data; else
//     every ticket accepts it at its current limit, and no region all of them accept has
//     a smaller worst latency (or an equal one and an earlier name);
//   - the teams are the most even split of the match's tickets (brute force, up to rounding);
//     a match with a party, in a queue without a team_balance rule, keeps the balance
//     (matchrules.DefaultBalance of its anchor's interval);
//   - the oldest live ticket is matched if any valid match for it existed among the live
//     tickets; more: no ticket left waiting could anchor a valid match among the tickets
//     left waiting (each had its turn as anchor with all of them still there). With rules
//     judged on the match (distance, team_balance), the search's guarantee is weaker (see
//     Run): such a ticket may wait when a match it picked broke one of them, and then its
//     Wait names that rule;
//   - rules: no match breaks a rule (by its definition, at now), and Attributes are what
//     its equal and intersect rules agree on;
//   - Waiting lists exactly the live tickets left waiting (in no match and no fill), in
//     age order, each with a rule that exists.
//
// The brute forces run on up to bruteSplitMax tickets of a match and bruteLiveMax live
// tickets.
func checkResult(tk []matchpool.Ticket, now float64, cfg matchrules.Config, res matchpool.Result) error {
	w := newWorld(tk, now, cfg)
	t := cfg.TeamSize
	var wantExpired []matchpool.Expiry
	for i, x := range tk {
		if why := refExpiry(x, now, cfg); why != "" {
			wantExpired = append(wantExpired, matchpool.Expiry{Ticket: i, Reason: why})
		}
	}
	if !slices.Equal(res.Expired, wantExpired) {
		return fmt.Errorf("expired %v, want %v", res.Expired, wantExpired)
	}
	in := make([]int, len(tk))
	if err := checkFills(w, res.Fills, in); err != nil {
		return err
	}
	for mi, m := range res.Matches {
		if len(m.Tickets) == 0 {
			return fmt.Errorf("match %d has no tickets", mi)
		}
		for _, i := range m.Tickets {
			if i < 0 || i >= len(tk) {
				return fmt.Errorf("match %d: ticket %d out of range", mi, i)
			}
			if refExpiry(tk[i], now, cfg) != "" || tk[i].Backfill != nil {
				return fmt.Errorf("match %d holds expired or backfill ticket %d", mi, i)
			}
			in[i]++
			if in[i] > 1 {
				return fmt.Errorf("ticket %d in two matches", i)
			}
		}
		if err := checkTeams(w, m); err != nil {
			return fmt.Errorf("match %d: %v", mi, err)
		}
		a := m.Tickets[0]
		for _, i := range m.Tickets[1:] {
			if !w.accepts(a, i) {
				return fmt.Errorf("match %d: tickets %d (anchor) and %d do not accept each other: difference %g, intervals %g and %g",
					mi, a, i, w.diff(a, i), w.interval(a), w.interval(i))
			}
		}
		if err := checkRegion(w, m); err != nil {
			return fmt.Errorf("match %d: %v", mi, err)
		}
		if err := w.checkApart(m.Tickets, m.Teams[0]); err != nil {
			return fmt.Errorf("match %d: %v", mi, err)
		}
		if len(cfg.Rules) > 0 {
			if r := w.brokenRule(m.Tickets); r != "" {
				return fmt.Errorf("match %d breaks rule %q", mi, r)
			}
		}
		if want := w.expectAttributes(m.Tickets); !reflect.DeepEqual(m.Attributes, want) {
			return fmt.Errorf("match %d: attributes %+v, want %+v", mi, m.Attributes, want)
		}
		if len(m.Tickets) > bruteSplitMax {
			// too many for the brute force
		} else if best := w.bestSplit(m.Tickets); m.SkillDifference > best+1e-9*(1+math.Abs(best)+sumAbs(w, m.Tickets)) {
			return fmt.Errorf("match %d: skill difference %g, the best split %g", mi, m.SkillDifference, best)
		}
		if m.AverageDifference != m.SkillDifference/float64(t) {
			return fmt.Errorf("match %d: average difference %g, skill difference %g", mi, m.AverageDifference, m.SkillDifference)
		}
		if len(m.Tickets) <= bruteSplitMax && w.balanceBroken(m.Tickets) {
			return fmt.Errorf("match %d: teams %g apart on average, over the balance (%g of the anchor's interval %g)",
				mi, m.AverageDifference, matchrules.DefaultBalance, w.interval(a))
		}
	}
	var left []int
	for _, i := range w.live {
		if in[i] == 0 {
			left = append(left, i)
		}
	}
	waits := map[int]matchpool.Wait{}
	for k, x := range res.Waiting {
		if k >= len(left) || x.Ticket != left[k] {
			return fmt.Errorf("waiting %+v, want the tickets left %v in age order", res.Waiting, left)
		}
		if x.Rule != matchrules.WaitInterval && x.Rule != matchrules.WaitLatency && x.Rule != matchrules.WaitTeams && x.Rule != matchrules.WaitAvoid &&
			!slices.ContainsFunc(cfg.Rules, func(r matchrules.Rule) bool { return r.Name == x.Rule }) {
			return fmt.Errorf("ticket %d waits on %q, no rule", x.Ticket, x.Rule)
		}
		waits[x.Ticket] = x
	}
	if len(res.Waiting) != len(left) {
		return fmt.Errorf("waiting %+v, want the tickets left %v in age order", res.Waiting, left)
	}
	// excused: a ticket that may wait with a match for it: one it picked broke a rule judged
	// on the match.
	excused := func(i int) bool {
		x := waits[i]
		return x.Found && (x.Rule == matchrules.WaitAvoid ||
			slices.ContainsFunc(cfg.Rules, func(r matchrules.Rule) bool { return r.Name == x.Rule && r.HasTolerance() }))
	}
	if len(w.live) > bruteLiveMax {
		return nil
	}
	var cands []int // the tickets the anchors had: those the backfills left
	for _, i := range w.live {
		if !slices.ContainsFunc(res.Fills, func(f matchpool.Fill) bool {
			return slices.ContainsFunc(f.Joiners, func(j matchpool.Joiner) bool { return j.Ticket == i })
		}) {
			cands = append(cands, i)
		}
	}
	if len(cands) > 0 && in[cands[0]] == 0 && !excused(cands[0]) && w.anyMatch(cands[0], cands) {
		return fmt.Errorf("the oldest ticket %d waits although a match for it existed", cands[0])
	}
	for _, i := range left {
		if !excused(i) && w.anyMatch(i, left) {
			return fmt.Errorf("ticket %d waits although it can anchor a match among the tickets left", i)
		}
	}
	return nil
}

// checkFills verifies the backfills, counting each joiner in in:
//   - a fill is of a live backfill ticket, once, in age order; its joiners are live
//     ordinary tickets, each in one fill at most (and so, with check, in no match);
//   - no team gets more players than its open slots; a joiner's whole party is on its team
//     (Teams are the match's players with the joiners' ratings appended in order);
//   - every joiner is joinable (mutual acceptance, region, weights), and none is kept apart
//     from another by the avoid lists (whatever their scope);
//   - brute force, maximality: a fill with room left for a ticket of s players has no
//     joinable ticket of s players that was free when it was served (in no earlier fill,
//     and not kept apart from a joiner),
//     and a backfill without a fill had none of any size that fits.
func checkFills(w *world, fills []matchpool.Fill, in []int) error {
	served := map[int]bool{}
	earlier := map[int]bool{} // joiners of the fills before
	k := 0
	for _, b := range w.bf {
		var f *matchpool.Fill
		if k < len(fills) && fills[k].Ticket == b {
			f = &fills[k]
			k++
		}
		bf := w.tk[b].Backfill
		room := bf.OpenSlots
		if f != nil {
			if served[b] {
				return fmt.Errorf("backfill %d served twice", b)
			}
			served[b] = true
			want := [2][]float64{slices.Clone(bf.Teams[0].Players), slices.Clone(bf.Teams[1].Players)}
			for _, j := range f.Joiners {
				i := j.Ticket
				if i < 0 || i >= len(w.tk) || !slices.Contains(w.live, i) {
					return fmt.Errorf("fill of %d: joiner %d is not a live ordinary ticket", b, i)
				}
				if in[i]++; in[i] > 1 {
					return fmt.Errorf("ticket %d joins twice", i)
				}
				if !w.joinable(b, i) {
					return fmt.Errorf("fill of %d: joiner %d is not joinable", b, i)
				}
				room[j.Team] -= len(w.tk[i].Ratings)
				if room[j.Team] < 0 {
					return fmt.Errorf("fill of %d: team %d overfilled", b, j.Team)
				}
				want[j.Team] = append(want[j.Team], w.tk[i].Ratings...)
			}
			for t := range 2 {
				if !slices.Equal(f.Teams[t].Players, want[t]) {
					return fmt.Errorf("fill of %d: team %d is %v, want %v", b, t, f.Teams[t].Players, want[t])
				}
			}
			if len(f.Joiners) == 0 || f.Region != w.bfRegion(b) {
				return fmt.Errorf("fill of %d: %d joiners, region %q", b, len(f.Joiners), f.Region)
			}
		}
		if f != nil {
			if err := w.checkJoinersApart(f); err != nil {
				return err
			}
		}
		for _, i := range w.live {
			if earlier[i] || f != nil && slices.ContainsFunc(f.Joiners, func(j matchpool.Joiner) bool { return j.Ticket == i }) ||
				f != nil && w.apartFromJoiners(i, f) {
				continue
			}
			if s := len(w.tk[i].Ratings); (s <= room[0] || s <= room[1]) && w.joinable(b, i) {
				return fmt.Errorf("backfill %d has room %v, and joinable ticket %d of %d players was free", b, room, i, s)
			}
		}
		if f != nil {
			for _, j := range f.Joiners {
				earlier[j.Ticket] = true
			}
		}
	}
	if k != len(fills) {
		return fmt.Errorf("fills %+v: not of the live backfill tickets in age order", fills)
	}
	return nil
}

const (
	bruteSplitMax = 16
	bruteLiveMax  = 12
)

func sumAbs(w *world, s []int) float64 {
	x := 0.0
	for _, i := range s {
		for _, r := range w.tk[i].Ratings {
			x += math.Abs(r)
		}
	}
	return x
}

func checkTeams(w *world, m matchpool.Match) error {
	t := w.t
	if len(m.Teams[0]) != t || len(m.Teams[1]) != t || len(m.Pairs) != t {
		return fmt.Errorf("teams of %d and %d, %d pairs, want %d", len(m.Teams[0]), len(m.Teams[1]), len(m.Pairs), t)
	}
	side := map[int]int{}
	seen := map[matchpool.Slot]bool{}
	var tot [2]float64
	for s, team := range m.Teams {
		for i, x := range team {
			if !slices.Contains(m.Tickets, x.Ticket) || x.Player < 0 || x.Player >= len(w.tk[x.Ticket].Ratings) {
				return fmt.Errorf("team %d holds %+v, not a player of the match's tickets", s, x)
			}
			if seen[x] {
				return fmt.Errorf("player %+v twice", x)
			}
			seen[x] = true
			if o, ok := side[x.Ticket]; ok && o != s {
				return fmt.Errorf("ticket %d's party split across the teams", x.Ticket)
			}
			side[x.Ticket] = s
			r := w.tk[x.Ticket].Ratings[x.Player]
			tot[s] += r
			if i > 0 && r < w.tk[team[i-1].Ticket].Ratings[team[i-1].Player] {
				return fmt.Errorf("team %d not sorted by rating", s)
			}
			if m.Pairs[i].Players[s] != x {
				return fmt.Errorf("pair %d is %v, team %d's player %d is %+v", i, m.Pairs[i].Players, s, i, x)
			}
		}
	}
	if side[m.Tickets[0]] != 0 {
		return fmt.Errorf("the anchor %d is not on team 0", m.Tickets[0])
	}
	if w.players(m.Tickets) != 2*t {
		return fmt.Errorf("tickets of %d players", w.players(m.Tickets))
	}
	for i, pr := range m.Pairs {
		a, b := pr.Players[0], pr.Players[1]
		if d := math.Abs(w.tk[a.Ticket].Ratings[a.Player] - w.tk[b.Ticket].Ratings[b.Player]); pr.Difference != d {
			return fmt.Errorf("pair %d: difference %g, ratings differ by %g", i, pr.Difference, d)
		}
		if iv := min(w.interval(a.Ticket), w.interval(b.Ticket)); pr.Interval != iv {
			return fmt.Errorf("pair %d: interval %g, want %g", i, pr.Interval, iv)
		}
	}
	if sd := math.Abs(tot[0] - tot[1]); m.SkillDifference != sd {
		return fmt.Errorf("skill difference %g, team totals differ by %g", m.SkillDifference, sd)
	}
	return nil
}

func checkRegion(w *world, m matchpool.Match) error {
	data := slices.ContainsFunc(m.Tickets, func(i int) bool { return len(w.tk[i].Latencies) > 0 })
	if len(w.cfg.MaxLatency) == 0 || !data {
		if m.Region != "" {
			return fmt.Errorf("region %q, want none", m.Region)
		}
		if len(w.okRegions(m.Tickets)) == 0 {
			return fmt.Errorf("no region for its tickets")
		}
		return nil
	}
	for _, i := range m.Tickets {
		if !w.usable(i, m.Region) {
			return fmt.Errorf("region %q: ticket %d does not accept it (limit %g, latencies %v)",
				m.Region, i, w.stepAt(w.cfg.MaxLatency, i), w.tk[i].Latencies)
		}
	}
	got := w.worst(m.Tickets, m.Region)
	for _, r := range w.okRegions(m.Tickets) {
		if x := w.worst(m.Tickets, r); x < got || x == got && r < m.Region {
			return fmt.Errorf("region %q (worst %g ms), but %q has %g ms", m.Region, got, r, x)
		}
	}
	return nil
}

// testqueue.Random draws a small queue: team sizes 1..5, parties, ratings with ties (small
// integers) or without, waits and expiries around now (some exactly at it), intervals of
// 1-3 steps, and in half the cases latencies to 0-3 regions with some tickets without data.
// Random small queues with backfill tickets: the backfills never overfill, keep parties
// whole, take no player twice, take every joinable ticket that fits (brute force), and
// agree with the reference, fills and matches.
func TestRandomBackfillsKeepTheRulesAndMatchTheReference(t *testing.T) {
	t.Parallel()
	cases := 4000
	if testing.Short() {
		cases = 600
	}
	filled := 0
	for seed := range uint64(cases) {
		rng := rand.New(rand.NewPCG(seed, 0xbac4))
		tk, now, cfg := testqueue.Random(rng, 10)
		tk = testqueue.WithBackfills(rng, tk, now, cfg)
		res, err := Run(tk, now, cfg)
		if err != nil {
			t.Fatalf("seed %d: %v\n%s", seed, err, describe(tk, now, cfg))
		}
		filled += len(res.Fills)
		if err := againstTheReference(tk, now, cfg); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
	if filled < cases/4 {
		t.Fatalf("only %d fills in %d cases: the test hardly tests", filled, cases)
	}
	t.Logf("%d fills in %d cases", filled, cases)
}

func randFor(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x71c4)) }

// Random small queues keep every rule, with both strategies, and agree with the reference.
func TestRandomQueuesKeepTheRulesAndMatchTheReference(t *testing.T) {
	t.Parallel()
	cases := 4000
	if testing.Short() {
		cases = 500
	}
	for seed := range uint64(cases) {
		tk, now, cfg := testqueue.Random(randFor(seed), 11)
		if err := againstTheReference(tk, now, cfg); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// againstTheReference runs a pass, checks it, compares its matches and regions with the
// reference's and a second run's.
func againstTheReference(tk []matchpool.Ticket, now float64, cfg matchrules.Config) error {
	res, err := Run(tk, now, cfg)
	if err != nil {
		return fmt.Errorf("%v\n%s", err, describe(tk, now, cfg))
	}
	if err := checkResult(tk, now, cfg, res); err != nil {
		return fmt.Errorf("%v\n%s%+v", err, describe(tk, now, cfg), res)
	}
	want, regions, wantFills := ref(tk, now, cfg)
	if !reflect.DeepEqual(res.Fills, wantFills) {
		return fmt.Errorf("fills %+v, the reference %+v\n%s", res.Fills, wantFills, describe(tk, now, cfg))
	}
	var got [][]int
	var gotRegions []string
	for _, m := range res.Matches {
		got = append(got, m.Tickets)
		gotRegions = append(gotRegions, m.Region)
	}
	if !reflect.DeepEqual(got, want) || !slices.Equal(gotRegions, regions) {
		return fmt.Errorf("matches %v in %q, the reference %v in %q\n%s", got, gotRegions, want, regions, describe(tk, now, cfg))
	}
	if again, _ := Run(tk, now, cfg); !reflect.DeepEqual(res, again) {
		return fmt.Errorf("a second run differs")
	}
	return nil
}

// Teams of 6 to 12 (head counts over several words from 8 on) from parties, against the
// reference.
func TestLargeTeamsMatchTheReference(t *testing.T) {
	t.Parallel()
	cases := 1500
	if testing.Short() {
		cases = 200
	}
	for seed := range uint64(cases) {
		rng := rand.New(rand.NewPCG(seed, 0x1a7e))
		tk, now, cfg := testqueue.Random(rng, 10)
		cfg.TeamSize = 6 + rng.IntN(7)
		for i := range tk {
			for range rng.IntN(cfg.TeamSize) {
				if len(tk[i].Ratings) < cfg.TeamSize {
					tk[i].Ratings = append(tk[i].Ratings, tk[i].Ratings[0]+float64(rng.IntN(30)))
				}
			}
		}
		if err := againstTheReference(tk, now, cfg); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}

// The benchmarks' queue, large enough for the radix sorts (by rating, and by age when it
// comes shuffled) and the pooled buffers, keeps the rules check can afford at that size
// (all but the brute forces over the live tickets).
func TestTheIssuesQueueKeepsTheRules(t *testing.T) {
	t.Parallel()
	n := 20_000
	if testing.Short() {
		n = 3_000
	}
	for _, regions := range []bool{false, true} {
		for _, s := range []string{matchrules.RatingWindow, matchrules.GreedyPairs} {
			tk, now := testqueue.BenchQueue(uint64(n), n, regions)
			tk[7].ExpiresAt = now                                        // and one expiry
			tk = testqueue.BenchBackfills(tk, uint64(n), n/100, regions) // and the backfill benchmark's tickets
			// With regions, out of arrival order: the pass sorts by age.
			if regions {
				rand.New(rand.NewPCG(1, 2)).Shuffle(len(tk), func(i, j int) { tk[i], tk[j] = tk[j], tk[i] })
			}
			cfg := testqueue.BenchConfig(s, regions)
			res, err := Run(tk, now, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Matches) < n/10 || len(res.Fills) < n/200 {
				t.Fatalf("%s, regions %v: %d matches and %d fills from %d tickets", s, regions, len(res.Matches), len(res.Fills), n)
			}
			if err := checkResult(tk, now, cfg, res); err != nil {
				t.Fatalf("%s, regions %v: %v", s, regions, err)
			}
		}
	}
}
