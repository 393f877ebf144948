package queuedb

import (
	"encoding/json"

	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchrules"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// The JSON of match rules, as the API writes it (see 00006_match_rules.sql), in package
// rulesjson's types and mapped by it.
type (
	queueRulesJSON struct {
		Attributes map[string]rulesjson.AttributeDecl `json:"attributes,omitempty"`
		Rules      []rulesjson.Rule                   `json:"rules,omitempty"`
		// The team shape (teams and team_size are columns of their own).
		MinTeamSize stepsJSONList                  `json:"min_team_size,omitempty"`
		Composition map[string]rulesjson.RoleRange `json:"composition,omitempty"`
		TeamDefs    []rulesjson.TeamDef            `json:"team_defs,omitempty"`
		Roles       []string                       `json:"roles,omitempty"`
		// Beyond the columns: the cap on searching tickets.
		MaxSearching       int `json:"max_searching,omitempty"`
		MaxSearchingPerKey int `json:"max_searching_per_key,omitempty"`
		// The avoid lists' scope and optional_after_s (the players' lists are in theirs).
		Avoid *avoidJSON `json:"avoid,omitempty"`
		// The attribute that splits the queue into partitions (it needs a rule, so a
		// partitioned queue always has this document).
		PartitionBy string `json:"partition_by,omitempty"`
		// The penalties for dodges and leaves (queue/penalties.go).
		Penalties *rulesjson.Penalties `json:"penalties,omitempty"`
	}
	avoidJSON struct {
		Scope          string   `json:"scope,omitempty"`
		OptionalAfterS *float64 `json:"optional_after_s,omitempty"`
	}
	matchAttributeJSON struct {
		Name  string          `json:"name"`
		Value rulesjson.Value `json:"value"`
	}
)

// queueRulesDoc is the rules column of a queue: nil without attributes and rules.
func queueRulesDoc(q queue.Queue) (*string, error) {
	noAvoid := q.Avoid == matchrules.Avoid{}
	if len(q.Attributes) == 0 && len(q.Rules) == 0 && !q.Shaped() && q.MaxSearching == 0 && q.MaxSearchingPerKey == 0 && noAvoid &&
		!q.Penalties.Any() {
		return nil, nil
	}
	doc := queueRulesJSON{Attributes: rulesjson.FromAttributes(q.Attributes), Rules: rulesjson.FromRules(q.Rules),
		MinTeamSize: stepsJSON(q.MinTeamSize), Composition: rulesjson.FromComposition(q.Composition),
		TeamDefs: rulesjson.FromTeamDefs(q.TeamDefs), Roles: q.Roles,
		MaxSearching: q.MaxSearching, MaxSearchingPerKey: q.MaxSearchingPerKey, PartitionBy: q.PartitionBy,
		Penalties: queue.PenaltiesJSON(q.Penalties)}
	if !noAvoid {
		doc.Avoid = &avoidJSON{Scope: q.Avoid.Scope, OptionalAfterS: q.Avoid.OptionalAfterS}
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
	// What the writer leaves out (omitempty) reads back as nil, whatever an older row holds.
	if len(doc.Attributes) > 0 {
		q.Attributes = rulesjson.Attributes(doc.Attributes)
	}
	if len(doc.Rules) > 0 {
		q.Rules = rulesjson.Rules(doc.Rules)
	}
	if len(doc.TeamDefs) > 0 {
		q.TeamDefs = rulesjson.TeamDefs(doc.TeamDefs)
	}
	q.MinTeamSize, q.Composition, q.Roles = doc.MinTeamSize.steps(), rulesjson.Composition(doc.Composition), doc.Roles
	q.MaxSearching, q.MaxSearchingPerKey, q.PartitionBy = doc.MaxSearching, doc.MaxSearchingPerKey, doc.PartitionBy
	if a := doc.Avoid; a != nil {
		q.Avoid = matchrules.Avoid{Scope: a.Scope, OptionalAfterS: a.OptionalAfterS}
	}
	q.Penalties = queue.PenaltiesOf(doc.Penalties)
	return nil
}

// ticketAttributesDoc is the attributes column of a ticket: nil without attributes.
func ticketAttributesDoc(attrs map[string]matchrules.Value) (*string, error) {
	if len(attrs) == 0 {
		return nil, nil
	}
	b, err := json.Marshal(rulesjson.FromValues(attrs))
	if err != nil {
		return nil, err
	}
	return new(string(b)), nil
}

func readTicketAttributes(b []byte) (map[string]matchrules.Value, error) {
	if b == nil {
		return nil, nil
	}
	var doc map[string]rulesjson.Value
	if err := json.Unmarshal(b, &doc); err != nil {
		return nil, err
	}
	return rulesjson.Values(doc), nil
}

// matchAttributesJSON is a match's attributes as stored (in its row and in its tickets'
// assignments); nil without any.
func matchAttributesJSON(attrs []matchpool.MatchAttribute) []matchAttributeJSON {
	if len(attrs) == 0 {
		return nil
	}
	out := make([]matchAttributeJSON, len(attrs))
	for i, a := range attrs {
		out[i] = matchAttributeJSON{Name: a.Name, Value: rulesjson.Value{Value: a.Value}}
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
