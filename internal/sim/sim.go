package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"gonum.org/v1/gonum/stat"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/pairing"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Result is what happened in one run of one configuration.
type Result struct {
	Name    string
	Matches []MatchRecord
	// PairDifferences are the rating differences of every pair of opponents of every match,
	// as the queue saw the ratings.
	PairDifferences []float64
	// Waits are the seconds each player waited from the ticket's arrival until it left the
	// queue, matched or expired.
	Waits []float64
	// Tickets made; Refused arrivals (too few idle players in the population for the
	// party); Expired tickets.
	Tickets, Refused, Expired int
	// Parties (tickets of two or more) fully matched, and how many of them the queue split
	// across teams or matches.
	Parties, PartiesSplit int
	SimulatedS            float64
	// Truncated is set when the run reached the scenario's MaxDays before its matches.
	Truncated bool
	// Rules: the configuration has match rules. WaitingOn counts the anchors each rule held
	// over the run's passes (QueuePass.WaitingOn); nil for a matcher that does not say.
	Rules     bool
	WaitingOn map[string]int
	// Rejected counts the proposals of the "function" matcher's Function that the queue's
	// check dropped, by reason (queue.RejectReason); nil for another matcher.
	Rejected map[string]int
	// FunctionFailures counts the Function's failed calls (ticks that made no match).
	FunctionFailures int
	Rounds           int
	// Roles: the configuration has a role composition (its tickets carry their players'
	// roles). RolesRepicked counts the party tickets whose players picked roles again for
	// the ticket, their own fitting no team (RoleDist), RolesRefused the arrivals refused
	// because no pick fitted.
	Roles                       bool
	RolesRepicked, RolesRefused int
	// Acceptance: the configuration has a ready check. Proposals counts the matches the
	// queue proposed, Declined those a player declined, DeclinedTickets the tickets the
	// declines cancelled; SecondProposal counts the matches made with at least one ticket
	// that had been in a declined proposal before (it needed a second proposal or more).
	Acceptance                                           bool
	Proposals, Declined, DeclinedTickets, SecondProposal int
	// Agreement follows how well the queue's ratings know the truth: after every
	// twentieth of the matches, the correlation of every player's rating with the true skill.
	Agreement []Snapshot
	AvoidResult
}

// Snapshot is the correlation (Pearson) of the ratings the queue sees with the true
// skills, over the whole population, once Matches matches had been made.
type Snapshot struct {
	Matches     int
	Correlation float64
}

// snapshots is how many Snapshots a run takes.
const snapshots = 20

// MatchRecord is one match.
type MatchRecord struct {
	AtS float64 // simulated time the match was made
	// AverageDifference is |mean rating of team 0 - mean rating of team 1| as the queue saw
	// the ratings: the thesis's "skill rating difference" (Table 8.3).
	AverageDifference float64
	// SkillGap is |mean true skill of team 0 - of team 1|, in logits of a round.
	SkillGap  float64
	RoundP    float64 // probability that team 0 wins a round
	Rounds    [2]int  // rounds won by each team
	Predicted float64 // the rater's P(team 0 wins), made before the match; NaN if none
	// LargestParty is the players of each team's largest ticket.
	LargestParty [2]int
}

// Player states in a run.
const (
	idle uint8 = iota
	waiting
	playing
	// searchingAgain: in a proposal another player declined; waiting again from the next
	// tick (until the end of this one it cannot be matched or expired again).
	searchingAgain
)

// run is the state of one simulation.
type run struct {
	sc      *Scenario
	pop     []Player
	rater   Rater
	matcher Matcher
	arr     *arrivals
	pick    *rand.Rand // which idle players form a ticket
	attrs   *attributeDrawer
	// roles are each player's roles (RoleDist), by population index; nil without the
	// scenario's roles. shape is the role queue's pass config, for PartyFits; nil unless
	// the configuration has a composition.
	roles   [][]string
	roleRng *rand.Rand
	shape   *matchrules.Config
	play    *rand.Rand // the rounds
	accept  *rand.Rand // the ready check's answers; nil without one
	decline float64    // each player's probability of declining a proposal

	state   []uint8
	idle    []int32 // idle players, in no particular order
	idlePos []int32 // position of each idle player in idle
	// ticketOf and slotOf locate each waiting player: waiting[ticketOf[p]].Players[slotOf[p]].
	ticketOf, slotOf []int32

	waiting  []Ticket
	meta     []ticketMeta // beside waiting
	inflight []inflight   // in order of end (every match lasts as long)
	nextID   int
	res      *Result
	avoid    *avoids // the players' avoid lists; nil without the scenario's
}

type ticketMeta struct {
	size    int
	matched int  // players matched so far
	match   int  // the match of the first matched player
	team    int  // and its team
	split   bool // a later player went elsewhere
	// requeued counts the declined proposals the ticket was in and searched on from.
	requeued int
}

type inflight struct {
	end    time.Duration
	record int // index into res.Matches
	played Played
}

// Run simulates one configuration of a validated scenario. progress, if not nil, is called
// with the number of matches made so far whenever it grows.
//
// It stops early, with ctx's error, when ctx is cancelled.
func Run(ctx context.Context, sc *Scenario, cf Configuration, progress func(matches int)) (*Result, error) {
	r, err := newRun(sc, cf)
	if err != nil {
		return nil, err
	}
	if err := r.loop(ctx, progress); err != nil {
		return nil, fmt.Errorf("configuration %q: %w", cf.Name, err)
	}
	return r.res, nil
}

// newRun sets up a run of a configuration: its population, arrivals, matcher and rater.
func newRun(sc *Scenario, cf Configuration) (*run, error) {
	pop := NewPopulation(sc.Population, sc.weights(), stream(sc.Seed, streamPopulation))
	r := &run{
		sc: sc, pop: pop,
		arr:   newArrivals(cf.arrivals(sc), stream(sc.Seed, streamArrivals)),
		pick:  stream(sc.Seed, streamPick),
		attrs: newAttributeDrawer(sc.Attributes, stream(sc.Seed, streamAttributes)),
		play:  stream(sc.Seed, streamPlay),
		state: make([]uint8, len(pop)), idle: make([]int32, len(pop)), idlePos: make([]int32, len(pop)),
		ticketOf: make([]int32, len(pop)), slotOf: make([]int32, len(pop)),
		res: &Result{Name: cf.Name, Rounds: sc.Rounds, Matches: make([]MatchRecord, 0, sc.Matches),
			Rules: len(cf.Rules) > 0 || len(cf.Composition) > 0, Roles: len(cf.Composition) > 0,
			Acceptance: cf.Acceptance != nil},
	}
	r.avoid = newAvoids(sc.Avoid, pop, stream(sc.Seed, streamAvoid))
	if sc.Roles != nil {
		r.roleRng = stream(sc.Seed, streamRoles)
		r.roles = sc.Roles.drawPlayers(len(pop), r.roleRng)
	}
	if len(cf.Composition) > 0 {
		r.shape = &matchrules.Config{TeamSize: sc.TeamSize, Shape: cf.shape(sc.TeamSize), Roles: cf.queueRoles(sc)}
	}
	if cf.Acceptance != nil {
		r.accept, r.decline = stream(sc.Seed, streamAcceptance), cf.Acceptance.DeclineRate
	}
	for i := range pop {
		r.idle[i], r.idlePos[i] = int32(i), int32(i)
	}
	ttl := seconds(cf.TicketTTLS)
	switch cf.Matcher {
	case "none":
		r.matcher = &Random{TeamSize: sc.TeamSize, TTL: ttl, Rng: stream(sc.Seed, streamMatcher)}
	case "function":
		m, err := NewFunctionPass(cf.Function, sc.TeamSize, cf.steps(), ttl, cf.passRules(sc))
		if err != nil {
			return nil, err
		}
		r.matcher = m
	case "tick":
		m, err := NewRuledQueuePass(sc.TeamSize, string(cf.strategy()), cf.steps(), ttl, cf.passRules(sc))
		if err != nil {
			return nil, err
		}
		r.matcher = m
	default:
		m, err := NewPairing(sc.TeamSize, cf.strategy(), cf.expansion(), ttl)
		if err != nil {
			return nil, err
		}
		r.matcher = m
	}
	if cf.Rating == "learned" {
		r.rater = NewLearned(len(pop), sc.ratingModel())
	} else {
		r.rater = NewPerformance(pop, cf.coefficients())
	}
	return r, nil
}

func (r *run) loop(ctx context.Context, progress func(int)) error {
	tick := r.sc.tick()
	limit := seconds(r.sc.MaxDays * 86400)
	var buf []arrival
	now := time.Duration(0)
	for steps := 0; len(r.res.Matches) < r.sc.Matches; steps++ {
		if steps%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if now > limit {
			r.res.Truncated = true
			break
		}
		if err := r.finish(now); err != nil {
			return err
		}
		buf = r.arr.until(now, buf[:0])
		for _, a := range buf {
			r.arrive(a)
		}
		if len(r.waiting) > 0 {
			before := len(r.res.Matches)
			if err := r.tick(now); err != nil {
				return err
			}
			if progress != nil && len(r.res.Matches) > before {
				progress(len(r.res.Matches))
			}
			r.snapshot(false)
			now += tick
			continue
		}
		// Nothing waits: skip to the tick of the next arrival or the next finished match.
		next := r.arr.next()
		if len(r.inflight) > 0 {
			next = min(next, r.inflight[0].end)
		}
		if next == never {
			break
		}
		now = max(now+tick, (next+tick-1)/tick*tick)
	}
	r.res.SimulatedS = now.Seconds()
	if err := r.finish(never); err != nil { // the results of the matches still being played come in
		return err
	}
	r.snapshot(true)
	if w, ok := r.matcher.(interface{ WaitingOn() map[string]int }); ok {
		r.res.WaitingOn = w.WaitingOn()
	}
	if f, ok := r.matcher.(*FunctionPass); ok {
		r.res.Rejected, r.res.FunctionFailures = f.Rejected(), f.Failed()
	}
	return nil
}

// snapshot records the agreement of the ratings with the truth each time another
// twentieth of the matches has been made, and at the end.
func (r *run) snapshot(last bool) {
	k := len(r.res.Agreement)
	if k >= snapshots || !last && len(r.res.Matches) < (k+1)*r.sc.Matches/snapshots {
		return
	}
	if last && k > 0 && r.res.Agreement[k-1].Matches == len(r.res.Matches) {
		return
	}
	rs, ts := make([]float64, len(r.pop)), make([]float64, len(r.pop))
	for i, p := range r.pop {
		rs[i], ts[i] = r.rater.Rating(i), p.Skill
	}
	r.res.Agreement = append(r.res.Agreement, Snapshot{Matches: len(r.res.Matches), Correlation: stat.Correlation(rs, ts, nil)})
}

// finish records the results of the matches that have ended by now and frees their players.
func (r *run) finish(now time.Duration) error {
	n := 0
	for _, f := range r.inflight {
		if f.end > now {
			break
		}
		p, err := r.rater.Record(f.played)
		if err != nil {
			return err
		}
		r.res.Matches[f.record].Predicted = p
		for _, team := range f.played.Teams {
			for _, pl := range team {
				r.setIdle(pl)
			}
		}
		n++
	}
	r.inflight = r.inflight[n:]
	return nil
}

func (r *run) setIdle(p int) {
	r.state[p] = idle
	r.idlePos[p] = int32(len(r.idle))
	r.idle = append(r.idle, int32(p))
}

// arrive makes a ticket of a idle players chosen at random, if there are enough.
func (r *run) arrive(a arrival) {
	// Drawn for every arrival, refused or not, so that an arrival has the same values
	// whatever the configuration.
	attrs := r.attrs.draw()
	if len(r.idle) < a.size {
		r.res.Refused++
		return
	}
	t := Ticket{ID: r.nextID, Created: a.at, Players: make([]int, a.size), Ratings: make([]float64, a.size), Attributes: attrs}
	for i := range a.size {
		j := r.pick.IntN(len(r.idle))
		p := int(r.idle[j])
		last := r.idle[len(r.idle)-1]
		r.idle[j], r.idlePos[last] = last, int32(j)
		r.idle = r.idle[:len(r.idle)-1]
		r.state[p] = waiting
		t.Players[i], t.Ratings[i] = p, r.rater.Rating(p)
	}
	if r.shape != nil && !r.giveRoles(&t) {
		for _, p := range t.Players {
			r.setIdle(p)
		}
		r.res.RolesRefused++
		return
	}
	r.avoid.give(&t)
	r.nextID++
	r.waiting = append(r.waiting, t)
	r.meta = append(r.meta, ticketMeta{size: a.size, match: -1})
	r.res.Tickets++
}

// giveRoles gives a ticket of a role queue its players' roles. A party whose roles fit no
// team (the service refuses it) picks again for the ticket, every player from the
// scenario's picks, up to maxRolePicks times; false if none fitted.
func (r *run) giveRoles(t *Ticket) bool {
	t.Roles = make([][]string, len(t.Players))
	for i, p := range t.Players {
		t.Roles[i] = r.roles[p]
	}
	if len(t.Players) == 1 || r.shape.PartyFits(t.Roles) {
		return true
	}
	for range maxRolePicks {
		for i := range t.Roles {
			t.Roles[i] = r.sc.Roles.draw(r.roleRng)
		}
		if r.shape.PartyFits(t.Roles) {
			r.res.RolesRepicked++
			return true
		}
	}
	return false
}

// tick runs the matcher once, plays the matches it makes and removes what left the queue.
func (r *run) tick(now time.Duration) error {
	matches, expired := r.matcher.Tick(r.waiting, now)
	for ti, t := range r.waiting {
		for i, p := range t.Players {
			r.ticketOf[p], r.slotOf[p] = int32(ti), int32(i)
		}
	}
	gone := make([]bool, len(r.waiting))
	var requeued []int // the players of declined proposals who search again
	for _, m := range matches {
		if len(r.res.Matches) == r.sc.Matches {
			break // the run is complete; later matches of this tick are not made
		}
		if err := r.claim(m); err != nil {
			return err
		}
		if r.accept != nil {
			second, ok := r.propose(m, gone, &requeued)
			if !ok {
				continue
			}
			if second {
				r.res.SecondProposal++
			}
		}
		r.startMatch(m, now)
	}
	if err := r.expire(expired, gone, now); err != nil {
		return err
	}
	for _, p := range requeued {
		r.state[p] = waiting
	}
	r.compact(gone)
	return nil
}

// claim marks the players of match m playing, after checking that the matcher made teams
// of the scenario's size of players who wait, none twice.
func (r *run) claim(m Match) error {
	for _, team := range m.Teams {
		if len(team) != r.sc.TeamSize {
			return fmt.Errorf("matcher made a team of %d players, want %d", len(team), r.sc.TeamSize)
		}
		for _, p := range team {
			if p < 0 || p >= len(r.pop) || r.state[p] != waiting {
				return fmt.Errorf("matcher matched player %d, who is not waiting (or is matched twice)", p)
			}
			r.state[p] = playing
		}
	}
	return nil
}

// startMatch records match m, made now, with what the queue saw of it (its players' waits, the
// pairs' differences, the teams' average difference) and the truth (the skill gap), plays
// its rounds and puts it in flight until its result comes in.
func (r *run) startMatch(m Match, now time.Duration) {
	n := r.sc.TeamSize
	dur := seconds(float64(r.sc.Rounds) * r.sc.RoundS)
	var seen [2 * pairing.MaxTeamSize]float64 // the ratings the queue saw, team 0 then team 1
	var rating, skill [2]float64
	var largest [2]int
	r.avoid.check(m, &r.res.AvoidResult)
	for side, team := range m.Teams {
		for k, p := range team {
			t := r.waiting[r.ticketOf[p]]
			largest[side] = max(largest[side], len(t.Players))
			seen[side*n+k] = t.Ratings[r.slotOf[p]]
			rating[side] += seen[side*n+k]
			skill[side] += r.pop[p].Skill
			r.res.Waits = append(r.res.Waits, (now - t.Created).Seconds())
			r.joined(int(r.ticketOf[p]), len(r.res.Matches), side)
		}
	}
	for k := range n {
		r.res.PairDifferences = append(r.res.PairDifferences, math.Abs(seen[k]-seen[n+k]))
	}
	rec := MatchRecord{AtS: now.Seconds(), Predicted: math.NaN(), LargestParty: largest,
		AverageDifference: math.Abs(rating[0]-rating[1]) / float64(n),
		SkillGap:          math.Abs(skill[0]-skill[1]) / float64(n),
		RoundP:            RoundProbability(skill[0]/float64(n), skill[1]/float64(n)),
	}
	rec.Rounds = PlayRounds(r.play, rec.RoundP, r.sc.Rounds)
	r.inflight = append(r.inflight, inflight{end: now + dur, record: len(r.res.Matches),
		played: Played{Seq: len(r.res.Matches), Teams: m.Teams, Rounds: rec.Rounds, DurationS: dur.Seconds()}})
	r.res.Matches = append(r.res.Matches, rec)
}

// expire removes the tickets the matcher expired (indices into r.waiting) and idles their
// players, after checking that each was waiting, none twice and none also matched.
func (r *run) expire(expired []int, gone []bool, now time.Duration) error {
	for _, ti := range expired {
		if ti < 0 || ti >= len(r.waiting) || gone[ti] {
			return fmt.Errorf("matcher expired ticket index %d, not a waiting ticket (or twice)", ti)
		}
		t := r.waiting[ti]
		for _, p := range t.Players {
			if r.state[p] != waiting {
				return fmt.Errorf("matcher both matched and expired player %d", p)
			}
			r.setIdle(p)
			r.res.Waits = append(r.res.Waits, (now - t.Created).Seconds())
		}
		gone[ti] = true
		r.res.Expired++
	}
	return nil
}

// propose runs the ready check of match m, whose players are marked playing: every player
// answers, declining with the configuration's probability. ok: all accepted, and second says
// whether a ticket of m had been in a declined proposal before. Otherwise the tickets of the
// players who declined are gone (their players idle again) and the others' players are
// appended to requeued, held until the tick ends.
func (r *run) propose(m Match, gone []bool, requeued *[]int) (second, ok bool) {
	r.res.Proposals++
	declined := false
	var tickets [2 * pairing.MaxTeamSize]int32 // the tickets of m, each once
	nt := 0
	for _, team := range m.Teams {
		for _, p := range team {
			ti := r.ticketOf[p]
			// Every player answers, whatever the others did, so that a proposal draws as
			// many answers however it ends.
			if r.accept.Float64() < r.decline && !gone[ti] {
				gone[ti] = true
				declined = true
				r.res.DeclinedTickets++
			}
			if !slices.Contains(tickets[:nt], ti) {
				tickets[nt] = ti
				nt++
			}
		}
	}
	if !declined {
		for _, ti := range tickets[:nt] {
			second = second || r.meta[ti].requeued > 0
		}
		return second, true
	}
	r.res.Declined++
	for _, ti := range tickets[:nt] {
		for _, p := range r.waiting[ti].Players {
			if gone[ti] {
				r.setIdle(p)
			} else {
				r.state[p] = searchingAgain
				*requeued = append(*requeued, p)
			}
		}
		if !gone[ti] {
			r.meta[ti].requeued++
		}
	}
	return false, false
}

// joined notes that a player of ticket ti joined a team of a match.
func (r *run) joined(ti, match, team int) {
	m := &r.meta[ti]
	if m.matched == 0 {
		m.match, m.team = match, team
	} else if m.match != match || m.team != team {
		m.split = true
	}
	m.matched++
	if m.matched == m.size && m.size > 1 {
		r.res.Parties++
		if m.split {
			r.res.PartiesSplit++
		}
	}
}

// compact removes the matched players from their tickets and the tickets that are gone
// (expired, or every player matched), keeping the order.
func (r *run) compact(gone []bool) {
	k := 0
	for ti, t := range r.waiting {
		if gone[ti] {
			continue
		}
		if r.meta[ti].matched > 0 {
			players, rs := t.Players[:0], t.Ratings[:0]
			var roles [][]string
			for i, p := range t.Players {
				if r.state[p] == waiting {
					players, rs = append(players, p), append(rs, t.Ratings[i])
					if t.Roles != nil {
						roles = append(roles, t.Roles[i])
					}
				}
			}
			if len(players) == 0 {
				continue
			}
			t.Players, t.Ratings, t.Roles = players, rs, roles
		}
		r.waiting[k], r.meta[k] = t, r.meta[ti]
		k++
	}
	clear(r.waiting[k:])
	r.waiting, r.meta = r.waiting[:k], r.meta[:k]
}
