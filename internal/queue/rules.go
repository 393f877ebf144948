package queue

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// Match rules (DESIGN, "Match rules"): a queue declares the attributes its tickets carry
// and the rules its matches keep; the pass (matchmaker/tick) enforces them. The domain
// types are the pass's own (matchrules.Attribute, matchrules.Rule, matchrules.Value): a rule means one thing
// in the queue and in the pass.

// MaxAttributes bounds the attributes a queue declares.
const MaxAttributes = 32

// WaitingOn says why a searching ticket is still waiting: the rule that stopped the last
// search it anchored on the leader ("interval", "latency" or a rule's name), in words.
type WaitingOn struct {
	Rule   string
	Detail string
}

// Waits says why each ticket a pass left searching waits. The leader keeps it until the next
// pass, and writes the words only for the tickets asked about: the words and a map of every
// waiting ticket, made at each tick, cost the pass a large share of its CPU, all of it
// between a match's time and its commit (docs/performance.md, the soak's sixth session).
type Waits struct {
	ids   []string         // the ticket id of each of waits
	waits []matchpool.Wait // the pass's, in its order
	// shared, instead of waits, is why every one of ids waits: a tick whose matches a match
	// function made, or would have made; beyond, when set, is why ids[split:] wait instead.
	shared, beyond *WaitingOn
	split          int

	indexOnce sync.Once
	index     map[string]int // by ticket id, made at the first Of
}

// Of says why ticket id waits, if the pass left it searching.
func (w *Waits) Of(id string) (WaitingOn, bool) {
	if w == nil {
		return WaitingOn{}, false
	}
	w.indexOnce.Do(func() {
		w.index = make(map[string]int, len(w.ids))
		for k, id := range w.ids {
			w.index[id] = k
		}
	})
	k, ok := w.index[id]
	if !ok {
		return WaitingOn{}, false
	}
	if w.beyond != nil && k >= w.split {
		return *w.beyond, true
	}
	if w.shared != nil {
		return *w.shared, true
	}
	return WaitingOn{Rule: w.waits[k].Rule, Detail: w.waits[k].Detail()}, true
}

// ByRule counts the waiting tickets by the rule that stopped them.
func (w *Waits) ByRule() map[string]int {
	counts := make(map[string]int)
	if w != nil && w.shared != nil {
		counts[w.shared.Rule] = len(w.ids) // beyond's rule is the same
	} else if w != nil {
		for _, x := range w.waits {
			counts[x.Rule]++
		}
	}
	return counts
}

// PassConfig is the pass's configuration of q's matching (team size and shape, strategy,
// expansions, attributes, rules), checked as a PUT of the definition checks those fields,
// with the same faults by the same names. The simulator runs the queue's pass with it, so
// that a queue it plays is one the queue accepts, held to the same limits.
func PassConfig(q Queue) (matchrules.Config, error) {
	var f apperr.Fields
	if q.TeamSize < 1 || q.TeamSize > MaxTeamSize {
		f.Add("team_size", "must be 1..%d", MaxTeamSize)
	}
	q.addShapeFaults(&f)
	if q.Strategy != StrategyRatingWindow && q.Strategy != StrategyGreedyPairs {
		f.Add("strategy", "must be %q or %q", StrategyRatingWindow, StrategyGreedyPairs)
	}
	checkSteps(&f, "expansions.interval", q.Expansions.Interval, math.MaxFloat64, true)
	checkSteps(&f, "expansions.max_latency_ms", q.Expansions.MaxLatencyMS, MaxLatencyMS, false)
	q.addRuleFaults(&f)
	if err := f.Err(); err != nil {
		return matchrules.Config{}, err
	}
	return q.tickConfig(), nil
}

// tickConfig is the queue's configuration of the pass.
func (q *Queue) tickConfig() matchrules.Config {
	return matchrules.Config{TeamSize: q.TeamSize, Strategy: string(q.Strategy),
		Interval: TickSteps(q.Expansions.Interval), MaxLatency: TickSteps(q.Expansions.MaxLatencyMS),
		Attributes: q.Attributes, Rules: q.Rules, Shape: q.shape(), Roles: q.Roles, Avoid: q.Avoid}
}

// addRuleFaults checks the queue's attributes and rules: the pass's rules
// (matchrules.Config.ValidateRules), the names as every name of the API, and the queue's limits.
func (q *Queue) addRuleFaults(f *apperr.Fields) {
	if len(q.Attributes) > MaxAttributes {
		f.Add("attributes", "must declare at most %d attributes", MaxAttributes)
	}
	for _, name := range slices.Sorted(maps.Keys(q.Attributes)) {
		if err := ratings.ValidateName(name); err != nil {
			f.Add("attributes", "attribute %q: %s", name, err)
		}
	}
	f.Include(q.tickConfig().ValidateRules())
	f.Include(q.Avoid.Validate())
	for i, r := range q.Rules {
		if err := ratings.ValidateName(r.Name); r.Name != "" && err != nil {
			f.Add("rules["+strconv.Itoa(i)+"].name", "%s", err)
		}
		if r.Name == WaitMatchFunction {
			f.Add("rules["+strconv.Itoa(i)+"].name", "must not be %q: it names the match function in waiting_on", WaitMatchFunction)
		}
		if r.Name == matchrules.WaitAvoid {
			f.Add("rules["+strconv.Itoa(i)+"].name", "must not be %q: it names the avoid lists in waiting_on", matchrules.WaitAvoid)
		}
		if len(r.Expansions) > MaxExpansionStep {
			f.Add("rules["+strconv.Itoa(i)+"].expansions", "must have at most %d steps", MaxExpansionStep)
		}
	}
}

// appendAttributes appends a ticket's attributes to a fingerprint: by name, each value
// with its type.
func appendAttributes(b []byte, attrs map[string]matchrules.Value) []byte {
	str := func(s string) { b = binary.AppendUvarint(b, uint64(len(s))); b = append(b, s...) }
	b = binary.AppendUvarint(b, uint64(len(attrs)))
	for _, name := range slices.SortedFunc(maps.Keys(attrs), cmp.Compare) {
		v := attrs[name]
		str(name)
		str(v.Type)
		switch v.Type {
		case matchrules.TypeString:
			str(v.Str)
		case matchrules.TypeNumber:
			b = binary.BigEndian.AppendUint64(b, math.Float64bits(v.Num))
		default:
			b = binary.AppendUvarint(b, uint64(len(v.List)))
			for _, s := range v.List {
				str(s)
			}
		}
	}
	return b
}

// SharedWaits says every one of ids waits for why: a tick whose matches a match function made,
// or would have made.
func SharedWaits(ids []string, why WaitingOn) *Waits { return &Waits{ids: ids, shared: &why} }

// BeyondPool says of the tickets w lists that were not in the pool sent (max_pool held the
// older ones) that they wait for it, rather than on what the function did with the pool.
func (w *Waits) BeyondPool(pool []Ticket, maxPool int) {
	sent := make(map[string]bool, len(pool))
	for i := range pool {
		sent[pool[i].ID] = true
	}
	in, out := make([]string, 0, len(w.ids)), []string(nil)
	for _, id := range w.ids {
		if sent[id] {
			in = append(in, id)
		} else {
			out = append(out, id)
		}
	}
	w.ids, w.split = append(in, out...), len(in)
	w.beyond = &WaitingOn{Rule: WaitMatchFunction, Detail: fmt.Sprintf("not in the pool sent to the match function (max_pool %d: the older tickets go first)", maxPool)}
}
