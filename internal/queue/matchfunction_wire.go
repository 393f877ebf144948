package queue

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// The match function's protocol (api/openapi.yaml, MatchFunctionRequest and
// MatchFunctionAnswer): the leader POSTs the request, signed as webhooks are, and reads the
// answer, strictly and bounded in size.

// DeadlineHeader carries a match function call's deadline (RFC 3339, as the body's
// "deadline"): an answer after it is not read.
const DeadlineHeader = "X-Matchmaker-Deadline"

// FunctionRequest is one call of a queue's match function.
type FunctionRequest struct {
	Queue *Queue
	// Tick counts the calls of the leader that makes them; the delivery id is the queue's
	// name and it.
	Tick          uint64
	Now, Deadline time.Time
	// Pool is the tickets sent, oldest first.
	Pool []Ticket
}

// Delivery is the request's delivery id (X-Matchmaker-Delivery).
func (r *FunctionRequest) Delivery() string {
	return r.Queue.Name + ":tick:" + strconv.FormatUint(r.Tick, 10)
}

// functionShapeJSON is the queue's shape as a request carries it: written once per call.
type functionShapeJSON struct {
	Teams       int                            `json:"teams"`
	TeamSize    int                            `json:"team_size"`
	TeamDefs    []rulesjson.TeamDef            `json:"team_defs,omitempty"`
	MinTeamSize []rulesjson.Step               `json:"min_team_size,omitempty"`
	Composition map[string]rulesjson.RoleRange `json:"composition,omitempty"`
	Roles       []string                       `json:"roles,omitempty"`
}

// AppendFunctionRequest appends r's JSON to dst. The pool is written ticket by ticket from
// the queue's own tickets, with no copy of them (nor a value per ticket for an encoder to
// walk): at each tick a leader sends up to MaxPool of them.
func AppendFunctionRequest(dst []byte, r FunctionRequest) []byte {
	q := r.Queue
	shape := functionShapeJSON{Teams: q.Teams, TeamSize: q.TeamSize, TeamDefs: rulesjson.FromTeamDefs(q.TeamDefs),
		Composition: rulesjson.FromComposition(q.Composition), Roles: q.Roles}
	if len(q.MinTeamSize) > 0 {
		shape.MinTeamSize = rulesjson.FromSteps(TickSteps(q.MinTeamSize))
	}
	b, err := json.Marshal(shape)
	if err != nil {
		panic(err) // numbers and strings
	}
	dst = append(dst, `{"queue":`...)
	dst, _ = jsontext.AppendQuote(dst, q.Name)
	dst = append(dst, `,"tick":`...)
	dst = strconv.AppendUint(dst, r.Tick, 10)
	dst = append(dst, `,"now":`...)
	dst = appendTime(dst, r.Now)
	dst = append(dst, `,"deadline":`...)
	dst = appendTime(dst, r.Deadline)
	dst = append(dst, ',')
	dst = append(dst, b[1:len(b)-1]...) // the shape's members
	dst = append(dst, `,"pool":[`...)
	e := newPoolEncoder(q)
	for i := range r.Pool {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = e.ticket(dst, &r.Pool[i], r.Now)
	}
	return append(dst, "]}"...)
}

// poolEncoder writes a pool's tickets: what it needs of the queue read once per call.
type poolEncoder struct {
	attributes []string // the queue's declared attributes, sorted
	regions    []string // the queue's regions, sorted; nil: any, sorted per ticket
	interval   []matchrules.Step
	latency    []matchrules.Step
	rules      []matchrules.Rule // those with a tolerance by wait
	scratch    []string
}

func newPoolEncoder(q *Queue) *poolEncoder {
	e := &poolEncoder{attributes: sortedKeys(q.Attributes), interval: TickSteps(q.Expansions.Interval),
		latency: TickSteps(q.Expansions.MaxLatencyMS)}
	if len(q.Regions) > 0 {
		e.regions = slices.Sorted(slices.Values(q.Regions))
	}
	for _, r := range q.Rules {
		if len(r.Expansions) > 0 {
			e.rules = append(e.rules, r)
		}
	}
	return e
}

// ticket appends one ticket of the pool: id, players (id, rating, roles, avoid, low_priority), attributes,
// latencies_ms, created_at, wait_s and its current tolerances.
func (e *poolEncoder) ticket(dst []byte, t *Ticket, now time.Time) []byte {
	dst = append(dst, `{"id":`...)
	dst, _ = jsontext.AppendQuote(dst, t.ID)
	dst = append(dst, `,"players":[`...)
	for j := range t.Players {
		p := &t.Players[j]
		if j > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst, _ = jsontext.AppendQuote(dst, p.ID)
		dst = append(dst, `,"rating":`...)
		dst = jsontext.AppendFloat(dst, p.Rating, 64)
		if len(p.Roles) > 0 {
			dst = append(dst, `,"roles":`...)
			dst = appendStrings(dst, p.Roles)
		}
		if len(p.Avoid) > 0 {
			dst = append(dst, `,"avoid":`...)
			dst = appendStrings(dst, p.Avoid)
		}
		if p.LowPriority { // the check holds him to the low-priority pool (lowPriorityBroken)
			dst = append(dst, `,"low_priority":true`...)
		}
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	dst = e.attributesOf(dst, t)
	dst = e.latenciesOf(dst, t)
	wait := max(now.Sub(t.CreatedAt).Seconds(), 0)
	dst = append(dst, `,"created_at":`...)
	dst = appendTime(dst, t.CreatedAt)
	dst = append(dst, `,"wait_s":`...)
	dst = jsontext.AppendFloat(dst, wait, 64)
	dst = append(dst, `,"tolerances":{"interval":`...)
	dst = jsontext.AppendFloat(dst, matchrules.Current(e.interval, wait), 64)
	if len(e.latency) > 0 {
		dst = append(dst, `,"max_latency_ms":`...)
		dst = jsontext.AppendFloat(dst, matchrules.Current(e.latency, wait), 64)
	}
	if len(e.rules) > 0 {
		dst = append(dst, `,"rules":{`...)
		for k, r := range e.rules {
			if k > 0 {
				dst = append(dst, ',')
			}
			dst, _ = jsontext.AppendQuote(dst, r.Name)
			dst = append(dst, ':')
			dst = jsontext.AppendFloat(dst, matchrules.Current(r.Expansions, wait), 64)
		}
		dst = append(dst, '}')
	}
	return append(dst, "}}"...)
}

// attributesOf appends the ticket's values of the queue's declared attributes, by name.
func (e *poolEncoder) attributesOf(dst []byte, t *Ticket) []byte {
	n := 0
	for _, name := range e.attributes {
		v, ok := t.Attributes[name]
		if !ok {
			continue
		}
		if n == 0 {
			dst = append(dst, `,"attributes":{`...)
		} else {
			dst = append(dst, ',')
		}
		n++
		dst, _ = jsontext.AppendQuote(dst, name)
		dst = append(dst, ':')
		switch v.Type {
		case matchrules.TypeNumber:
			dst = jsontext.AppendFloat(dst, v.Num, 64)
		case matchrules.TypeStringList:
			dst = appendStrings(dst, v.List)
		default:
			dst, _ = jsontext.AppendQuote(dst, v.Str)
		}
	}
	if n > 0 {
		dst = append(dst, '}')
	}
	return dst
}

// latenciesOf appends the ticket's latencies by region, in the regions' order.
func (e *poolEncoder) latenciesOf(dst []byte, t *Ticket) []byte {
	if len(t.Latencies) == 0 {
		return dst
	}
	regions := e.regions
	if regions == nil {
		e.scratch = e.scratch[:0]
		for r := range t.Latencies {
			e.scratch = append(e.scratch, r)
		}
		slices.Sort(e.scratch)
		regions = e.scratch
	}
	n := 0
	for _, r := range regions {
		ms, ok := t.Latencies[r]
		if !ok {
			continue
		}
		if n == 0 {
			dst = append(dst, `,"latencies_ms":{`...)
		} else {
			dst = append(dst, ',')
		}
		n++
		dst, _ = jsontext.AppendQuote(dst, r)
		dst = append(dst, ':')
		dst = jsontext.AppendFloat(dst, ms, 64)
	}
	if n > 0 {
		dst = append(dst, '}')
	}
	return dst
}

func appendStrings(dst []byte, ss []string) []byte {
	dst = append(dst, '[')
	for i, s := range ss {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst, _ = jsontext.AppendQuote(dst, s)
	}
	return append(dst, ']')
}

func appendTime(dst []byte, t time.Time) []byte {
	dst = append(dst, '"')
	dst = t.UTC().AppendFormat(dst, time.RFC3339Nano)
	return append(dst, '"')
}

// MaxFunctionAnswer bounds the body of a match function's answer read: a larger one is
// unreadable, and the call failed.
const MaxFunctionAnswer = 16 << 20

// ErrFunctionUnreadable is the failure of a call whose answer cannot be read: not JSON, not
// the protocol's, or too large.
var ErrFunctionUnreadable = errors.New("the match function's answer cannot be read")

// functionAnswerJSON is a match function's 2xx body.
type functionAnswerJSON struct {
	Matches *[]proposedMatchJSON `json:"matches"`
}

type proposedMatchJSON struct {
	Teams      []proposedTeamJSON         `json:"teams"`
	Roles      map[string]string          `json:"roles,omitempty"`
	Attributes map[string]rulesjson.Value `json:"attributes,omitempty"`
	Region     string                     `json:"region,omitempty"`
}

type proposedTeamJSON struct {
	Tickets []string `json:"tickets"`
}

// DecodeFunctionAnswer reads the answer to a call that sent pool tickets: JSON with exactly
// the protocol's members (an unknown or repeated member is refused), "matches" a list, of at
// most pool matches (each holds a ticket of the pool, or it is rejected). A failure wraps
// ErrFunctionUnreadable. Whether each match is one the queue can make is the check's to say
// (FunctionCheck), match by match.
func DecodeFunctionAnswer(b []byte, pool int) ([]ProposedMatch, error) {
	if len(b) > MaxFunctionAnswer {
		return nil, fmt.Errorf("%w: it is over %d bytes", ErrFunctionUnreadable, MaxFunctionAnswer)
	}
	var ans functionAnswerJSON
	if err := jsonv2.Unmarshal(b, &ans, jsonv2.RejectUnknownMembers(true)); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrFunctionUnreadable, err)
	}
	if ans.Matches == nil {
		return nil, fmt.Errorf(`%w: it has no "matches" list`, ErrFunctionUnreadable)
	}
	if len(*ans.Matches) > pool {
		return nil, fmt.Errorf("%w: %d matches of a pool of %d tickets", ErrFunctionUnreadable, len(*ans.Matches), pool)
	}
	out := make([]ProposedMatch, len(*ans.Matches))
	for i, m := range *ans.Matches {
		p := ProposedMatch{Teams: make([][]string, len(m.Teams)), Roles: m.Roles, Region: m.Region}
		for k, t := range m.Teams {
			p.Teams[k] = t.Tickets
		}
		if len(m.Attributes) > 0 {
			p.Attributes = make(map[string]matchrules.Value, len(m.Attributes))
			for name, v := range m.Attributes {
				p.Attributes[name] = v.Value
			}
		}
		out[i] = p
	}
	return out, nil
}
