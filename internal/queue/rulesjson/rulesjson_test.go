package rulesjson

import (
	"encoding/json"
	"reflect"
	"testing"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
)

// TestValueTakesItsTypeFromItsJSON: a string, a number and a list of strings each decode to
// their type, with either decoder, and write back as they came (an empty list as []).
func TestValueTakesItsTypeFromItsJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		json string
		want matchrules.Value
	}{
		{`"ranked"`, matchrules.StringValue("ranked")},
		{`1.5`, matchrules.NumberValue(1.5)},
		{`-3`, matchrules.NumberValue(-3)},
		{`["dust","nuke"]`, matchrules.ListValue("dust", "nuke")},
		{`[]`, matchrules.ListValue()},
	} {
		var strict, lenient Value
		if err := jsonv2.Unmarshal([]byte(tc.json), &strict); err != nil {
			t.Fatalf("%s: strict: %v", tc.json, err)
		}
		if err := json.Unmarshal([]byte(tc.json), &lenient); err != nil {
			t.Fatalf("%s: lenient: %v", tc.json, err)
		}
		for _, got := range []Value{strict, lenient} {
			if got.Type != tc.want.Type || got.Str != tc.want.Str || got.Num != tc.want.Num || len(got.List) != len(tc.want.List) ||
				len(got.List) > 0 && !reflect.DeepEqual(got.List, tc.want.List) {
				t.Errorf("%s: decoded %+v, want %+v", tc.json, got.Value, tc.want)
			}
		}
		if b, err := json.Marshal(strict); err != nil || string(b) != tc.json {
			t.Errorf("%s: written back as %s (%v)", tc.json, b, err)
		}
	}
	if b, _ := json.Marshal(Value{Value: matchrules.Value{Type: matchrules.TypeStringList}}); string(b) != "[]" {
		t.Errorf("a nil list is written %s, want []", b)
	}
}

// TestValueRefusesOtherJSON: an object, a boolean, null or a list holding anything but
// strings is no attribute value.
func TestValueRefusesOtherJSON(t *testing.T) {
	t.Parallel()
	for _, in := range []string{`{}`, `true`, `null`, `[1]`, `["a",["b"]]`} {
		var v Value
		if err := jsonv2.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("%s: decoded as %+v, want an error", in, v.Value)
		}
		if err := json.Unmarshal([]byte(in), &v); err == nil {
			t.Errorf("%s: encoding/json decoded it as %+v, want an error", in, v.Value)
		}
	}
}

// TestRulesRoundTrip maps a queue definition's rules, attributes and team shape to the tick
// package's types and back: nothing is lost, nothing invented.
func TestRulesRoundTrip(t *testing.T) {
	t.Parallel()
	const def = `{
		"attributes": {"mode": {"type": "string", "default": "casual"}, "maps": {"type": "string_list", "max_items": 3}},
		"rules": [
			{"name": "mode", "type": "equal", "attribute": "mode"},
			{"name": "maps", "type": "intersect", "attribute": "maps", "min_common": 2,
			 "expansions": [{"after_s": 0, "value": 2}, {"after_s": 30, "value": 1}], "optional_after_s": 60},
			{"name": "balance", "type": "team_balance", "max_difference": 2}
		],
		"team_defs": [{"name": "attack", "size": 5, "min_size": [{"after_s": 0, "value": 5}, {"after_s": 60, "value": 4}],
			"composition": {"tank": {"min": 1, "max": 1}}}, {"size": 5}]
	}`
	var doc struct {
		Attributes map[string]AttributeDecl `json:"attributes"`
		Rules      []Rule                   `json:"rules"`
		TeamDefs   []TeamDef                `json:"team_defs"`
	}
	if err := jsonv2.Unmarshal([]byte(def), &doc, jsonv2.RejectUnknownMembers(true)); err != nil {
		t.Fatal(err)
	}
	rules, attrs, defs := Rules(doc.Rules), Attributes(doc.Attributes), TeamDefs(doc.TeamDefs)
	sixty := 60.0
	wantRules := []matchrules.Rule{
		{Name: "mode", Kind: "equal", Attribute: "mode"},
		{Name: "maps", Kind: "intersect", Attribute: "maps", MinCommon: 2,
			Expansions: []matchrules.Step{{AfterS: 0, Value: 2}, {AfterS: 30, Value: 1}}, OptionalAfterS: &sixty},
		{Name: "balance", Kind: "team_balance", MaxDifference: 2},
	}
	if !reflect.DeepEqual(rules, wantRules) {
		t.Errorf("rules:\n got %+v\nwant %+v", rules, wantRules)
	}
	casual := matchrules.StringValue("casual")
	wantAttrs := map[string]matchrules.Attribute{"mode": {Type: "string", Default: &casual}, "maps": {Type: "string_list", MaxItems: 3}}
	if !reflect.DeepEqual(attrs, wantAttrs) {
		t.Errorf("attributes:\n got %+v\nwant %+v", attrs, wantAttrs)
	}
	wantDefs := []matchrules.TeamDef{
		{Name: "attack", Size: 5, MinSize: []matchrules.Step{{AfterS: 0, Value: 5}, {AfterS: 60, Value: 4}},
			Composition: map[string]matchrules.RoleRange{"tank": {Min: 1, Max: 1}}},
		{Size: 5},
	}
	if !reflect.DeepEqual(defs, wantDefs) {
		t.Errorf("team defs:\n got %+v\nwant %+v", defs, wantDefs)
	}
	if back := FromRules(rules); !reflect.DeepEqual(back, doc.Rules) {
		t.Errorf("rules back:\n got %+v\nwant %+v", back, doc.Rules)
	}
	if back := FromAttributes(attrs); !reflect.DeepEqual(back, doc.Attributes) {
		t.Errorf("attributes back:\n got %+v\nwant %+v", back, doc.Attributes)
	}
	if back := FromTeamDefs(defs); !reflect.DeepEqual(back, doc.TeamDefs) {
		t.Errorf("team defs back:\n got %+v\nwant %+v", back, doc.TeamDefs)
	}
}

// TestNoneIsNil: what a queue does not have maps to nil both ways, so that a queue without
// rules reads back equal to itself and writes no empty members; an empty list the API was
// given stays an empty list.
func TestNoneIsNil(t *testing.T) {
	t.Parallel()
	if Rules(nil) != nil || FromRules(nil) != nil || FromRules([]matchrules.Rule{}) != nil || Attributes(nil) != nil ||
		FromAttributes(map[string]matchrules.Attribute{}) != nil || Values(nil) != nil || FromValues(map[string]matchrules.Value{}) != nil ||
		TeamDefs(nil) != nil || FromTeamDefs(nil) != nil || Composition(nil) != nil || FromComposition(map[string]matchrules.RoleRange{}) != nil ||
		Steps(nil) != nil || FromSteps([]matchrules.Step{}) != nil {
		t.Error("none mapped to something")
	}
	if r := Rules([]Rule{}); r == nil || len(r) != 0 {
		t.Errorf("Rules of an empty list = %#v, want an empty list", r)
	}
	if r := Rules([]Rule{{Name: "m", Type: "equal", Attribute: "m", Expansions: []Step{}}}); len(r) != 1 || r[0].Expansions != nil {
		t.Errorf("Rules of a rule with empty expansions = %+v, want the rule with nil expansions", r)
	}
}
