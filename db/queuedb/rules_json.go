package queuedb

import (
	"encoding/json"
	"errors"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
)

// The JSON of match rules, as the API writes it (see 00006_match_rules.sql).
type (
	queueRulesJSON struct {
		Attributes map[string]attributeDeclJSON `json:"attributes,omitempty"`
		Rules      []ruleJSON                   `json:"rules,omitempty"`
		// The team shape (teams and team_size are columns of their own).
		MinTeamSize stepsJSONList   `json:"min_team_size,omitempty"`
		Composition compositionJSON `json:"composition,omitempty"`
		TeamDefs    []teamDefJSON   `json:"team_defs,omitempty"`
		Roles       []string        `json:"roles,omitempty"`
		// Beyond the columns: the cap on searching tickets.
		MaxSearching       int `json:"max_searching,omitempty"`
		MaxSearchingPerKey int `json:"max_searching_per_key,omitempty"`
	}
	compositionJSON map[string]struct {
		Min int `json:"min"`
		Max int `json:"max"`
	}
	teamDefJSON struct {
		Name        string          `json:"name,omitempty"`
		Size        int             `json:"size"`
		MinSize     stepsJSONList   `json:"min_size,omitempty"`
		Composition compositionJSON `json:"composition,omitempty"`
	}
	attributeDeclJSON struct {
		Type     string     `json:"type"`
		MaxItems int        `json:"max_items,omitempty"`
		Default  *valueJSON `json:"default,omitempty"`
	}
	ruleJSON struct {
		Name           string        `json:"name"`
		Type           string        `json:"type"`
		Attribute      string        `json:"attribute,omitempty"`
		MinCommon      int           `json:"min_common,omitempty"`
		Expansions     stepsJSONList `json:"expansions,omitempty"`
		OptionalAfterS *float64      `json:"optional_after_s,omitempty"`
		MaxDifference  int           `json:"max_difference,omitempty"`
	}
	matchAttributeJSON struct {
		Name  string    `json:"name"`
		Value valueJSON `json:"value"`
	}
	// valueJSON is an attribute's value: a string, a number or a list of strings.
	valueJSON struct{ matchrules.Value }
)

func (v valueJSON) MarshalJSON() ([]byte, error) {
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

func (v *valueJSON) UnmarshalJSON(b []byte) error {
	var x any
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	switch x := x.(type) {
	case string:
		v.Value = matchrules.StringValue(x)
	case float64:
		v.Value = matchrules.NumberValue(x)
	case []any:
		list := make([]string, len(x))
		for i, s := range x {
			str, ok := s.(string)
			if !ok {
				return errors.New("an attribute's list holds a value that is not a string")
			}
			list[i] = str
		}
		v.Value = matchrules.ListValue(list...)
	default:
		return errors.New("an attribute's value is not a string, a number or a list of strings")
	}
	return nil
}

// queueRulesDoc is the rules column of a queue: nil without attributes and rules.
func queueRulesDoc(q queue.Queue) (*string, error) {
	if len(q.Attributes) == 0 && len(q.Rules) == 0 && !q.Shaped() && q.MaxSearching == 0 && q.MaxSearchingPerKey == 0 {
		return nil, nil
	}
	doc := queueRulesJSON{Attributes: make(map[string]attributeDeclJSON, len(q.Attributes)),
		MinTeamSize: stepsJSON(q.MinTeamSize), Composition: newCompositionJSON(q.Composition), Roles: q.Roles,
		MaxSearching: q.MaxSearching, MaxSearchingPerKey: q.MaxSearchingPerKey}
	for _, d := range q.TeamDefs {
		doc.TeamDefs = append(doc.TeamDefs, teamDefJSON{Name: d.Name, Size: d.Size, MinSize: tickStepsJSON(d.MinSize),
			Composition: newCompositionJSON(d.Composition)})
	}
	for name, a := range q.Attributes {
		d := attributeDeclJSON{Type: a.Type, MaxItems: a.MaxItems}
		if a.Default != nil {
			d.Default = &valueJSON{*a.Default}
		}
		doc.Attributes[name] = d
	}
	for _, r := range q.Rules {
		x := ruleJSON{Name: r.Name, Type: r.Kind, Attribute: r.Attribute, MinCommon: r.MinCommon, OptionalAfterS: r.OptionalAfterS,
			MaxDifference: r.MaxDifference}
		for _, s := range r.Expansions {
			x.Expansions = append(x.Expansions, stepJSON{AfterS: s.AfterS, Value: s.Value})
		}
		doc.Rules = append(doc.Rules, x)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return new(string(b)), nil
}

// readQueueRules sets q's attributes and rules from its rules column.
func readQueueRules(q *queue.Queue, b []byte) error {
	if b == nil {
		return nil
	}
	var doc queueRulesJSON
	if err := json.Unmarshal(b, &doc); err != nil {
		return err
	}
	if len(doc.Attributes) > 0 {
		q.Attributes = make(map[string]matchrules.Attribute, len(doc.Attributes))
		for name, a := range doc.Attributes {
			d := matchrules.Attribute{Type: a.Type, MaxItems: a.MaxItems}
			if a.Default != nil {
				d.Default = &a.Default.Value
			}
			q.Attributes[name] = d
		}
	}
	for _, r := range doc.Rules {
		x := matchrules.Rule{Name: r.Name, Kind: r.Type, Attribute: r.Attribute, MinCommon: r.MinCommon, OptionalAfterS: r.OptionalAfterS,
			MaxDifference: r.MaxDifference}
		for _, s := range r.Expansions {
			x.Expansions = append(x.Expansions, matchrules.Step{AfterS: s.AfterS, Value: s.Value})
		}
		q.Rules = append(q.Rules, x)
	}
	q.MinTeamSize, q.Composition, q.Roles = doc.MinTeamSize.steps(), doc.Composition.ranges(), doc.Roles
	q.MaxSearching, q.MaxSearchingPerKey = doc.MaxSearching, doc.MaxSearchingPerKey
	for _, d := range doc.TeamDefs {
		x := matchrules.TeamDef{Name: d.Name, Size: d.Size, Composition: d.Composition.ranges()}
		for _, s := range d.MinSize {
			x.MinSize = append(x.MinSize, matchrules.Step{AfterS: s.AfterS, Value: s.Value})
		}
		q.TeamDefs = append(q.TeamDefs, x)
	}
	return nil
}

func tickStepsJSON(steps []matchrules.Step) stepsJSONList {
	var out stepsJSONList
	for _, s := range steps {
		out = append(out, stepJSON{AfterS: s.AfterS, Value: s.Value})
	}
	return out
}

// ticketAttributesDoc is the attributes column of a ticket: nil without attributes.
func ticketAttributesDoc(attrs map[string]matchrules.Value) (*string, error) {
	if len(attrs) == 0 {
		return nil, nil
	}
	doc := make(map[string]valueJSON, len(attrs))
	for name, v := range attrs {
		doc[name] = valueJSON{v}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return new(string(b)), nil
}

func readTicketAttributes(b []byte) (map[string]matchrules.Value, error) {
	if b == nil {
		return nil, nil
	}
	var doc map[string]valueJSON
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	out := make(map[string]matchrules.Value, len(doc))
	for name, v := range doc {
		out[name] = v.Value
	}
	return out, nil
}

// matchAttributesJSON is a match's attributes as stored (in its row and in its tickets'
// assignments); nil without any.
func matchAttributesJSON(attrs []matchpool.MatchAttribute) []matchAttributeJSON {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]matchAttributeJSON, len(attrs))
	for i, a := range attrs {
		out[i] = matchAttributeJSON{Name: a.Name, Value: valueJSON{a.Value}}
	}
	return out
}

func matchAttributes(doc []matchAttributeJSON) []matchpool.MatchAttribute {
	if len(doc) == 0 {
		return nil
	}
	out := make([]matchpool.MatchAttribute, len(doc))
	for i, a := range doc {
		out[i] = matchpool.MatchAttribute{Name: a.Name, Value: a.Value.Value}
	}
	return out
}

func newCompositionJSON(c map[string]matchrules.RoleRange) compositionJSON {
	if c == nil {
		return nil
	}
	out := make(compositionJSON, len(c))
	for role, r := range c {
		out[role] = struct {
			Min int `json:"min"`
			Max int `json:"max"`
		}{r.Min, r.Max}
	}
	return out
}

func (c compositionJSON) ranges() map[string]matchrules.RoleRange {
	if c == nil {
		return nil
	}
	out := make(map[string]matchrules.RoleRange, len(c))
	for role, r := range c {
		out[role] = matchrules.RoleRange{Min: r.Min, Max: r.Max}
	}
	return out
}
