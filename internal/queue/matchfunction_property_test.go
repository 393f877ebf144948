package queue_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The check of a match function's proposals against a brute force, on random queues, pools
// and answers: valid matches built from the pool, some broken in one way each, some copies of
// earlier ones. Every committed match satisfies the checks (verified here by enumeration, not
// by the check's own code), every broken one is rejected with the reason of what broke it, no
// ticket is in two matches, and a valid proposal is never rejected.

var propRoles = []string{"tank", "dps", "heal"}

// propWorld is one random case: a queue, its pool, which tickets search, and the answer.
type propWorld struct {
	q         queue.Queue
	pool      []queue.Ticket
	searching map[string]bool
	proposals []queue.ProposedMatch
	want      []queue.RejectReason // per proposal: "" for a valid one
	noise     []string             // searching tickets no valid match holds
	gone      []string             // tickets of the pool no longer searching
}

func randomQueue(rng *rand.Rand) queue.Queue {
	q := queue.DefaultQueue("q")
	q.Teams, q.TeamSize = 2+rng.IntN(2), 1+rng.IntN(4)
	q.MaxPartySize = q.TeamSize
	if rng.IntN(3) == 0 {
		q.Roles = propRoles
		if q.TeamSize >= 2 {
			q.Composition = map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}
		}
	}
	if rng.IntN(3) == 0 && q.TeamSize >= 2 {
		q.MinTeamSize = []queue.Step{{AfterS: 0, Value: float64(q.TeamSize)}, {AfterS: 30, Value: float64(q.TeamSize - 1)}}
	}
	return q
}

// addTicket adds a ticket of these players' roles ("" any) to the pool, made wait s ago.
func (w *propWorld) addTicket(rng *rand.Rand, wait int, roles []string) string {
	id := fmt.Sprintf("t%d", len(w.pool))
	t := queue.Ticket{ID: id, Queue: "q", Status: queue.Searching, CreatedAt: sec(-wait)}
	for j, r := range roles {
		p := queue.Player{ID: fmt.Sprintf("%s-%d", id, j), Rating: 800 + 400*rng.Float64()}
		if r != "" {
			p.Roles = []string{r}
		}
		t.Players = append(t.Players, p)
	}
	w.pool = append(w.pool, t)
	w.searching[id] = true
	return id
}

// validMatch builds a match of new tickets that the queue takes: each team of its size (or
// one less, of tickets old enough, when the queue's minimum allows it), of parties of random
// sizes, each player listing a role that meets the composition (or none).
func (w *propWorld) validMatch(rng *rand.Rand) queue.ProposedMatch { return w.match(rng, noFault) }

// The compositions a match may break: two players who play tank only on its first team,
// or none who plays tank, where the composition takes exactly one.
const (
	noFault = iota
	twoTanks
	noTank
)

// match builds validMatch's match, its first team broken by fault.
func (w *propWorld) match(rng *rand.Rand, fault int) queue.ProposedMatch {
	short := len(w.q.MinTeamSize) > 0 && rng.IntN(2) == 0
	wait := 1 + rng.IntN(20)
	if short {
		wait = 40 + rng.IntN(20)
	}
	var p queue.ProposedMatch
	for range w.q.Teams {
		size := w.q.TeamSize
		if short && rng.IntN(2) == 0 && !(fault == twoTanks && len(p.Teams) == 0) {
			size--
		}
		slots := make([]string, size)
		for k := range slots {
			switch {
			case len(w.q.Roles) == 0:
			case k == 0 && fault == noTank && len(p.Teams) == 0:
				slots[k] = "dps"
			case k == 0 && w.q.Composition != nil, k == 1 && fault == twoTanks && len(p.Teams) == 0:
				slots[k] = "tank"
			case rng.IntN(4) == 0 && w.q.Composition == nil:
				slots[k] = "" // plays any
			default:
				slots[k] = propRoles[1+rng.IntN(2)]
			}
		}
		rng.Shuffle(len(slots), func(i, j int) { slots[i], slots[j] = slots[j], slots[i] })
		var ids []string
		for len(slots) > 0 {
			n := 1 + rng.IntN(len(slots))
			ids = append(ids, w.addTicket(rng, wait, slots[:n]))
			slots = slots[n:]
		}
		p.Teams = append(p.Teams, ids)
	}
	return p
}

// broken breaks a copy of p in one way and says the reason the check must give.
func (w *propWorld) broken(rng *rand.Rand, p queue.ProposedMatch) (queue.ProposedMatch, queue.RejectReason) {
	b := queue.ProposedMatch{Teams: make([][]string, len(p.Teams))}
	for k := range p.Teams {
		b.Teams[k] = slices.Clone(p.Teams[k])
	}
	first := b.Teams[0][0]
	for {
		switch rng.IntN(8) {
		case 0:
			b.Teams[0][0] = "unknown-" + first
			return b, queue.RejectUnknown
		case 1:
			if len(w.gone) == 0 {
				continue
			}
			b.Teams[0][0] = w.gone[rng.IntN(len(w.gone))]
			return b, queue.RejectNotSearching
		case 2:
			b.Teams[0] = append(b.Teams[0], first)
			return b, queue.RejectDuplicate
		case 3:
			b.Teams[1] = append(b.Teams[1], first)
			return b, queue.RejectPartySplit
		case 4:
			b.Teams = b.Teams[:len(b.Teams)-1]
			return b, queue.RejectTeams
		case 5:
			have := w.players(queue.ProposedMatch{Teams: b.Teams[:1]})
			var over []string // noise that takes team 0 past its size
			for _, id := range w.noise {
				if have+len(w.ticket(id).Players) > w.q.TeamSize {
					over = append(over, id)
				}
			}
			if len(over) == 0 {
				continue
			}
			b.Teams[0] = append(b.Teams[0], over[rng.IntN(len(over))])
			return b, queue.RejectTeamSize
		case 6:
			b.Roles = map[string]string{first + "-0": "tank"} // roles for one player only, or in a queue without
			if len(w.q.Roles) > 0 && len(w.ticket(first).Players) == w.players(p) {
				continue // a one-player match: its roles would be whole
			}
			return b, queue.RejectRoles
		case 7:
			last := b.Teams[0][len(b.Teams[0])-1]
			left := w.players(queue.ProposedMatch{Teams: b.Teams[:1]}) - len(w.ticket(last).Players)
			if left >= w.minSize(epoch.Sub(w.ticket(last).CreatedAt).Seconds()) {
				continue
			}
			b.Teams[0] = b.Teams[0][:len(b.Teams[0])-1]
			return b, queue.RejectTeamSize
		}
	}
}

// minSize is the fewest players a team may have at the oldest ticket's wait.
func (w *propWorld) minSize(oldest float64) int {
	if len(w.q.MinTeamSize) > 0 && oldest >= w.q.MinTeamSize[1].AfterS {
		return int(w.q.MinTeamSize[1].Value)
	}
	return w.q.TeamSize
}

func (w *propWorld) ticket(id string) *queue.Ticket {
	for i := range w.pool {
		if w.pool[i].ID == id {
			return &w.pool[i]
		}
	}
	return nil
}

func (w *propWorld) players(p queue.ProposedMatch) int {
	n := 0
	for _, team := range p.Teams {
		for _, id := range team {
			n += len(w.ticket(id).Players)
		}
	}
	return n
}

func randomWorld(rng *rand.Rand) *propWorld {
	w := &propWorld{q: randomQueue(rng), searching: map[string]bool{}}
	var valid []queue.ProposedMatch
	for range 1 + rng.IntN(4) {
		valid = append(valid, w.validMatch(rng))
	}
	for range rng.IntN(6) {
		roles := make([]string, 1+rng.IntN(w.q.TeamSize))
		id := w.addTicket(rng, rng.IntN(60), roles)
		if rng.IntN(2) == 0 {
			w.searching[id] = false
			w.gone = append(w.gone, id)
		} else {
			w.noise = append(w.noise, id)
		}
	}
	for _, p := range valid {
		if rng.IntN(2) == 0 {
			b, why := w.broken(rng, p)
			w.proposals, w.want = append(w.proposals, b), append(w.want, why)
			continue
		}
		w.proposals, w.want = append(w.proposals, p), append(w.want, "")
	}
	if w.q.Composition != nil && rng.IntN(3) == 0 {
		w.proposals, w.want = append(w.proposals, w.match(rng, twoTanks+rng.IntN(2))), append(w.want, queue.RejectComposition)
	}
	for i := range len(w.proposals) {
		if w.want[i] == "" && rng.IntN(3) == 0 { // a copy after its original: every ticket taken
			w.proposals, w.want = append(w.proposals, w.proposals[i]), append(w.want, queue.RejectDuplicate)
		}
	}
	return w
}

func TestFunctionCheckProperty(t *testing.T) {
	t.Parallel()
	runs := 3000
	if testing.Short() {
		runs = 300
	}
	for seed := range uint64(runs) {
		rng := rand.New(rand.NewPCG(seed, 33))
		w := randomWorld(rng)
		check := &queue.FunctionCheck{Queue: &w.q, Pool: w.pool, Now: epoch, Searching: func(id string) bool { return w.searching[id] }}
		made, rejected := check.Check(w.proposals)
		got := make([]queue.RejectReason, len(w.proposals))
		for _, r := range rejected {
			got[r.Match] = r.Reason
		}
		if !slices.Equal(got, w.want) {
			t.Fatalf("seed %d: reasons %q, want %q\nqueue %+v\nproposals %v\nrejected %+v", seed, got, w.want, w.q, w.proposals, rejected)
		}
		var madeFrom []queue.ProposedMatch
		for i, p := range w.proposals {
			if got[i] == "" {
				madeFrom = append(madeFrom, p)
			}
		}
		if len(made) != len(madeFrom) {
			t.Fatalf("seed %d: %d made of %d valid", seed, len(made), len(madeFrom))
		}
		for i, m := range made {
			if why := bruteCheck(w, madeFrom[i], m); why != "" {
				t.Fatalf("seed %d: made match %d breaks the checks: %s\n%+v", seed, i, why, m)
			}
		}
		commitProperty(t, seed, w, made)
	}
}

// bruteCheck verifies a made match from scratch: it is the proposal's teams, of the pool's
// searching tickets, the queue's number of teams, each within its size bounds at the oldest
// ticket's wait, its roles the players' own (every assignment tried) meeting each team's
// composition.
func bruteCheck(w *propWorld, p queue.ProposedMatch, m queue.Match) string {
	if len(m.Teams) != w.q.Teams || len(p.Teams) != w.q.Teams {
		return "team count"
	}
	oldest := 0.0
	for _, team := range p.Teams {
		for _, id := range team {
			oldest = max(oldest, epoch.Sub(w.ticket(id).CreatedAt).Seconds())
		}
	}
	lo := w.minSize(oldest)
	for k, team := range p.Teams {
		var want []string
		var lists [][]string
		for _, id := range team {
			t := w.ticket(id)
			if t == nil || !w.searching[id] {
				return "a ticket not in the pool or not searching: " + id
			}
			for _, pl := range t.Players {
				want = append(want, pl.ID)
				lists = append(lists, pl.Roles)
			}
		}
		var got []string
		for _, pl := range m.Teams[k].Players {
			got = append(got, pl.ID)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Sprintf("team %d is %v, proposed %v", k, got, want)
		}
		if len(want) > w.q.TeamSize || len(want) < lo {
			return fmt.Sprintf("team %d has %d players, bounds %d..%d", k, len(want), lo, w.q.TeamSize)
		}
		if len(w.q.Roles) > 0 && !someRolesFit(lists, w.q.Composition, nil) {
			return fmt.Sprintf("team %d: no assignment of its roles meets the composition", k)
		}
		if len(w.q.Roles) > 0 && !rolesKept(w, m.Teams[k]) {
			return fmt.Sprintf("team %d's roles %v are not its players' or break the composition", k, m.Teams[k].Roles)
		}
	}
	return ""
}

// rolesKept says whether each player of team plays a role he listed (any, listing none), and
// the team's roles meet the queue's composition.
func rolesKept(w *propWorld, team queue.MatchTeam) bool {
	if len(team.Roles) != len(team.Players) {
		return false
	}
	var lists [][]string
	for j, p := range team.Players {
		own := w.ticket(p.TicketID).Players
		for _, pl := range own {
			if pl.ID == p.ID && len(pl.Roles) > 0 && !slices.Contains(pl.Roles, team.Roles[j]) {
				return false
			}
		}
		lists = append(lists, []string{team.Roles[j]})
	}
	return someRolesFit(lists, w.q.Composition, nil)
}

// someRolesFit tries every assignment of a listed role (any role for an empty list) to each
// player, and says whether one meets the composition.
func someRolesFit(lists [][]string, comp map[string]matchrules.RoleRange, chosen []string) bool {
	if len(chosen) == len(lists) {
		for r, b := range comp {
			n := 0
			for _, c := range chosen {
				if c == r {
					n++
				}
			}
			if n < b.Min || n > b.Max {
				return false
			}
		}
		return true
	}
	options := lists[len(chosen)]
	if len(options) == 0 {
		options = propRoles
	}
	for _, r := range options {
		if someRolesFit(lists, comp, append(chosen, r)) {
			return true
		}
	}
	return false
}

// commitProperty commits the made matches through the lifecycle, as the leader's tick does,
// with the pool's tickets as a store holds them: every made match is committed, and each of
// its tickets, none twice, is matched in it.
func commitProperty(t *testing.T, seed uint64, w *propWorld, made []queue.Match) {
	t.Helper()
	var states []queue.TicketState
	for _, tk := range w.pool {
		st := queue.TicketState{ID: tk.ID, Queue: "q", Status: queue.Searching}
		if !w.searching[tk.ID] {
			st.Status = queue.Matched
		}
		states = append(states, st)
	}
	c, _, err := world{tickets: states}.decide(epoch, queue.TickMatches{Queue: "q", Write: queue.TickWrite{Matches: made}}, nil)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if len(c.Matches) != len(made) || len(c.Dropped) != 0 {
		t.Fatalf("seed %d: %d of %d made matches committed, dropped %+v", seed, len(c.Matches), len(made), c.Dropped)
	}
	matchOf := map[string]string{}
	for _, tr := range c.Transitions {
		if _, twice := matchOf[tr.Ticket]; twice || tr.To != queue.Matched {
			t.Fatalf("seed %d: ticket %s moved twice or not to matched: %+v", seed, tr.Ticket, tr)
		}
		matchOf[tr.Ticket] = tr.Assignment.MatchID
	}
	for _, m := range made {
		for _, id := range m.Tickets() {
			if matchOf[id] != m.ID {
				t.Fatalf("seed %d: ticket %s is in match %q, made in %q", seed, id, matchOf[id], m.ID)
			}
		}
	}
}
