package check

import (
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/internal/scratch"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Checker finds what Attributes finds, for a pass that checks many tickets: it looks the
// declared attributes up by name, and walks a ticket's map only when it holds some other,
// where Attributes walks every map and looks each attribute up twice. It keeps what it read
// of the last ticket checked, for the pass to read rather than look up again.
type Checker struct {
	cfg      *matchrules.Config
	declared []string               // sorted
	decls    []matchrules.Attribute // their declarations: a ticket's check looks none up by name
	// requiredBy[j]: the rules that read declared[j], which has no default
	requiredBy [][]string
	// partyFits's answers by a party's role lists (partyKey: scratch): a large pass checks
	// thousands of parties, whose lists repeat
	partyFit map[string]bool
	partyKey []byte
	// Values are the last ticket's value of each declared attribute (by DeclaredIndex), and
	// Given whether it gave one (else the declaration's default holds).
	Values []matchrules.Value
	Given  []bool
	// RoleLists are its players' role lists (none: the ticket lists no roles).
	RoleLists []matchrules.RoleList
}

// listsBuf is room for a ticket's n role lists: k's (the last ticket's lists, kept for the
// pass to read) or, without k, a new array.
func (k *Checker) listsBuf(n int) []matchrules.RoleList {
	if k == nil {
		return make([]matchrules.RoleList, n)
	}
	k.RoleLists = scratch.Resize(k.RoleLists, n)
	return k.RoleLists
}

// DeclaredIndex is name's index among the declared attributes (Values, Given), -1: undeclared.
func (k *Checker) DeclaredIndex(name string) int {
	if j, ok := slices.BinarySearch(k.declared, name); ok {
		return j
	}
	return -1
}

// partyFits is c.PartyListsFit(lists), from the answers kept when k is not nil.
func (k *Checker) partyFits(c *matchrules.Config, lists []matchrules.RoleList) bool {
	if k == nil {
		return c.PartyListsFit(lists)
	}
	key := k.partyKey[:0]
	for i := range lists { // each list prefixed by its length: one key per party
		key = append(key, uint8(lists[i].Len()))
		key = append(key, lists[i].Roles()...)
	}
	k.partyKey = key
	if ok, found := k.partyFit[string(key)]; found {
		return ok
	}
	ok := c.PartyListsFit(lists)
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

// NewChecker is a checker of tickets for the queue of c.
func NewChecker(c *matchrules.Config) *Checker {
	k := &Checker{cfg: c}
	for name := range c.Attributes {
		k.declared = append(k.declared, name)
	}
	slices.Sort(k.declared)
	for _, name := range k.declared {
		k.decls = append(k.decls, c.Attributes[name])
	}
	k.requiredBy = make([][]string, len(k.declared))
	k.Values, k.Given = make([]matchrules.Value, len(k.declared)), make([]bool, len(k.declared))
	for _, r := range c.Rules {
		if j, ok := slices.BinarySearch(k.declared, r.Attribute); ok && r.ReadsAttribute() && c.Attributes[r.Attribute].Default == nil {
			k.requiredBy[j] = append(k.requiredBy[j], r.Name)
		}
	}
	return k
}

func (k *Checker) addFaults(f *apperr.Fields, t *matchpool.Ticket, ticket int) {
	if len(t.Attributes) == 0 && len(k.cfg.Rules) == 0 {
		return
	}
	at := func(field string) string { return matchpool.TicketField(ticket, field) }
	found := 0
	for j, name := range k.declared {
		v, ok := t.Attributes[name]
		k.Values[j], k.Given[j] = v, ok
		switch {
		case ok:
			found++
			matchrules.AddValueFaults(f, func() string { return at("attributes." + name) }, v, k.decls[j])
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
