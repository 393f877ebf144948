package tick

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/testqueue"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// The shaped pass against a brute force on small queues: every match keeps the shape, the
// rules and the compositions, nobody is matched twice, and the oldest ticket is matched
// whenever some set of tickets acceptable to it makes a match with it.
func TestShapedAgainstBruteForce(t *testing.T) {
	t.Parallel()
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	rng := rand.New(rand.NewPCG(7, 11))
	for run := range runs {
		tk, cfg := testqueue.RandomShaped(rng)
		now := 60.0
		res, err := Run(tk, now, cfg)
		if err != nil {
			t.Fatalf("run %d: %v", run, err)
		}
		ref := shapedRef{tk: tk, cfg: cfg, now: now}
		if msg := ref.checkMatches(res.Matches); msg != "" {
			t.Fatalf("run %d: %s\nconfig %+v\ntickets %+v\nmatches %+v", run, msg, cfg, tk, res.Matches)
		}
		oldest := ref.oldest()
		if ref.matchExists(oldest) && !slices.ContainsFunc(res.Matches, func(m matchpool.Match) bool { return slices.Contains(m.Tickets, oldest) }) {
			t.Fatalf("run %d: the oldest ticket %d has a match and waits (%+v)\nconfig %+v\ntickets %+v\nmatches %+v",
				run, oldest, res.Waiting, cfg, tk, res.Matches)
		}
	}
}

// shapedRef is the shaped pass's meaning, computed the plain way.
type shapedRef struct {
	tk  []matchpool.Ticket
	cfg matchrules.Config
	now float64
}

func (r *shapedRef) w() *world { return &world{tk: r.tk, cfg: r.cfg, now: r.now} }

func (r *shapedRef) oldest() int {
	o := 0
	for i, t := range r.tk {
		if t.WaitingSince < r.tk[o].WaitingSince {
			o = i
		}
	}
	return o
}

func (r *shapedRef) mean(i int) float64 {
	s := 0.0
	for _, x := range r.tk[i].Ratings {
		s += x
	}
	return s / float64(len(r.tk[i].Ratings))
}

func (r *shapedRef) mins(wait float64) []int {
	var out []int
	for _, d := range r.cfg.Shape {
		n := d.Size
		for _, s := range d.MinSize {
			if s.AfterS <= wait {
				n = int(s.Value)
			}
		}
		out = append(out, n)
	}
	return out
}

// accepts: candidate c within both its and the anchor's current intervals.
func (r *shapedRef) accepts(a, c int) bool {
	d := math.Abs(r.mean(a) - r.mean(c))
	return d <= matchrules.Current(r.cfg.Interval, r.now-r.tk[a].WaitingSince) && d <= matchrules.Current(r.cfg.Interval, r.now-r.tk[c].WaitingSince)
}

// matchExists: some set of tickets acceptable to anchor a makes a valid match with it.
func (r *shapedRef) matchExists(a int) bool {
	var cands []int
	for c := range r.tk {
		if c != a && r.accepts(a, c) {
			cands = append(cands, c)
		}
	}
	mins := r.mins(r.now - r.tk[a].WaitingSince)
	for mask := range 1 << len(cands) {
		s := []int{a}
		for j, c := range cands {
			if mask>>j&1 == 1 {
				s = append(s, c)
			}
		}
		if r.groupRulesBroken(s) == "" && !r.w().meet(s) && r.validSplitExists(s, mins) {
			return true
		}
	}
	return false
}

// groupRulesBroken: the first equal, intersect or distance rule the tickets of s break.
func (r *shapedRef) groupRulesBroken(s []int) string {
	w := r.w()
	for _, rule := range r.cfg.Rules {
		b := w.bound(rule, s)
		if len(b) == 0 {
			continue
		}
		switch rule.Kind {
		case matchrules.RuleEqual:
			for _, i := range b {
				if !sameValue(w.val(rule.Attribute, i), w.val(rule.Attribute, b[0])) {
					return rule.Name
				}
			}
		case matchrules.RuleIntersect:
			if len(w.common(rule.Attribute, b)) < rule.MinCommonValues() {
				return rule.Name
			}
		case matchrules.RuleDistance:
			lo, hi, tol := math.Inf(1), math.Inf(-1), math.Inf(1)
			for _, i := range b {
				v := w.val(rule.Attribute, i).Num
				if rule.ReadsRating() {
					v = r.mean(i)
				}
				lo, hi, tol = min(lo, v), max(hi, v), min(tol, w.tol(rule, i))
			}
			if hi-lo > tol {
				return rule.Name
			}
		}
	}
	return ""
}

// validSplitExists tries every assignment of the tickets of s to teams.
func (r *shapedRef) validSplitExists(s []int, mins []int) bool {
	n := len(r.cfg.Shape)
	team := make([]int, len(s))
	var try func(j int) bool
	try = func(j int) bool {
		if j == len(s) {
			return r.splitBroken(s, team, mins) == "" && r.w().keptApartBy(s, team)
		}
		for k := range n {
			team[j] = k
			if try(j + 1) {
				return true
			}
		}
		return false
	}
	return try(0)
}

// splitBroken says what a split (team[j]: the team of s[j]) breaks, "" when it is valid.
func (r *shapedRef) splitBroken(s, team, mins []int) string {
	n := len(r.cfg.Shape)
	used, sum, largest := make([]int, n), make([]float64, n), make([]int, n)
	capacity, players := 0, 0
	for k := range n {
		capacity += r.cfg.Shape[k].Size
	}
	for j, i := range s {
		size := len(r.tk[i].Ratings)
		used[team[j]] += size
		players += size
		largest[team[j]] = max(largest[team[j]], size)
		for _, x := range r.tk[i].Ratings {
			sum[team[j]] += x
		}
	}
	for k, d := range r.cfg.Shape {
		if used[k] > d.Size || used[k] < mins[k] || players == capacity && used[k] != d.Size {
			return fmt.Sprintf("team %d holds %d players (size %d, minimum %d)", k, used[k], d.Size, mins[k])
		}
		if !r.rolesFit(s, team, k) {
			return fmt.Sprintf("team %d's roles break its composition", k)
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	llo, lhi := math.MaxInt, 0
	for k := range n {
		if used[k] > 0 {
			avg := sum[k] / float64(used[k])
			lo, hi = min(lo, avg), max(hi, avg)
			llo, lhi = min(llo, largest[k]), max(lhi, largest[k])
		}
	}
	w := r.w()
	for _, rule := range r.cfg.Rules {
		b := w.bound(rule, s)
		if len(b) == 0 {
			continue
		}
		switch rule.Kind {
		case matchrules.RulePartyMix:
			if lhi-llo > rule.MaxDifference {
				return rule.Name
			}
		case matchrules.RuleTeamBalance:
			tol := math.Inf(1)
			for _, i := range b {
				tol = min(tol, w.tol(rule, i))
			}
			if hi-lo > tol+1e-9 {
				return rule.Name
			}
		}
	}
	// The default balance: two teams, no team_balance rule, a party in the match.
	balanced := len(r.cfg.Shape) != 2 || slices.ContainsFunc(r.cfg.Rules, func(x matchrules.Rule) bool { return x.Kind == matchrules.RuleTeamBalance })
	if !balanced && w.holdsParty(s) && hi-lo > matchrules.DefaultBalance*w.interval(s[0])+1e-9*(1+math.Abs(r.mean(s[0]))) {
		return "the balance"
	}
	return ""
}

// rolesFit tries every role for every player of team k.
func (r *shapedRef) rolesFit(s, team []int, k int) bool {
	comp := r.cfg.Shape[k].Composition
	if len(comp) == 0 {
		return true
	}
	var choices [][]string
	for j, i := range s {
		if team[j] != k {
			continue
		}
		for p := range r.tk[i].Ratings {
			var rs []string
			if p < len(r.tk[i].Roles) {
				rs = r.tk[i].Roles[p]
			}
			if len(rs) == 0 {
				rs = r.cfg.Roles
			}
			choices = append(choices, rs)
		}
	}
	count := map[string]int{}
	var try func(p int) bool
	try = func(p int) bool {
		if p == len(choices) {
			for role, b := range comp {
				if count[role] < b.Min || count[role] > b.Max {
					return false
				}
			}
			return true
		}
		for _, role := range choices[p] {
			count[role]++
			ok := try(p + 1)
			count[role]--
			if ok {
				return true
			}
		}
		return false
	}
	return try(0)
}

// checkMatches checks every match Run made.
func (r *shapedRef) checkMatches(ms []matchpool.Match) string {
	seen := map[int]bool{}
	for _, m := range ms {
		if len(m.Shaped) != len(r.cfg.Shape) {
			return fmt.Sprintf("match with %d teams", len(m.Shaped))
		}
		teamOf := map[int]int{}
		for k, t := range m.Shaped {
			for p, slot := range t.Players {
				if prev, ok := teamOf[slot.Ticket]; ok && prev != k {
					return fmt.Sprintf("ticket %d split over teams %d and %d", slot.Ticket, prev, k)
				}
				teamOf[slot.Ticket] = k
				if len(r.cfg.Roles) > 0 && len(r.cfg.Shape[k].Composition) > 0 {
					role := t.Roles[p]
					rs := r.tk[slot.Ticket].Roles
					if slot.Player < len(rs) && len(rs[slot.Player]) > 0 && !slices.Contains(rs[slot.Player], role) {
						return fmt.Sprintf("player %v plays %q, not among %v", slot, role, rs[slot.Player])
					}
				}
			}
			if t.OpenSlots != r.cfg.Shape[k].Size-len(t.Players) {
				return fmt.Sprintf("team %d: open slots %d with %d players", k, t.OpenSlots, len(t.Players))
			}
		}
		s := m.Tickets
		team := make([]int, len(s))
		wait := 0.0
		for j, i := range s {
			if seen[i] {
				return fmt.Sprintf("ticket %d matched twice", i)
			}
			seen[i] = true
			team[j] = teamOf[i]
			wait = max(wait, r.now-r.tk[i].WaitingSince)
			if j > 0 && !r.accepts(s[0], i) {
				return fmt.Sprintf("ticket %d outside the interval of its anchor %d", i, s[0])
			}
			players := 0
			for _, t := range m.Shaped {
				for _, slot := range t.Players {
					if slot.Ticket == i {
						players++
					}
				}
			}
			if players != len(r.tk[i].Ratings) {
				return fmt.Sprintf("ticket %d has %d of its %d players in the match", i, players, len(r.tk[i].Ratings))
			}
		}
		if name := r.groupRulesBroken(s); name != "" {
			return fmt.Sprintf("match %v breaks rule %s", s, name)
		}
		if r.w().meet(s) || !r.w().keptApartBy(s, team) {
			return fmt.Sprintf("match %v %v holds two tickets the avoid lists keep apart", s, team)
		}
		if why := r.splitBroken(s, team, r.mins(wait)); why != "" {
			return fmt.Sprintf("match %v: %s", s, why)
		}
		if why := r.rolesAsAssignedBroken(m); why != "" {
			return why
		}
	}
	return ""
}

// rolesAsAssignedBroken checks the roles the match gave against the compositions.
func (r *shapedRef) rolesAsAssignedBroken(m matchpool.Match) string {
	for k, t := range m.Shaped {
		comp := r.cfg.Shape[k].Composition
		if len(comp) == 0 {
			continue
		}
		count := map[string]int{}
		for _, role := range t.Roles {
			count[role]++
		}
		for role, b := range comp {
			if count[role] < b.Min || count[role] > b.Max {
				return fmt.Sprintf("team %d has %d %s, composition %d..%d", k, count[role], role, b.Min, b.Max)
			}
		}
	}
	return ""
}
