package ratings

import (
	"slices"

	"matchmaker/internal/apperr"
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
}

// DefaultModel is the model a context uses unless it names another: NS2 with its defaults.
func DefaultModel() Model { return DefaultNS2() }

// modelNames lists the registry in the order ModelNames reports it.
var modelNames = []string{"ns2", "ns2-kalman", "openskill-pl", "openskill-bt"}

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
// service's configuration is wrong) and the result (the caller's error) are checked, and the
// result's participants listed in the order every sum runs in, appended to buf, with an
// Update each holding its participant, team and prior rating.
func prepare(m interface{ Validate() error }, prior map[Participant]Rating, r *Result, buf []matchEntry) ([]matchEntry, []Update, error) {
	if err := m.Validate(); err != nil {
		return nil, nil, apperr.Wrap(apperr.Internal, err, "invalid rating model parameters")
	}
	if err := r.Validate(); err != nil {
		return nil, nil, err
	}
	order := r.ordered(buf)
	ups := make([]Update, len(order))
	for i, e := range order {
		ups[i] = Update{Participant: e.p, Team: e.team, Before: prior[e.p]}
	}
	return order, ups, nil
}
