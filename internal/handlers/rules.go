package handlers

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// This file holds the JSON of match rules: a queue's attribute declarations and rules, a
// ticket's attributes, a match's agreed attributes and why a ticket waits.

type attributeDeclJSON struct {
	Type     string              `json:"type"`
	MaxItems int                 `json:"max_items,omitempty"`
	Default  *attributeValueJSON `json:"default,omitempty"`
}

type ruleJSON struct {
	Name           string     `json:"name"`
	Type           string     `json:"type"`
	Attribute      string     `json:"attribute,omitempty"`
	MinCommon      int        `json:"min_common,omitempty"`
	Expansions     []stepJSON `json:"expansions,omitempty"`
	OptionalAfterS *float64   `json:"optional_after_s,omitempty"`
	MaxDifference  int        `json:"max_difference,omitempty"`
}

type waitingOnJSON struct {
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
}

// attributeValueJSON is an attribute's value: a string, a number or a list of strings.
type attributeValueJSON struct{ tick.Value }

// UnmarshalJSONFrom implements json (v2)'s UnmarshalerFrom: the value's type is its JSON's.
func (v *attributeValueJSON) UnmarshalJSONFrom(dec *jsontext.Decoder) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	switch tok.Kind() {
	case '"':
		v.Value = tick.StringValue(tok.String())
		return nil
	case '0':
		x, err := tok.Float()
		if err != nil {
			return &jsonv2.SemanticError{JSONKind: '0', Err: err}
		}
		v.Value = tick.NumberValue(x)
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
		v.Value = tick.ListValue(list...)
		return nil
	}
	return &jsonv2.SemanticError{JSONKind: tok.Kind()}
}

// UnmarshalJSON lets encoding/json read an answer back (the client and the tests do).
func (v *attributeValueJSON) UnmarshalJSON(b []byte) error {
	return v.UnmarshalJSONFrom(jsontext.NewDecoder(bytes.NewReader(b)))
}

// MarshalJSON writes the value as its type's JSON.
func (v attributeValueJSON) MarshalJSON() ([]byte, error) {
	switch v.Type {
	case tick.TypeNumber:
		return json.Marshal(v.Num)
	case tick.TypeStringList:
		return json.Marshal(nonNil(v.List))
	}
	return json.Marshal(v.Str)
}

func attributeDecls(in map[string]attributeDeclJSON) map[string]tick.Attribute {
	if in == nil {
		return nil
	}
	out := make(map[string]tick.Attribute, len(in))
	for name, a := range in {
		d := tick.Attribute{Type: a.Type, MaxItems: a.MaxItems}
		if a.Default != nil {
			d.Default = &a.Default.Value
		}
		out[name] = d
	}
	return out
}

func attributeDeclsJSON(in map[string]tick.Attribute) map[string]attributeDeclJSON {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]attributeDeclJSON, len(in))
	for name, a := range in {
		d := attributeDeclJSON{Type: a.Type, MaxItems: a.MaxItems}
		if a.Default != nil {
			d.Default = &attributeValueJSON{*a.Default}
		}
		out[name] = d
	}
	return out
}

func rules(in []ruleJSON) []tick.Rule {
	if in == nil {
		return nil
	}
	out := make([]tick.Rule, len(in))
	for i, r := range in {
		out[i] = tick.Rule{Name: r.Name, Kind: r.Type, Attribute: r.Attribute, MinCommon: r.MinCommon,
			OptionalAfterS: r.OptionalAfterS, MaxDifference: r.MaxDifference}
		for _, s := range r.Expansions {
			out[i].Expansions = append(out[i].Expansions, tick.Step{AfterS: s.AfterS, Value: s.Value})
		}
	}
	return out
}

func rulesJSON(in []tick.Rule) []ruleJSON {
	if len(in) == 0 {
		return nil
	}
	out := make([]ruleJSON, len(in))
	for i, r := range in {
		out[i] = ruleJSON{Name: r.Name, Type: r.Kind, Attribute: r.Attribute, MinCommon: r.MinCommon,
			OptionalAfterS: r.OptionalAfterS, MaxDifference: r.MaxDifference}
		for _, s := range r.Expansions {
			out[i].Expansions = append(out[i].Expansions, stepJSON{AfterS: s.AfterS, Value: s.Value})
		}
	}
	return out
}

func ticketAttributes(in map[string]attributeValueJSON) map[string]tick.Value {
	if in == nil {
		return nil
	}
	out := make(map[string]tick.Value, len(in))
	for name, v := range in {
		out[name] = v.Value
	}
	return out
}

func ticketAttributesJSON(in map[string]tick.Value) map[string]attributeValueJSON {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]attributeValueJSON, len(in))
	for _, name := range slices.Sorted(maps.Keys(in)) {
		out[name] = attributeValueJSON{in[name]}
	}
	return out
}

// matchAttributesJSON is a match's agreed attributes as an object, by attribute.
func matchAttributesJSON(in []tick.MatchAttribute) map[string]attributeValueJSON {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]attributeValueJSON, len(in))
	for _, a := range in {
		out[a.Name] = attributeValueJSON{a.Value}
	}
	return out
}

func newWaitingOnJSON(w *queue.WaitingOn) *waitingOnJSON {
	if w == nil {
		return nil
	}
	return &waitingOnJSON{Rule: w.Rule, Detail: w.Detail}
}
