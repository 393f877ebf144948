package ratings

import (
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"github.com/matchmakerhq/matchmaker/internal/apperr"
)

// Model learns ratings from results. Every implementation is a pure function of its
// arguments: the same prior, bias table and result give bit-identical outcomes, so a rebuild
// replays history exactly.
type Model interface {
	// Name is the model's registry name (ModelByName).
	Name() string
	// Apply predicts the result's match from prior (participants absent from it start from
	// the zero Rating) and bias (only read), then learns from its outcome. The Outcome holds
	// the pre-match win probability, every participant's rating before and after, and the
	// bias table's entry for the match; the caller stores them. An invalid result is an
	// apperr.Invalid error naming every fault.
	Apply(prior map[Participant]Rating, bias BiasTable, r Result) (Outcome, error)
	// PriorSigma is the standard deviation of a newcomer's skill, in the units of
	// Rating.Skill: the uncertainty of a rating whose Sigma is 0.
	PriorSigma() float64
}

// DefaultModel is the model a context uses unless it names another: ns2-kalman with its
// defaults (why: the package documentation).
func DefaultModel() Model { return DefaultKalman() }

// ModelSet says which model each rating context learns with: a default, and overrides by game
// type or by context key, the most specific one winning (the context's key, then its game
// type, then the default). A context's ratings are only comparable with what its model
// learnt: after changing a context's model, rebuild its game type (Service.Rebuild). A
// ModelSet is read-only once built, and safe for concurrent use.
type ModelSet struct {
	def    Model
	scoped map[string]Model // by context key or game type
}

// NewModelSet returns the set that gives every context def.
func NewModelSet(def Model) *ModelSet { return &ModelSet{def: def, scoped: map[string]Model{}} }

// Set makes scope learn with m: scope is a game type ("ctf": every context of it that no
// context key names) or a context, written as a game type and its mutators joined by '+'
// ("ctf+instagib+lowgrav", in any order and case: it is canonicalised). It is for building
// the set, before any use.
func (ms *ModelSet) Set(scope string, m Model) error {
	c, err := ParseModelScope(scope)
	if err != nil {
		return err
	}
	ms.scoped[c.Key()] = m
	return nil
}

// ParseModelScope reads a scope of ModelSet.Set: a game type, or a game type and mutators
// joined by '+'.
func ParseModelScope(scope string) (Context, error) {
	parts := strings.Split(scope, "+")
	c, err := NewContext(parts[0], parts[1:])
	if err != nil {
		return Context{}, apperr.New(apperr.Invalid, "scope %q: want a game type, or a game type and mutators joined by '+', each of letters, digits, '_', '.' and '-'", scope)
	}
	return c, nil
}

// For returns the model of context c.
func (ms *ModelSet) For(c Context) Model {
	if m, ok := ms.scoped[c.Key()]; ok {
		return m
	}
	if m, ok := ms.scoped[c.GameType]; ok {
		return m
	}
	return ms.def
}

// Default is the model of the contexts no scope names.
func (ms *ModelSet) Default() Model { return ms.def }

// String lists the set as ParseModelSet reads it: the default first, then the scopes in
// order.
func (ms *ModelSet) String() string {
	if ms == nil {
		return "default=" + DefaultModel().Name()
	}
	keys := make([]string, 0, len(ms.scoped))
	for k := range ms.scoped {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := []string{"default=" + ms.def.Name()}
	for _, k := range keys {
		c, _ := ParseContextKey(k)
		out = append(out, strings.Join(append([]string{c.GameType}, c.Mutators...), "+")+"="+ms.scoped[k].Name())
	}
	return strings.Join(out, ",")
}

// ParseModelSet reads a model set written as comma-separated SCOPE=MODEL entries, SCOPE being
// "default", a game type or a context (game type and mutators joined by '+'), MODEL a name
// ModelByName knows: "default=ns2-kalman,ctf=ns2,ctf+instagib=openskill-pl". Contexts no entry
// names use the default, which is DefaultModel unless the spec says otherwise. An empty spec
// is the DefaultModel for everything. A scope given twice is an error.
func ParseModelSet(spec string) (*ModelSet, error) {
	ms := NewModelSet(DefaultModel())
	seen := map[string]bool{}
	var faults []string
	for i, entry := range strings.Split(spec, ",") {
		entry = strings.TrimSpace(entry)
		if entry == "" {
			continue
		}
		fault := func(format string, args ...any) {
			faults = append(faults, fmt.Sprintf("entry %d (%q): ", i+1, entry)+fmt.Sprintf(format, args...))
		}
		scope, name, ok := strings.Cut(entry, "=")
		scope, name = strings.TrimSpace(scope), strings.TrimSpace(name)
		if !ok || scope == "" || name == "" {
			fault("want SCOPE=MODEL")
			continue
		}
		m, err := ModelByName(name)
		if err != nil {
			fault("unknown model %q (want one of %s)", name, strings.Join(modelNames, ", "))
			continue
		}
		key := "default"
		if scope != "default" {
			c, err := ParseModelScope(scope)
			if err != nil {
				fault("scope %q: want a game type, or a game type and mutators joined by '+', each of letters, digits, '_', '.' and '-'", scope)
				continue
			}
			key = c.Key()
		}
		if seen[key] {
			fault("scope %q is given twice", key)
			continue
		}
		seen[key] = true
		if key == "default" {
			ms.def = m
		} else {
			ms.scoped[key] = m
		}
	}
	if len(faults) > 0 {
		return nil, errors.New(strings.Join(faults, "; ")) // configuration, not a request
	}
	return ms, nil
}

// Replayer is the set's ReplayFunc: every context replayed with its own model, for Rebuild.
func (ms *ModelSet) Replayer() ReplayFunc {
	return func(policy *MutatorPolicy, from map[string]*State, history iter.Seq[Result]) (map[string]*State, error) {
		return replayStream(ms.For, policy, from, history)
	}
}

// modelNames lists the registry in the order ModelNames reports it.
var modelNames = []string{"ns2", "ns2-kalman", "openskill-pl", "openskill-bt", "ns2-mix"}

// ModelByName returns the named model with its default parameters.
func ModelByName(name string) (Model, error) {
	switch name {
	case "ns2":
		return DefaultNS2(), nil
	case "ns2-kalman":
		return DefaultKalman(), nil
	case "openskill-pl":
		return DefaultWengLin(true), nil
	case "openskill-bt":
		return DefaultWengLin(false), nil
	case "ns2-mix":
		return DefaultMixture(), nil
	}
	return nil, apperr.New(apperr.Invalid, "unknown rating model %q (want one of %v)", name, modelNames)
}

// ModelNames lists the names ModelByName knows.
func ModelNames() []string { return slices.Clone(modelNames) }

// Name is "ns2".
func (NS2) Name() string { return "ns2" }

var (
	_ Model = NS2{}
	_ Model = WengLin{}
	_ Model = Kalman{}
	_ Model = Mixture{}
)

// param is a model parameter, for validateParams.
type param struct {
	name     string
	v        float64
	positive bool // must be > 0; otherwise >= 0
}

// validateParams reports every parameter that is not a finite, non-negative number, or is 0
// where it must be positive, as an apperr.Invalid error.
func validateParams(ps ...param) error {
	var f apperr.Fields
	for _, p := range ps {
		switch {
		case !finite(p.v) || p.v < 0:
			f.Add(p.name, "must be a finite, non-negative number")
		case p.positive && p.v == 0:
			f.Add(p.name, "must be positive")
		}
	}
	return f.Err()
}

// prepare is the start of every Apply: the model's parameters (an internal error: the
// service's configuration is wrong) and the result (the caller's error, unless r.checked) are checked, and the
// result's participants listed in the order every sum runs in, appended to buf, with an
// Update each holding its participant, team and prior rating.
func prepare(m interface{ Validate() error }, prior map[Participant]Rating, r *Result, buf []matchEntry) ([]matchEntry, []Update, error) {
	if err := m.Validate(); err != nil {
		return nil, nil, apperr.Wrap(apperr.Internal, err, "invalid rating model parameters")
	}
	if !r.checked {
		if err := r.Validate(); err != nil {
			return nil, nil, err
		}
	}
	order := r.ordered(buf)
	ups := make([]Update, len(order))
	for i, e := range order {
		ups[i] = Update{Participant: e.p, Team: e.team, Before: prior[e.p]}
	}
	return order, ups, nil
}

// PriorSigma is NS2PriorSigma (see ns2Sigma).
func (NS2) PriorSigma() float64 { return NS2PriorSigma }

// PriorSigma is SkillSD.
func (m Kalman) PriorSigma() float64 { return m.SkillSD }

// PriorSigma is the prior's Sigma.
func (m WengLin) PriorSigma() float64 { return m.Sigma }
