package queuetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// testProposalModel runs random sequences of ticket creations, proposals, answers, cancels,
// expiries and tick matches against the store and against a model of what each should do,
// and checks after every step that the store agrees with the model: no ticket in two
// proposals or matches, no player searching or proposed twice, every change the one the
// model expects.
func testProposalModel(t *testing.T, st queue.Store) {
	c := ctx(t)
	putQueue(t, st, Queue("q"))
	rng := rand.New(rand.NewPCG(22, 1))
	m := newModel()
	steps := 400
	if testing.Short() {
		steps = 100
	}
	var players []string
	for i := range 12 {
		players = append(players, fmt.Sprintf("p%d", i))
	}
	now := 0
	for step := range steps {
		now++
		var what string
		switch op := rng.IntN(20); {
		case op < 4: // a ticket of one or two players
			n := 1 + rng.IntN(2)
			var ps []string
			for _, i := range rng.Perm(len(players))[:n] {
				ps = append(ps, players[i])
			}
			id := fmt.Sprintf("t%d", step)
			what = fmt.Sprintf("create %s %v", id, ps)
			_, _, err := st.CreateTicket(c, Ticket("q", id, now, ps...))
			var se *queue.SearchingError
			switch held := m.held(ps); {
			case held && !errors.As(err, &se):
				t.Fatalf("step %d %s: %v, want a player already searching", step, what, err)
			case !held && err != nil:
				t.Fatalf("step %d %s: %v", step, what, err)
			case !held:
				m.create(id, ps)
			}
		case op < 8: // a tick proposes two tickets (maybe no longer searching)
			a, b := m.any(rng), m.any(rng)
			if a == "" || a == b {
				continue
			}
			id := fmt.Sprintf("m%d", step)
			what = fmt.Sprintf("propose %s %s+%s", id, a, b)
			done, err := st.Propose(c, "q", queue.ProposeWrite{At: at(now), AcceptBy: at(now + 15),
				Proposals: []queue.Match{Match2v2(id, m.ticket(a), m.ticket(b))}})
			want := m.tickets[a].status == queue.Searching && m.tickets[b].status == queue.Searching
			if err != nil || (len(done.Matches) == 1) != want {
				t.Fatalf("step %d %s: %+v %v, want stored %v", step, what, done, err, want)
			}
			if want {
				m.propose(id, now+15, a, b)
			}
		case op < 15: // an answer, to a proposal open or not
			id, player := m.anyAnswer(rng)
			if id == "" {
				continue
			}
			accept := rng.IntN(8) > 0
			what = fmt.Sprintf("answer %s %s %v", id, player, accept)
			p, resolved, err := st.AnswerProposal(c, id, player, accept, at(now))
			if !m.proposals[id].open {
				wantCode(t, err, apperr.Conflict)
				break
			}
			if err != nil {
				t.Fatalf("step %d %s: %v", step, what, err)
			}
			wantState := m.answer(id, player, accept)
			if p.State != wantState || resolved != (wantState != queue.ProposalOpen) {
				t.Fatalf("step %d %s: %s (resolved %v), want %s", step, what, p.State, resolved, wantState)
			}
		case op < 16: // a cancel
			id := m.any(rng)
			if id == "" {
				continue
			}
			what = "cancel " + id
			_, err := st.CancelTicket(c, id, at(now))
			switch m.tickets[id].status {
			case queue.Matched, queue.Expired:
				wantCode(t, err, apperr.Conflict)
			default:
				if err != nil {
					t.Fatalf("step %d %s: %v", step, what, err)
				}
				m.cancel(id)
			}
		case op < 18: // time passes: the leader expires what is due
			now += rng.IntN(4)
			what = fmt.Sprintf("expire at %d", now)
			resolved, open, err := st.ExpireProposals(c, "q", at(now))
			want, wantOpen := m.expire(now)
			var got []string
			for _, p := range resolved {
				got = append(got, p.Match.ID)
			}
			if err != nil || !slices.Equal(got, want) || open != wantOpen {
				t.Fatalf("step %d %s: %v open %d, %v; want %v open %d", step, what, got, open, err, want, wantOpen)
			}
		default: // a tick matches two tickets outright (a queue without the check, or a race)
			a, b := m.any(rng), m.any(rng)
			if a == "" || a == b {
				continue
			}
			id := fmt.Sprintf("x%d", step)
			what = fmt.Sprintf("match %s %s+%s", id, a, b)
			done, err := st.CommitTick(c, "q", queue.TickWrite{At: at(now), Matches: []queue.Match{Match2v2(id, m.ticket(a), m.ticket(b))}})
			want := m.tickets[a].status == queue.Searching && m.tickets[b].status == queue.Searching
			if err != nil || (len(done.Matches) == 1) != want {
				t.Fatalf("step %d %s: %+v %v, want stored %v", step, what, done, err, want)
			}
			if want {
				m.tickets[a].status, m.tickets[b].status = queue.Matched, queue.Matched
				m.tickets[a].match, m.tickets[b].match = id, id
			}
		}
		m.check(t, st, fmt.Sprintf("step %d (%s)", step, what))
	}
	// The sequence went through every way a proposal ends.
	ends := map[queue.ProposalState]int{}
	for _, id := range m.porder {
		p, err := st.GetProposal(c, id)
		if err != nil {
			t.Fatal(err)
		}
		ends[p.State]++
	}
	for _, s := range []queue.ProposalState{queue.ProposalAccepted, queue.ProposalDeclined, queue.ProposalTimedOut} {
		if ends[s] == 0 && !testing.Short() {
			t.Fatalf("no proposal ended %s in the sequence: %v", s, ends)
		}
	}
	t.Logf("proposals by end: %v", ends)
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
