package sim

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/ratings"
)

// AttributeDist declares an attribute the scenario's tickets carry, as a queue's
// attributes declare it, and how a ticket draws its value: one value for the whole party.
//
//   - "string": one of Values, by Weights (empty: uniform);
//   - "string_list": Choose distinct Values, drawn one after another by Weights among those
//     not yet chosen (empty: uniform), listed in the order drawn;
//   - "number": Normal or Uniform (exactly one).
type AttributeDist struct {
	Type    string       `json:"type"`
	Values  []string     `json:"values,omitempty"`
	Weights []float64    `json:"weights,omitempty"`
	Choose  int          `json:"choose,omitzero"`
	Normal  *NormalDist  `json:"normal,omitempty"`
	Uniform *UniformDist `json:"uniform,omitempty"`
}

// NormalDist is a normal distribution of a number attribute.
type NormalDist struct {
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
}

// UniformDist is a uniform distribution of a number attribute on [Min, Max].
type UniformDist struct {
	Min float64 `json:"min"`
	Max float64 `json:"max"`
}

// attrMagnitude bounds a number attribute's parameters well inside what a queue takes
// (matchrules.MaxMagnitude), so that a draw is a valid value.
const attrMagnitude = 1e9

func (d AttributeDist) validate(name string) error {
	at := "attributes." + name
	if err := ratings.ValidateName(name); err != nil {
		return fmt.Errorf("attributes: attribute %q: %w", name, err)
	}
	if name == matchrules.RatingAttribute {
		return fmt.Errorf("%s: the name is reserved: a distance rule reads the tickets' ratings by it", at)
	}
	switch d.Type {
	case matchrules.TypeString:
		if d.Choose != 0 {
			return fmt.Errorf("%s.choose is for a string_list attribute", at)
		}
		if err := d.validateNoNumber(at); err != nil {
			return err
		}
		return d.validateValues(at)
	case matchrules.TypeStringList:
		if err := d.validateNoNumber(at); err != nil {
			return err
		}
		if err := d.validateValues(at); err != nil {
			return err
		}
		if d.Choose < 1 || d.Choose > len(d.Values) {
			return fmt.Errorf("%s.choose must be between 1 and the %d values", at, len(d.Values))
		}
		return nil
	case matchrules.TypeNumber:
		return d.validateNumber(at)
	}
	return fmt.Errorf("%s.type must be %q, %q or %q, got %q", at, matchrules.TypeString, matchrules.TypeNumber, matchrules.TypeStringList, d.Type)
}

// validateValues checks the values of a string or string_list attribute (1 to
// matchrules.MaxListItems, distinct, none empty) and their weights, if given: one per value, and
// enough of them positive for a ticket to draw its Choose values.
func (d AttributeDist) validateValues(at string) error {
	if len(d.Values) == 0 || len(d.Values) > matchrules.MaxListItems {
		return fmt.Errorf("%s.values must list 1 to %d values", at, matchrules.MaxListItems)
	}
	for i, v := range d.Values {
		if v == "" {
			return fmt.Errorf("%s.values[%d] must not be empty", at, i)
		}
		if slices.Contains(d.Values[:i], v) {
			return fmt.Errorf("%s.values[%d]: %q is listed twice", at, i, v)
		}
	}
	if len(d.Weights) == 0 {
		return nil
	}
	if len(d.Weights) != len(d.Values) {
		return fmt.Errorf("%s.weights must give one weight per value (%d), got %d", at, len(d.Values), len(d.Weights))
	}
	positive := 0
	for i, w := range d.Weights {
		if !(w >= 0 && w <= 1e9) {
			return fmt.Errorf("%s.weights[%d] must be a weight between 0 and 1e9", at, i)
		}
		if w > 0 {
			positive++
		}
	}
	if positive < max(d.Choose, 1) {
		return fmt.Errorf("%s.weights must give at least %d values a positive weight", at, max(d.Choose, 1))
	}
	return nil
}

func (d AttributeDist) validateNoNumber(at string) error {
	if d.Normal != nil || d.Uniform != nil {
		return fmt.Errorf("%s: normal and uniform are for a number attribute", at)
	}
	return nil
}

// validateNumber checks a number attribute: no values, exactly one distribution, its
// parameters within attrMagnitude.
func (d AttributeDist) validateNumber(at string) error {
	if len(d.Values) > 0 || len(d.Weights) > 0 || d.Choose != 0 {
		return fmt.Errorf("%s: values, weights and choose are for string and string_list attributes", at)
	}
	switch {
	case (d.Normal == nil) == (d.Uniform == nil):
		return fmt.Errorf("%s: a number attribute needs normal or uniform (one of them)", at)
	case d.Normal != nil && !(math.Abs(d.Normal.Mean) <= attrMagnitude && d.Normal.SD >= 0 && d.Normal.SD <= attrMagnitude):
		return fmt.Errorf("%s.normal needs a mean within +-%g and an sd in [0, %g]", at, attrMagnitude, attrMagnitude)
	case d.Uniform != nil && !(-attrMagnitude <= d.Uniform.Min && d.Uniform.Min <= d.Uniform.Max && d.Uniform.Max <= attrMagnitude):
		return fmt.Errorf("%s.uniform needs min <= max, both within +-%g", at, attrMagnitude)
	}
	return nil
}

// decl is the attribute as a queue declares it: a list holds at most its Choose values.
func (d AttributeDist) decl() matchrules.Attribute {
	a := matchrules.Attribute{Type: d.Type}
	if d.Type == matchrules.TypeStringList {
		a.MaxItems = d.Choose
	}
	return a
}

// draw draws a ticket's value.
func (d AttributeDist) draw(rng *rand.Rand) matchrules.Value {
	switch d.Type {
	case matchrules.TypeString:
		return matchrules.StringValue(d.Values[d.pick(rng, nil)])
	case matchrules.TypeStringList:
		taken := make([]bool, len(d.Values))
		list := make([]string, d.Choose)
		for i := range list {
			k := d.pick(rng, taken)
			taken[k], list[i] = true, d.Values[k]
		}
		return matchrules.ListValue(list...)
	}
	if d.Normal != nil {
		return matchrules.NumberValue(d.Normal.Mean + d.Normal.SD*rng.NormFloat64())
	}
	return matchrules.NumberValue(d.Uniform.Min + (d.Uniform.Max-d.Uniform.Min)*rng.Float64())
}

// pick draws the index of a value not taken, by the weights (uniform without).
func (d AttributeDist) pick(rng *rand.Rand, taken []bool) int {
	weight := func(i int) float64 {
		if taken != nil && taken[i] {
			return 0
		}
		if len(d.Weights) == 0 {
			return 1
		}
		return d.Weights[i]
	}
	return drawIndex(rng, len(d.Values), weight)
}

// drawIndex draws one of 0..n-1 by weight (one draw of rng); some weight must be positive.
func drawIndex(rng *rand.Rand, n int, weight func(i int) float64) int {
	sum := 0.0
	for i := range n {
		sum += weight(i)
	}
	u := rng.Float64() * sum
	last := -1
	for i := range n {
		w := weight(i)
		if w <= 0 {
			continue
		}
		if last = i; u < w {
			return i
		}
		u -= w
	}
	return last // rounding left u at the top: the last index with a weight
}

// attributeDecls is the scenario's attributes as a queue declares them; nil without any.
func (sc *Scenario) attributeDecls() map[string]matchrules.Attribute {
	if len(sc.Attributes) == 0 {
		return nil
	}
	out := make(map[string]matchrules.Attribute, len(sc.Attributes))
	for name, d := range sc.Attributes {
		out[name] = d.decl()
	}
	return out
}

// attributeDrawer draws every attribute of a ticket, in the order of their names (a map's
// order is random; the draws must not be).
type attributeDrawer struct {
	names []string
	dists []AttributeDist
	rng   *rand.Rand
}

func newAttributeDrawer(attrs map[string]AttributeDist, rng *rand.Rand) *attributeDrawer {
	if len(attrs) == 0 {
		return nil
	}
	a := &attributeDrawer{rng: rng}
	for _, name := range slices.Sorted(maps.Keys(attrs)) {
		a.names, a.dists = append(a.names, name), append(a.dists, attrs[name])
	}
	return a
}

// draw returns a ticket's values; nil for a nil drawer (no attributes).
func (a *attributeDrawer) draw() map[string]matchrules.Value {
	if a == nil {
		return nil
	}
	out := make(map[string]matchrules.Value, len(a.names))
	for i, name := range a.names {
		out[name] = a.dists[i].draw(a.rng)
	}
	return out
}
