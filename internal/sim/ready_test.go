package sim

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// readyScenario is the ready preset, small enough for a test.
func readyScenario(matches int) Scenario {
	sc := testPreset("ready", matches)
	sc.Population.Players = 4000
	return sc
}

func TestAcceptanceValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		matcher string
		rate    float64
		ok      bool
	}{
		{"tick", 0, true},
		{"tick", 0.1, true},
		{"tick", 0.999, true},
		{"tick", 1, false},
		{"tick", 1.5, false},
		{"tick", -0.1, false},
		{"tick", math.NaN(), false},
		{"pairing", 0.1, false}, // it splits parties: a ticket in two proposals
		{"none", 0.1, false},
	} {
		cf := Configuration{Name: "a", Matcher: tc.matcher, Acceptance: &Acceptance{DeclineRate: tc.rate}}
		err := cf.validate(&Scenario{TeamSize: 5})
		if (err == nil) != tc.ok {
			t.Errorf("%s, decline_rate %g: validate = %v, want ok %v", tc.matcher, tc.rate, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "acceptance") {
			t.Errorf("%s, decline_rate %g: the error %q does not name acceptance", tc.matcher, tc.rate, err)
		}
	}
	sc, _ := Preset("ready")
	in := strings.Replace(string(sc.JSON()), `"decline_rate": 0.1`, `"decline_rate": 1`, 1)
	if _, err := ReadScenario(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), "acceptance.decline_rate") {
		t.Errorf("a scenario with decline_rate 1: error %v, want one naming acceptance.decline_rate", err)
	}
}

// The ready preset's report is the same byte for byte for the same seed, whatever the
// workers, and counts the declines and the matches that needed a second proposal.
func TestReadySameSeedSameReport(t *testing.T) {
	t.Parallel()
	sc := readyScenario(600)
	ctx := context.Background()
	one, _ := sameReport(t, &sc, "declined", "2nd proposal", "second_proposal_share", "10% decline")
	sc.Seed++
	sc.Configurations = sc.Configurations[2:3] // 10% decline
	other, err := Compare(ctx, &sc, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprintf("%+v", one.Summaries[2]) == fmt.Sprintf("%+v", other.Summaries[0]) {
		t.Fatal("another seed gave the same run")
	}
}

// A ready check nobody declines changes nothing but its counts: the answers come from a
// stream of their own, so the arrivals, players, matches and rounds are those of the queue
// without one.
func TestZeroDeclineRateIsNoReadyCheck(t *testing.T) {
	t.Parallel()
	sc := readyScenario(600)
	cf := configuration(t, &sc, "no ready check")
	without, err := Run(context.Background(), &sc, cf, nil)
	if err != nil {
		t.Fatal(err)
	}
	cf.Acceptance = &Acceptance{DeclineRate: 0}
	with, err := Run(context.Background(), &sc, cf, nil)
	if err != nil {
		t.Fatal(err)
	}
	if with.Proposals != len(with.Matches) || with.Declined != 0 || with.DeclinedTickets != 0 || with.SecondProposal != 0 {
		t.Errorf("decline_rate 0: %d proposals for %d matches, %d declined (%d tickets), %d second proposals",
			with.Proposals, len(with.Matches), with.Declined, with.DeclinedTickets, with.SecondProposal)
	}
	with.Acceptance, with.Proposals = false, 0
	a, b := fmt.Sprintf("%+v", Summarize(with)), fmt.Sprintf("%+v", Summarize(without))
	if a != b || !reflect.DeepEqual(with.Waits, without.Waits) || !reflect.DeepEqual(with.PairDifferences, without.PairDifferences) {
		t.Errorf("a ready check nobody declines changed the run:\n%s\n%s", a, b)
	}
}

// recorder is a Matcher that watches the tickets around a ready check: a ticket of a match
// that comes back to the queue must come back whole, with its creation time (its wait kept).
type recorder struct {
	t        *testing.T
	inner    Matcher
	proposed map[int]Ticket // ticket ID -> the ticket as it was proposed
	back     int            // tickets seen searching again after a proposal
}

func (m *recorder) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	for _, tk := range waiting {
		if was, ok := m.proposed[tk.ID]; ok {
			if tk.Created != was.Created || !reflect.DeepEqual(tk.Players, was.Players) {
				m.t.Fatalf("at %v: ticket %d is back as %+v, was proposed as %+v", now, tk.ID, tk, was)
			}
			delete(m.proposed, tk.ID)
			m.back++
		}
	}
	matches, expired := m.inner.Tick(waiting, now)
	owner := map[int]Ticket{}
	for _, tk := range waiting {
		for _, p := range tk.Players {
			owner[p] = tk
		}
	}
	for _, mt := range matches {
		for _, team := range mt.Teams {
			for _, p := range team {
				tk := owner[p]
				m.proposed[tk.ID] = Ticket{ID: tk.ID, Created: tk.Created, Players: append([]int(nil), tk.Players...)}
			}
		}
	}
	return matches, expired
}

// With a 10% decline rate per player: a proposal of ten fails as often as one of ten
// independent answers is a no (1 - 0.9^10, 65%); every proposal ends as a match or a
// decline; the tickets that come back keep their wait; matches that needed a second proposal
// are counted; nobody is left held.
func TestDeclinesRequeueTheOthersWithTheirWait(t *testing.T) {
	t.Parallel()
	sc := readyScenario(900)
	cf := configuration(t, &sc, "10% decline")
	r, err := newRun(&sc, cf)
	if err != nil {
		t.Fatal(err)
	}
	rec := &recorder{t: t, inner: r.matcher, proposed: map[int]Ticket{}}
	r.matcher = rec
	if err := r.loop(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	res := r.res
	if len(res.Matches) != sc.Matches || res.Proposals != len(res.Matches)+res.Declined {
		t.Fatalf("%d matches of %d, %d proposals, %d declined: a proposal must end as a match or a decline",
			len(res.Matches), sc.Matches, res.Proposals, res.Declined)
	}
	share, want := float64(res.Declined)/float64(res.Proposals), 1-math.Pow(0.9, 10)
	// Over some 2,500 proposals the share's standard deviation is about 1 point.
	if math.Abs(share-want) > 0.05 {
		t.Errorf("%.1f%% of %d proposals declined, want about %.1f%%", 100*share, res.Proposals, 100*want)
	}
	if res.DeclinedTickets < res.Declined || res.SecondProposal == 0 || res.SecondProposal > len(res.Matches) {
		t.Errorf("%d declined proposals cancelled %d tickets; %d matches of %d needed a second proposal",
			res.Declined, res.DeclinedTickets, res.SecondProposal, len(res.Matches))
	}
	if rec.back == 0 {
		t.Error("no ticket of a declined proposal searched again")
	}
	for p, st := range r.state {
		if st == searchingAgain {
			t.Fatalf("player %d is still held by a declined proposal", p)
		}
	}
	s := Summarize(res)
	if s.SecondProposal <= 0 || s.SecondProposal >= 1 {
		t.Errorf("second-proposal share %v", s.SecondProposal)
	}
}

// sameReport runs sc with 1 worker and with 2, fails unless the reports are the same byte
// for byte and say each of says, and returns the first run and its report.
func sameReport(t *testing.T, sc *Scenario, says ...string) (*Comparison, []byte) {
	t.Helper()
	one, err := Compare(context.Background(), sc, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	two, err := Compare(context.Background(), sc, 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, b := reportBytes(t, one), reportBytes(t, two)
	if !bytes.Equal(a, b) {
		t.Fatalf("same seed, different reports (1 worker, then 2):\n%s\n---\n%s", a, b)
	}
	for _, want := range says {
		if !bytes.Contains(a, []byte(want)) {
			t.Errorf("the report does not say %q:\n%s", want, a)
		}
	}
	return one, a
}
