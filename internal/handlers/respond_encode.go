package handlers

import (
	"encoding/json"
	"errors"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"
)

// The answers of the requests every ticket makes (its creation, its long-poll, its match's
// read, its match's result) are written by hand, as encoding/json would write them (the
// property tests in respond_encode_test.go hold them to that, byte for byte): its reflection
// over them was the largest part of writing them (docs/performance.md, "The request paths a
// ticket takes"). The rare parts (attributes, backfills, ready checks, connections) still go
// through encoding/json, value by value.

// jsonAppender is a response that writes itself after b; respond uses it when the value has
// it. An error means that encoding/json has to say what it makes of the value.
type jsonAppender interface {
	appendJSON(b []byte) ([]byte, error)
}

// errNotFinite is a float encoding/json refuses (NaN, ±Inf): respond then lets encoding/json
// write the whole value, so that the answer is its own (a 500 problem).
var errNotFinite = errors.New("a float that is not finite")

// jsonOut is a JSON document being appended to b; the first error sticks.
type jsonOut struct {
	b   []byte
	err error
}

func (o *jsonOut) raw(s string)     { o.b = append(o.b, s...) }
func (o *jsonOut) str(s string)     { o.b = appendString(o.b, s) }
func (o *jsonOut) int(n int)        { o.b = strconv.AppendInt(o.b, int64(n), 10) }
func (o *jsonOut) bool(v bool)      { o.b = strconv.AppendBool(o.b, v) }
func (o *jsonOut) strs(ss []string) { o.b = appendStrings(o.b, ss) }

func (o *jsonOut) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		o.fail(errNotFinite)
		return
	}
	o.b = appendFloat(o.b, f)
}

// time writes t as time.Time's MarshalJSON does (RFC 3339 with its checks), quoted.
func (o *jsonOut) time(t time.Time) {
	o.b = append(o.b, '"')
	var err error
	if o.b, err = t.AppendText(o.b); err != nil {
		o.fail(err)
	}
	o.b = append(o.b, '"')
}

// value writes v, a pointer to the value, through encoding/json.
func (o *jsonOut) value(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		o.fail(err)
		return
	}
	o.b = append(o.b, data...)
}

// optStr writes the member named by prefix (`,"name":`) unless s is empty (omitempty).
func (o *jsonOut) optStr(prefix, s string) {
	if s != "" {
		o.raw(prefix)
		o.str(s)
	}
}

// teamTail writes the members a team of a shaped match adds, each omitted when empty.
func (o *jsonOut) teamTail(name string, roles map[string]string, openSlots int) {
	o.optStr(`,"name":`, name)
	if len(roles) > 0 {
		o.raw(`,"roles":`)
		o.strMap(roles)
	}
	if openSlots != 0 {
		o.raw(`,"open_slots":`)
		o.int(openSlots)
	}
}

func (o *jsonOut) fail(err error) {
	if o.err == nil {
		o.err = err
	}
}

// floats writes a map of numbers as encoding/json does: keys sorted, null for nil.
func (o *jsonOut) floats(m map[string]float64) { appendMap(o, m, o.float) }

// strMap writes a map of strings as encoding/json does.
func (o *jsonOut) strMap(m map[string]string) { appendMap(o, m, o.str) }

func appendMap[V any](o *jsonOut, m map[string]V, value func(V)) {
	if m == nil {
		o.raw("null")
		return
	}
	o.raw("{")
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i > 0 {
			o.raw(",")
		}
		o.str(k)
		o.raw(":")
		value(m[k])
	}
	o.raw("}")
}

// list writes a JSON array of n elements (null when nil), each by elem(i).
func (o *jsonOut) list(isNil bool, n int, elem func(i int)) {
	if isNil {
		o.raw("null")
		return
	}
	o.raw("[")
	for i := range n {
		if i > 0 {
			o.raw(",")
		}
		elem(i)
	}
	o.raw("]")
}

func (t *ticketJSON) appendJSON(b []byte) ([]byte, error) {
	o := &jsonOut{b: b}
	o.raw(`{"id":`)
	o.str(t.ID)
	o.raw(`,"queue":`)
	o.str(t.Queue)
	o.raw(`,"status":`)
	o.str(string(t.Status))
	o.raw(`,"players":`)
	o.list(t.Players == nil, len(t.Players), func(i int) { t.Players[i].appendJSON(o) })
	if len(t.LatenciesMS) > 0 {
		o.raw(`,"latencies_ms":`)
		o.floats(t.LatenciesMS)
	}
	if len(t.Attributes) > 0 {
		o.raw(`,"attributes":`)
		o.value(&t.Attributes)
	}
	o.raw(`,"created_at":`)
	o.time(t.CreatedAt)
	o.raw(`,"expires_at":`)
	o.time(t.ExpiresAt)
	o.raw(`,"updated_at":`)
	o.time(t.UpdatedAt)
	o.raw(`,"exclusive":`)
	o.bool(t.Exclusive)
	o.optStr(`,"reason":`, t.Reason)
	if t.Assignment != nil {
		o.raw(`,"assignment":`)
		t.Assignment.appendJSON(o)
	}
	if t.Proposal != nil {
		o.raw(`,"proposal":`)
		o.value(t.Proposal)
	}
	if t.Backfill != nil {
		o.raw(`,"backfill":`)
		o.value(t.Backfill)
	}
	t.appendWaiting(o)
	o.raw("}")
	return o.b, o.err
}

// appendWaiting writes what a searching ticket has of its wait.
func (t *ticketJSON) appendWaiting(o *jsonOut) {
	if t.EstimatedWaitS != nil {
		o.raw(`,"estimated_wait_s":`)
		o.float(*t.EstimatedWaitS)
	}
	if w := t.WaitingOn; w != nil {
		o.raw(`,"waiting_on":{"rule":`)
		o.str(w.Rule)
		o.raw(`,"detail":`)
		o.str(w.Detail)
		o.raw("}")
	}
	if tol := t.Tolerances; tol != nil {
		o.raw(`,"tolerances":{"interval":`)
		o.float(tol.Interval)
		if tol.MaxLatencyMS != nil {
			o.raw(`,"max_latency_ms":`)
			o.float(*tol.MaxLatencyMS)
		}
		if len(tol.Rules) > 0 {
			o.raw(`,"rules":`)
			o.floats(tol.Rules)
		}
		o.raw("}")
	}
}

func (p *ticketPlayerOut) appendJSON(o *jsonOut) {
	o.raw(`{"id":`)
	o.str(p.ID)
	o.raw(`,"rating":`)
	o.float(p.Rating)
	o.raw(`,"rating_source":`)
	o.str(string(p.RatingSource))
	if len(p.Roles) > 0 {
		o.raw(`,"roles":`)
		o.strs(p.Roles)
	}
	if len(p.Avoid) > 0 {
		o.raw(`,"avoid":`)
		o.strs(p.Avoid)
	}
	if p.LowPriority {
		o.raw(`,"low_priority":true`)
	}
	o.raw("}")
}

func (a *ticketAssignedJSON) appendJSON(o *jsonOut) {
	o.raw(`{"match_id":`)
	o.str(a.MatchID)
	o.raw(`,"team":`)
	o.int(a.Team)
	o.optStr(`,"region":`, a.Region)
	o.raw(`,"teams":`)
	o.list(a.Teams == nil, len(a.Teams), func(i int) { a.Teams[i].appendJSON(o) })
	if len(a.Joined) > 0 {
		o.raw(`,"joined":`)
		o.list(false, len(a.Joined), func(i int) { a.Joined[i].appendJSON(o) })
	}
	o.optStr(`,"fill_id":`, a.FillID)
	if len(a.Attributes) > 0 {
		o.raw(`,"attributes":`)
		o.value(&a.Attributes)
	}
	if len(a.Connection) > 0 {
		o.raw(`,"connection":`)
		o.value(&a.Connection)
	}
	o.raw("}")
}

func (t *assignedTeamJSON) appendJSON(o *jsonOut) {
	o.raw(`{"players":`)
	o.strs(t.Players)
	o.teamTail(t.Name, t.Roles, t.OpenSlots)
	o.raw("}")
}

func (m *matchOutJSON) appendJSON(b []byte) ([]byte, error) {
	o := &jsonOut{b: b}
	o.raw(`{"id":`)
	o.str(m.ID)
	o.raw(`,"queue":`)
	o.str(m.Queue)
	o.raw(`,"created_at":`)
	o.time(m.CreatedAt)
	o.optStr(`,"region":`, m.Region)
	o.raw(`,"teams":`)
	o.list(m.Teams == nil, len(m.Teams), func(i int) { m.Teams[i].appendJSON(o) })
	o.raw(`,"tickets":`)
	o.strs(m.Tickets)
	o.raw(`,"pairs":`)
	o.list(m.Pairs == nil, len(m.Pairs), func(i int) {
		p := &m.Pairs[i]
		o.raw(`{"players":[`)
		o.str(p.Players[0])
		o.raw(",")
		o.str(p.Players[1])
		o.raw(`],"difference":`)
		o.float(p.Difference)
		o.raw(`,"interval":`)
		o.float(p.Interval)
		o.raw("}")
	})
	o.raw(`,"skill_difference":`)
	o.float(m.SkillDifference)
	o.raw(`,"average_difference":`)
	o.float(m.AverageDifference)
	o.optStr(`,"backfill_of":`, m.BackfillOf)
	o.optStr(`,"backfill_ticket":`, m.BackfillTicket)
	if len(m.Attributes) > 0 {
		o.raw(`,"attributes":`)
		o.value(&m.Attributes)
	}
	if len(m.Connection) > 0 {
		o.raw(`,"connection":`)
		o.value(&m.Connection)
	}
	o.raw("}")
	return o.b, o.err
}

func (t *matchTeamOutJSON) appendJSON(o *jsonOut) {
	o.raw(`{"players":`)
	o.list(t.Players == nil, len(t.Players), func(i int) {
		p := &t.Players[i]
		o.raw(`{"id":`)
		o.str(p.ID)
		o.raw(`,"ticket_id":`)
		o.str(p.TicketID)
		o.raw(`,"rating":`)
		o.float(p.Rating)
		o.raw("}")
	})
	o.raw(`,"rating_total":`)
	o.float(t.RatingTotal)
	o.teamTail(t.Name, t.Roles, t.OpenSlots)
	o.raw("}")
}

func (r *resultResponse) appendJSON(b []byte) ([]byte, error) {
	o := &jsonOut{b: b}
	o.raw(`{"match_id":`)
	o.str(r.MatchID)
	o.raw(`,"context":{"game_type":`)
	o.str(r.Context.GameType)
	o.raw(`,"mutators":`)
	o.strs(r.Context.Mutators)
	o.raw(`,"key":`)
	o.str(r.Context.Key)
	o.raw(`},"win_probability":[`)
	o.float(r.WinProbability[0])
	o.raw(",")
	o.float(r.WinProbability[1])
	o.raw(`],"updates":`)
	o.list(r.Updates == nil, len(r.Updates), func(i int) { r.Updates[i].appendJSON(o) })
	o.raw("}")
	return o.b, o.err
}

func (u *ratingUpdate) appendJSON(o *jsonOut) {
	o.raw("{")
	if u.ID != "" {
		o.raw(`"id":`)
		o.str(u.ID)
		o.raw(",")
	}
	if u.Bot != "" {
		o.raw(`"bot":`)
		o.str(u.Bot)
		o.raw(",")
	}
	o.raw(`"team":`)
	o.int(u.Team)
	o.raw(`,"before":`)
	o.float(u.Before)
	o.raw(`,"after":`)
	o.float(u.After)
	o.raw(`,"weight":`)
	o.float(u.Weight)
	o.raw(`,"games":`)
	o.int(u.Games)
	o.optStr(`,"season":`, u.Season)
	o.optStr(`,"tier":`, u.Tier)
	if p := u.Placement; p != nil {
		o.raw(`,"placement":{"played":`)
		o.int(p.Played)
		o.raw(`,"needed":`)
		o.int(p.Needed)
		o.raw("}")
	}
	if u.SuspectedSmurf {
		o.raw(`,"suspected_smurf":true`)
	}
	if u.Promoted {
		o.raw(`,"promoted":true`)
	}
	if u.Demoted {
		o.raw(`,"demoted":true`)
	}
	o.raw("}")
}
