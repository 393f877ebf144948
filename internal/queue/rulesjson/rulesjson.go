// Package rulesjson is a queue's match rules in JSON, as a queue definition writes them
// (docs/rules.md): the attributes tickets carry, the rules and their expansion steps, an
// attribute's value, and the team shape (team definitions, role compositions). It holds the
// one mapping between that JSON and the match rules' types (package tick/matchrules), both
// ways, for the API, the queue store's JSON columns and the simulator's scenarios; each
// decodes with its own decoder (the API strictly) and maps here.
package rulesjson

import (
	"bytes"
	"encoding/json"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// Step is one step of an expansion: from AfterS seconds of waiting on, the value is Value.
type Step struct {
	AfterS float64 `json:"after_s"`
	Value  float64 `json:"value"`
}

// Rule is one of a queue's match rules, as a queue definition's rules[i].
type Rule struct {
	Name           string   `json:"name"`
	Type           string   `json:"type"`
	Attribute      string   `json:"attribute,omitempty"`
	MinCommon      int      `json:"min_common,omitempty"`
	Expansions     []Step   `json:"expansions,omitempty"`
	OptionalAfterS *float64 `json:"optional_after_s,omitempty"`
	MaxDifference  int      `json:"max_difference,omitempty"`
}

// AttributeDecl declares an attribute tickets carry: its type, a list's longest length and
// the value of a ticket that gives none.
type AttributeDecl struct {
	Type     string `json:"type"`
	MaxItems int    `json:"max_items,omitempty"`
	Default  *Value `json:"default,omitempty"`
}

// Value is an attribute's value: a string, a number or a list of strings, its type its JSON's.
type Value struct{ matchrules.Value }

// UnmarshalJSONFrom implements json (v2)'s UnmarshalerFrom.
func (v *Value) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"':
		v.Value = matchrules.StringValue(tok.String())
		return nil
	case '0':
		x, err := tok.Float()
		if err != nil {
			return &jsonv2.SemanticError{JSONKind: '0', Err: err}
		}
		v.Value = matchrules.NumberValue(x)
		return nil
	case '[':
		list := []string{}
		for dec.PeekKind() != ']' {
			tok, err := dec.ReadToken()
			if err != nil {
				return err
			}
			if tok.Kind() != '"' {
				return &jsonv2.SemanticError{JSONKind: tok.Kind()}
			}
			list = append(list, tok.String())
		}
		if _, err := dec.ReadToken(); err != nil {
			return err
		}
		v.Value = matchrules.ListValue(list...)
		return nil
	}
	return &jsonv2.SemanticError{JSONKind: tok.Kind()}
}

// UnmarshalJSON lets encoding/json read a value as json (v2) does.
func (v *Value) UnmarshalJSON(b []byte) error {
	return v.UnmarshalJSONFrom(jsontext.NewDecoder(bytes.NewReader(b)))
}

// MarshalJSON writes the value as its type's JSON (an empty list as []).
func (v Value) MarshalJSON() ([]byte, error) {
	switch v.Type {
	case matchrules.TypeNumber:
		return json.Marshal(v.Num)
	case matchrules.TypeStringList:
		if v.List == nil {
			return []byte("[]"), nil
		}
		return json.Marshal(v.List)
	}
	return json.Marshal(v.Str)
}

// Steps are the steps as package matchrules has them; nil for nil.
func Steps(in []Step) []matchrules.Step {
	if in == nil {
		return nil
	}
	out := make([]matchrules.Step, len(in))
	for i, s := range in {
		out[i] = matchrules.Step{AfterS: s.AfterS, Value: s.Value}
	}
	return out
}

// FromSteps is the JSON of steps; nil for none.
func FromSteps(in []matchrules.Step) []Step {
	if len(in) == 0 {
		return nil
	}
	out := make([]Step, len(in))
	for i, s := range in {
		out[i] = Step{AfterS: s.AfterS, Value: s.Value}
	}
	return out
}

// Rules are the rules as package matchrules has them; nil for nil (and empty for empty). A
// rule without expansions has nil ones.
func Rules(in []Rule) []matchrules.Rule {
	if in == nil {
		return nil
	}
	out := make([]matchrules.Rule, len(in))
	for i, r := range in {
		out[i] = matchrules.Rule{Name: r.Name, Kind: r.Type, Attribute: r.Attribute, MinCommon: r.MinCommon,
			OptionalAfterS: r.OptionalAfterS, MaxDifference: r.MaxDifference}
		if len(r.Expansions) > 0 {
			out[i].Expansions = Steps(r.Expansions)
		}
	}
	return out
}

// FromRules is the JSON of rules; nil for none.
func FromRules(in []matchrules.Rule) []Rule {
	if len(in) == 0 {
		return nil
	}
	out := make([]Rule, len(in))
	for i, r := range in {
		out[i] = Rule{Name: r.Name, Type: r.Kind, Attribute: r.Attribute, MinCommon: r.MinCommon,
			Expansions: FromSteps(r.Expansions), OptionalAfterS: r.OptionalAfterS, MaxDifference: r.MaxDifference}
	}
	return out
}

// Attributes are the declarations as package matchrules has them; nil for nil.
func Attributes(in map[string]AttributeDecl) map[string]matchrules.Attribute {
	if in == nil {
		return nil
	}
	out := make(map[string]matchrules.Attribute, len(in))
	for name, a := range in {
		d := matchrules.Attribute{Type: a.Type, MaxItems: a.MaxItems}
		if a.Default != nil {
			d.Default = &a.Default.Value
		}
		out[name] = d
	}
	return out
}

// FromAttributes is the JSON of declarations; nil for none.
func FromAttributes(in map[string]matchrules.Attribute) map[string]AttributeDecl {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]AttributeDecl, len(in))
	for name, a := range in {
		d := AttributeDecl{Type: a.Type, MaxItems: a.MaxItems}
		if a.Default != nil {
			d.Default = &Value{Value: *a.Default}
		}
		out[name] = d
	}
	return out
}

// Values are a ticket's attribute values as package matchrules has them; nil for nil.
func Values(in map[string]Value) map[string]matchrules.Value {
	if in == nil {
		return nil
	}
	out := make(map[string]matchrules.Value, len(in))
	for name, v := range in {
		out[name] = v.Value
	}
	return out
}

// FromValues is the JSON of a ticket's attribute values; nil for none.
func FromValues(in map[string]matchrules.Value) map[string]Value {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]Value, len(in))
	for name, v := range in {
		out[name] = Value{Value: v}
	}
	return out
}

// RoleRange bounds how many players of a team play one role ({"min": 1, "max": 1}).
type RoleRange struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// TeamDef is one team of a queue's team_defs: its name, size, minimum size by wait and role
// composition.
type TeamDef struct {
	Name        string               `json:"name,omitempty"`
	Size        int                  `json:"size"`
	MinSize     []Step               `json:"min_size,omitempty"`
	Composition map[string]RoleRange `json:"composition,omitempty"`
}

// Composition is a composition as package matchrules has it; nil for nil.
func Composition(in map[string]RoleRange) map[string]matchrules.RoleRange {
	if in == nil {
		return nil
	}
	out := make(map[string]matchrules.RoleRange, len(in))
	for role, r := range in {
		out[role] = matchrules.RoleRange{Min: r.Min, Max: r.Max}
	}
	return out
}

// FromComposition is the JSON of a composition; nil for none.
func FromComposition(in map[string]matchrules.RoleRange) map[string]RoleRange {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]RoleRange, len(in))
	for role, r := range in {
		out[role] = RoleRange{Min: r.Min, Max: r.Max}
	}
	return out
}

// TeamDefs are the team definitions as package matchrules has them; nil for nil. A team
// without minimum sizes has nil ones.
func TeamDefs(in []TeamDef) []matchrules.TeamDef {
	if in == nil {
		return nil
	}
	out := make([]matchrules.TeamDef, len(in))
	for i, d := range in {
		out[i] = matchrules.TeamDef{Name: d.Name, Size: d.Size, Composition: Composition(d.Composition)}
		if len(d.MinSize) > 0 {
			out[i].MinSize = Steps(d.MinSize)
		}
	}
	return out
}

// FromTeamDefs is the JSON of team definitions; nil for none.
func FromTeamDefs(in []matchrules.TeamDef) []TeamDef {
	if len(in) == 0 {
		return nil
	}
	out := make([]TeamDef, len(in))
	for i, d := range in {
		out[i] = TeamDef{Name: d.Name, Size: d.Size, MinSize: FromSteps(d.MinSize), Composition: FromComposition(d.Composition)}
	}
	return out
}
