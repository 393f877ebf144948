package sim

import (
	"encoding/csv"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"gonum.org/v1/gonum/stat"
)

// Dist is the mean, median, 90th and 99th percentiles and maximum of a list of values (zero
// for an empty list). The quantiles are the empirical ones: the median is the smallest value
// with at least half the list at or below, and so on.
type Dist struct {
	Mean, Median, P90, P99, Max float64
}

// Summary is the report of one configuration.
type Summary struct {
	Name    string
	Matches int
	// WaitMedian and WaitP90 are seconds from a ticket's arrival until its players left the
	// queue, matched or expired, over every player who left it.
	WaitMedian, WaitP90 float64
	Tickets             int
	Expired             int // tickets that expired
	Refused             int // arrivals for which the population had too few idle players
	// AverageDifference is the thesis's team skill-rating difference (Table 8.3), in the
	// ratings the queue saw; PairDifference the difference of each pair of opponents.
	AverageDifference Dist
	PairDifference    Dist
	SkillGap          float64 // mean |true skill difference| of the teams, logits of a round
	// OneSided is the share of matches a team won by more than 70% of the rounds;
	// WinnerRounds[k] counts the matches whose winner took Rounds-k rounds (Table 8.4's
	// columns "11 rounds", "10 rounds", ... for k = 0, 1, ...).
	OneSided     float64
	WinnerRounds []int
	Rounds       int
	Parties      int
	PartiesSplit int
	// MixedParties is the share of the matches whose teams' largest parties differ in size
	// (a party of four against solo players, say); NaN when no ticket was a party.
	MixedParties float64
	// LogLoss is the rater's mean log loss on the match winners (NaN when it predicts
	// nothing); LogLossFirst and LogLossLast the same over the first and last tenth of the
	// matches. TruthLogLoss is the outcome model's own, the floor any rater can reach.
	LogLoss, LogLossFirst, LogLossLast float64
	TruthLogLoss                       float64
	// RatingTruthFirst and RatingTruthLast are the first and last Snapshot correlations
	// of the queue's ratings with the true skills: how well the rating knows the players.
	RatingTruthFirst, RatingTruthLast float64
	Truncated                         bool
	SimulatedS                        float64
	// Rules: the configuration has match rules. HeldBy is the rule that held the most
	// anchors over the run's passes (see QueuePass.WaitingOn; "" when the matcher does not
	// say or nothing waited), HeldShare its share of the anchors held.
	Rules     bool
	HeldBy    string
	HeldShare float64
	// Held is every rule that held anchors with its share, the most first.
	Held []Held
	// Roles: the configuration has a role composition. RolesRepicked counts the party
	// tickets whose players picked roles again for the ticket (theirs fitted no team),
	// RolesRefused the arrivals refused because no pick fitted (Result's).
	Roles                       bool
	RolesRepicked, RolesRefused int
	// Acceptance: the configuration has a ready check. Proposals the queue made, Declined
	// of them, DeclinedTickets the tickets the declines cancelled; SecondProposal is the
	// share of the matches made that needed more than one proposal (a ticket of theirs had
	// been in a declined one).
	Acceptance                           bool
	Proposals, Declined, DeclinedTickets int
	SecondProposal                       float64
	// AvoidResult: the players with an avoid list, and the matches that held one of them
	// with a player he avoids (Result's).
	AvoidResult
}

// Held is a rule and the share of the held anchors it held.
type Held struct {
	Rule  string
	Share float64
}

// Summarize reports a run.
func Summarize(res *Result) Summary {
	s := Summary{
		Name: res.Name, Matches: len(res.Matches), Tickets: res.Tickets, Expired: res.Expired, Refused: res.Refused,
		Rounds: res.Rounds, Parties: res.Parties, PartiesSplit: res.PartiesSplit,
		Truncated: res.Truncated, SimulatedS: res.SimulatedS,
		WinnerRounds: make([]int, res.Rounds-res.Rounds/2), Rules: res.Rules,
		Roles: res.Roles, RolesRepicked: res.RolesRepicked, RolesRefused: res.RolesRefused,
		Acceptance: res.Acceptance, Proposals: res.Proposals, Declined: res.Declined, DeclinedTickets: res.DeclinedTickets,
		SecondProposal: ratio(res.SecondProposal, len(res.Matches)), AvoidResult: res.AvoidResult,
	}
	s.Held = held(res.WaitingOn)
	if len(s.Held) > 0 {
		s.HeldBy, s.HeldShare = s.Held[0].Rule, s.Held[0].Share
	}
	waits := slices.Clone(res.Waits)
	slices.Sort(waits)
	s.WaitMedian, s.WaitP90 = quantile(0.5, waits), quantile(0.9, waits)
	s.PairDifference = distOf(slices.Clone(res.PairDifferences))
	avg := make([]float64, len(res.Matches))
	oneSided, gap, mixed := 0, 0.0, 0
	for i, m := range res.Matches {
		avg[i] = m.AverageDifference
		gap += m.SkillGap
		if m.LargestParty[0] != m.LargestParty[1] {
			mixed++
		}
		if OneSided(m.Rounds) {
			oneSided++
		}
		if w := max(m.Rounds[0], m.Rounds[1]); res.Rounds-w < len(s.WinnerRounds) {
			s.WinnerRounds[res.Rounds-w]++
		}
	}
	s.AverageDifference = distOf(avg)
	s.MixedParties = math.NaN()
	if n := len(res.Matches); n > 0 {
		s.OneSided = float64(oneSided) / float64(n)
		s.SkillGap = gap / float64(n)
		if res.Parties > 0 {
			s.MixedParties = float64(mixed) / float64(n)
		}
	}
	tenth := max(len(res.Matches)/10, 1)
	s.LogLoss = logLoss(res.Matches, predicted)
	s.LogLossFirst = logLoss(res.Matches[:min(tenth, len(res.Matches))], predicted)
	s.LogLossLast = logLoss(res.Matches[max(len(res.Matches)-tenth, 0):], predicted)
	s.TruthLogLoss = logLoss(res.Matches, func(m MatchRecord) float64 { return MatchWinProbability(m.RoundP, res.Rounds) })
	s.RatingTruthFirst, s.RatingTruthLast = math.NaN(), math.NaN()
	if n := len(res.Agreement); n > 0 {
		s.RatingTruthFirst, s.RatingTruthLast = res.Agreement[0].Correlation, res.Agreement[n-1].Correlation
	}
	return s
}

func predicted(m MatchRecord) float64 { return m.Predicted }

// held lists the rules that held anchors with their shares, the most first, then by name.
func held(counts map[string]int) []Held {
	total := 0
	for _, c := range counts {
		total += c
	}
	var out []Held
	rules := slices.Sorted(maps.Keys(counts))
	slices.SortStableFunc(rules, func(a, b string) int { return counts[b] - counts[a] })
	for _, rule := range rules {
		if counts[rule] > 0 {
			out = append(out, Held{rule, ratio(counts[rule], total)})
		}
	}
	return out
}

// WriteHeld writes, per configuration whose matcher says, the share of the anchors each
// rule held: "mode + maps: mode 74.0%, maps 26.0%".
func WriteHeld(w io.Writer, ss []Summary) error {
	for _, s := range ss {
		if len(s.Held) == 0 {
			continue
		}
		parts := make([]string, len(s.Held))
		for i, h := range s.Held {
			parts[i] = h.Rule + " " + pct(h.Share)
		}
		if _, err := fmt.Fprintf(w, "  %s: %s\n", s.Name, strings.Join(parts, ", ")); err != nil {
			return err
		}
	}
	return nil
}

// WriteAvoid writes, per configuration whose players carry avoid lists, how many do and
// the matches that held one with a player he avoids (none, on the queue's pass).
func WriteAvoid(w io.Writer, ss []Summary) error {
	for _, s := range ss {
		if s.Avoiders == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "  %s: %d players avoid one each; %d of %d matches held a player and one he avoids\n",
			s.Name, s.Avoiders, s.AvoidBroken, s.Matches); err != nil {
			return err
		}
	}
	return nil
}

// held formats HeldBy and its share, "-" for none.
func (s Summary) held() string {
	if s.HeldBy == "" {
		return "-"
	}
	return s.HeldBy + " " + f(100*s.HeldShare, 0) + "%"
}

// anyRules reports whether a configuration has rules: the reports then say which rule held
// waiting tickets most (a report without rules keeps its columns).
func anyRules(ss []Summary) bool {
	return slices.ContainsFunc(ss, func(s Summary) bool { return s.Rules })
}

// anyRoles reports whether a configuration has a role composition: the reports then count
// the parties that picked their roles again.
func anyRoles(ss []Summary) bool {
	return slices.ContainsFunc(ss, func(s Summary) bool { return s.Roles })
}

// repicked formats the share of the tickets whose party picked roles again, with the
// arrivals refused when no pick fitted; "-" for a configuration without a composition.
func (s Summary) repicked() string {
	if !s.Roles {
		return "-"
	}
	out := pct(ratio(s.RolesRepicked, s.Tickets))
	if s.RolesRefused > 0 {
		out += fmt.Sprintf(" (%d refused)", s.RolesRefused)
	}
	return out
}

// anyAcceptance reports whether a configuration has a ready check: the reports then count
// the declined proposals and the matches that needed a second one.
func anyAcceptance(ss []Summary) bool {
	return slices.ContainsFunc(ss, func(s Summary) bool { return s.Acceptance })
}

// acceptance formats the declined proposals (of those made) and the second-proposal share,
// "-" for a configuration without a ready check.
func (s Summary) acceptance() string {
	if !s.Acceptance {
		return "-\t-"
	}
	return fmt.Sprintf("%d/%d\t%s", s.Declined, s.Proposals, pct(s.SecondProposal))
}

// logLoss is the mean of -log P(what happened) over the matches with a prediction of team 0
// winning (a draw scores as half a win each way); NaN when none has one.
func logLoss(ms []MatchRecord, p0 func(MatchRecord) float64) float64 {
	sum, n := 0.0, 0
	for _, m := range ms {
		p := p0(m)
		if math.IsNaN(p) {
			continue
		}
		p = min(max(p, 1e-12), 1-1e-12)
		switch {
		case m.Rounds[0] > m.Rounds[1]:
			sum -= math.Log(p)
		case m.Rounds[1] > m.Rounds[0]:
			sum -= math.Log(1 - p)
		default:
			sum -= (math.Log(p) + math.Log(1-p)) / 2
		}
		n++
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// distOf sorts xs and summarises it.
func distOf(xs []float64) Dist {
	if len(xs) == 0 {
		return Dist{}
	}
	slices.Sort(xs)
	return Dist{Mean: stat.Mean(xs, nil), Median: quantile(0.5, xs), P90: quantile(0.9, xs), P99: quantile(0.99, xs),
		Max: xs[len(xs)-1]}
}

// quantile of sorted values; 0 for none.
func quantile(q float64, sorted []float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return stat.Quantile(q, stat.Empirical, sorted, nil)
}

// f formats a figure with the given decimals; "-" for NaN (nothing to report).
func f(x float64, decimals int) string {
	if math.IsNaN(x) {
		return "-"
	}
	return strconv.FormatFloat(x, 'f', decimals, 64)
}

func pct(x float64) string { return f(100*x, 1) + "%" }

// pctOrNone is pct, or "-" for NaN.
func pctOrNone(x float64) string {
	if math.IsNaN(x) {
		return "-"
	}
	return pct(x)
}

// winnerRounds formats the counts of the one-sided matches by the winner's rounds (for 11
// rounds: won by 11, 10, 9 and 8).
func (s Summary) winnerRounds() string {
	var b []byte
	for k, n := range s.WinnerRounds {
		if !OneSided([2]int{s.Rounds - k, k}) {
			break
		}
		if k > 0 {
			b = append(b, '/')
		}
		b = strconv.AppendInt(b, int64(n), 10)
	}
	return string(b)
}

// WriteTable writes the summaries as an aligned table.
func WriteTable(w io.Writer, ss []Summary) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	wonBy := "won by"
	if len(ss) > 0 {
		// The one-sided margins, e.g. 11/10/9/8 of 11 rounds.
		var rounds []string
		for k := range ss[0].WinnerRounds {
			if r := ss[0].Rounds - k; OneSided([2]int{r, k}) {
				rounds = append(rounds, strconv.Itoa(r))
			}
		}
		wonBy += " " + strings.Join(rounds, "/")
	}
	rules := anyRules(ss)
	head := "configuration\tmatches\twait p50 s\tp90 s\texpired\t"
	if rules {
		head += "held most by\t"
	}
	roles := anyRoles(ss)
	if roles {
		head += "roles re-picked\t"
	}
	ready := anyAcceptance(ss)
	if ready {
		head += "declined\t2nd proposal\t"
	}
	fmt.Fprintln(tw, head+"avg diff mean\tmedian\tp90\tp99\tmax\tmixed parties\tpair diff mean\tmedian\tmax\tskill gap\tone-sided\t"+
		wonBy+"\tparties split\trating~truth first\tlast\tlog loss first\tlast\ttruth\t")
	for _, s := range ss {
		name := s.Name
		if s.Truncated {
			name += " (stopped at max_days)"
		}
		expired := pct(ratio(s.Expired, s.Tickets))
		if rules {
			expired += "\t" + s.held()
		}
		if roles {
			expired += "\t" + s.repicked()
		}
		if ready {
			expired += "\t" + s.acceptance()
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			name, s.Matches, f(s.WaitMedian, 1), f(s.WaitP90, 1), expired,
			f(s.AverageDifference.Mean, 2), f(s.AverageDifference.Median, 2), f(s.AverageDifference.P90, 2),
			f(s.AverageDifference.P99, 2), f(s.AverageDifference.Max, 1), pctOrNone(s.MixedParties),
			f(s.PairDifference.Mean, 2), f(s.PairDifference.Median, 2), f(s.PairDifference.Max, 1),
			f(s.SkillGap, 3), pct(s.OneSided), s.winnerRounds(), splitParties(s),
			f(s.RatingTruthFirst, 3), f(s.RatingTruthLast, 3), f(s.LogLossFirst, 4), f(s.LogLossLast, 4), f(s.TruthLogLoss, 4))
	}
	return tw.Flush()
}

func splitParties(s Summary) string {
	if s.Parties == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", s.PartiesSplit, s.Parties)
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// WriteCSV writes the summaries, one row each.
func WriteCSV(w io.Writer, ss []Summary) error {
	cw := csv.NewWriter(w)
	head := []string{"configuration", "matches", "tickets", "expired", "refused", "wait_median_s", "wait_p90_s",
		"average_difference_mean", "average_difference_median", "average_difference_p90", "average_difference_p99",
		"average_difference_max", "mixed_parties_share",
		"pair_difference_mean", "pair_difference_median", "pair_difference_max", "skill_gap_mean",
		"one_sided_share"}
	if len(ss) > 0 {
		for k := range ss[0].WinnerRounds {
			head = append(head, "won_by_"+strconv.Itoa(ss[0].Rounds-k))
		}
	}
	head = append(head, "parties", "parties_split", "rating_truth_first", "rating_truth_last", "log_loss", "log_loss_first_tenth", "log_loss_last_tenth",
		"truth_log_loss", "simulated_s", "truncated")
	rules := anyRules(ss)
	if rules {
		head = append(head, "held_most_by", "held_most_share")
	}
	roles := anyRoles(ss)
	if roles {
		head = append(head, "roles_repicked", "roles_refused")
	}
	ready := anyAcceptance(ss)
	if ready {
		head = append(head, "proposals", "declined_proposals", "declined_tickets", "second_proposal_share")
	}
	cw.Write(head)
	for _, s := range ss {
		row := []string{s.Name, strconv.Itoa(s.Matches), strconv.Itoa(s.Tickets), strconv.Itoa(s.Expired),
			strconv.Itoa(s.Refused), f(s.WaitMedian, 3), f(s.WaitP90, 3),
			f(s.AverageDifference.Mean, 4), f(s.AverageDifference.Median, 4), f(s.AverageDifference.P90, 4),
			f(s.AverageDifference.P99, 4), f(s.AverageDifference.Max, 4), f(s.MixedParties, 5),
			f(s.PairDifference.Mean, 4), f(s.PairDifference.Median, 4), f(s.PairDifference.Max, 4),
			f(s.SkillGap, 5), f(s.OneSided, 5)}
		for _, n := range s.WinnerRounds {
			row = append(row, strconv.Itoa(n))
		}
		row = append(row, strconv.Itoa(s.Parties), strconv.Itoa(s.PartiesSplit),
			f(s.RatingTruthFirst, 5), f(s.RatingTruthLast, 5), f(s.LogLoss, 5),
			f(s.LogLossFirst, 5), f(s.LogLossLast, 5), f(s.TruthLogLoss, 5), f(s.SimulatedS, 0),
			strconv.FormatBool(s.Truncated))
		if rules {
			row = append(row, s.HeldBy, f(s.HeldShare, 5))
		}
		if roles {
			if s.Roles {
				row = append(row, strconv.Itoa(s.RolesRepicked), strconv.Itoa(s.RolesRefused))
			} else {
				row = append(row, "", "")
			}
		}
		if ready {
			if s.Acceptance {
				row = append(row, strconv.Itoa(s.Proposals), strconv.Itoa(s.Declined), strconv.Itoa(s.DeclinedTickets), f(s.SecondProposal, 5))
			} else {
				row = append(row, "", "", "", "")
			}
		}
		cw.Write(row)
	}
	cw.Flush()
	return cw.Error()
}

// Window is a stretch of a run's matches, for the report over time.
type Window struct {
	FirstMatch, Matches int
	StartS              float64 // simulated time of its first match
	OneSided            float64
	LogLoss             float64 // the rater's; NaN when it predicts nothing
	TruthLogLoss        float64
	// RatingTruth is the Snapshot correlation taken at the window's end (NaN if none).
	RatingTruth float64
}

// Timeline cuts a run's matches into as many windows of equal size as it took Snapshots
// (the last window takes the rest).
func Timeline(res *Result) []Window {
	size := len(res.Matches) / snapshots
	if size == 0 {
		return nil
	}
	ws := make([]Window, snapshots)
	for i := range ws {
		lo, hi := i*size, (i+1)*size
		if i == snapshots-1 {
			hi = len(res.Matches)
		}
		ms := res.Matches[lo:hi]
		one := 0
		for _, m := range ms {
			if OneSided(m.Rounds) {
				one++
			}
		}
		ws[i] = Window{FirstMatch: lo, Matches: hi - lo, StartS: ms[0].AtS, OneSided: ratio(one, len(ms)),
			LogLoss:      logLoss(ms, predicted),
			TruthLogLoss: logLoss(ms, func(m MatchRecord) float64 { return MatchWinProbability(m.RoundP, res.Rounds) }),
			RatingTruth:  math.NaN()}
		if i < len(res.Agreement) {
			ws[i].RatingTruth = res.Agreement[i].Correlation
		}
	}
	return ws
}

// WriteTimelineCSV writes every run's Timeline.
func WriteTimelineCSV(w io.Writer, results []*Result) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"configuration", "window", "first_match", "matches", "start_s", "one_sided_share",
		"rating_truth_correlation", "log_loss", "truth_log_loss"})
	for _, res := range results {
		for i, win := range Timeline(res) {
			cw.Write([]string{res.Name, strconv.Itoa(i), strconv.Itoa(win.FirstMatch), strconv.Itoa(win.Matches),
				f(win.StartS, 0), f(win.OneSided, 5), f(win.RatingTruth, 5), f(win.LogLoss, 5), f(win.TruthLogLoss, 5)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteSweepCSV writes the trade-off sweep, one row a point.
func WriteSweepCSV(w io.Writer, points []SweepPoint) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"configuration", "factor", "wait_median_s", "wait_p90_s", "expired_share",
		"average_difference_mean", "pair_difference_mean", "one_sided_share"})
	for _, p := range points {
		s := p.Summary
		cw.Write([]string{p.Configuration, strconv.FormatFloat(p.Factor, 'g', -1, 64), f(s.WaitMedian, 3), f(s.WaitP90, 3),
			f(ratio(s.Expired, s.Tickets), 5), f(s.AverageDifference.Mean, 4), f(s.PairDifference.Mean, 4), f(s.OneSided, 5)})
	}
	cw.Flush()
	return cw.Error()
}

// WriteEvaluationsCSV writes the optimiser's evaluations, best first.
func WriteEvaluationsCSV(w io.Writer, o *Optimum) error {
	cw := csv.NewWriter(w)
	cw.Write(append(slices.Clone(o.Parameters), "wait_median_s", "wait_p90_s", "expired_share", "one_sided_share", "objective"))
	for _, e := range o.Evaluations {
		s := e.Summary
		cw.Write(append(o.point(e.Configuration), f(s.WaitMedian, 3), f(s.WaitP90, 3),
			f(ratio(s.Expired, s.Tickets), 5), f(s.OneSided, 5), f(e.Objective, 5)))
	}
	cw.Flush()
	return cw.Error()
}

// WriteSweepTable writes the trade-off sweep as an aligned table.
func WriteSweepTable(w io.Writer, points []SweepPoint) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "configuration\twidening x as slow\twait p50 s\tp90 s\texpired\tavg diff mean\tpair diff mean\tone-sided\t")
	for _, p := range points {
		s := p.Summary
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", p.Configuration, strconv.FormatFloat(p.Factor, 'g', -1, 64),
			f(s.WaitMedian, 1), f(s.WaitP90, 1), pct(ratio(s.Expired, s.Tickets)), f(s.AverageDifference.Mean, 2),
			f(s.PairDifference.Mean, 2), pct(s.OneSided))
	}
	return tw.Flush()
}
