package tick

import (
	"errors"
	"math"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// solo is a ticket of one player waiting since since, never expiring.
func solo(rating, since float64) matchpool.Ticket {
	return matchpool.Ticket{Ratings: []float64{rating}, WaitingSince: since, ExpiresAt: math.Inf(1)}
}

func party(since float64, ratings ...float64) matchpool.Ticket {
	return matchpool.Ticket{Ratings: ratings, WaitingSince: since, ExpiresAt: math.Inf(1)}
}

// matchedTickets lists each match's tickets.
func matchedTickets(res matchpool.Result) [][]int {
	out := [][]int{}
	for _, m := range res.Matches {
		out = append(out, m.Tickets)
	}
	return out
}

func run(t *testing.T, tk []matchpool.Ticket, now float64, cfg matchrules.Config) matchpool.Result {
	t.Helper()
	res, err := Run(tk, now, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkResult(tk, now, cfg, res); err != nil {
		t.Fatal(err)
	}
	return res
}

// A ticket's interval is the value of the last step whose after_s its own wait has
// reached; two tickets match only when both intervals cover their difference.
func TestIntervalsWidenByEachTicketsOwnWait(t *testing.T) {
	t.Parallel()
	cfg := matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 10}, {AfterS: 10, Value: 20}, {AfterS: 30, Value: 50}}}
	const now = 100.0
	tests := []struct {
		name         string
		waitA, waitB float64 // seconds each has waited at now
		diff         float64
		match        bool
	}{
		{"both at the first step, within", 0, 0, 10, true},
		{"both at the first step, beyond", 0, 0, 11, false},
		{"the older one widened, the younger not", 15, 0, 15, false},
		{"both widened", 15, 10, 15, true},
		{"a step holds from exactly its after_s", 10, 10, 20, true},
		{"and not a moment before", 10, 9.5, 20, false},
		{"the last step holds for ever", 1000, 30, 50, true},
		{"a wait from the future counts as none", -5, 0, 10, true},
		{"a wait from the future does not widen", -5, 30, 11, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tk := []matchpool.Ticket{solo(1000, now-tt.waitA), solo(1000+tt.diff, now-tt.waitB)}
			got := len(run(t, tk, now, cfg).Matches) == 1
			if got != tt.match {
				t.Fatalf("matched %v, want %v", got, tt.match)
			}
		})
	}
}

// A ticket expires when now reaches its ExpiresAt: it is reported and never matched, even
// with a perfect opponent waiting.
func TestTicketsExpireAtExpiresAt(t *testing.T) {
	t.Parallel()
	cfg := matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 10}}}
	const now = 50.0
	tests := []struct {
		name    string
		expires float64
		expired bool
	}{
		{"past", now - 1, true},
		{"exactly now", now, true},
		{"a moment later", math.Nextafter(now, math.Inf(1)), false},
		{"never", math.Inf(1), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			a := solo(1000, 0)
			a.ExpiresAt = tt.expires
			res := run(t, []matchpool.Ticket{a, solo(1000, 1)}, now, cfg)
			var want []matchpool.Expiry
			matches := [][]int{{0, 1}}
			if tt.expired {
				want = []matchpool.Expiry{{Ticket: 0, Reason: matchpool.ReasonTTL}}
				matches = [][]int{}
			}
			if !slices.Equal(res.Expired, want) || !reflect.DeepEqual(matchedTickets(res), matches) {
				t.Fatalf("expired %v, matches %v; want %v, %v", res.Expired, matchedTickets(res), want, matches)
			}
		})
	}
}

// The oldest ticket anchors first, and rating_window takes the nearest acceptable tickets.
func TestTheOldestAnchorsAndTakesTheNearest(t *testing.T) {
	t.Parallel()
	cfg := matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 100}}}
	tk := []matchpool.Ticket{solo(1050, 2), solo(1000, 0), solo(1005, 1), solo(1200, 3)}
	res := run(t, tk, 10, cfg)
	// Ticket 1 (1000) waited longest: it takes 1005; then 1050 waits, 1200 is beyond it.
	if want := [][]int{{1, 2}}; !reflect.DeepEqual(matchedTickets(res), want) {
		t.Fatalf("matches %v, want %v", matchedTickets(res), want)
	}
	m := res.Matches[0]
	want := matchpool.Pair{Players: [2]matchpool.Slot{{Ticket: 1, Player: 0}, {Ticket: 2, Player: 0}}, Difference: 5, Interval: 100}
	if m.Pairs[0] != want || m.SkillDifference != 5 || m.AverageDifference != 5 || m.Region != "" {
		t.Fatalf("match %+v, want the pair %+v", m, want)
	}
}

// A party plays on one team, and the teams are the most even split of the tickets; each
// player faces the opponent of the same rank on the other team.
func TestPartiesStayTogetherAndTheSplitIsEven(t *testing.T) {
	t.Parallel()
	cfg := matchrules.Config{TeamSize: 3, Interval: []matchrules.Step{{AfterS: 0, Value: 100}}}
	tk := []matchpool.Ticket{
		party(0, 1100, 900), // mean 1000
		solo(1010, 1),
		solo(980, 2),
		solo(1025, 3),
		solo(995, 4),
	}
	res := run(t, tk, 10, cfg)
	if len(res.Matches) != 1 {
		t.Fatalf("%d matches, want 1", len(res.Matches))
	}
	m := res.Matches[0]
	// The party (2000) with 1010 makes 3010 against 980+995+1025 = 3000: the most even of
	// the splits that keep the party whole (with 995: 2995 against 3015).
	if want := []matchpool.Slot{{Ticket: 0, Player: 1}, {Ticket: 1, Player: 0}, {Ticket: 0, Player: 0}}; !slices.Equal(m.Teams[0], want) {
		t.Fatalf("team 0 %v, want %v (sorted by rating: 900, 1010, 1100)", m.Teams[0], want)
	}
	if want := []matchpool.Slot{{Ticket: 2, Player: 0}, {Ticket: 4, Player: 0}, {Ticket: 3, Player: 0}}; !slices.Equal(m.Teams[1], want) {
		t.Fatalf("team 1 %v, want %v (980, 995, 1025)", m.Teams[1], want)
	}
	if m.SkillDifference != 10 || m.AverageDifference != 10.0/3 || m.Pairs[0].Difference != 80 {
		t.Fatalf("skill difference %g, average %g, first pair %+v; want 10, 10/3 and 900 against 980",
			m.SkillDifference, m.AverageDifference, m.Pairs[0])
	}
}

// The two strategies choose different tickets from the same queue: rating_window the
// anchor's nearest, greedy_pairs the thesis's pairs (the anchor and its nearest, then the
// oldest ticket left and its own nearest).
func TestStrategiesChooseTheirOwnWay(t *testing.T) {
	t.Parallel()
	tk := []matchpool.Ticket{solo(1000, 0), solo(1040, 1), solo(1001, 2), solo(1002, 3), solo(1039, 4)}
	tests := []struct {
		strategy string
		want     []int
	}{
		{matchrules.RatingWindow, []int{0, 2, 3, 4}}, // 1000 and its nearest: 1001, 1002, 1039
		{"", []int{0, 2, 3, 4}},                      // the default
		{matchrules.GreedyPairs, []int{0, 2, 1, 4}},  // 1000 takes 1001; 1040, the oldest left, takes 1039
	}
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			t.Parallel()
			cfg := matchrules.Config{TeamSize: 2, Strategy: tt.strategy, Interval: []matchrules.Step{{AfterS: 0, Value: 100}}}
			res := run(t, tk, 10, cfg)
			if want := [][]int{tt.want}; !reflect.DeepEqual(matchedTickets(res), want) {
				t.Fatalf("matches %v, want %v", matchedTickets(res), want)
			}
		})
	}
}

// With latencies, a match is played where every ticket is within its current limit, the
// region with the smallest worst latency; a ticket without data accepts any region.
func TestTheRegionIsWithinEveryTicketsLimit(t *testing.T) {
	t.Parallel()
	cfg := matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 100}}, MaxLatency: []matchrules.Step{{AfterS: 0, Value: 50}, {AfterS: 20, Value: 100}}}
	lat := func(t matchpool.Ticket, l ...matchpool.RegionLatency) matchpool.Ticket { t.Latencies = l; return t }
	tests := []struct {
		name    string
		tickets []matchpool.Ticket
		matches [][]int
		region  string
	}{
		{"the smallest worst latency", []matchpool.Ticket{
			lat(solo(1000, 10), matchpool.RegionLatency{Region: "eu", MS: 40}, matchpool.RegionLatency{Region: "us", MS: 30}),
			lat(solo(1000, 10), matchpool.RegionLatency{Region: "eu", MS: 20}, matchpool.RegionLatency{Region: "us", MS: 45}),
		}, [][]int{{0, 1}}, "eu"},
		{"only where both are within their limits", []matchpool.Ticket{
			lat(solo(1000, 10), matchpool.RegionLatency{Region: "eu", MS: 60}, matchpool.RegionLatency{Region: "us", MS: 30}),
			lat(solo(1000, 10), matchpool.RegionLatency{Region: "eu", MS: 20}, matchpool.RegionLatency{Region: "us", MS: 45}),
		}, [][]int{{0, 1}}, "us"},
		{"a limit widens with the ticket's wait", []matchpool.Ticket{
			lat(solo(1000, -20), matchpool.RegionLatency{Region: "eu", MS: 60}), // waited 30 s: 100 ms
			lat(solo(1000, 10), matchpool.RegionLatency{Region: "eu", MS: 20}),
		}, [][]int{{0, 1}}, "eu"},
		{"no region in common", []matchpool.Ticket{
			lat(solo(1000, 10), matchpool.RegionLatency{Region: "eu", MS: 20}),
			lat(solo(1000, 10), matchpool.RegionLatency{Region: "us", MS: 20}),
		}, [][]int{}, ""},
		{"no data: any region will do", []matchpool.Ticket{
			solo(1000, 10),
			lat(solo(1000, 10), matchpool.RegionLatency{Region: "us", MS: 20}),
		}, [][]int{{0, 1}}, "us"},
		{"no data at all: no region named", []matchpool.Ticket{solo(1000, 10), solo(1000, 10)}, [][]int{{0, 1}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, tt.tickets, 20, cfg)
			if !reflect.DeepEqual(matchedTickets(res), tt.matches) {
				t.Fatalf("matches %v, want %v", matchedTickets(res), tt.matches)
			}
			if len(res.Matches) > 0 && res.Matches[0].Region != tt.region {
				t.Fatalf("region %q, want %q", res.Matches[0].Region, tt.region)
			}
		})
	}
}

// Without MaxLatency, latencies are not considered.
func TestLatencyOffIgnoresLatencies(t *testing.T) {
	t.Parallel()
	a, b := solo(1000, 0), solo(1000, 0)
	a.Latencies = []matchpool.RegionLatency{{Region: "eu", MS: 500}}
	b.Latencies = []matchpool.RegionLatency{{Region: "us", MS: 500}}
	res := run(t, []matchpool.Ticket{a, b}, 1, matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 10}}})
	if len(res.Matches) != 1 || res.Matches[0].Region != "" {
		t.Fatalf("matches %+v, want one without a region", res.Matches)
	}
}

// Invalid input is one apperr.Invalid error naming every field at fault in the package's
// terms.
func TestInvalidInputNamesEveryField(t *testing.T) {
	t.Parallel()
	ok := matchrules.Config{TeamSize: 2, Interval: []matchrules.Step{{AfterS: 0, Value: 10}}}
	good := solo(1000, 0)
	nan := math.NaN()
	tests := []struct {
		name    string
		cfg     matchrules.Config
		now     float64
		tickets []matchpool.Ticket
		fields  []string
	}{
		{"team size 0", matchrules.Config{TeamSize: 0, Interval: ok.Interval}, 0, nil, []string{"team_size"}},
		{"team size 17", matchrules.Config{TeamSize: 17, Interval: ok.Interval}, 0, nil, []string{"team_size"}},
		{"unknown strategy", matchrules.Config{TeamSize: 2, Strategy: "fifo", Interval: ok.Interval}, 0, nil, []string{"strategy"}},
		{"no interval", matchrules.Config{TeamSize: 2}, 0, nil, []string{"interval"}},
		{"first step not at 0", matchrules.Config{TeamSize: 2, Interval: []matchrules.Step{{AfterS: 5, Value: 10}}}, 0, nil, []string{"interval[0].after_s"}},
		{"steps out of order", matchrules.Config{TeamSize: 2, Interval: []matchrules.Step{{AfterS: 0, Value: 10}, {AfterS: 10, Value: 20}, {AfterS: 10, Value: 30}}}, 0, nil, []string{"interval[2].after_s"}},
		{"a narrowing step", matchrules.Config{TeamSize: 2, Interval: []matchrules.Step{{AfterS: 0, Value: 10}, {AfterS: 10, Value: 5}}}, 0, nil, []string{"interval[1].value"}},
		{"values not finite", matchrules.Config{TeamSize: 2, Interval: []matchrules.Step{{AfterS: 0, Value: math.Inf(1)}, {AfterS: nan, Value: nan}}}, 0, nil,
			[]string{"interval[0].value", "interval[1].after_s", "interval[1].value"}},
		{"a negative latency limit", matchrules.Config{TeamSize: 2, Interval: ok.Interval, MaxLatency: []matchrules.Step{{AfterS: 0, Value: -1}}}, 0, nil, []string{"max_latency[0].value"}},
		{"latency steps out of order", matchrules.Config{TeamSize: 2, Interval: ok.Interval, MaxLatency: []matchrules.Step{{AfterS: 1, Value: 50}}}, 0, nil, []string{"max_latency[0].after_s"}},
		{"now not finite", ok, math.Inf(-1), nil, []string{"now"}},
		{"tickets", ok, 0, []matchpool.Ticket{
			good,
			{Ratings: nil, ExpiresAt: 1},
			{Ratings: []float64{1, 2, 3}, ExpiresAt: 1},
			{Ratings: []float64{1, nan}, WaitingSince: math.Inf(1), ExpiresAt: nan},
			{Ratings: []float64{1}, ExpiresAt: 1, Latencies: []matchpool.RegionLatency{{Region: "us", MS: 1}, {Region: "eu", MS: -1}, {Region: "", MS: 2}}},
			{Ratings: []float64{1}, ExpiresAt: 1, Backfill: &matchpool.Backfill{OpenSlots: [2]int{1, 0}}},
			{ExpiresAt: 1, Latencies: []matchpool.RegionLatency{{Region: "eu", MS: 0}, {Region: "us", MS: 0}}, Backfill: &matchpool.Backfill{
				Teams:     [2]teams.Roster{{Players: []float64{-1}}, {Players: []float64{1, 1}, Bots: []float64{nan}}},
				OpenSlots: [2]int{-1, 1}, Bots: &teams.BotRule{MeanWeight: -1}}},
			{ExpiresAt: 1, Backfill: &matchpool.Backfill{Teams: [2]teams.Roster{{Players: []float64{1}}}}},
		}, []string{"tickets[1].ratings", "tickets[2].ratings", "tickets[3].ratings[1]", "tickets[3].waiting_since",
			"tickets[3].expires_at", "tickets[4].latencies[1].region", "tickets[4].latencies[1].ms",
			"tickets[4].latencies[2].region", "tickets[5].ratings", "tickets[5].backfill.teams",
			"tickets[6].latencies", "tickets[6].backfill.teams[0].players[0]", "tickets[6].backfill.teams[1].bots[0]",
			"tickets[6].backfill.open_slots[0]", "tickets[6].backfill.open_slots[1]", "tickets[6].backfill.bots.mean_weight",
			"tickets[7].backfill.open_slots"}},
		{"an expired ticket is checked too", ok, 10, []matchpool.Ticket{{Ratings: []float64{nan}, ExpiresAt: 1}}, []string{"tickets[0].ratings[0]"}},
		{"a bad config and a bad ticket", matchrules.Config{TeamSize: 2}, 0, []matchpool.Ticket{{ExpiresAt: 1}}, []string{"interval", "tickets[0].ratings"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := Run(tt.tickets, tt.now, tt.cfg)
			slices.Sort(tt.fields)
			if got := faultFields(t, err); !slices.Equal(got, tt.fields) {
				t.Fatalf("fields %v, want %v (%v)", got, tt.fields, err)
			}
		})
	}
}

// faultFields are the fields an apperr.Invalid error names, sorted.
func faultFields(t *testing.T, err error) []string {
	t.Helper()
	var e *apperr.Error
	if !errors.As(err, &e) || e.Code != apperr.Invalid {
		t.Fatalf("error %v, want an apperr.Invalid", err)
	}
	var out []string
	for _, f := range e.Fields {
		out = append(out, f.Field)
	}
	slices.Sort(out)
	return out
}

// A pass holds at most MaxRegions region names; the first beyond is named.
func TestTooManyRegionsIsInvalid(t *testing.T) {
	t.Parallel()
	cfg := matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 10}}, MaxLatency: []matchrules.Step{{AfterS: 0, Value: 50}}}
	var tk []matchpool.Ticket
	for i := range matchpool.MaxRegions + 1 {
		x := solo(1000, float64(i))
		x.Latencies = []matchpool.RegionLatency{{Region: "r" + strconv.Itoa(i), MS: 10}}
		tk = append(tk, x)
	}
	if _, err := Run(tk[:matchpool.MaxRegions], 100, cfg); err != nil {
		t.Fatalf("%d regions: %v", matchpool.MaxRegions, err)
	}
	_, err := Run(tk, 100, cfg)
	if got, want := faultFields(t, err), []string{"tickets[64].latencies[0].region"}; !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
}

// Config.Validate and Ticket.Validate apply Run's rules to one config or ticket, the
// ticket's fields named as in a ticket.
func TestValidateAppliesRunsRules(t *testing.T) {
	t.Parallel()
	if err := (matchrules.Config{TeamSize: 5, Interval: []matchrules.Step{{AfterS: 0, Value: 25}, {AfterS: 10, Value: 50}}, MaxLatency: []matchrules.Step{{AfterS: 0, Value: 60}}}).Validate(); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	if got := faultFields(t, matchrules.Config{TeamSize: 5}.Validate()); !slices.Equal(got, []string{"interval"}) {
		t.Fatalf("fields %v", got)
	}
	if err := solo(1000, 0).Validate(1); err != nil {
		t.Fatalf("a valid ticket: %v", err)
	}
	bad := party(0, 1, 2, 3)
	bad.Latencies = []matchpool.RegionLatency{{Region: "eu", MS: math.NaN()}}
	if got, want := faultFields(t, bad.Validate(2)), []string{"latencies[0].ms", "ratings"}; !slices.Equal(got, want) {
		t.Fatalf("fields %v, want %v", got, want)
	}
}

// Run reads its input and never writes it, and passes run at once give each its own
// answer (the buffers a pass keeps are its own while it runs).
func TestRunLeavesItsInputAndRunsConcurrently(t *testing.T) {
	t.Parallel()
	type pass struct {
		tk  []matchpool.Ticket
		now float64
		cfg matchrules.Config
		res matchpool.Result
	}
	var passes []pass
	for seed := range uint64(40) {
		tk, now, cfg := testqueue.Random(randFor(seed), 30)
		before := cloneTickets(tk)
		res, err := Run(tk, now, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(tk, before) {
			t.Fatalf("seed %d: Run changed its input", seed)
		}
		passes = append(passes, pass{tk, now, cfg, res})
	}
	var wg sync.WaitGroup
	for i := range passes {
		wg.Go(func() {
			for range 5 {
				res, err := Run(passes[i].tk, passes[i].now, passes[i].cfg)
				if err != nil || !reflect.DeepEqual(res, passes[i].res) {
					t.Errorf("pass %d: concurrent runs differ (%v)", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
}

func cloneTickets(tk []matchpool.Ticket) []matchpool.Ticket {
	out := slices.Clone(tk)
	for i := range out {
		out[i].Ratings = slices.Clone(tk[i].Ratings)
		out[i].Latencies = slices.Clone(tk[i].Latencies)
	}
	return out
}

// A ticket whose every region is beyond the widest latency limit can never be matched: it
// expires at once with ReasonNoRegion, not at its TTL; one within the widest limit waits
// for its limit to widen; one without data accepts any region; and without a latency
// schedule latencies are ignored.
func TestTicketsWithNoRegionExpire(t *testing.T) {
	t.Parallel()
	widening := matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 100}}, MaxLatency: []matchrules.Step{{AfterS: 0, Value: 50}, {AfterS: 20, Value: 120}}}
	lat := func(l ...matchpool.RegionLatency) matchpool.Ticket { x := solo(1000, 0); x.Latencies = l; return x }
	tests := []struct {
		name string
		cfg  matchrules.Config
		tk   matchpool.Ticket
		want []matchpool.Expiry
	}{
		{"every region beyond the widest limit", widening, lat(matchpool.RegionLatency{Region: "eu", MS: 121}, matchpool.RegionLatency{Region: "us", MS: 300}), []matchpool.Expiry{{Ticket: 0, Reason: matchpool.ReasonNoRegion}}},
		{"one region within the widest limit", widening, lat(matchpool.RegionLatency{Region: "eu", MS: 120}, matchpool.RegionLatency{Region: "us", MS: 300}), nil},
		{"no latency data", widening, solo(1000, 0), nil},
		{"latency not considered", matchrules.Config{TeamSize: 1, Interval: []matchrules.Step{{AfterS: 0, Value: 100}}}, lat(matchpool.RegionLatency{Region: "eu", MS: 5000}), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := run(t, []matchpool.Ticket{tt.tk}, 1, tt.cfg)
			if !slices.Equal(res.Expired, tt.want) {
				t.Fatalf("expired %v, want %v", res.Expired, tt.want)
			}
		})
	}
}
