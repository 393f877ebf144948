package tick

import (
	"cmp"
	"math"
	"slices"
	"strconv"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// The types of an attribute's values.
const (
	TypeString     = "string"
	TypeNumber     = "number"
	TypeStringList = "string_list"
)

// The kinds of a Rule.
const (
	// RuleEqual: the tickets the rule binds have one value of Attribute (a string or a
	// number) across the match.
	RuleEqual = "equal"
	// RuleIntersect: the lists of Attribute (a string_list) of the tickets the rule binds
	// share at least MinCommon values.
	RuleIntersect = "intersect"
	// RuleDistance: the largest minus the smallest value of Attribute (a number) of the
	// tickets the rule binds is at most their tolerance.
	RuleDistance = "distance"
	// RuleTeamBalance: the teams' average ratings differ by at most the tolerance of the
	// tickets the rule binds.
	RuleTeamBalance = "team_balance"
	// RulePartyMix: the largest party on each team differs by at most MaxDifference
	// players between the teams (premades meet premades), while the rule binds some
	// ticket of the match.
	RulePartyMix = "party_mix"
)

// RatingAttribute is the reserved attribute a distance rule may read without a declaration:
// a ticket's rating (a party's mean), so that the rule bounds the spread of the whole
// match's ratings (FlexMatch's batchDistance), where the interval is anchor-centred.
const RatingAttribute = "rating"

// The names "why a ticket waits" gives the built-in rules: the rating interval
// (Config.Interval) and latency (Config.MaxLatency). A Rule may not take them.
const (
	WaitInterval = "interval"
	WaitLatency  = "latency"
)

// Limits of attributes.
const (
	// MaxListItems bounds a string_list value: the search handles a ticket's list as a bit
	// set of one word.
	MaxListItems = 64
	// MaxRules bounds a queue's rules.
	MaxRules = 16
	// MaxClasses bounds the classes an anchor is searched in (see Run): the search keeps
	// one set of head counts per class and a candidate's classes are a bit set of one word.
	MaxClasses = 64
)

// Attribute declares an attribute tickets carry.
type Attribute struct {
	Type string // TypeString, TypeNumber or TypeStringList
	// MaxItems bounds a string_list (1..MaxListItems); 0 means MaxListItems.
	MaxItems int
	// Default is the value of a ticket that does not give one; nil: a ticket must give it
	// when a rule reads it.
	Default *Value
}

// Value is an attribute's value on a ticket: Str, Num or List by Type.
type Value struct {
	Type string
	Str  string
	Num  float64
	List []string
}

// StringValue, NumberValue and ListValue make a Value of each type.
func StringValue(s string) Value   { return Value{Type: TypeString, Str: s} }
func NumberValue(x float64) Value  { return Value{Type: TypeNumber, Num: x} }
func ListValue(xs ...string) Value { return Value{Type: TypeStringList, List: xs} }
func (a Attribute) maxItems() int  { return cmp.Or(a.MaxItems, MaxListItems) }
func (r Rule) minCommon() int      { return cmp.Or(r.MinCommon, 1) }
func (r Rule) hasTolerance() bool  { return r.Kind == RuleDistance || r.Kind == RuleTeamBalance }
func (r Rule) readsAttribute() bool {
	return r.Kind != RuleTeamBalance && r.Kind != RulePartyMix && !r.readsRating()
}
func (r Rule) judgedOnMatch() bool { return r.hasTolerance() || r.Kind == RulePartyMix }
func (r Rule) readsRating() bool   { return r.Kind == RuleDistance && r.Attribute == RatingAttribute }
func (r Rule) classified() bool    { return r.Kind == RuleEqual || r.Kind == RuleIntersect }
func (r Rule) bindsAt(wait float64) bool {
	return r.OptionalAfterS == nil || wait < *r.OptionalAfterS
}

// Rule is one of a queue's match rules (DESIGN, "Match rules"). A rule binds a ticket
// until the ticket has waited OptionalAfterS; a match satisfies the rule when the tickets
// of the match it still binds satisfy it together. A tolerance (Expansions, by wait as the
// interval's) is the smallest current value among those tickets.
type Rule struct {
	Name      string // unique in the queue; what "why a ticket waits" calls it
	Kind      string // RuleEqual, RuleIntersect, RuleDistance or RuleTeamBalance
	Attribute string // the declared attribute it reads (not for team_balance)
	MinCommon int    // intersect: the values the lists share at least; 0 means 1
	// Expansions is the tolerance by wait (distance, team_balance): the first step at 0,
	// after_s increasing, values never decreasing.
	Expansions []Step
	// OptionalAfterS, when set (> 0), is the wait from which the rule no longer binds a
	// ticket.
	OptionalAfterS *float64
	// MaxDifference (party_mix) is how many players the largest parties of two teams may
	// differ by: 0, premades only against premades of their size.
	MaxDifference int
}

func (c Config) addRuleFaults(f *apperr.Fields) {
	for name, a := range c.Attributes {
		at := "attributes." + name
		switch name {
		case "":
			f.Add("attributes", "must not have an empty name")
		case RatingAttribute:
			f.Add(at, "is reserved: a distance rule reads the tickets' ratings by that name")
		}
		switch a.Type {
		case TypeString, TypeNumber, TypeStringList:
		default:
			f.Add(at+".type", "must be %q, %q or %q", TypeString, TypeNumber, TypeStringList)
			continue
		}
		if a.MaxItems < 0 || a.MaxItems > MaxListItems || a.MaxItems != 0 && a.Type != TypeStringList {
			f.Add(at+".max_items", "must be between 1 and %d, for a string_list only", MaxListItems)
		}
		if a.Default != nil {
			addValueFaults(f, func() string { return at + ".default" }, *a.Default, a)
		}
	}
	if len(c.Rules) > MaxRules {
		f.Add("rules", "must hold at most %d rules", MaxRules)
	}
	names := make(map[string]bool, len(c.Rules))
	for i, r := range c.Rules {
		at := func(field string) string { return "rules[" + strconv.Itoa(i) + "]." + field }
		switch {
		case r.Name == "":
			f.Add(at("name"), "must not be empty")
		case r.Name == WaitInterval || r.Name == WaitLatency || r.Name == WaitTeams:
			f.Add(at("name"), "must not be %q, %q or %q: they name the built-in rules", WaitInterval, WaitLatency, WaitTeams)
		case names[r.Name]:
			f.Add(at("name"), "must be unique in the queue: %q is taken", r.Name)
		}
		names[r.Name] = true
		var want []string // the attribute types the kind reads
		switch r.Kind {
		case RuleEqual:
			want = []string{TypeString, TypeNumber}
		case RuleIntersect:
			want = []string{TypeStringList}
		case RuleDistance:
			want = []string{TypeNumber}
		case RuleTeamBalance, RulePartyMix:
		default:
			f.Add(at("type"), "must be %q, %q, %q, %q or %q", RuleEqual, RuleIntersect, RuleDistance, RuleTeamBalance, RulePartyMix)
			continue
		}
		if r.MaxDifference != 0 && (r.Kind != RulePartyMix || r.MaxDifference < 0 || r.MaxDifference > MaxTeamSize) {
			f.Add(at("max_difference"), "must be between 0 and %d, for a party_mix rule only", MaxTeamSize)
		}
		if r.readsRating() {
			// the reserved attribute: every ticket has a rating
		} else if r.readsAttribute() {
			a, ok := c.Attributes[r.Attribute]
			switch {
			case r.Attribute == "":
				f.Add(at("attribute"), "must name the attribute the rule reads")
			case !ok:
				f.Add(at("attribute"), "must be a declared attribute: %q is not", r.Attribute)
			case a.Type != want[0] && (len(want) < 2 || a.Type != want[1]):
				f.Add(at("attribute"), "must be an attribute of type %v for a rule of type %s: %q is a %s",
					want, r.Kind, r.Attribute, a.Type)
			}
		} else if r.Attribute != "" {
			f.Add(at("attribute"), "must be empty for a rule of type %s", r.Kind)
		}
		if r.MinCommon != 0 && (r.Kind != RuleIntersect || r.MinCommon < 1 || r.MinCommon > MaxListItems) {
			f.Add(at("min_common"), "must be between 1 and %d, for an intersect rule only", MaxListItems)
		}
		switch {
		case r.hasTolerance() && len(r.Expansions) == 0:
			f.Add(at("expansions"), "must have at least one step, the first at after_s 0")
		case !r.hasTolerance() && len(r.Expansions) > 0:
			f.Add(at("expansions"), "must be empty for a rule of type %s: it has no tolerance", r.Kind)
		}
		addStepFaults(f, at("expansions"), r.Expansions)
		if o := r.OptionalAfterS; o != nil && !(*o > 0 && *o <= MaxMagnitude) {
			f.Add(at("optional_after_s"), "must be a number greater than 0 and at most %g", MaxMagnitude)
		}
	}
}

// addValueFaults checks a value against its declaration. The field's name is built only
// for a fault: a pass checks every ticket's values.
func addValueFaults(f *apperr.Fields, field func() string, v Value, a Attribute) {
	if v.Type != a.Type {
		f.Add(field(), "must be a %s", a.Type)
		return
	}
	switch v.Type {
	case TypeNumber:
		if !(math.Abs(v.Num) <= MaxMagnitude) {
			f.Add(field(), "must be a finite number between %g and %g", -MaxMagnitude, MaxMagnitude)
		}
	case TypeStringList:
		if len(v.List) > a.maxItems() {
			f.Add(field(), "must hold at most %d values", a.maxItems())
		}
		for j, s := range v.List {
			if s == "" {
				f.Add(field()+"["+strconv.Itoa(j)+"]", "must not be empty")
			}
			for _, x := range v.List[:j] {
				if x == s {
					f.Add(field()+"["+strconv.Itoa(j)+"]", "must not repeat a value: %q is listed before", s)
					break
				}
			}
		}
	}
}

// addAttributeFaults checks a ticket's attributes against the queue's declarations: each
// declared, of its type, a list within max_items, and every attribute a rule reads given
// unless it has a default. at names a ticket's field.
func (c Config) addAttributeFaults(f *apperr.Fields, t *Ticket, at func(string) string) {
	for name, v := range t.Attributes {
		a, ok := c.Attributes[name]
		if !ok {
			f.Add(at("attributes."+name), "is not an attribute the queue declares")
			continue
		}
		addValueFaults(f, func() string { return at("attributes." + name) }, v, a)
	}
	if t.Backfill != nil {
		return // a backfill ticket is the running match's: the rules judge its joiners
	}
	for _, r := range c.Rules {
		if !r.readsAttribute() {
			continue
		}
		if _, ok := t.Attributes[r.Attribute]; !ok {
			if a, ok := c.Attributes[r.Attribute]; ok && a.Default == nil {
				f.Add(at("attributes."+r.Attribute), "is required: rule %q reads it and it has no default", r.Name)
			}
		}
	}
}

// ValidateTicket reports every invalid field of a ticket for the queue of c as one
// apperr.Invalid error: those Ticket.Validate names, and attributes.<name> (undeclared, of
// the wrong type, too many values, missing where a rule reads it without a default).
func (c Config) ValidateTicket(t Ticket) error {
	var f apperr.Fields
	c.addTicketFaults(&f, &t, -1)
	return f.Err()
}

// addTicketFaults names the fields as Ticket.addFaults does.
func (c *Config) addTicketFaults(f *apperr.Fields, t *Ticket, ticket int) {
	c.addTicketFaultsWith(f, t, ticket, nil)
}

// addTicketFaultsWith is addTicketFaults checking the attributes with k (a pass's), or
// without one as addAttributeFaultsOf does.
func (c *Config) addTicketFaultsWith(f *apperr.Fields, t *Ticket, ticket int, k *attributeChecker) {
	t.addFaults(f, ticket, min(max(c.largestTeam(), 1), MaxTeamSize))
	if k != nil {
		k.roleLists = k.roleLists[:0]
		k.addFaults(f, t, ticket)
	} else {
		c.addAttributeFaultsOf(f, t, ticket)
	}
	if len(t.Roles) == 0 && t.Backfill == nil {
		return
	}
	at := func(field string) string {
		if ticket < 0 {
			return field
		}
		return "tickets[" + strconv.Itoa(ticket) + "]." + field
	}
	c.addRoleFaults(f, t, at, k)
	if c.shaped() && t.Backfill != nil {
		f.Add(at("backfill"), "is for two-team queues: a queue with a team shape takes no backfill tickets")
	}
}

// addAttributeFaultsOf checks the attributes of a ticket, or with ticket >= 0 of Run's
// tickets[ticket].
func (c *Config) addAttributeFaultsOf(f *apperr.Fields, t *Ticket, ticket int) {
	if len(t.Attributes) == 0 && len(c.Rules) == 0 {
		return
	}
	c.addAttributeFaults(f, t, func(field string) string {
		if ticket < 0 {
			return field
		}
		return "tickets[" + strconv.Itoa(ticket) + "]." + field
	})
}

// attributeChecker finds what addAttributeFaultsOf finds, for a pass that checks many
// tickets: it looks the declared attributes up by name, and walks a ticket's map only when
// it holds some other, where addAttributeFaults walks every map and looks each attribute
// up twice.
type attributeChecker struct {
	cfg      *Config
	declared []string    // sorted
	decls    []Attribute // their declarations: a ticket's check looks none up by name
	// requiredBy[j]: the rules that read declared[j], which has no default
	requiredBy [][]string
	// partyFits's answers by a party's role lists (partyKey: scratch): a pass of 100,000
	// tickets checks some 20,000 parties, whose lists repeat
	partyFit map[string]bool
	partyKey []byte
	// the last ticket checked: its value of each declared attribute, and whether it gave
	// one (else the declaration's default holds), for a pass that reads the values it
	// checked rather than look them up again
	vals []Value
	has  []bool
	// and its players' role lists (none: the ticket lists no roles)
	roleLists []roleList
}

// listsBuf is room for a ticket's n role lists: k's (the last ticket's lists, kept for the
// pass to read) or, without k, a new array.
func (k *attributeChecker) listsBuf(n int) []roleList {
	if k == nil {
		return make([]roleList, n)
	}
	k.roleLists = resize(k.roleLists, n)
	return k.roleLists
}

// declaredIndex is name's index among the declared attributes (vals, has), -1: undeclared.
func (k *attributeChecker) declaredIndex(name string) int {
	if j, ok := slices.BinarySearch(k.declared, name); ok {
		return j
	}
	return -1
}

// partyFits is c.partyListsFit(lists), from the answers kept when k is not nil.
func (k *attributeChecker) partyFits(c *Config, lists []roleList) bool {
	if k == nil {
		return c.partyListsFit(lists)
	}
	key := k.partyKey[:0]
	for i := range lists { // each list prefixed by its length: one key per party
		key = append(key, lists[i].n)
		key = append(key, lists[i].list()...)
	}
	k.partyKey = key
	if ok, found := k.partyFit[string(key)]; found {
		return ok
	}
	ok := c.partyListsFit(lists)
	if k.partyFit == nil {
		k.partyFit = map[string]bool{}
	}
	if len(k.partyFit) < maxPartyFits {
		k.partyFit[string(key)] = ok
	}
	return ok
}

// maxPartyFits bounds the answers a pass keeps.
const maxPartyFits = 1 << 14

func (c *Config) newAttributeChecker() *attributeChecker {
	k := &attributeChecker{cfg: c}
	for name := range c.Attributes {
		k.declared = append(k.declared, name)
	}
	slices.Sort(k.declared)
	for _, name := range k.declared {
		k.decls = append(k.decls, c.Attributes[name])
	}
	k.requiredBy = make([][]string, len(k.declared))
	k.vals, k.has = make([]Value, len(k.declared)), make([]bool, len(k.declared))
	for _, r := range c.Rules {
		if j, ok := slices.BinarySearch(k.declared, r.Attribute); ok && r.readsAttribute() && c.Attributes[r.Attribute].Default == nil {
			k.requiredBy[j] = append(k.requiredBy[j], r.Name)
		}
	}
	return k
}

func (k *attributeChecker) addFaults(f *apperr.Fields, t *Ticket, ticket int) {
	if len(t.Attributes) == 0 && len(k.cfg.Rules) == 0 {
		return
	}
	at := func(field string) string { return "tickets[" + strconv.Itoa(ticket) + "]." + field }
	found := 0
	for j, name := range k.declared {
		v, ok := t.Attributes[name]
		k.vals[j], k.has[j] = v, ok
		switch {
		case ok:
			found++
			addValueFaults(f, func() string { return at("attributes." + name) }, v, k.decls[j])
		case t.Backfill == nil:
			for _, rule := range k.requiredBy[j] {
				f.Add(at("attributes."+name), "is required: rule %q reads it and it has no default", rule)
			}
		}
	}
	if found == len(t.Attributes) {
		return
	}
	for name := range t.Attributes {
		if _, ok := slices.BinarySearch(k.declared, name); !ok {
			f.Add(at("attributes."+name), "is not an attribute the queue declares")
		}
	}
}

// ValidateRules reports the faults of c's attributes and rules alone (attributes.<name>.*,
// rules[i].*), for a service that checks the rest of its definition itself.
func (c Config) ValidateRules() error {
	var f apperr.Fields
	c.addRuleFaults(&f)
	return f.Err()
}

// ValidateAttributes reports the faults of a ticket's attributes against c's declarations
// and rules (attributes.<name>), as Run would; with backfill, of a backfill ticket's (whose
// attributes are all optional).
func (c Config) ValidateAttributes(attrs map[string]Value, backfill bool) error {
	var f apperr.Fields
	t := &Ticket{Attributes: attrs}
	if backfill {
		t.Backfill = &Backfill{}
	}
	c.addAttributeFaults(&f, t, func(field string) string { return field })
	return f.Err()
}
