package queue

import (
	"math"
	"slices"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/teams"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// TickPass is the production Matcher: matchmaker/tick's pass over the waiting tickets, with
// times as seconds since the pass's own epoch (the oldest ticket's creation), so that the
// float64 seconds the pass works in keep sub-microsecond precision.
type TickPass struct{}

var _ Matcher = TickPass{}

// Match runs one pass of q over waiting at now.
func (TickPass) Match(q Queue, waiting []Ticket, now time.Time) (TickWrite, error) {
	if len(waiting) == 0 {
		return TickWrite{}, nil
	}
	p := newPassInput(q, waiting)
	cfg := q.tickConfig()
	if p.lowPriority {
		cfg = lowPriorityConfig(cfg, q.Penalties.LowPriority)
	}
	out, err := p.run(cfg, now)
	if err != nil {
		return TickWrite{}, err
	}
	return p.write(q, out, now), nil
}

// passInput is the waiting tickets as the pass takes them: in, each at waiting's index
// index[k]; invalid, those that left before the pass (a backfill its queue no longer admits).
type passInput struct {
	waiting []Ticket
	epoch   time.Time
	in      []matchpool.Ticket
	index   []int
	invalid []Expiry
	// lowPriority: the pass holds the low-priority pool (lowpriority.go).
	lowPriority bool
}

func (p *passInput) secs(t time.Time) float64 { return t.Sub(p.epoch).Seconds() }

func newPassInput(q Queue, waiting []Ticket) *passInput {
	p := &passInput{waiting: waiting, epoch: passEpoch(waiting),
		in: make([]matchpool.Ticket, 0, len(waiting)), index: make([]int, 0, len(waiting))}
	players := 0
	for _, t := range waiting {
		players += len(t.Players)
	}
	// Every ticket's ratings, and player ids when some ticket avoids someone (for the lists to
	// name), in one array each rather than one a ticket.
	buf := passArrays{ratings: make([]float64, 0, players), avoids: avoiding(waiting), lowPriority: lowPriorityPass(q, waiting)}
	p.lowPriority = buf.lowPriority
	if buf.avoids {
		buf.ids = make([]string, 0, players)
	}
	for i, t := range waiting {
		tt, ok := passTicket(q, t, p.epoch, &buf)
		if !ok {
			p.invalid = append(p.invalid, Expiry{TicketID: t.ID, Reason: ReasonInvalid})
			continue
		}
		p.in, p.index = append(p.in, tt), append(p.index, i)
	}
	return p
}

// passEpoch is the oldest ticket's creation, the pass's time zero.
func passEpoch(waiting []Ticket) time.Time {
	epoch := waiting[0].CreatedAt
	for _, t := range waiting {
		if t.CreatedAt.Before(epoch) {
			epoch = t.CreatedAt
		}
	}
	return epoch
}

// passArrays are the arrays a pass's tickets share: their players' ratings, and, when avoids
// (some ticket of the pass avoids someone), their players' ids.
type passArrays struct {
	ratings []float64
	ids     []string
	avoids  bool
	// lowPriority: the pass holds the low-priority pool, whose tickets carry its attribute.
	lowPriority bool
}

// passTicket is t as the pass takes it, its times in seconds since epoch, its players'
// ratings appended to buf's, and, when buf.avoids, its players' ids (appended to buf's) and
// avoid lists; not ok for a backfill the queue's definition no longer admits (its team size
// changed), which would fail the whole pass.
func passTicket(q Queue, t Ticket, epoch time.Time, buf *passArrays) (matchpool.Ticket, bool) {
	secs := func(at time.Time) float64 { return at.Sub(epoch).Seconds() }
	tt := matchpool.Ticket{WaitingSince: secs(t.CreatedAt), ExpiresAt: secs(t.ExpiresAt), Attributes: t.Attributes}
	if t.Backfill != nil {
		tt.Backfill = tickBackfill(t)
		if t.Backfill.Region != "" {
			tt.Latencies = []matchpool.RegionLatency{{Region: t.Backfill.Region}}
		}
		return tt, tt.Validate(q.TeamSize) == nil
	}
	for j := range t.Players {
		buf.ratings = append(buf.ratings, t.Players[j].Rating)
	}
	n := len(buf.ratings)
	tt.Ratings = buf.ratings[n-len(t.Players) : n : n]
	playerRoles(q, t, &tt)
	queueLatencies(q, t, &tt)
	if buf.avoids {
		buf.ids = playerAvoids(t, &tt, buf.ids)
	}
	if buf.lowPriority && lowPriorityTicket(t) {
		tt.Attributes = lowPriorityAttributes(t.Attributes)
	}
	return tt, true
}

// PassExpiries is why each of waiting that the pass would expire at now leaves, by id, as the
// pass finds it: ReasonInvalid when the queue's definition no longer admits it (the pass
// refuses its input, run), else matchpool.ExpiryReason's (its time is up, or every region it
// measured is beyond the widest latency step). For a tick whose pass does not run (a match
// function's), so that such tickets leave as they would. Each ticket is built and checked
// alone, in one reused buffer: the pass's whole input is not made.
func PassExpiries(q Queue, waiting []Ticket, now time.Time) map[string]string {
	if len(waiting) == 0 {
		return nil
	}
	epoch, cfg := passEpoch(waiting), q.tickConfig()
	buf := passArrays{avoids: avoiding(waiting)}
	widest := -1.0 // as the pass takes it: latency not considered
	if len(cfg.MaxLatency) > 0 {
		widest = cfg.MaxLatency[len(cfg.MaxLatency)-1].Value
	}
	at := now.Sub(epoch).Seconds()
	var out map[string]string
	for _, t := range waiting {
		buf.ratings, buf.ids = buf.ratings[:0], buf.ids[:0] // each ticket alone: one buffer
		tt, ok := passTicket(q, t, epoch, &buf)
		why := ReasonInvalid
		if ok && tick.ValidateTicket(cfg, tt) == nil {
			why = matchpool.ExpiryReason(&tt, at, widest)
		}
		if why == "" {
			continue
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[t.ID] = why
	}
	return out
}

// playerRoles gives a ticket of a queue with roles its players' roles.
func playerRoles(q Queue, t Ticket, tt *matchpool.Ticket) {
	if len(q.Roles) > 0 {
		tt.Roles = make([][]string, len(t.Players))
		for j := range t.Players {
			tt.Roles[j] = t.Players[j].Roles
		}
	}
}

// queueLatencies gives a ticket of a queue that considers latency its latencies to the
// queue's regions, in order.
func queueLatencies(q Queue, t Ticket, tt *matchpool.Ticket) {
	if len(q.Expansions.MaxLatencyMS) == 0 {
		return
	}
	for _, region := range sortedRegions(t.Latencies) {
		if slices.Contains(q.Regions, region) {
			tt.Latencies = append(tt.Latencies, matchpool.RegionLatency{Region: region, MS: t.Latencies[region]})
		}
	}
}

// run runs the pass at now. A ticket the queue's definition no longer admits (rules added
// that read an attribute it does not give, a party larger than a smaller team) would fail
// every pass: when the pass refuses its input, such tickets leave, and the others are
// matched. Checked only then, so a queue whose tickets are all valid pays nothing for it.
func (p *passInput) run(cfg matchrules.Config, now time.Time) (matchpool.Result, error) {
	out, err := tick.Run(p.in, p.secs(now), cfg)
	if apperr.CodeOf(err) != apperr.Invalid {
		return out, err
	}
	kept, keptIndex := p.in[:0:0], p.index[:0:0]
	for k, tt := range p.in {
		if tick.ValidateTicket(cfg, tt) != nil {
			p.invalid = append(p.invalid, Expiry{TicketID: p.waiting[p.index[k]].ID, Reason: ReasonInvalid})
			continue
		}
		kept, keptIndex = append(kept, tt), append(keptIndex, p.index[k])
	}
	p.in, p.index = kept, keptIndex
	return tick.Run(p.in, p.secs(now), cfg)
}

// write is what the pass decided as the queue writes it: its fills and matches, the tickets
// to expire, and why the others wait.
func (p *passInput) write(q Queue, out matchpool.Result, now time.Time) TickWrite {
	w := TickWrite{At: now, Matches: make([]Match, 0, len(out.Fills)+len(out.Matches)), Expired: p.invalid}
	for _, f := range out.Fills {
		w.Matches = append(w.Matches, fillMatch(q, p.waiting, p.index, f, now))
	}
	for _, m := range out.Matches {
		w.Matches = append(w.Matches, p.match(m, now))
	}
	for _, e := range out.Expired {
		w.Expired = append(w.Expired, Expiry{TicketID: p.waiting[p.index[e.Ticket]].ID, Reason: e.Reason})
	}
	if len(out.Waiting) > 0 {
		ids := make([]string, len(out.Waiting))
		for k, x := range out.Waiting {
			ids[k] = p.waiting[p.index[x.Ticket]].ID
		}
		w.Waiting = &Waits{ids: ids, waits: out.Waiting}
	}
	return w
}

// match is one of the pass's matches as the queue keeps it: its teams' players with their
// tickets and ratings, and its pairs (a shaped match has teams of its shape instead).
func (p *passInput) match(m matchpool.Match, now time.Time) Match {
	match := Match{ID: NewID("mt-"), CreatedAt: now, Region: m.Region, Teams: make([]MatchTeam, 2),
		SkillDifference: m.SkillDifference, AverageDifference: m.AverageDifference, Attributes: withoutLowPriority(m.Attributes)}
	if m.Shaped != nil {
		shapedMatch(p.waiting, p.index, m, &match)
		return match
	}
	for team, slots := range m.Teams {
		for _, s := range slots {
			t := p.waiting[p.index[s.Ticket]]
			pl := t.Players[s.Player]
			match.Teams[team].Players = append(match.Teams[team].Players, MatchPlayer{ID: pl.ID, TicketID: t.ID, Rating: pl.Rating, LowPriority: pl.LowPriority})
			match.Teams[team].RatingTotal += pl.Rating
		}
	}
	for _, pr := range m.Pairs {
		a, b := p.player(pr.Players[0]), p.player(pr.Players[1])
		match.Pairs = append(match.Pairs, Pair{Players: [2]string{a.ID, b.ID}, Difference: pr.Difference, Interval: pr.Interval})
	}
	return match
}

// player is the player of a pass's slot.
func (p *passInput) player(s matchpool.Slot) Player {
	return p.waiting[p.index[s.Ticket]].Players[s.Player]
}

// ReasonInvalid is the expiry reason of a ticket the queue's definition no longer admits: a
// backfill whose team_size shrank below the match's players and open slots, a party larger
// than the team_size, a ticket without an attribute a rule added since reads.
const ReasonInvalid = "invalid"

// tickBackfill is a backfill ticket as the pass takes it: each team's players' ratings (the
// ticket's Players, by id) and bots, the open slots, the bot rule.
func tickBackfill(t Ticket) *matchpool.Backfill {
	rating := make(map[string]float64, len(t.Players))
	for _, p := range t.Players {
		rating[p.ID] = p.Rating
	}
	b := &matchpool.Backfill{}
	for k, team := range t.Backfill.Teams {
		if k >= 2 {
			break
		}
		for _, id := range team.Players {
			b.Teams[k].Players = append(b.Teams[k].Players, rating[id])
		}
		b.Teams[k].Bots = team.Bots
		if k < len(t.Backfill.OpenSlots) {
			b.OpenSlots[k] = t.Backfill.OpenSlots[k]
		}
	}
	if r := t.Backfill.Bots; r != nil {
		b.Bots = &teams.BotRule{MeanWeight: r.MeanRating, TargetPlayers: r.TargetPlayers,
			RecommendedMin: r.RecommendedMin, RecommendedMax: r.RecommendedMax}
	}
	return b
}

// fillMatch is a fill as the store keeps it: a match with BackfillOf, its teams the running
// match's players (of the backfill ticket) followed by the joiners, no pairs.
func fillMatch(q Queue, waiting []Ticket, index []int, f matchpool.Fill, now time.Time) Match {
	bf := waiting[index[f.Ticket]]
	m := Match{ID: NewID("mt-"), CreatedAt: now, Region: f.Region, Teams: make([]MatchTeam, 2),
		BackfillOf: bf.Backfill.MatchID, BackfillTicket: bf.ID}
	rating := make(map[string]float64, len(bf.Players))
	for _, p := range bf.Players {
		rating[p.ID] = p.Rating
	}
	add := func(k int, p MatchPlayer) {
		m.Teams[k].Players = append(m.Teams[k].Players, p)
		m.Teams[k].RatingTotal += p.Rating
	}
	for k, team := range bf.Backfill.Teams {
		if k >= 2 { // the service admits two
			break
		}
		for _, id := range team.Players {
			add(k, MatchPlayer{ID: id, TicketID: bf.ID, Rating: rating[id]})
		}
	}
	for _, j := range f.Joiners {
		t := waiting[index[j.Ticket]]
		for _, p := range t.Players {
			add(j.Team, MatchPlayer{ID: p.ID, TicketID: t.ID, Rating: p.Rating, LowPriority: p.LowPriority})
		}
	}
	m.SkillDifference = math.Abs(m.Teams[0].RatingTotal - m.Teams[1].RatingTotal)
	m.AverageDifference = m.SkillDifference / float64(q.TeamSize)
	return m
}

// TickSteps is a queue's steps in the match rules' type.
func TickSteps(in []Step) []matchrules.Step {
	out := make([]matchrules.Step, len(in))
	for i, s := range in {
		out[i] = matchrules.Step{AfterS: s.AfterS, Value: s.Value}
	}
	return out
}

// sortedRegions lists a ticket's regions in order, as the pass wants its latencies.
func sortedRegions(latencies map[string]float64) []string {
	regions := make([]string, 0, len(latencies))
	for r := range latencies {
		regions = append(regions, r)
	}
	slices.Sort(regions)
	return regions
}

// Matcher runs one pass of a queue over its waiting tickets at now: the matches to make and
// the tickets to expire. The queue's production Matcher is matchmaker/tick's pass (TickPass);
// tests may give their own. waiting is the caller's again once Match returns: a Matcher keeps
// no part of it.
type Matcher interface {
	Match(q Queue, waiting []Ticket, now time.Time) (TickWrite, error)
}
