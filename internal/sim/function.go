package sim

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/matchmakerhq/matchmaker/client"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// A Function proposes a tick's matches from its pool, as a queue's match function does: req
// is what the leader would send (the queue's shape, its searching tickets oldest first with
// their players, ratings, roles, attributes, waits and tolerances), the answer what the
// function would return. ClientFunction runs a function written for the Go client's
// MatchFunctionHandler. A configuration with the "function" matcher plays its queue with
// one, so that a function can be compared with the queue's rules offline, on the same
// arrivals.
// An error is a failed call: the tick makes no match, as a function's on_failure "wait"
// leaves it (FunctionPass.Failed counts them).
type Function func(req queue.FunctionRequest) ([]queue.ProposedMatch, error)

// ClientFunction is fn, a function for the Go client's MatchFunctionHandler, as a Function:
// each call's request is the JSON the leader sends, read into the client's types, and fn's
// matches are the answer the handler writes, read by the service's strict reader; what
// differs from a deployed function is only the network.
func ClientFunction(fn client.MatchFunc) Function {
	return func(req queue.FunctionRequest) ([]queue.ProposedMatch, error) {
		var in client.MatchFunctionRequest
		if err := json.Unmarshal(queue.AppendFunctionRequest(nil, req), &in); err != nil {
			return nil, fmt.Errorf("the request: %w", err)
		}
		out, err := fn(context.Background(), &in)
		if err != nil {
			return nil, err
		}
		if out == nil {
			out = []client.ProposedMatch{}
		}
		b, err := json.Marshal(client.MatchFunctionAnswer{Matches: out})
		if err != nil {
			return nil, err
		}
		return queue.DecodeFunctionAnswer(b, len(req.Pool))
	}
}

// simEpoch is the wall time of the simulated clock's 0: a FunctionRequest carries times.
var simEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// FunctionPass is a Matcher whose matches come from a Function, checked as the queue checks
// a function's (queue.FunctionCheck): a proposal that fails is dropped and counted by its
// reason (Rejected), the others are made. The queue's rules only filter the pool, as in a
// match function's replace mode: a ticket past its TTL expires before the call.
type FunctionPass struct {
	fn       Function
	q        queue.Queue
	ttl      time.Duration
	calls    uint64
	failed   int
	rejected map[string]int
}

// NewFunctionPass plays fn on a queue of two teams of teamSize with the interval's steps
// (each ticket's tolerances in the pool) and r's attributes, rules and role composition.
func NewFunctionPass(fn Function, teamSize int, interval []Step, ttl time.Duration, r PassRules) (*FunctionPass, error) {
	if fn == nil {
		return nil, fmt.Errorf("matcher \"function\" needs a Go Function (Configuration.Function)")
	}
	q := queue.DefaultQueue("sim")
	q.TeamSize, q.MaxPartySize, q.Attributes, q.Rules, q.Roles = teamSize, teamSize, r.Attributes, r.Rules, r.Roles
	q.Expansions.Interval = make([]queue.Step, len(interval))
	for i, s := range interval {
		q.Expansions.Interval[i] = queue.Step{AfterS: s.AfterS, Value: s.Value}
	}
	if len(r.Shape) > 0 {
		q.Composition = r.Shape[0].Composition
	}
	return &FunctionPass{fn: fn, q: q, ttl: ttl, rejected: map[string]int{}}, nil
}

// Rejected counts the proposals the check dropped over the run, by reason
// (queue.RejectReason).
func (m *FunctionPass) Rejected() map[string]int { return m.rejected }

// Failed counts the calls that failed (the Function's error) over the run.
func (m *FunctionPass) Failed() int { return m.failed }

// Tick implements Matcher: the tickets past their TTL expire, the others are the pool the
// function is called with, and the matches the check makes are the tick's.
func (m *FunctionPass) Tick(waiting []Ticket, now time.Duration) ([]Match, []int) {
	var expired []int
	pool := make([]queue.Ticket, 0, len(waiting))
	index := map[string]int{} // a pool player's id -> population index
	for i, t := range waiting {
		if expires(t, now, m.ttl) {
			expired = append(expired, i)
			continue
		}
		pool = append(pool, m.ticket(t, index))
	}
	if len(pool) == 0 {
		return nil, expired
	}
	m.calls++
	at := simEpoch.Add(now)
	proposals, err := m.fn(queue.FunctionRequest{Queue: &m.q, Tick: m.calls, Now: at, Deadline: at.Add(queue.DefaultFunctionTimeout), Pool: pool})
	if err != nil {
		m.failed++
		return nil, expired
	}
	check := queue.FunctionCheck{Queue: &m.q, Pool: pool, Now: at}
	made, rejected := check.Check(proposals)
	for _, r := range rejected {
		m.rejected[string(r.Reason)]++
	}
	matches := make([]Match, 0, len(made))
	for _, mt := range made {
		matches = append(matches, simMatch(mt, index, m.q.Roles != nil))
	}
	return matches, expired
}

// ticket is t as the queue keeps a searching ticket: ids "t<ID>" and "p<player>".
func (m *FunctionPass) ticket(t Ticket, index map[string]int) queue.Ticket {
	qt := queue.Ticket{ID: "t" + strconv.Itoa(t.ID), Queue: m.q.Name, Status: queue.Searching, CreatedAt: simEpoch.Add(t.Created),
		Attributes: t.Attributes, Players: make([]queue.Player, len(t.Players))}
	for k, p := range t.Players {
		id := "p" + strconv.Itoa(p)
		qt.Players[k] = queue.Player{ID: id, Rating: t.Ratings[k]}
		if t.Roles != nil {
			qt.Players[k].Roles = t.Roles[k]
		}
		index[id] = p
	}
	return qt
}

// simMatch is a made match of two teams as a Match: each team sorted by rating, ascending,
// so that Teams[0][k] and Teams[1][k] are opponents of the same rank, as the queue pairs a
// function's match.
func simMatch(mt queue.Match, index map[string]int, roles bool) Match {
	var out Match
	for side := range 2 {
		team := mt.Teams[side]
		order := make([]int, len(team.Players))
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(team.Players[a].Rating, team.Players[b].Rating) })
		out.Teams[side] = make([]int, len(order))
		if roles {
			out.Roles[side] = make([]string, len(order))
		}
		for k, o := range order {
			out.Teams[side][k] = index[team.Players[o].ID]
			if roles {
				out.Roles[side][k] = team.Roles[o]
			}
		}
	}
	return out
}
