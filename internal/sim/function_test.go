package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/examples/mmf/clans"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// clanScenario is the live preset's queue (default coefficients, rating_window, its
// widening, parties) with a clan on every ticket, one of 50: played by the queue's rules,
// and by examples/mmf's function, which keeps a clan on one team.
func clanScenario(matches int) Scenario {
	sc := testPreset("live", matches)
	sc.Sweep = nil
	names := make([]string, 50)
	for i := range names {
		names[i] = fmt.Sprintf("clan%02d", i)
	}
	sc.Attributes = map[string]AttributeDist{clans.Attribute: {Type: matchrules.TypeString, Values: names}}
	def := ThesisDefault
	rules := Configuration{Name: "rules", Matcher: "tick", Strategy: matchrules.RatingWindow, Coefficients: &def,
		Widening: &Widening{Initial: 25, Step: 25, EverySeconds: 5}, TicketTTLS: 300}
	function := rules
	function.Name, function.Matcher, function.Function = "clans function", "function", ClientFunction(clans.Match)
	sc.Configurations = []Configuration{rules, function}
	return sc
}

// clanSplits wraps a matcher and counts the matches it made with a clan on both teams.
type clanSplits struct {
	Matcher
	matches, split int
}

func (c *clanSplits) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	matches, expired := c.Matcher.Tick(waiting, now)
	clanOf := map[int]string{}
	for _, t := range waiting {
		for _, p := range t.Players {
			clanOf[p] = t.Attributes[clans.Attribute].Str
		}
	}
	for _, m := range matches {
		c.matches++
		side := map[string]int{}
		split := false
		for k, team := range m.Teams {
			for _, p := range team {
				if s, ok := side[clanOf[p]]; ok && s != k {
					split = true
				}
				side[clanOf[p]] = k
			}
		}
		if split {
			c.split++
		}
	}
	return matches, expired
}

// The example's function against the queue's rules on one seed, the same arrivals and
// clans: the rules put a clan on both teams of a share of their matches, the function in
// none, every one of its proposals passing the queue's check; what it costs in wait and
// balance is logged (docs/match-functions.md quotes it).
func TestClanFunctionAgainstTheRules(t *testing.T) {
	t.Parallel()
	sc := clanScenario(3000)
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	split := map[string]float64{}
	for _, cf := range sc.Configurations {
		r, err := newRun(&sc, cf)
		if err != nil {
			t.Fatal(err)
		}
		inner := r.matcher
		counter := &clanSplits{Matcher: inner}
		r.matcher = counter
		if err := r.loop(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if len(r.res.Matches) != sc.Matches || r.res.Truncated {
			t.Fatalf("%s: %d matches of %d", cf.Name, len(r.res.Matches), sc.Matches)
		}
		if f, ok := inner.(*FunctionPass); ok && (len(f.Rejected()) > 0 || f.Failed() > 0) {
			t.Errorf("%s: the check rejected %v, %d calls failed", cf.Name, f.Rejected(), f.Failed())
		}
		s := Summarize(r.res)
		split[cf.Name] = float64(counter.split) / float64(counter.matches)
		t.Logf("%-15s %d matches: a clan on both teams %.1f%%, wait median %.0f s p90 %.0f s, team average difference mean %.1f p90 %.1f, one-sided %.1f%%, expired %d of %d tickets",
			cf.Name, s.Matches, 100*split[cf.Name], s.WaitMedian, s.WaitP90, s.AverageDifference.Mean, s.AverageDifference.P90, 100*s.OneSided, s.Expired, s.Tickets)
	}
	if split["clans function"] != 0 {
		t.Errorf("the function put a clan on both teams in %.1f%% of its matches", 100*split["clans function"])
	}
	if split["rules"] < 0.05 {
		t.Errorf("the rules split a clan in %.1f%% of their matches: the scenario does not tell the two apart", 100*split["rules"])
	}
}

// A configuration's function is refused where it cannot run; a failing or rejected
// function is counted, not matched.
func TestFunctionMatcher(t *testing.T) {
	t.Parallel()
	sc := clanScenario(100)
	sc.Matches = 20
	cf := sc.Configurations[1]
	cf.Function = nil
	if err := cf.validate(&sc); err == nil || !strings.Contains(err.Error(), "needs a Go Function") {
		t.Errorf("no function: %v", err)
	}
	cf.Matcher = "pairing"
	cf.Rules = []Rule{{Name: "clan", Type: matchrules.RuleEqual, Attribute: clans.Attribute}}
	if err := cf.validate(&sc); err == nil || !strings.Contains(err.Error(), "tick matcher only, or a function's") {
		t.Errorf("rules on the pairing: %v", err)
	}
	calls := 0
	bad := Configuration{Name: "bad", Matcher: "function", Coefficients: sc.Configurations[0].Coefficients, Widening: sc.Configurations[0].Widening,
		TicketTTLS: 300, Function: func(req queue.FunctionRequest) ([]queue.ProposedMatch, error) {
			calls++
			if calls%2 == 0 {
				return nil, errors.New("down")
			}
			// The pool's first ticket: a match of one team, then one with the ticket on both.
			id := req.Pool[0].ID
			return []queue.ProposedMatch{{Teams: [][]string{{id}}}, {Teams: [][]string{{id}, {id}}}}, nil
		}}
	sc.MaxDays = 0.01
	r, err := newRun(&sc, bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.loop(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if len(r.res.Matches) != 0 || r.res.FunctionFailures != calls/2 || r.res.Rejected["party_split"] != calls-calls/2 || r.res.Rejected["teams"] != calls-calls/2 {
		t.Errorf("%d calls: %d matches, %d failures, rejected %v", calls, len(r.res.Matches), r.res.FunctionFailures, r.res.Rejected)
	}
}
