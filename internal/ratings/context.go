package ratings

import (
	"fmt"
	"slices"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Context is what a rating is learnt in: a game type plus the set of mutators that change the
// gameplay (the UT2004 seed's "separate sets of weightings per game type per mutator set").
// In a valid Context every name is lower case (game types and mutators are UnrealScript class
// names, which are case-insensitive) and Mutators is sorted and free of duplicates. Build one
// with NewContext or MutatorPolicy.Context.
type Context struct {
	GameType string
	Mutators []string
}

// Key is the canonical string of the context: "tdm" or "tdm+instagib,lowgrav". Names cannot
// contain '+' or ',', so the key is unambiguous and ParseContextKey inverts it.
func (c Context) Key() string {
	if len(c.Mutators) == 0 {
		return c.GameType
	}
	return c.GameType + "+" + strings.Join(c.Mutators, ",")
}

func (c Context) String() string { return c.Key() }

// Equal reports whether two contexts are the same.
func (c Context) Equal(d Context) bool {
	return c.GameType == d.GameType && slices.Equal(c.Mutators, d.Mutators)
}

// NewContext canonicalises a game type and mutators as given, keeping every mutator: lower
// case, sorted, duplicates removed. It is for contexts named explicitly (a stored key, an
// admin's query); results go through MutatorPolicy.Context, which also drops the mutators that
// do not affect gameplay. Errors name the fields "context.game_type" and "context.mutators[i]".
func NewContext(gameType string, mutators []string) (Context, error) {
	var f apperr.Fields
	checkContext(&f, gameType, mutators)
	if err := f.Err(); err != nil {
		return Context{}, err
	}
	return canonical(gameType, mutators, func(string) bool { return true }), nil
}

// ParseContextKey inverts Context.Key.
func ParseContextKey(key string) (Context, error) {
	game, muts, found := strings.Cut(key, "+")
	var list []string
	if found {
		list = strings.Split(muts, ",")
	}
	c, err := NewContext(game, list)
	if err != nil {
		return Context{}, err
	}
	if c.Key() != key {
		return Context{}, apperr.Field("context", "%q is not a canonical context key (want %q)", key, c.Key())
	}
	return c, nil
}

func checkContext(f *apperr.Fields, gameType string, mutators []string) {
	if msg := checkName(gameType); msg != "" {
		f.Add("context.game_type", "%s", msg)
	}
	if len(mutators) > MaxMutators {
		f.Add("context.mutators", "must list at most %d mutators", MaxMutators)
		return
	}
	for i, m := range mutators {
		if msg := checkName(m); msg != "" {
			f.Add(fmt.Sprintf("context.mutators[%d]", i), "%s", msg)
		}
	}
}

// canonical builds the context of valid names, keeping the mutators keep says yes to.
func canonical(gameType string, mutators []string, keep func(string) bool) Context {
	c := Context{GameType: fold(gameType)}
	for _, m := range mutators {
		if m = fold(m); keep(m) {
			c.Mutators = append(c.Mutators, m)
		}
	}
	slices.Sort(c.Mutators)
	c.Mutators = slices.Compact(c.Mutators)
	return c
}

// MutatorStatus says whether a mutator splits rating contexts.
type MutatorStatus int8

const (
	// MutatorUnknown: seen (or never seen) but not classified by an admin. Treated as not
	// affecting gameplay, so a new anti-cheat mutator cannot split everyone's ratings.
	MutatorUnknown MutatorStatus = iota
	// MutatorGameplay: changes the game (instagib, low gravity): contexts split on it.
	MutatorGameplay
	// MutatorNeutral: classified as not affecting gameplay (anti-cheat, stats, voting).
	MutatorNeutral
)

func (s MutatorStatus) String() string {
	switch s {
	case MutatorGameplay:
		return "gameplay"
	case MutatorNeutral:
		return "neutral"
	default:
		return "unknown"
	}
}

// MutatorPolicy is the registry of mutators: which affect gameplay, which do not, and which were
// seen but are not yet classified. The zero value (and a nil *MutatorPolicy) knows no mutator,
// so every context is the bare game type. It is not safe for concurrent mutation: guard Set and
// Observe with the caller's lock; Context and Status only read.
type MutatorPolicy struct {
	status map[string]MutatorStatus // lower-case name -> status
}

// NewMutatorPolicy returns a policy in which the named mutators affect gameplay and the neutral
// ones are known not to. A name in both lists is an error.
func NewMutatorPolicy(gameplay, neutral []string) (*MutatorPolicy, error) {
	p := &MutatorPolicy{}
	for _, n := range gameplay {
		if err := p.Set(n, true); err != nil {
			return nil, err
		}
	}
	for _, n := range neutral {
		if p.Status(n) == MutatorGameplay {
			return nil, apperr.Field("name", "mutator %q is listed both as gameplay and as neutral", n)
		}
		if err := p.Set(n, false); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// Set classifies a mutator (the admin's PUT /v1/mutators/{name}). Errors name the field "name".
func (p *MutatorPolicy) Set(name string, affectsGameplay bool) error {
	if msg := checkName(name); msg != "" {
		return apperr.Field("name", "%s", msg)
	}
	if p.status == nil {
		p.status = make(map[string]MutatorStatus)
	}
	st := MutatorNeutral
	if affectsGameplay {
		st = MutatorGameplay
	}
	p.status[fold(name)] = st
	return nil
}

// Observe records a mutator as seen: a name the policy did not know is added as
// MutatorUnknown, and Observe reports true. Invalid names are ignored.
func (p *MutatorPolicy) Observe(name string) bool {
	if checkName(name) != "" {
		return false
	}
	name = fold(name)
	if _, ok := p.status[name]; ok {
		return false
	}
	if p.status == nil {
		p.status = make(map[string]MutatorStatus)
	}
	p.status[name] = MutatorUnknown
	return true
}

// Status reports how the mutator is classified (case-insensitive).
func (p *MutatorPolicy) Status(name string) MutatorStatus {
	if p == nil {
		return MutatorUnknown
	}
	return p.status[fold(name)]
}

// knows reports whether the registry lists the mutator, classified or only seen.
func (p *MutatorPolicy) knows(name string) bool {
	if p == nil {
		return false
	}
	_, ok := p.status[fold(name)]
	return ok
}

// MutatorInfo is one entry of the registry.
type MutatorInfo struct {
	Name   string
	Status MutatorStatus
}

// Mutators lists the registry sorted by name.
func (p *MutatorPolicy) Mutators() []MutatorInfo {
	if p == nil {
		return nil
	}
	out := make([]MutatorInfo, 0, len(p.status))
	for n, s := range p.status {
		out = append(out, MutatorInfo{n, s})
	}
	slices.SortFunc(out, func(a, b MutatorInfo) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Clone returns an independent copy.
func (p *MutatorPolicy) Clone() *MutatorPolicy {
	c := &MutatorPolicy{}
	if p != nil && p.status != nil {
		c.status = make(map[string]MutatorStatus, len(p.status))
		for k, v := range p.status {
			c.status[k] = v
		}
	}
	return c
}

// Context builds the rating context of a match from its game type and the raw list of mutators
// it ran: only the mutators classified MutatorGameplay are kept. It also returns, sorted and
// de-duplicated in lower case, the mutators the policy has no classification for (never seen,
// or seen and still MutatorUnknown), so the caller can record them for an admin; they do not
// split the context. The policy is not modified. Errors name "context.game_type" and
// "context.mutators[i]".
func (p *MutatorPolicy) Context(gameType string, mutators []string) (Context, []string, error) {
	var f apperr.Fields
	checkContext(&f, gameType, mutators)
	if err := f.Err(); err != nil {
		return Context{}, nil, err
	}
	var unknown []string
	c := canonical(gameType, mutators, func(m string) bool {
		switch p.Status(m) {
		case MutatorGameplay:
			return true
		case MutatorUnknown:
			unknown = append(unknown, m)
		}
		return false
	})
	slices.Sort(unknown)
	return c, slices.Compact(unknown), nil
}
