package handlers

import (
	"github.com/matchmakerhq/matchmaker/internal/matchmaker/tick/matchpool"
	"github.com/matchmakerhq/matchmaker/internal/queue"
	"github.com/matchmakerhq/matchmaker/internal/queue/rulesjson"
)

// This file holds the JSON a match's agreed attributes and why a ticket waits take; the JSON
// of a queue's rules and a ticket's attributes is package rulesjson's.

type waitingOnJSON struct {
	Rule   string `json:"rule"`
	Detail string `json:"detail"`
}

// matchAttributesJSON is a match's agreed attributes as an object, by attribute.
func matchAttributesJSON(in []matchpool.MatchAttribute) map[string]rulesjson.Value {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string]rulesjson.Value, len(in))
	for _, a := range in {
		out[a.Name] = rulesjson.Value{Value: a.Value}
	}
	return out
}

func newWaitingOnJSON(w *queue.WaitingOn) *waitingOnJSON {
	if w == nil {
		return nil
	}
	return &waitingOnJSON{Rule: w.Rule, Detail: w.Detail}
}
