package tick

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/twoteam"
)

// The reference: the rules of Run written the plain way, for small queues. It scans every
// ticket for every decision, places head counts and splits by enumerating subsets, and
// shares no code with the fast version but the exported types and Validate.

// world is a queue seen at one instant, everything computed from the definitions.
type world struct {
	tk      []matchpool.Ticket
	now     float64
	cfg     matchrules.Config
	t       int
	live    []int // input indices of the tickets that have not expired, oldest first, but
	bf      []int // the backfill tickets among them, apart
	regions []string
	// plain: the pass as it was before it looked ahead and kept the balance (issue 36),
	// for the property that its choice is never less even
	plain bool
}

func newWorld(tk []matchpool.Ticket, now float64, cfg matchrules.Config) *world {
	w := &world{tk: tk, now: now, cfg: cfg, t: cfg.TeamSize}
	for i, t := range tk {
		live := refExpiry(t, now, cfg) == ""
		if live && t.Backfill != nil {
			w.bf = append(w.bf, i)
			continue
		}
		if live {
			w.live = append(w.live, i)
		}
		if len(cfg.MaxLatency) > 0 {
			for _, l := range t.Latencies {
				if live && !slices.Contains(w.regions, l.Region) {
					w.regions = append(w.regions, l.Region)
				}
			}
		}
	}
	slices.SortStableFunc(w.live, func(a, b int) int { return cmp.Compare(tk[a].WaitingSince, tk[b].WaitingSince) })
	slices.SortStableFunc(w.bf, func(a, b int) int { return cmp.Compare(tk[a].WaitingSince, tk[b].WaitingSince) })
	slices.Sort(w.regions)
	return w
}

// refExpiry is why a ticket leaves the pass unmatched: its TTL, or latency considered and
// no region it measured within the last step's limit; "" when it stays.
func refExpiry(t matchpool.Ticket, now float64, cfg matchrules.Config) string {
	if now >= t.ExpiresAt {
		return matchpool.ReasonTTL
	}
	if len(cfg.MaxLatency) == 0 || len(t.Latencies) == 0 {
		return ""
	}
	widest := cfg.MaxLatency[len(cfg.MaxLatency)-1].Value
	for _, l := range t.Latencies {
		if l.MS <= widest {
			return ""
		}
	}
	return matchpool.ReasonNoRegion
}

// stepAt is the value of the last step whose AfterS is at most the ticket's wait (the
// first always holds).
func (w *world) stepAt(steps []matchrules.Step, i int) float64 {
	wait := w.now - w.tk[i].WaitingSince
	v := math.NaN()
	for j, s := range steps {
		if j == 0 || s.AfterS <= wait {
			v = s.Value
		}
	}
	return v
}

func (w *world) interval(i int) float64 { return w.stepAt(w.cfg.Interval, i) }

func (w *world) mean(i int) float64 {
	s := 0.0
	for _, r := range w.tk[i].Ratings {
		s += r
	}
	return s / float64(len(w.tk[i].Ratings))
}

func (w *world) diff(i, j int) float64 { return math.Abs(w.mean(i) - w.mean(j)) }

// accepts: each of the two tickets' current intervals covers their rating difference.
func (w *world) accepts(i, j int) bool {
	d := w.diff(i, j)
	return d <= w.interval(i) && d <= w.interval(j)
}

// latencyTo is ticket i's latency to region r, ok false without one.
func (w *world) latencyTo(i int, r string) (float64, bool) {
	for _, l := range w.tk[i].Latencies {
		if l.Region == r {
			return l.MS, true
		}
	}
	return 0, false
}

// usable: ticket i accepts region r now (no data: any region).
func (w *world) usable(i int, r string) bool {
	if len(w.cfg.MaxLatency) == 0 || len(w.tk[i].Latencies) == 0 {
		return true
	}
	ms, ok := w.latencyTo(i, r)
	return ok && ms <= w.stepAt(w.cfg.MaxLatency, i)
}

// okRegions lists the regions every ticket of s accepts; with latency off, or when no
// region is known at all, one unnamed region.
func (w *world) okRegions(s []int) []string {
	if len(w.cfg.MaxLatency) == 0 || len(w.regions) == 0 {
		return []string{""}
	}
	var out []string
	for _, r := range w.regions {
		if !slices.ContainsFunc(s, func(i int) bool { return !w.usable(i, r) }) {
			out = append(out, r)
		}
	}
	return out
}

// worst is the largest latency to r among the tickets of s with data.
func (w *world) worst(s []int, r string) float64 {
	m := 0.0
	for _, i := range s {
		if ms, ok := w.latencyTo(i, r); ok {
			m = max(m, ms)
		}
	}
	return m
}

// bestRegion is the region of a match: "" when no ticket has data (or latency is off),
// else the region every ticket accepts with the smallest worst latency, first by name.
func (w *world) bestRegion(s []int) string {
	if !slices.ContainsFunc(s, func(i int) bool { return len(w.tk[i].Latencies) > 0 }) || len(w.cfg.MaxLatency) == 0 {
		return ""
	}
	best, bw := "", math.Inf(1)
	for _, r := range w.okRegions(s) {
		if x := w.worst(s, r); x < bw {
			best, bw = r, x
		}
	}
	return best
}

func (w *world) players(s []int) int {
	n := 0
	for _, i := range s {
		n += len(w.tk[i].Ratings)
	}
	return n
}

// placeable: the tickets of s can go to two teams, parties whole, none over TeamSize; with
// full, both exactly TeamSize.
func (w *world) placeable(s []int, full bool) bool {
	for m := 0; m < 1<<len(s); m++ {
		var n [2]int
		for b, i := range s {
			n[m>>b&1] += len(w.tk[i].Ratings)
		}
		if n[0] <= w.t && n[1] <= w.t && (!full || n[0] == w.t && n[1] == w.t) && w.keptApart(s, m) {
			return true
		}
	}
	return false
}

// isMatch: s (the anchor first) is a valid match: every other ticket accepts and is
// accepted by the anchor, the players split into two full teams with parties whole, some
// region is acceptable to all, the balance holds (balanceBroken), no rule is broken, and (with rules) the tickets share one
// of the anchor's classes: the search's guarantee holds within the first MaxClasses (see
// classes.go), which for the small queues here are all of them.
func (w *world) isMatch(s []int) bool {
	for _, i := range s[1:] {
		if !w.accepts(s[0], i) {
			return false
		}
	}
	if !(w.players(s) == 2*w.t && w.placeable(s, true) && len(w.okRegions(s)) > 0) || w.meet(s) {
		return false
	}
	if w.balanceBroken(s) {
		return false
	}
	return len(w.cfg.Rules) == 0 || w.brokenRule(s) == "" && w.sharesClass(s)
}

// anyMatch reports whether some valid match anchored at a exists among pool.
func (w *world) anyMatch(a int, cands []int) bool {
	var cand []int
	for _, i := range cands {
		if i != a && w.accepts(a, i) {
			cand = append(cand, i)
		}
	}
	for m := 0; m < 1<<len(cand); m++ {
		s := []int{a}
		for b, i := range cand {
			if m>>b&1 != 0 {
				s = append(s, i)
			}
		}
		if w.isMatch(s) {
			return true
		}
	}
	return false
}

// bestSplit is the least |difference of team totals| over every split of the match's
// tickets into two teams of TeamSize, parties whole.
func (w *world) bestSplit(s []int) float64 {
	best := math.Inf(1)
	for m := 0; m < 1<<len(s); m++ {
		var n [2]int
		var tot [2]float64
		for b, i := range s {
			for _, r := range w.tk[i].Ratings {
				n[m>>b&1]++
				tot[m>>b&1] += r
			}
		}
		if n[0] == w.t && n[1] == w.t && w.keptApart(s, m) {
			best = min(best, math.Abs(tot[0]-tot[1]))
		}
	}
	return best
}

// ref runs the whole pass the plain way and returns the tickets of each match, the anchor
// first and the others in the order chosen, with its region.
func ref(tk []matchpool.Ticket, now float64, cfg matchrules.Config) (matches [][]int, regions []string, fills []matchpool.Fill) {
	w := newWorld(tk, now, cfg)
	free := map[int]bool{}
	for _, i := range w.live {
		free[i] = true
	}
	for _, b := range w.bf {
		if f, ok := w.refFill(b, free); ok {
			fills = append(fills, f)
		}
	}
	cands := func() []int {
		var out []int
		for _, i := range w.live {
			if free[i] {
				out = append(out, i)
			}
		}
		return out
	}
	for _, a := range w.live {
		if !free[a] {
			continue
		}
		var s []int
		if cfg.Strategy == matchrules.GreedyPairs {
			if s = w.refGreedy(a, cands()); s != nil && w.pickBroken(s) {
				s = nil
			}
		}
		if s == nil {
			s = w.refWindow(a, cands())
		}
		if s == nil {
			continue
		}
		for _, i := range s {
			free[i] = false
		}
		matches = append(matches, s)
		regions = append(regions, w.bestRegion(s))
	}
	return matches, regions, fills
}

// bfRating is a backfill ticket's rating: the mean of its match's players.
func (w *world) bfRating(b int) float64 {
	s, n := 0.0, 0
	for _, r := range w.tk[b].Backfill.Teams {
		for _, x := range r.Players {
			s += x
			n++
		}
	}
	return s / float64(n)
}

func (w *world) bfRegion(b int) string {
	if l := w.tk[b].Latencies; len(l) > 0 {
		return l[0].Region
	}
	return ""
}

// joinable: ticket i may join backfill b's match, room aside: the two accept each other
// by b's rating, i accepts b's region (or, b naming none, some region) and its ratings are
// weights.
func (w *world) joinable(b, i int) bool {
	d := math.Abs(w.bfRating(b) - w.mean(i))
	if d > w.interval(b) || d > w.interval(i) {
		return false
	}
	for _, r := range w.tk[i].Ratings {
		if r < 0 || r > teams.MaxWeight {
			return false
		}
	}
	if !w.keepsBackfillRules(b, i) {
		return false
	}
	if r := w.bfRegion(b); r != "" && len(w.cfg.MaxLatency) > 0 {
		return w.usable(i, r)
	}
	if len(w.cfg.MaxLatency) == 0 || len(w.tk[i].Latencies) == 0 {
		return true
	}
	return slices.ContainsFunc(w.tk[i].Latencies, func(l matchpool.RegionLatency) bool { return w.usable(i, l.Region) })
}

// refFill serves backfill b the plain way: every free joinable ticket, nearest b's rating
// first (the older first on a tie), placed by teams.Assign among the teams with room.
func (w *world) refFill(b int, free map[int]bool) (matchpool.Fill, bool) {
	bf := w.tk[b].Backfill
	ra := w.bfRating(b)
	var cand []int
	for _, i := range w.live {
		if free[i] && w.joinable(b, i) {
			cand = append(cand, i)
		}
	}
	slices.SortStableFunc(cand, func(i, j int) int {
		return cmp.Or(cmp.Compare(math.Abs(ra-w.mean(i)), math.Abs(ra-w.mean(j))), cmp.Compare(w.rankOf(i), w.rankOf(j)))
	})
	f := matchpool.Fill{Ticket: b, Region: w.bfRegion(b)}
	for k, r := range bf.Teams {
		f.Teams[k] = teams.Roster{Players: slices.Clone(r.Players), Bots: slices.Clone(r.Bots)}
	}
	room := bf.OpenSlots
	for _, i := range cand {
		size := len(w.tk[i].Ratings)
		if size > room[0] && size > room[1] {
			continue
		}
		total := 0.0
		for _, r := range w.tk[i].Ratings {
			total += r
		}
		res, err := teams.Assign(f.Teams[:], total, teams.AssignOptions{Bots: bf.Bots, Humans: size, MaxHumansPerTeam: w.t,
			Closed: []bool{room[0] < size, room[1] < size}})
		if err != nil {
			continue
		}
		f.Teams[res.Team].Players = append(f.Teams[res.Team].Players, w.tk[i].Ratings...)
		for k, c := range res.BotChange {
			if c > 0 {
				for range c {
					f.Teams[k].Bots = append(f.Teams[k].Bots, bf.Bots.MeanWeight)
				}
			} else if c < 0 {
				mean := 0.0
				for _, x := range f.Teams[k].Bots {
					mean += x
				}
				mean /= float64(len(f.Teams[k].Bots))
				f.Teams[k].Bots = f.Teams[k].Bots[:len(f.Teams[k].Bots)+c]
				for j := range f.Teams[k].Bots {
					f.Teams[k].Bots[j] = mean
				}
			}
		}
		room[res.Team] -= size
		f.Joiners = append(f.Joiners, matchpool.Joiner{Ticket: i, Team: res.Team})
		free[i] = false
	}
	return f, len(f.Joiners) > 0
}

// rankOf is the place of ticket i in age order.
func (w *world) rankOf(i int) int { return slices.Index(w.live, i) }

// nearestFirst sorts tickets by distance from x's rating, the older first on a tie.
func (w *world) nearestFirst(x int, s []int) {
	slices.SortStableFunc(s, func(i, j int) int {
		if c := cmp.Compare(w.diff(x, i), w.diff(x, j)); c != 0 {
			return c
		}
		return cmp.Compare(w.rankOf(i), w.rankOf(j))
	})
}

// refWindow: the anchor's acceptable candidates in some class of the anchor's (sharing a
// region with it, without rules) and admitted by its rules, nearest first; the shortest
// prefix with a valid match in some class; in each such class the match keeps the prefix's
// last ticket and each earlier one that still allows a match, nearest first (or a more
// even one: refPick); among classes, the smallest worst latency of the class's region,
// then the first class. A pick that breaks a rule judged on the match or the balance is
// turned down and the next class's, then the next prefix's, are tried, twoteam.MaxPicks
// picks at most; a class whose most even match breaks the balance is tried no more.
func (w *world) refWindow(a int, cands []int) []int {
	classes := w.classes(a)
	var cand []int
	for _, i := range cands {
		if i != a && w.accepts(a, i) && w.admitsAll(a, i) && slices.ContainsFunc(classes, func(c class) bool { return w.inClass(a, i, c) }) {
			cand = append(cand, i)
		}
	}
	w.nearestFirst(a, cand)
	st := &refPicks{looked: map[int]bool{}, exhausted: map[int]bool{}}
	for k := 1; k <= len(cand); k++ {
		type try struct {
			s     []int
			lat   float64
			class int
		}
		var tries []try
		for ci, c := range classes {
			if st.exhausted[ci] {
				continue
			}
			var in []int // the prefix's tickets in c
			for _, i := range cand[:k] {
				if w.inClass(a, i, c) {
					in = append(in, i)
				}
			}
			if len(in) == 0 || in[len(in)-1] != cand[k-1] {
				continue
			}
			s := w.keepNearest(a, in)
			if s == nil {
				continue
			}
			lat := 0.0
			if c.region != "" {
				lat = w.worst(s, c.region)
			}
			tries = append(tries, try{s, lat, ci})
		}
		slices.SortStableFunc(tries, func(x, y try) int { return cmp.Compare(x.lat, y.lat) })
		for _, t := range tries {
			if st.picks >= twoteam.MaxPicks {
				return nil
			}
			if s := w.refPick(a, t.s, cand, classes[t.class], t.class, st); s != nil {
				return s
			}
		}
		if st.picks >= twoteam.MaxPicks || len(st.exhausted) == len(classes) {
			return nil
		}
	}
	return nil
}

// refPicks is what refWindow's picks of one anchor have done: picks made, and per class
// (by index) whether it looked ahead and whether it is exhausted.
type refPicks struct {
	picks             int
	looked, exhausted map[int]bool
}

// refPick: the pick of anchor a in class c (index ci) is made unless it breaks a rule
// judged on the match or the balance; but the first pick of a class that holds a party and
// whose teams differ by more than twoteam's evenEnough of the anchor's interval is first
// looked ahead: among the candidates of the class, those of the prefix and the next nearest,
// twoteam's lookAheadTickets at most, the most even match (the least set of candidates, by
// their order, among the equally even) is made instead when it is more even than the pick,
// and the pick then if it broke a rule; when the most even match breaks the balance, the
// most even of the solo candidates alone (the anchor a solo), and without one, when the
// search held every candidate of the class, the class is exhausted.
func (w *world) refPick(a int, pick, cand []int, c class, ci int, st *refPicks) []int {
	try := func(s []int) ([]int, bool) { // the match, or whether it broke the balance
		st.picks++
		broken, overBound := w.pickBrokenWhy(s)
		if !broken {
			return s, false
		}
		return nil, overBound
	}
	if w.plain || st.looked[ci] || !w.worthLookingAhead(a, pick) {
		s, _ := try(pick)
		return s
	}
	st.looked[ci] = true
	var around []int // the class's candidates, nearest first
	for _, i := range cand {
		if w.inClass(a, i, c) {
			around = append(around, i)
		}
	}
	if slices.Index(around, pick[len(pick)-1])+1 > lookAheadTickets { // the prefix is too long
		s, _ := try(pick)
		return s
	}
	sawEvery := len(around) <= lookAheadTickets
	around = around[:min(len(around), lookAheadTickets)]
	best, diff, ok := w.evenestOf(a, around)
	tol := 1e-9 * (1 + math.Abs(w.total(a)) + sumAbs(w, around))
	first := pick
	if ok && diff < w.bestSplit(pick)-tol {
		first = best
	}
	s, over := try(first)
	switch {
	case s != nil:
		return s
	case !over && !slices.Equal(first, pick):
		s, _ := try(pick)
		return s
	case !over:
		return nil
	}
	var solos []int
	for _, i := range around {
		if len(w.tk[i].Ratings) == 1 {
			solos = append(solos, i)
		}
	}
	if len(w.tk[a].Ratings) == 1 {
		if best, _, ok := w.evenestOf(a, solos); ok {
			s, _ := try(best)
			return s
		}
	}
	if sawEvery {
		st.exhausted[ci] = true
	}
	return nil
}

// keepNearest: the match of anchor a from in, whose last ticket it must hold, each earlier
// ticket kept, in order, when some completion from the later ones still gives a match;
// nil if no match holds the last one.
func (w *world) keepNearest(a int, in []int) []int {
	last := in[len(in)-1]
	s := []int{a}
	completes := func(s []int, rest []int) bool {
		for m := 0; m < 1<<len(rest); m++ {
			x := slices.Clone(s)
			for b, i := range rest {
				if m>>b&1 != 0 {
					x = append(x, i)
				}
			}
			x = append(x, last)
			if w.players(x) == 2*w.t && w.placeable(x, true) {
				return true
			}
		}
		return false
	}
	if !completes(s, in[:len(in)-1]) {
		return nil
	}
	for j, i := range in[:len(in)-1] {
		if completes(append(slices.Clone(s), i), in[j+1:len(in)-1]) {
			s = append(s, i)
		}
	}
	return append(s, last)
}

// refGreedy: the thesis's rule within the anchor's acceptable tickets, as documented on Run.
func (w *world) refGreedy(a int, cands []int) []int {
	s := []int{a}
	classes := w.classes(a)
	if classes == nil {
		return nil
	}
	// shared: the tickets of x are admitted by the anchor and share one of its classes.
	shared := func(x []int) bool {
		if slices.ContainsFunc(x, func(i int) bool { return !w.admitsAll(a, i) }) {
			return false
		}
		return slices.ContainsFunc(classes, func(c class) bool {
			return !slices.ContainsFunc(x, func(i int) bool { return !w.inClass(a, i, c) })
		})
	}
	// fits: after adding x, the teams can still be filled, and are full at 2 x TeamSize.
	fits := func(x []int) bool {
		n := w.players(x)
		return n <= 2*w.t && w.placeable(x, n == 2*w.t)
	}
	opponent := func(sub int, with []int) int {
		var c []int
		for _, i := range cands {
			if i != a && i != sub && !slices.Contains(with, i) && w.accepts(a, i) && w.accepts(sub, i) {
				c = append(c, i)
			}
		}
		w.nearestFirst(sub, c)
		for _, i := range c {
			x := append(slices.Clone(with), i)
			if shared(x) && fits(x) {
				return i
			}
		}
		return -1
	}
	o := opponent(a, s)
	if o < 0 {
		return nil
	}
	s = append(s, o)
	aside := map[int]bool{}
	for w.players(s) < 2*w.t {
		sub := -1
		for _, i := range cands { // oldest first
			if !aside[i] && !slices.Contains(s, i) && w.diff(a, i) <= w.interval(a) {
				sub = i
				break
			}
		}
		if sub < 0 {
			return nil
		}
		aside[sub] = true
		with := append(slices.Clone(s), sub)
		if !w.accepts(a, sub) || !shared(with) || !fits(with) {
			continue
		}
		if w.players(with) == 2*w.t { // the sub-anchor completes the match alone
			s = with
			continue
		}
		if o := opponent(sub, with); o >= 0 {
			s = append(with, o)
		}
	}
	return s
}

// describe prints a queue for a failure message.
func describe(tk []matchpool.Ticket, now float64, cfg matchrules.Config) string {
	s := fmt.Sprintf("now %g, cfg %+v\n", now, cfg)
	for i, t := range tk {
		s += fmt.Sprintf("  %d: %v since %g expires %g lat %v\n", i, t.Ratings, t.WaitingSince, t.ExpiresAt, t.Latencies)
		if b := t.Backfill; b != nil {
			s += fmt.Sprintf("     backfill %+v open %v bots %+v\n", b.Teams, b.OpenSlots, b.Bots)
		}
		if len(t.Avoid) > 0 {
			s += fmt.Sprintf("     players %v avoid %v\n", t.Players, t.Avoid)
		}
	}
	return s
}
