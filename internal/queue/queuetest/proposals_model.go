package queuetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// testProposalModel runs random sequences of ticket creations, proposals, answers, cancels,
// expiries and tick matches against the store and against a model of what each should do,
// and checks after every step that the store agrees with the model: no ticket in two
// proposals or matches, no player searching or proposed twice, every change the one the
// model expects.
func testProposalModel(t *testing.T, st queue.Store) {
	r := &modelRun{t: t, st: st, rng: rand.New(rand.NewPCG(22, 1)), m: newModel()}
	putQueue(t, st, Queue("q"))
	steps := 400
	if testing.Short() {
		steps = 100
	}
	for i := range 12 {
		r.players = append(r.players, fmt.Sprintf("p%d", i))
	}
	for r.step = range steps {
		// A deadline a step, not one for the run: 400 steps on a loaded Postgres may take
		// longer than one call's bound, and a hung call must still fail the test.
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r.c = c
		r.now++
		var what string
		switch op := r.rng.IntN(20); {
		case op < 4:
			what = r.create()
		case op < 8:
			what = r.propose()
		case op < 15:
			what = r.answer()
		case op < 16:
			what = r.cancel()
		case op < 18:
			what = r.expire()
		default:
			what = r.match()
		}
		if what != "" {
			r.m.check(t, st, fmt.Sprintf("step %d (%s)", r.step, what))
		}
		cancel()
	}
	r.c = ctx(t)
	r.checkEveryEnd()
}

// modelRun is one random sequence of testProposalModel: the store, the model, the clock (in
// seconds) and the step. Each step says what it did ("" when it did nothing).
type modelRun struct {
	t         *testing.T
	st        queue.Store
	c         context.Context
	rng       *rand.Rand
	m         *model
	players   []string
	now, step int
}

// fail reports a step that went wrong.
func (r *modelRun) fail(what, format string, args ...any) {
	r.t.Helper()
	r.t.Fatalf("step %d %s: "+format, append([]any{r.step, what}, args...)...)
}

// create makes a ticket of one or two players.
func (r *modelRun) create() string {
	n := 1 + r.rng.IntN(2)
	var ps []string
	for _, i := range r.rng.Perm(len(r.players))[:n] {
		ps = append(ps, r.players[i])
	}
	id := fmt.Sprintf("t%d", r.step)
	what := fmt.Sprintf("create %s %v", id, ps)
	_, _, err := r.st.CreateTicket(r.c, Ticket("q", id, r.now, ps...))
	var se *queue.SearchingError
	switch held := r.m.held(ps); {
	case held && !errors.As(err, &se):
		r.fail(what, "%v, want a player already searching", err)
	case !held && err != nil:
		r.fail(what, "%v", err)
	case !held:
		r.m.create(id, ps)
	}
	return what
}

// propose is a tick's proposal of two tickets (maybe no longer searching).
func (r *modelRun) propose() string {
	a, b := r.m.any(r.rng), r.m.any(r.rng)
	if a == "" || a == b {
		return ""
	}
	id := fmt.Sprintf("m%d", r.step)
	what := fmt.Sprintf("propose %s %s+%s", id, a, b)
	done, err := queue.Propose(r.c, r.st, "q", queue.ProposeWrite{At: at(r.now), AcceptBy: at(r.now + 15),
		Proposals: []queue.Match{Match2v2(id, r.m.ticket(a), r.m.ticket(b))}})
	want := r.m.tickets[a].status == queue.Searching && r.m.tickets[b].status == queue.Searching
	if err != nil || (len(done.Matches) == 1) != want {
		r.fail(what, "%+v %v, want stored %v", done, err, want)
	}
	if want {
		r.m.propose(id, r.now+15, a, b)
	}
	return what
}

// answer is an answer, to a proposal open or not.
func (r *modelRun) answer() string {
	id, player := r.m.anyAnswer(r.rng)
	if id == "" {
		return ""
	}
	accept := r.rng.IntN(8) > 0
	what := fmt.Sprintf("answer %s %s %v", id, player, accept)
	p, resolved, err := queue.AnswerProposal(r.c, r.st, id, player, accept, at(r.now))
	if !r.m.proposals[id].open {
		wantCode(r.t, err, apperr.Conflict)
		return what
	}
	if err != nil {
		r.fail(what, "%v", err)
	}
	wantState := r.m.answer(id, player, accept)
	if p.State != wantState || resolved != (wantState != queue.ProposalOpen) {
		r.fail(what, "%s (resolved %v), want %s", p.State, resolved, wantState)
	}
	return what
}

// cancel is an owner's cancel of a ticket.
func (r *modelRun) cancel() string {
	id := r.m.any(r.rng)
	if id == "" {
		return ""
	}
	what := "cancel " + id
	_, err := queue.CancelTicket(r.c, r.st, id, at(r.now))
	switch r.m.tickets[id].status {
	case queue.Matched, queue.Expired:
		wantCode(r.t, err, apperr.Conflict)
	default:
		if err != nil {
			r.fail(what, "%v", err)
		}
		r.m.cancel(id)
	}
	return what
}

// expire is time passing, and the leader expiring what is due.
func (r *modelRun) expire() string {
	r.now += r.rng.IntN(4)
	what := fmt.Sprintf("expire at %d", r.now)
	resolved, open, err := queue.ExpireProposals(r.c, r.st, "q", at(r.now))
	want, wantOpen := r.m.expire(r.now)
	var got []string
	for _, p := range resolved {
		got = append(got, p.Match.ID)
	}
	if err != nil || !slices.Equal(got, want) || open != wantOpen {
		r.fail(what, "%v open %d, %v; want %v open %d", got, open, err, want, wantOpen)
	}
	return what
}

// match is a tick matching two tickets outright (a queue without the check, or a race).
func (r *modelRun) match() string {
	a, b := r.m.any(r.rng), r.m.any(r.rng)
	if a == "" || a == b {
		return ""
	}
	id := fmt.Sprintf("x%d", r.step)
	what := fmt.Sprintf("match %s %s+%s", id, a, b)
	done, err := queue.CommitTick(r.c, r.st, "q", queue.TickWrite{At: at(r.now), Matches: []queue.Match{Match2v2(id, r.m.ticket(a), r.m.ticket(b))}})
	want := r.m.tickets[a].status == queue.Searching && r.m.tickets[b].status == queue.Searching
	if err != nil || (len(done.Matches) == 1) != want {
		r.fail(what, "%+v %v, want stored %v", done, err, want)
	}
	if want {
		r.m.tickets[a].status, r.m.tickets[b].status = queue.Matched, queue.Matched
		r.m.tickets[a].match, r.m.tickets[b].match = id, id
	}
	return what
}

// checkEveryEnd checks that the sequence went through every way a proposal ends.
func (r *modelRun) checkEveryEnd() {
	ends := map[queue.ProposalState]int{}
	for _, id := range r.m.porder {
		p, err := r.st.GetProposal(r.c, id)
		if err != nil {
			r.t.Fatal(err)
		}
		ends[p.State]++
	}
	for _, s := range []queue.ProposalState{queue.ProposalAccepted, queue.ProposalDeclined, queue.ProposalTimedOut} {
		if ends[s] == 0 && !testing.Short() {
			r.t.Fatalf("no proposal ended %s in the sequence: %v", s, ends)
		}
	}
	r.t.Logf("proposals by end: %v", ends)
}

type modelTicket struct {
	players  []string
	status   queue.Status
	reason   string
	proposal string // while proposed
	match    string // once matched
}

type modelProposal struct {
	tickets  []string
	acceptBy int
	answers  map[string]bool
	open     bool
}

type model struct {
	tickets   map[string]*modelTicket
	order     []string
	proposals map[string]*modelProposal
	porder    []string
}

func newModel() *model {
	return &model{tickets: map[string]*modelTicket{}, proposals: map[string]*modelProposal{}}
}

func (m *model) create(id string, players []string) {
	m.tickets[id] = &modelTicket{players: players, status: queue.Searching}
	m.order = append(m.order, id)
}

// held says whether a player is in a searching or proposed ticket.
func (m *model) held(players []string) bool {
	for _, t := range m.tickets {
		if (t.status == queue.Searching || t.status == queue.Proposed) && slices.ContainsFunc(players, func(p string) bool { return slices.Contains(t.players, p) }) {
			return true
		}
	}
	return false
}

func (m *model) any(rng *rand.Rand) string {
	if len(m.order) == 0 {
		return ""
	}
	if rng.IntN(5) > 0 { // mostly a live ticket
		var live []string
		for _, id := range m.order {
			if st := m.tickets[id].status; st == queue.Searching || st == queue.Proposed {
				live = append(live, id)
			}
		}
		if len(live) > 0 {
			return live[rng.IntN(len(live))]
		}
	}
	// Mostly the recent tickets, which are the live ones.
	return m.order[max(0, len(m.order)-1-rng.IntN(min(len(m.order), 8)))]
}

func (m *model) anyAnswer(rng *rand.Rand) (string, string) {
	if len(m.porder) == 0 {
		return "", ""
	}
	id := m.porder[max(0, len(m.porder)-1-rng.IntN(min(len(m.porder), 4)))]
	if rng.IntN(5) > 0 { // mostly an open proposal
		for _, o := range m.porder {
			if m.proposals[o].open {
				id = o
			}
		}
	}
	var ps, pending []string
	for _, tk := range m.proposals[id].tickets {
		ps = append(ps, m.tickets[tk].players...)
	}
	for _, p := range ps {
		if _, ok := m.proposals[id].answers[p]; !ok {
			pending = append(pending, p)
		}
	}
	if len(pending) > 0 && rng.IntN(4) > 0 { // mostly one who has not answered
		return id, pending[rng.IntN(len(pending))]
	}
	return id, ps[rng.IntN(len(ps))]
}

func (m *model) ticket(id string) queue.Ticket {
	t := queue.Ticket{ID: id, Queue: "q"}
	for i, p := range m.tickets[id].players {
		t.Players = append(t.Players, queue.Player{ID: p, Rating: 1000 + float64(10*i)})
	}
	return t
}

func (m *model) propose(id string, acceptBy int, a, b string) {
	m.proposals[id] = &modelProposal{tickets: []string{a, b}, acceptBy: acceptBy, answers: map[string]bool{}, open: true}
	m.porder = append(m.porder, id)
	for _, t := range []string{a, b} {
		m.tickets[t].status, m.tickets[t].proposal = queue.Proposed, id
	}
}

// answer records an answer to an open proposal and returns its state after it.
func (m *model) answer(id, player string, accept bool) queue.ProposalState {
	p := m.proposals[id]
	p.answers[player] = accept
	if !accept {
		m.end(p, func(t *modelTicket) string {
			if slices.Contains(t.players, player) {
				return queue.ReasonDeclined
			}
			return ""
		})
		return queue.ProposalDeclined
	}
	for _, tk := range p.tickets {
		for _, pl := range m.tickets[tk].players {
			if !p.answers[pl] {
				return queue.ProposalOpen
			}
		}
	}
	p.open = false
	for _, tk := range p.tickets {
		m.tickets[tk].status, m.tickets[tk].proposal, m.tickets[tk].match = queue.Matched, "", id
	}
	return queue.ProposalAccepted
}

// end dissolves p: each ticket is cancelled with the reason cancel gives it, or searches
// again ("").
func (m *model) end(p *modelProposal, cancel func(*modelTicket) string) {
	p.open = false
	for _, tk := range p.tickets {
		t := m.tickets[tk]
		t.proposal = ""
		if r := cancel(t); r != "" {
			t.status, t.reason = queue.Cancelled, r
		} else {
			t.status = queue.Searching
		}
	}
}

func (m *model) cancel(id string) {
	t := m.tickets[id]
	switch t.status {
	case queue.Searching:
		t.status, t.reason = queue.Cancelled, "cancelled"
	case queue.Proposed:
		m.end(m.proposals[t.proposal], func(o *modelTicket) string {
			if o == t {
				return "cancelled"
			}
			return ""
		})
	}
}

func (m *model) expire(now int) (expired []string, open int) {
	ids := slices.Clone(m.porder)
	slices.Sort(ids)
	for _, id := range ids {
		p := m.proposals[id]
		switch {
		case !p.open:
		case p.acceptBy > now:
			open++
		default:
			expired = append(expired, id)
			m.end(p, func(t *modelTicket) string {
				for _, pl := range t.players {
					if !p.answers[pl] {
						return queue.ReasonAcceptanceTimeout
					}
				}
				return ""
			})
		}
	}
	return expired, open
}

// check compares every ticket and proposal of the store with the model.
func (m *model) check(t *testing.T, st queue.Store, where string) {
	t.Helper()
	c := ctx(t)
	live := map[string]string{} // player -> his searching or proposed ticket
	for _, id := range m.order {
		want := m.tickets[id]
		got, err := st.GetTicket(c, id)
		if err != nil {
			t.Fatalf("%s: ticket %s: %v", where, id, err)
		}
		if got.Status != want.status || (want.reason != "" && got.Reason != want.reason) {
			t.Fatalf("%s: ticket %s is %s (%s), want %s (%s)", where, id, got.Status, got.Reason, want.status, want.reason)
		}
		switch {
		case got.Status == queue.Proposed && (got.Proposal == nil || got.Proposal.MatchID != want.proposal):
			t.Fatalf("%s: ticket %s's proposal %+v, want %s", where, id, got.Proposal, want.proposal)
		case got.Status != queue.Proposed && got.Proposal != nil:
			t.Fatalf("%s: ticket %s is %s with a proposal", where, id, got.Status)
		case got.Status == queue.Matched && (got.Assignment == nil || got.Assignment.MatchID != want.match):
			t.Fatalf("%s: ticket %s's assignment %+v, want match %s", where, id, got.Assignment, want.match)
		}
		if got.Status == queue.Searching || got.Status == queue.Proposed {
			for _, p := range want.players {
				if other, twice := live[p]; twice {
					t.Fatalf("%s: player %s is in tickets %s and %s", where, p, other, id)
				}
				live[p] = id
			}
		}
	}
	for _, id := range m.porder {
		p, err := st.GetProposal(c, id)
		if err != nil {
			t.Fatalf("%s: proposal %s: %v", where, id, err)
		}
		if (p.State == queue.ProposalOpen) != m.proposals[id].open {
			t.Fatalf("%s: proposal %s is %s, want open %v", where, id, p.State, m.proposals[id].open)
		}
		if p.State == queue.ProposalAccepted {
			if _, err := st.GetMatch(c, id); err != nil {
				t.Fatalf("%s: the accepted proposal %s has no match: %v", where, id, err)
			}
		}
	}
}
